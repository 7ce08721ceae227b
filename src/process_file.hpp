#pragma once
// `chunkscope process`: a file through the chain in chunks on the calling thread. The
// streaming engine uses the same reader, writer and backend.
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/gpu.hpp"
#include "rt/backend.hpp"
#include "src/plan.hpp"

namespace chunkscope {

struct ProcessOptions {
  std::string chain;
  int chunk = 1024;
  DType dtype = DType::f32;
  bool fuse = true;
  std::string backend = "cpu";  // cpu or cuda
  CudaOptions cuda;
};

struct ProcessResult {
  std::int64_t frames = 0;
  std::int64_t chunks = 0;
  double rate = 0;
  int channels = 0;
  std::size_t dispatches_per_chunk = 0;
  std::string in_format, out_format;
};

/// Parses a dtype name ("f32", "f64", also "float32", "float64"). Throws InputError.
DType parse_dtype(const std::string& s);

/// Checks a chunk size against 1..kMaxChunkFrames. Throws InputError naming `what`.
void check_chunk_frames(long long n, const char* what = "--chunk");

/// A CPU backend prepared for the plan. Throws RuntimeFailure if prepare fails.
std::unique_ptr<Backend> make_cpu_backend(const Plan& plan, const ProcessSpec& spec);

/// Which backend runs a chain: "cpu" or "cuda" (with its options).
struct BackendChoice {
  std::string backend = "cpu";
  CudaOptions cuda;
};

/// Parses "eager" / "graph". Throws InputError naming `what`.
CudaOptions::Mode parse_cuda_mode(const std::string& s, const char* what = "--mode");

/// A backend prepared for the plan: the CPU one, or the CUDA one (RuntimeFailure, exit 3,
/// with the CUDA error text when no usable GPU or prepare fails). InputError for an unknown
/// backend name. Not RT safe.
std::unique_ptr<Backend> make_backend(const BackendChoice& choice, const Plan& plan, const ProcessSpec& spec);

/// Runs `in` through the chain into `out`. Throws InputError / RuntimeFailure; on any error
/// the output file is not left behind.
ProcessResult process_file(const std::string& in, const std::string& out, const ProcessOptions& opt);

}  // namespace chunkscope
