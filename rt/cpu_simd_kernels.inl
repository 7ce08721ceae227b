// The CPU backend's vector cascade kernels, written once with GCC vector extensions and
// compiled once per instruction set: rt/cpu_simd_<isa>.cpp defines CS_SIMD_NS (the
// namespace), CS_SIMD_TABLE (the exported table) and CS_VEC_BYTES (the vector width), and
// includes this file. Everything here has internal linkage, so no function built for a
// wider instruction set can stand in for a baseline one at link time; only the table is
// exported. Arithmetic: the scalar reference's, operation for operation
// (y = b0*x + s1; s1 = b1*x - a1*y + s2; s2 = b2*x - a2*y), never contracted.
// [no-alloc, no-block] throughout.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "rt/cpu_simd.hpp"

#if !defined(CS_SIMD_NS) || !defined(CS_SIMD_TABLE) || !defined(CS_VEC_BYTES)
#error "define CS_SIMD_NS, CS_SIMD_TABLE and CS_VEC_BYTES before including cpu_simd_kernels.inl"
#endif

namespace chunkscope::simd {
namespace CS_SIMD_NS {
namespace {

template <class T>
struct Vec;
template <>
struct Vec<float> {
  typedef float V __attribute__((vector_size(CS_VEC_BYTES)));
  typedef std::int32_t I;
  typedef std::int32_t M __attribute__((vector_size(CS_VEC_BYTES)));
  static constexpr int W = CS_VEC_BYTES / 4;
};
template <>
struct Vec<double> {
  typedef double V __attribute__((vector_size(CS_VEC_BYTES)));
  typedef std::int64_t I;
  typedef std::int64_t M __attribute__((vector_size(CS_VEC_BYTES)));
  static constexpr int W = CS_VEC_BYTES / 8;
};


// ---- channel-parallel: frame -> section -> channel, the reference loop's order ----------

template <class T, int C>
void parallel_fixed(T* __restrict data, int frames, int channels_rt, const T* __restrict coef, int nsec,
                    T* __restrict state) noexcept {
  const int channels = C > 0 ? C : channels_rt;
  for (int f = 0; f < frames; ++f) {
    T* __restrict x = data + static_cast<std::ptrdiff_t>(f) * channels;
    for (int s = 0; s < nsec; ++s) {
      const T* c = coef + 5 * s;
      const T b0 = c[0], b1 = c[1], b2 = c[2], a1 = c[3], a2 = c[4];
      T* __restrict s1 = state + static_cast<std::ptrdiff_t>(2 * s) * channels;
      T* __restrict s2 = s1 + channels;
      for (int ch = 0; ch < channels; ++ch) {
        const T in = x[ch];
        const T y = b0 * in + s1[ch];
        s1[ch] = b1 * in - a1 * y + s2[ch];
        s2[ch] = b2 * in - a2 * y;
        x[ch] = y;
      }
    }
  }
}

template <class T>
void parallel(T* data, int frames, int channels, const T* coef, int nsec, T* state) noexcept {
  switch (channels) {
    case 4: parallel_fixed<T, 4>(data, frames, 4, coef, nsec, state); break;
    case 8: parallel_fixed<T, 8>(data, frames, 8, coef, nsec, state); break;
    case 16: parallel_fixed<T, 16>(data, frames, 16, coef, nsec, state); break;
    case 32: parallel_fixed<T, 32>(data, frames, 32, coef, nsec, state); break;
    case 64: parallel_fixed<T, 64>(data, frames, 64, coef, nsec, state); break;
    default: parallel_fixed<T, 0>(data, frames, channels, coef, nsec, state); break;
  }
}

// ---- wavefront ---------------------------------------------------------------------------
//
// A group of G sections in K vectors of W lanes. Each vector holds P = W / C positions of C
// channel lanes (lanes above P * C, when C does not divide W, are idle); slot s, the
// section that handles frame k - s at step k, sits in vector s % K at position s / K. A
// slot's input is then the previous slot's output of the previous step, found in the same
// lanes of the vector below, except for vector 0, whose slots take theirs one position
// down in the top vector (and slot 0 the new input frame): one shuffle per step. Of the
// S = K * P slots, those above the group's sections pass their input through unchanged, so
// the last slot (the top position of the top vector) always carries the group's output,
// S - 1 steps behind its input. A slot's state changes only while 0 <= k - s < frames: the masked ramp
// steps at either end of the chunk.

// Lanes moved up one position (C lanes), the first C lanes of `in` entering at the bottom.
template <class V, int W, int C, int... i>
inline V shift_in(V top, V in, std::integer_sequence<int, i...>) noexcept {
  return __builtin_shufflevector(top, in, (i < C ? W + i : i - C)...);
}

template <class T, int C, int K>
struct Wave {
  using V = typename Vec<T>::V;
  using M = typename Vec<T>::M;
  using I = typename Vec<T>::I;
  static constexpr int W = Vec<T>::W;
  static constexpr int P = W / C;  // positions per vector
  static constexpr int S = K * P;  // slots
  static_assert(C < W && P >= 1, "wavefront: fewer channels than lanes");
  using Lanes = std::make_integer_sequence<int, W>;

