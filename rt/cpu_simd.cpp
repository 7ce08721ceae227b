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

// Wavefront passes over a chunk, and vectors a step, for `sections` sections.
struct WaveCost {
  int passes = 0, vectors = 0;
};
WaveCost wave_cost(CpuIsa isa, int sample_bytes, int channels, int sections) noexcept {
  const int lanes = vector_bytes(isa) / sample_bytes;
  const int block = simd::wave_block_for(lanes, channels, sections);
  if (block == 0) return {};
  const int per_vector = lanes / block;  // sections a vector holds
  const int group = simd::kWaveMaxVectors * per_vector;
  const int groups = sections < 1 ? 1 : (sections + group - 1) / group;
  const int in_group = sections < group ? (sections < 1 ? 1 : sections) : group;
  return {groups * (channels / block), (in_group + per_vector - 1) / per_vector};
}

// The wavefront is bound by the latency of one section's recurrence (four dependent
// operations a step) while the core has room for the step's vectors, so what counts most
// is how many passes a chunk takes; at one pass each, AVX2's shorter shuffles win while
// its step holds at most three vectors.
CpuIsa cpu_isa_auto(int sample_bytes, int channels, int sections) noexcept {
  CpuIsa pick = CpuIsa::scalar;
  WaveCost best;
  for (int i = kCpuIsaCount - 1; i > 0; --i) {  // widest first: it wins ties
    const auto isa = static_cast<CpuIsa>(i);
    if (!cpu_isa_supported(isa)) continue;
    const WaveCost c = wave_cost(isa, sample_bytes, channels, sections);
    if (c.passes == 0) continue;
    const bool avx2_tie = isa == CpuIsa::avx2 && c.passes == best.passes && c.vectors <= 3;
    if (best.passes == 0 || c.passes < best.passes || avx2_tie) {
      pick = isa;
      best = c;
    }
  }
  if (best.passes > 0) return pick;
  // channel-parallel: state goes through memory every frame, where AVX-512's wider
  // operations have shown no gain over AVX2's
  return cpu_isa_supported(CpuIsa::avx2) ? CpuIsa::avx2 : cpu_isa_best();
}

const char* cascade_layout_name(CascadeLayout l) noexcept {
  switch (l) {
    case CascadeLayout::scalar: return "scalar";
    case CascadeLayout::wavefront: return "wavefront";
    case CascadeLayout::channel_parallel: return "channel-parallel";
  }
  return "?";
}

CascadeLayout cascade_layout(CpuIsa isa, int sample_bytes, int channels, int sections) noexcept {
  if (isa == CpuIsa::scalar) return CascadeLayout::scalar;
  const int lanes = sample_bytes > 0 ? vector_bytes(isa) / sample_bytes : 0;
  return simd::wave_block_for(lanes, channels, sections) > 0 ? CascadeLayout::wavefront
                                                             : CascadeLayout::channel_parallel;
}

}  // namespace chunkscope
