#pragma once
// The GPU part's interface to the rest of chunkscope. The same declarations exist in builds
// without CUDA (kernels/no_cuda.cpp), where they answer "built without CUDA" at run time.
// Not real-time: probing and construction allocate.
#include <memory>
#include <string>

#include "rt/backend.hpp"

namespace chunkscope {

struct GpuInfo {
  bool available = false;
  std::string name;     // device 0
  std::string driver;   // driver / runtime versions
  std::string reason;   // why not available
  int cc_major = 0, cc_minor = 0;
};

/// Looks for a usable CUDA device. Never throws.
/// [no-alloc, no-block]
GpuInfo probe_gpu();

/// True when this build contains the CUDA backend. Never throws.
/// [no-alloc, no-block]
bool cuda_built() noexcept;

/// How the CUDA backend runs a chunk.
struct CudaOptions {
  enum class Mode { eager, graph } mode = Mode::eager;
  bool gpu_timing = true;  // CUDA events around H2D, kernels and D2H (--gpu-timing on|off)
  // Graph mode, when a chunk's frame count differs from the captured shape (a short last
  // chunk): run it eagerly (false) or capture and instantiate a graph for the new shape (true).
  bool recapture_on_shape_change = false;
};

/// "eager" / "graph".
/// [no-alloc, no-block]
inline const char* cuda_mode_name(CudaOptions::Mode m) noexcept {
  return m == CudaOptions::Mode::graph ? "graph" : "eager";
}

/// A CUDA backend prepared for the laid-out chain and `spec` (prepare() already called and succeeded),
/// or nullptr with *error set to one line naming the reason (no device, CUDA error text,
/// built without CUDA, capture or instantiate failure). Never throws. [allocates, blocks]
std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& opt, const ChainLayout& layout, const ProcessSpec& spec,
                                           std::string* error);

}  // namespace chunkscope