  V b0[K], b1[K], b2[K], a1[K], a2[K], s1[K], s2[K], y[K];
  M slot[K], pass[K];

  // The slot of lane i of vector j (S and above: idle lanes).
  static constexpr int slot_of(int j, int i) { return i / C < P ? (i / C) * K + j : S + 1; }

  // Lanes are filled through plain arrays, so that the vectors themselves are only ever
  // indexed by constants and stay in registers across the steps. [no-alloc, no-block]
  inline void load(const T* coef, int G, const T* state, int cs) noexcept {
    T lane[7][K * W];
    I lslot[K * W], lpass[K * W];
    for (int j = 0; j < K; ++j)
      for (int i = 0; i < W; ++i) {
        const int g = j * W + i, s = slot_of(j, i), c = i % C;
        const bool real = s < G;
        for (int q = 0; q < 5; ++q) lane[q][g] = real ? coef[5 * s + q] : T(0);
        lane[5][g] = real ? state[2 * s * cs + c] : T(0);
        lane[6][g] = real ? state[(2 * s + 1) * cs + c] : T(0);
        lslot[g] = static_cast<I>(s);
        lpass[g] = real ? 0 : -1;
      }
#pragma GCC unroll 8
    for (int j = 0; j < K; ++j) {
      __builtin_memcpy(&b0[j], lane[0] + j * W, sizeof(V));
      __builtin_memcpy(&b1[j], lane[1] + j * W, sizeof(V));
      __builtin_memcpy(&b2[j], lane[2] + j * W, sizeof(V));
      __builtin_memcpy(&a1[j], lane[3] + j * W, sizeof(V));
      __builtin_memcpy(&a2[j], lane[4] + j * W, sizeof(V));
      __builtin_memcpy(&s1[j], lane[5] + j * W, sizeof(V));
      __builtin_memcpy(&s2[j], lane[6] + j * W, sizeof(V));
      __builtin_memcpy(&slot[j], lslot + j * W, sizeof(M));
      __builtin_memcpy(&pass[j], lpass + j * W, sizeof(M));
      y[j] = V{};
    }
  }
  // [no-alloc, no-block]
  inline void store(int G, T* state, int cs) const noexcept {
    T lane[2][K * W];
#pragma GCC unroll 8
    for (int j = 0; j < K; ++j) {
      __builtin_memcpy(lane[0] + j * W, &s1[j], sizeof(V));
      __builtin_memcpy(lane[1] + j * W, &s2[j], sizeof(V));
    }
    for (int j = 0; j < K; ++j)
      for (int i = 0; i < W; ++i) {
        const int s = slot_of(j, i), c = i % C;
        if (s < G) {
          state[2 * s * cs + c] = lane[0][j * W + i];
          state[(2 * s + 1) * cs + c] = lane[1][j * W + i];
        }
      }
  }

  // One step: every slot takes one sample. `Masked`: only slots with 0 <= k - s < frames
  // change state.
  template <bool Masked>
  inline void step(V in, int k, int frames) noexcept {
    V x[K];
    x[0] = shift_in<V, W, C>(y[K - 1], in, Lanes{});
#pragma GCC unroll 8
    for (int j = 1; j < K; ++j) x[j] = y[j - 1];
#pragma GCC unroll 8
    for (int j = 0; j < K; ++j) {
      const V yn = b0[j] * x[j] + s1[j];
      const V s1n = b1[j] * x[j] - a1[j] * yn + s2[j];
      const V s2n = b2[j] * x[j] - a2[j] * yn;
      if constexpr (Masked) {
        const M d = k - slot[j];
        const M act = (d >= 0) & (d < frames);
        s1[j] = act ? s1n : s1[j];
        s2[j] = act ? s2n : s2[j];
      } else {
        s1[j] = s1n;
        s2[j] = s2n;
      }
      y[j] = pass[j] ? x[j] : yn;
    }
  }

  template <int... c>
  inline void put(T* out, std::integer_sequence<int, c...>) const noexcept {
    ((out[c] = y[K - 1][(P - 1) * C + c]), ...);
  }
  // The last slot's lanes: the group's output for frame k - (S - 1).
  inline void output(T* out) const noexcept { put(out, std::make_integer_sequence<int, C>{}); }

  static inline V gather(const T* p) noexcept {
    V v{};
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) v[c] = p[c];
    return v;
  }
  static inline V load_vec(const T* p) noexcept {
    V v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }

