#include "rt/cpu_simd.hpp"

#include <cstring>

namespace chunkscope {

const char* cpu_isa_name(CpuIsa isa) noexcept {
  switch (isa) {
    case CpuIsa::scalar: return "scalar";
    case CpuIsa::sse4: return "sse4";
    case CpuIsa::avx2: return "avx2";
    case CpuIsa::avx512: return "avx512";
  }
  return "?";
}

bool parse_cpu_isa(const char* text, CpuIsa* out) noexcept {
  for (int i = 0; i < kCpuIsaCount; ++i) {
    const auto isa = static_cast<CpuIsa>(i);
    if (text && std::strcmp(text, cpu_isa_name(isa)) == 0) {
      if (out) *out = isa;
      return true;
    }
  }
  return false;
}

const char* cpu_isa_requires(CpuIsa isa) noexcept {
  switch (isa) {
    case CpuIsa::scalar: return "";
    case CpuIsa::sse4: return "sse4.2";
    case CpuIsa::avx2: return "avx2";
    case CpuIsa::avx512: return "avx512f avx512vl avx512dq avx512bw";
  }
  return "";
}

bool cpu_isa_supported(CpuIsa isa) noexcept {
  if (isa == CpuIsa::scalar) return true;
#if defined(CHUNKSCOPE_X86_SIMD)
  __builtin_cpu_init();
  switch (isa) {
    case CpuIsa::sse4: return __builtin_cpu_supports("sse4.2");
    case CpuIsa::avx2: return __builtin_cpu_supports("avx2");
    case CpuIsa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
    case CpuIsa::scalar: return true;
  }
#endif
  return false;
}

CpuIsa cpu_isa_best() noexcept {
  for (int i = kCpuIsaCount - 1; i > 0; --i)
    if (cpu_isa_supported(static_cast<CpuIsa>(i))) return static_cast<CpuIsa>(i);
  return CpuIsa::scalar;
}

namespace {
int vector_bytes(CpuIsa isa) noexcept {
  switch (isa) {
    case CpuIsa::scalar: return 0;
    case CpuIsa::sse4: return 16;
    case CpuIsa::avx2: return 32;
    case CpuIsa::avx512: return 64;
  }
  return 0;
}
}  // namespace

// The wavefront is bound by the latency of one section's recurrence (four dependent
// operations a step) for as long as the core has room for the step's vectors; past about
// three 256-bit vectors a step, wider vectors win. Narrow cascades also fill fewer idle
// slots on narrower vectors (shorter ramps at the chunk's ends).
CpuIsa cpu_isa_auto(int sample_bytes, int channels, int sections) noexcept {
  const CpuIsa best = cpu_isa_best();
  if (best == CpuIsa::avx512 && cpu_isa_supported(CpuIsa::avx2) &&
      cascade_layout(CpuIsa::avx2, sample_bytes, channels) == CascadeLayout::wavefront) {
    const int per_vector = vector_bytes(CpuIsa::avx2) / sample_bytes / channels;  // sections a vector holds
    if (sections <= 3 * per_vector) return CpuIsa::avx2;
  }
  return best;
}

const char* cascade_layout_name(CascadeLayout l) noexcept {
  switch (l) {
    case CascadeLayout::scalar: return "scalar";
    case CascadeLayout::wavefront: return "wavefront";
    case CascadeLayout::channel_parallel: return "channel-parallel";
  }
  return "?";
}

CascadeLayout cascade_layout(CpuIsa isa, int sample_bytes, int channels) noexcept {
  if (isa == CpuIsa::scalar) return CascadeLayout::scalar;
  const int lanes = sample_bytes > 0 ? vector_bytes(isa) / sample_bytes : 0;
  const bool wave_count = channels == 1 || channels == 2 || channels == 3 || channels == 4 || channels == 6 ||
                          channels == 8;
  return wave_count && channels < lanes ? CascadeLayout::wavefront : CascadeLayout::channel_parallel;
}

}  // namespace chunkscope
