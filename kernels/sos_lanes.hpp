#pragma once
// The fused SOS-cascade kernel's lane logic, shared by the CUDA kernel
// (kernels/sos_kernels.cu) and a lockstep emulation of one warp on the CPU
// (EmulatedWarp below, run by tests/test_warp_emulation.cpp). Plain C++ when not compiled
// by nvcc: no CUDA header is needed. [no-alloc, no-block] Nothing here allocates or blocks.
//
// Design: one warp filters one channel. For each pass of up to 32 sections, lane l owns
// section (pass * 32 + l): its coefficients and its state (s1, s2) live in the lane's
// registers (LaneRegs) for the pass. Time advances in steps; at step t, lane l filters
// sample block (t - l) of the chunk (B consecutive samples). Lane 0 takes its input from
// the chunk, the other lanes take the block that lane l-1 produced at step t-1 (a shuffle
// up by one lane), and the last lane of the pass writes its block back in place. Input is
// prefetched a 32-sample window ahead by the whole warp (one sample per lane) and handed
// to lane 0 by a shuffle, so the recursion never waits on a global load; writes trail
// reads by at least one step, so in-place filtering is safe. Passes are separated by a
// warp sync, which orders the last lane's writes before the next pass's reads.
//
// The warp is a template parameter with four operations (the "Warp" interface):
//   each(f)              f(LaneRegs&) on every lane (one lane per thread on the device,
//                        lane 0 to 31 in turn in the emulation)
//   shfl_up(get, put)    put(lane l, get(lane l-1)); lane 0 gets its own value
//                        (__shfl_up_sync(full mask, v, 1))
//   shfl(get, src, put)  put(lane l, get(lane src & 31)) (__shfl_sync(full mask, v, src))
//   sync()               __syncwarp()
// Code between these operations touches one lane's registers only; values computed outside
// each() (the step, the window, the pass bounds) are the same on every lane, so the
// emulation keeps one copy of them. This is what makes a lockstep emulation exact: on the
// device no lane reads another lane's registers except through a shuffle, and within one
// operation no lane reads memory another lane writes.
#include "kernels/cuda_plan.hpp"
#include "rt/sos_math.hpp"  // CS_HD, biquad_step

#if defined(__CUDA_ARCH__)  // the device pass of nvcc; its host pass and g++ do without
#define CS_UNROLL _Pragma("unroll")
#else
#define CS_UNROLL
#endif