  // The group over the whole chunk, in place: C channels of frames `stride` values apart,
  // state[section][s1|s2][channel] with `cs` channels a section. `readable`: values that
  // may be read from `data` on (whole-vector loads go no further). [no-alloc, no-block]
  static void run(T* __restrict data, int frames, int stride, long readable, const T* __restrict coef, int G,
                  T* __restrict state, int cs) noexcept {
    Wave w{};
    w.load(coef, G, state, cs);
    const int total = frames + S - 1;
    const int vec_end = readable >= W ? static_cast<int>((readable - W) / stride + 1) : 0;
    auto at = [&](int f) { return data + static_cast<std::ptrdiff_t>(f) * stride; };
    int k = 0;
    for (; k < S - 1; ++k)  // slots still starting (no output yet)
      w.template step<true>(k < frames ? gather(at(k)) : V{}, k, frames);
    const int full_vec_end = vec_end < frames ? vec_end : frames;
    for (; k < full_vec_end; ++k) {
      w.template step<false>(load_vec(at(k)), k, frames);
      w.output(at(k - (S - 1)));
    }
    for (; k < frames; ++k) {
      w.template step<false>(gather(at(k)), k, frames);
      w.output(at(k - (S - 1)));
    }
    for (; k < total; ++k) {  // slots finishing
      w.template step<true>(V{}, k, frames);
      w.output(at(k - (S - 1)));
    }
    w.store(G, state, cs);
  }
};

// Sections per group with K vectors.
template <class T, int C>
constexpr int slots(int K) {
  return K * (Vec<T>::W / C);
}

// The cascade as consecutive groups, each in as few vectors as hold it, over C channels of
// frames `stride` values apart (state: `stride` channels a section).
template <class T, int C>
void wave_channels(T* data, int frames, int stride, long readable, const T* coef, int nsec, T* state) noexcept {
  constexpr int kMaxGroup = slots<T, C>(kWaveMaxVectors);
  for (int s0 = 0; s0 < nsec; s0 += kMaxGroup) {
    const int G = nsec - s0 < kMaxGroup ? nsec - s0 : kMaxGroup;
    const T* cf = coef + 5 * s0;
    T* st = state + 2 * s0 * stride;
    if (G <= slots<T, C>(1))
      Wave<T, C, 1>::run(data, frames, stride, readable, cf, G, st, stride);
    else if (G <= slots<T, C>(2))
      Wave<T, C, 2>::run(data, frames, stride, readable, cf, G, st, stride);
    else if (G <= slots<T, C>(3))
      Wave<T, C, 3>::run(data, frames, stride, readable, cf, G, st, stride);
    else
      Wave<T, C, 4>::run(data, frames, stride, readable, cf, G, st, stride);
  }
}

// All channels as blocks of B, each block a wavefront pass of its own.
template <class T, int B>
void wave_blocks(T* data, int frames, int channels, const T* coef, int nsec, T* state) noexcept {
  const long n = static_cast<long>(frames) * channels;
  for (int c0 = 0; c0 < channels; c0 += B)
    wave_channels<T, B>(data + c0, frames, channels, n - c0, coef, nsec, state + c0);
}

template <class T, int C>
void wave_direct(T* data, int frames, const T* coef, int nsec, T* state) noexcept {
  if constexpr (C < Vec<T>::W)
    wave_channels<T, C>(data, frames, C, static_cast<long>(frames) * C, coef, nsec, state);
}

// The layout cascade_layout() describes (wave_block_for()): the channels in one wavefront,
// or in blocks of 8, 4 or 2 channels, or channel-parallel.
template <class T>
void cascade(T* data, int frames, int channels, const T* coef, int nsec, T* state) noexcept {
  if (frames <= 0 || nsec <= 0) return;
  constexpr int W = Vec<T>::W;
  const int block = wave_block_for(W, channels, nsec);
  if (block == channels) {
    switch (channels) {
      case 1: wave_direct<T, 1>(data, frames, coef, nsec, state); return;
      case 2: wave_direct<T, 2>(data, frames, coef, nsec, state); return;
      case 3: wave_direct<T, 3>(data, frames, coef, nsec, state); return;
      case 4: wave_direct<T, 4>(data, frames, coef, nsec, state); return;
      case 6: wave_direct<T, 6>(data, frames, coef, nsec, state); return;
      case 8: wave_direct<T, 8>(data, frames, coef, nsec, state); return;
      default: break;
    }
  } else if constexpr (W > 8) {
    if (block == 8) return wave_blocks<T, 8>(data, frames, channels, coef, nsec, state);
  }
  if constexpr (W > 4)
    if (block == 4) return wave_blocks<T, 4>(data, frames, channels, coef, nsec, state);
  if constexpr (W > 2)
    if (block == 2) return wave_blocks<T, 2>(data, frames, channels, coef, nsec, state);
  parallel<T>(data, frames, channels, coef, nsec, state);
}

}  // namespace
}  // namespace CS_SIMD_NS

extern const IsaKernels CS_SIMD_TABLE;
const IsaKernels CS_SIMD_TABLE = {&CS_SIMD_NS::cascade<float>, &CS_SIMD_NS::cascade<double>};

}  // namespace chunkscope::simd
