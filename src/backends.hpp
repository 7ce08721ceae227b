#pragma once
// The backend factory: a backend of the chosen kind, prepared for a plan (the plan is laid
// out here and handed down, so backends never depend on the planner). Not real-time.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "kernels/gpu.hpp"
#include "rt/backend.hpp"
#include "rt/cpu_simd.hpp"
#include "src/plan.hpp"

namespace chunkscope {

/// Parses a dtype name ("f32", "f64", also "float32", "float64"). Throws InputError.
DType parse_dtype(const std::string& s);

/// Checks a chunk size against 1..kMaxChunkFrames. Throws InputError naming `what`.
void check_chunk_frames(long long n, const char* what = "--chunk");

/// The kinds of processing backend. The report writes them by name ("cpu", "cuda").
enum class BackendKind { cpu, cuda };

/// "cpu" / "cuda".
const char* backend_name(BackendKind k);
/// Parses "cpu" / "cuda". Throws InputError naming `what`: "--backend: 'tpu' is not cpu or cuda".
BackendKind parse_backend_kind(const std::string& s, const char* what = "--backend");

/// Which backend runs a chain, with the CUDA backend's options and the CPU backend's
/// instruction set (nullopt: auto, the set needing the fewest passes for the chain; docs/profiler.md, "CPU kernels").
struct BackendChoice {
  BackendKind backend = BackendKind::cpu;
  CudaOptions cuda;
  std::optional<CpuIsa> cpu_isa;
};

/// Parses --isa: "auto" (nullopt) or an instruction set's name. Throws InputError naming
/// `what`: "--isa: 'avx1024' is not auto, scalar, sse4, avx2 or avx512".
std::optional<CpuIsa> parse_isa_choice(const std::string& s, const char* what = "--isa");
/// "auto" or the instruction set's name.
std::string isa_choice_name(const std::optional<CpuIsa>& isa);
/// Checks a forced instruction set against this CPU and build: RuntimeFailure (exit 3)
/// naming `what` when it cannot run here. Returns the choice.
std::optional<CpuIsa> check_isa(const std::optional<CpuIsa>& isa, const char* what = "--isa");
/// The instruction sets this CPU and build can run, as "scalar, sse4, avx2".
std::string supported_isas();

/// Parses "eager" / "graph". Throws InputError naming `what`.
CudaOptions::Mode parse_cuda_mode(const std::string& s, const char* what = "--mode");

/// A backend prepared for the plan: the CPU one, or the CUDA one (RuntimeFailure, exit 3,
/// with the CUDA error text when no usable GPU or prepare fails). Not real-time.
std::unique_ptr<Backend> make_backend(const BackendChoice& choice, const Plan& plan, const ProcessSpec& spec);

}  // namespace chunkscope
