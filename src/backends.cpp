#include "src/backends.hpp"

#include <fmt/format.h>
#include <vector>

#include "rt/cpu_backend.hpp"
#include "src/errors.hpp"

namespace chunkscope {

namespace {

// A CPU backend prepared for the plan. Throws RuntimeFailure if prepare fails.
std::unique_ptr<Backend> make_cpu_backend(const Plan& plan, const ProcessSpec& spec, const std::optional<CpuIsa>& isa) {
  auto b = std::make_unique<CpuBackend>(plan.fused, check_isa(isa));
  const Status s = b->prepare(spec, lay_out_plan(plan, spec.channels));
  // a hosted step that cannot be made for this stream is bad input: it names itself
  if (!ok(s) && plan.hosted_steps() > 0 && *b->last_error())
    throw InputError(fmt::format("chain '{}': {}", plan.spec, b->last_error()));
  if (!ok(s)) throw RuntimeFailure(fmt::format("cpu backend: prepare failed: {}", describe(s)));
  return b;
}

}  // namespace

DType parse_dtype(const std::string& s) {
  if (s == "f32" || s == "float32" || s == "float") return DType::f32;
  if (s == "f64" || s == "float64" || s == "double") return DType::f64;
  throw InputError(fmt::format("--dtype: '{}' is not f32 or f64", s));
}

void check_chunk_frames(long long n, const char* what) {
  if (n < 1 || n > kMaxChunkFrames)
    throw InputError(fmt::format("{}: {} frames is out of range 1..{}", what, n, kMaxChunkFrames));
}

std::optional<CpuIsa> parse_isa_choice(const std::string& s, const char* what) {
  if (s == "auto") return std::nullopt;
  CpuIsa isa = CpuIsa::scalar;
  if (parse_cpu_isa(s.c_str(), &isa)) return isa;
  std::string names = "auto";
  for (int i = 0; i < kCpuIsaCount; ++i)
    names += fmt::format("{}{}", i + 1 < kCpuIsaCount ? ", " : " or ", cpu_isa_name(static_cast<CpuIsa>(i)));
  throw InputError(fmt::format("{}: '{}' is not {}", what, s, names));
}

std::string isa_choice_name(const std::optional<CpuIsa>& isa) { return isa ? cpu_isa_name(*isa) : "auto"; }

std::string supported_isas() {
  std::string s;
  for (int i = 0; i < kCpuIsaCount; ++i)
    if (cpu_isa_supported(static_cast<CpuIsa>(i))) s += fmt::format("{}{}", s.empty() ? "" : ", ", cpu_isa_name(static_cast<CpuIsa>(i)));
  return s;
}

std::optional<CpuIsa> check_isa(const std::optional<CpuIsa>& isa, const char* what) {
  if (isa && !cpu_isa_supported(*isa))
    throw RuntimeFailure(fmt::format("{} {}: this CPU or build cannot run it (it needs {}); available here: {}", what,
                                     cpu_isa_name(*isa), cpu_isa_requires(*isa), supported_isas()));
  return isa;
}

const char* backend_name(BackendKind k) {
  switch (k) {
    case BackendKind::cpu: return "cpu";
    case BackendKind::cuda: return "cuda";
  }
  return "?";
}

BackendKind parse_backend_kind(const std::string& s, const char* what) {
  if (s == "cpu") return BackendKind::cpu;
  if (s == "cuda") return BackendKind::cuda;
  throw InputError(fmt::format("{}: '{}' is not cpu or cuda", what, s));
}

CudaOptions::Mode parse_cuda_mode(const std::string& s, const char* what) {
  if (s == "eager") return CudaOptions::Mode::eager;
  if (s == "graph") return CudaOptions::Mode::graph;
  throw InputError(fmt::format("{}: '{}' is not eager or graph", what, s));
}

std::unique_ptr<Backend> make_backend(const BackendChoice& choice, const Plan& plan, const ProcessSpec& spec) {
  switch (choice.backend) {
    case BackendKind::cpu: return make_cpu_backend(plan, spec, choice.cpu_isa);
    case BackendKind::cuda: {
      if (const std::size_t at = plan.first_hosted_stage())
        throw InputError(fmt::format("--backend cuda: chain stage {} '{}' is hosted code, which runs on the CPU only "
                                     "(use --backend cpu)",
                                     at, plan.stages[at - 1].spec.text));
      std::string err;
      auto b = make_cuda_backend(choice.cuda, lay_out_plan(plan, spec.channels), spec, &err);
      if (!b) throw RuntimeFailure(fmt::format("--backend cuda: {}", err.empty() ? "unavailable" : err));
      return b;
    }
  }
  throw RuntimeFailure("make_backend: unknown backend kind");
}

}  // namespace chunkscope