namespace chunkscope::sos_lanes {

inline constexpr int kLanes = cuda_plan::kWarpLanes;  // one warp
inline constexpr int kWindow = 32;                     // samples per prefetch window (one per lane)
static_assert(kWindow == kLanes, "a prefetch window holds one sample per lane");

/// Whether a block of B samples per step fits the kernel: a power of two that divides the
/// prefetch window, so a step's block never straddles two windows. [no-alloc, no-block]
/// [no-alloc, no-block]
constexpr bool supported_block(int b) noexcept { return b >= 1 && b <= kWindow && (kWindow % b) == 0; }

/// Whether a chunk of `frames` needs the per-sample tail guards (its last block is short).
/// When false the kernel runs the uniform full-block path. [no-alloc, no-block]
/// [no-alloc, no-block]
constexpr bool needs_tail_guards(int frames, int b) noexcept { return b > 0 && frames % b != 0; }

/// One lane's registers during a pass.
template <class T, int B>
struct LaneRegs {
  int lane = 0;
  T b0{}, b1{}, b2{}, a1{}, a2{};  // the owned section's coefficients (zero on idle lanes)
  T s1{}, s2{};                    // its state
  T win_cur{}, win_next{};         // this lane's sample of the current and the next prefetch window
  T x[B] = {};                     // the block this lane filters at this step
  T y[B] = {};                     // the block it produced at the previous step
};

/// Sample `frame` of channel `ch` of interleaved [frame][channel] data, or 0 past the
/// chunk's end. [no-alloc, no-block]
/// [no-alloc, no-block]
template <class T>
CS_HD T load_sample(const T* data, int frame, int frames, int channels, int ch) {
  return frame < frames ? data[static_cast<long long>(frame) * channels + ch] : T(0);
}

/// One pass over sections [sec0, sec0 + 32) of the cascade for channel `ch`, in place on
/// `data`; the pass's sections' state read at the start and written back at the end.
/// `Tail`: keep the per-sample guards for a short last block (needs_tail_guards); without
/// them every block must be full. [no-alloc, no-block] (the warp sync at the end of the
/// pass waits only for the warp's own lanes)
template <class T, int B, bool Tail, class Warp>
CS_HD void cascade_pass(Warp& w, T* data, int frames, int channels, int ch, const T* coef, int sections, T* state,
                        int sec0) {
  static_assert(B >= 1 && B <= kWindow && (kWindow % B) == 0, "a step's block must fit one prefetch window");
  using R = LaneRegs<T, B>;
  const int lanes = sections - sec0 < kLanes ? sections - sec0 : kLanes;  // sections in this pass
  const int nblocks = (frames + B - 1) / B;

  // Lane l takes section sec0 + l (idle lanes keep zeros) and the first two windows.
  w.each([&](R& r) {
    if (r.lane < lanes) {
      const int s = sec0 + r.lane;
      const T* c = coef + 5 * s;
      r.b0 = c[0];
      r.b1 = c[1];
      r.b2 = c[2];
      r.a1 = c[3];
      r.a2 = c[4];
      r.s1 = state[static_cast<long long>(2 * s) * channels + ch];
      r.s2 = state[static_cast<long long>(2 * s + 1) * channels + ch];
    }
    r.win_cur = load_sample(data, r.lane, frames, channels, ch);
    r.win_next = load_sample(data, kWindow + r.lane, frames, channels, ch);
    CS_UNROLL
    for (int i = 0; i < B; ++i) r.y[i] = T(0);
  });
  int win = 0;

  const int steps = nblocks + lanes - 1;
  for (int t = 0; t < steps; ++t) {
    // Lane l receives the block lane l-1 produced in the previous step.
    CS_UNROLL
    for (int i = 0; i < B; ++i) w.shfl_up([i](const R& r) { return r.y[i]; }, [i](R& r, T v) { r.x[i] = v; });

    // Lane 0 reads block t from the prefetch window, rotating it when block t enters the
    // next window (the load each lane issues now is needed one window later).
    const int first = t * B;
    if ((first >> 5) != win) {  // first / kWindow
      win = first >> 5;
      w.each([&](R& r) {
        r.win_cur = r.win_next;
        r.win_next = load_sample(data, kWindow * (win + 1) + r.lane, frames, channels, ch);
      });
    }
    CS_UNROLL
    for (int i = 0; i < B; ++i)
      w.shfl([](const R& r) { return r.win_cur; }, (first + i) & (kWindow - 1), [i](R& r, T v) {
        if (r.lane == 0) r.x[i] = v;
      });

    // Lane l filters block t - l while it is inside the chunk; the pass's last lane stores it.
    w.each([&](R& r) {
      const int blk = t - r.lane;
      if (r.lane < lanes && blk >= 0 && blk < nblocks) {
        const int n0 = blk * B;
        CS_UNROLL
        for (int i = 0; i < B; ++i)
          if (!Tail || n0 + i < frames) r.y[i] = biquad_step(r.b0, r.b1, r.b2, r.a1, r.a2, r.s1, r.s2, r.x[i]);
        if (r.lane == lanes - 1) {
          CS_UNROLL
          for (int i = 0; i < B; ++i)
            if (!Tail || n0 + i < frames) data[static_cast<long long>(n0 + i) * channels + ch] = r.y[i];
        }
      }
    });
  }

  w.each([&](R& r) {
    if (r.lane < lanes) {
      const int s = sec0 + r.lane;
      state[static_cast<long long>(2 * s) * channels + ch] = r.s1;
      state[static_cast<long long>(2 * s + 1) * channels + ch] = r.s2;
    }
  });
  w.sync();  // this pass's writes before the next pass's reads
}

/// The whole cascade of `sections` for channel `ch`: passes of up to 32 sections, in place.
/// The layout of data, coef and state is launch_sos_cascade's (kernels/sos_kernels.cuh).
/// [no-alloc, no-block]
template <class T, int B, bool Tail, class Warp>
CS_HD void cascade_channel(Warp& w, T* data, int frames, int channels, int ch, const T* coef, int sections,
                           T* state) {
  for (int sec0 = 0; sec0 < sections; sec0 += kLanes)
    cascade_pass<T, B, Tail>(w, data, frames, channels, ch, coef, sections, state, sec0);
}

// ---------------------------------------------------------------- CPU lockstep emulation

#if !defined(__CUDA_ARCH__)
/// 32 lanes run in lockstep on the CPU: each() visits lane 0 to 31 in turn, a shuffle reads
/// every lane's value before it writes any. Host code; no allocation (the lanes'
/// registers are members), no blocking.
template <class T, int B>
class EmulatedWarp {
 public:
  using R = LaneRegs<T, B>;

  /// [no-alloc, no-block]
  /// [no-alloc, no-block]
  EmulatedWarp() noexcept {
    for (int l = 0; l < kLanes; ++l) regs_[l].lane = l;
  }
  /// f(lane) on every lane. [no-alloc, no-block]
  /// [no-alloc, no-block]
  template <class F>
  void each(F&& f) {
    for (auto& r : regs_) f(r);
  }
  /// As __shfl_up_sync(full, v, 1). [no-alloc, no-block]
  /// [no-alloc, no-block]
  template <class Get, class Put>
  void shfl_up(Get&& get, Put&& put) {
    T v[kLanes];
    for (int l = 0; l < kLanes; ++l) v[l] = get(static_cast<const R&>(regs_[l]));
    for (int l = 0; l < kLanes; ++l) put(regs_[l], v[l > 0 ? l - 1 : l]);
  }
  /// As __shfl_sync(full, v, src) with the same src on every lane. [no-alloc, no-block]
  /// [no-alloc, no-block]
  template <class Get, class Put>
  void shfl(Get&& get, int src, Put&& put) {
    const T v = get(static_cast<const R&>(regs_[src & (kLanes - 1)]));
    for (auto& r : regs_) put(r, v);
  }
  /// Lockstep lanes are always in sync: nothing to wait for. [no-alloc, no-block]
  /// [no-alloc, no-block]
  void sync() noexcept {}

 private:
  R regs_[kLanes];
};

/// Runs what the kernel's launch does (one warp per channel, in turn) through EmulatedWarp.
/// Host code. [no-alloc, no-block]
template <class T, int B>
void emulate_cascade(T* data, int frames, int channels, const T* coef, int sections, T* state, bool tail_guards) {
  for (int ch = 0; ch < channels; ++ch) {
    EmulatedWarp<T, B> w;
    if (tail_guards)
      cascade_channel<T, B, true>(w, data, frames, channels, ch, coef, sections, state);
    else
      cascade_channel<T, B, false>(w, data, frames, channels, ch, coef, sections, state);
  }
}
#endif

}  // namespace chunkscope::sos_lanes
