#pragma once
// Instruction sets of the CPU backend's cascade, chosen at run time by the CPU's features,
// and the kernels each one provides. The default build stays portable: every vector
// kernel lives in its own translation unit compiled for its instruction set alone
// (rt/cpu_simd_<isa>.cpp), and is only called after the CPU has been checked for it.
//
// Layouts (docs/profiler.md, "CPU kernels"):
//   wavefront         every (section, channel) pair of a cascade gets its own lane; at
//                     step k section s works on frame k - s and its output moves on to
//                     the next section's lanes to become its input, so all sections run
//                     at once. For 1, 2, 3, 4, 6 or 8 channels fewer than the lanes, one
//                     pass; for more (even counts), one pass per block of 8, 4 or 2
//                     channels (wave_block()) when the cascade fills two vectors or more. Cascades longer than a group of vectors
//                     holds run as consecutive groups, each over the whole chunk.
//   channel-parallel  otherwise: frame -> section -> channel with whole vectors of
//                     channels.
//   scalar            the reference loop as the baseline compiler builds it.
// Every layout performs the same multiplies and adds in the same order as the scalar
// reference (no fused multiply-add), so outputs are bit-identical.
//
// This header declares only: it is included by the instruction-set units, which must not
// instantiate anything with external linkage.
#include <cstdint>

namespace chunkscope {

enum class CpuIsa : std::uint8_t { scalar, sse4, avx2, avx512 };
inline constexpr int kCpuIsaCount = 4;

enum class CascadeLayout : std::uint8_t { scalar, wavefront, channel_parallel };

/// "scalar", "sse4", "avx2", "avx512". [no-alloc, no-block]
const char* cpu_isa_name(CpuIsa isa) noexcept;
/// Parses one of cpu_isa_name()'s names; false if none. [no-alloc, no-block]
bool parse_cpu_isa(const char* text, CpuIsa* out) noexcept;
/// Compiled into this build and runnable on this CPU. [no-alloc, no-block]
bool cpu_isa_supported(CpuIsa isa) noexcept;
/// The widest supported instruction set (scalar when none). [no-alloc, no-block]
CpuIsa cpu_isa_best() noexcept;
/// The features an instruction set needs, as the CPU names them ("avx512f avx512vl ...").
/// [no-alloc, no-block]
const char* cpu_isa_requires(CpuIsa isa) noexcept;

/// The instruction set `auto` runs a chain on, for its longest cascade (`sections`): of the
/// supported vector sets whose wavefront takes the channels, the one needing the fewest
/// passes over a chunk (blocks x groups); on a tie AVX2 when it needs at most three vectors
/// a step, else the widest. Without any wavefront (channel-parallel), AVX2 if supported,
/// else the widest.
/// [no-alloc, no-block]
CpuIsa cpu_isa_auto(int sample_bytes, int channels, int sections) noexcept;

/// "scalar", "wavefront", "channel-parallel". [no-alloc, no-block]
const char* cascade_layout_name(CascadeLayout l) noexcept;
/// The layout `isa` runs a cascade of `sections` sections over `channels` channels of
/// `sample_bytes`-byte samples in. [no-alloc, no-block]
CascadeLayout cascade_layout(CpuIsa isa, int sample_bytes, int channels, int sections) noexcept;

namespace simd {

/// At most this many vectors hold one wavefront group of sections.
inline constexpr int kWaveMaxVectors = 4;

namespace {  // internal to every unit that uses it: the instruction-set units build their own

/// The channels one wavefront pass takes on vectors of `lanes` lanes: all of them when
/// they are 1, 2, 3, 4, 6 or 8 and fewer than the lanes; else a block of the widest of 8,
/// 4 and 2 channels that is fewer than the lanes and divides the count; else 0 (no
/// wavefront: channel-parallel).
constexpr int wave_block(int lanes, int channels) {
  if ((channels == 1 || channels == 2 || channels == 3 || channels == 4 || channels == 6 || channels == 8) &&
      channels < lanes)
    return channels;
  for (int b = 8; b >= 2; b /= 2)
    if (b < lanes && channels % b == 0) return b;
  return 0;
}

/// wave_block() for a cascade of `sections`, or 0 where blocks do not pay: a block's pass
/// with a single vector a step is bound by the recurrence's latency, where the
/// channel-parallel loop has the other channels' work to overlap.
constexpr int wave_block_for(int lanes, int channels, int sections) {
  const int b = wave_block(lanes, channels);
  if (b == 0 || b == channels) return b;
  return sections > lanes / b ? b : 0;
}

}  // namespace

/// One cascade over a chunk in place: `frames` interleaved frames of `channels` channels,
/// `nsec` sections of {b0, b1, b2, a1, a2} at `coef`, state[section][s1|s2][channel].
template <class T>
using CascadeFn = void (*)(T* data, int frames, int channels, const T* coef, int nsec, T* state) noexcept;

/// The cascade kernel of one instruction set, per sample type: each call lays its cascade
/// out as cascade_layout() says for its channels and sections.
struct IsaKernels {
  CascadeFn<float> f32;
  CascadeFn<double> f64;
};

#if defined(CHUNKSCOPE_X86_SIMD)
extern const IsaKernels kernels_sse4;
extern const IsaKernels kernels_avx2;
extern const IsaKernels kernels_avx512;
#endif

}  // namespace simd
}  // namespace chunkscope
