#include "kernels/gpu.hpp"

namespace chunkscope {

namespace {
constexpr const char* kNoCuda = "this chunkscope was built without CUDA (configure found no nvcc or CHUNKSCOPE_CUDA=OFF)";
}

GpuInfo probe_gpu() {
  GpuInfo g;
  g.reason = kNoCuda;
  return g;
}

bool cuda_built() noexcept { return false; }

std::unique_ptr<Backend> make_cuda_backend(const CudaOptions&, const ChainLayout&, const ProcessSpec&, std::string* error) {
  if (error) *error = kNoCuda;
  return nullptr;
}

}  // namespace chunkscope
