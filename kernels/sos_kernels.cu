// The fused SOS-cascade kernel. See kernels/cuda_plan.hpp for the layout and why.
//
// Design: block b is channel b, one warp. For each pass of up to 32 sections, lane l owns
// section (pass * 32 + l): its coefficients and its state (s1, s2) live in registers for
// the pass. Time advances in steps; at step t, lane l filters sample block (t - l) of the
// chunk (B consecutive samples). Lane 0 takes its input from the chunk, the other lanes
// take the block that lane l-1 produced at step t-1 (a shuffle), and the last lane of the
// pass writes its block back in place. Input is prefetched a 32-sample window ahead by the
// whole warp (one sample per lane), so the recursion never waits on a global load; writes
// trail reads by at least one step, so in-place filtering is safe. Passes are separated by
// __syncwarp(), which orders the last lane's writes before the next pass's reads.
//
// The per-sample arithmetic is biquad_step from rt/sos_math.hpp, the function the CPU
// backend runs. The kernels are compiled with --fmad=false (CMakeLists.txt), so every
// multiply and add rounds separately as in the CPU backend, and -ftz=true, which flushes
// single-precision subnormals as the CPU backend's FTZ/DAZ mode does.
#include "kernels/sos_kernels.cuh"
#include "rt/sos_math.hpp"

namespace chunkscope {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;

// Sample `frame` of channel `ch`, or 0 past the chunk's end. Device code.
template <class T>
__device__ __forceinline__ T load_sample(const T* d_data, int frame, int frames, int channels, int ch) {
  return frame < frames ? d_data[static_cast<long long>(frame) * channels + ch] : T(0);
}

// One cascade step over one chunk, in place; state read at the start and written back at
// the end of each pass. B: samples per step (a power of two, 1..8, so a step's block never
// straddles the 32-sample prefetch window). Device code: no allocation.
template <class T, int B>
__global__ void __launch_bounds__(cuda_plan::kWarpLanes) sos_cascade_kernel(T* __restrict__ d_data, int frames,
                                                                             int channels,
                                                                             const T* __restrict__ d_coef,
                                                                             int sections, T* __restrict__ d_state) {
  static_assert(B >= 1 && B <= 32 && (32 % B) == 0, "a step's block must fit one prefetch window");
  const int ch = blockIdx.x;
  const int lane = threadIdx.x;
  if (ch >= channels) return;  // whole warp leaves together
  const int nblocks = (frames + B - 1) / B;

  for (int sec0 = 0; sec0 < sections; sec0 += cuda_plan::kWarpLanes) {
    const int lanes = min(cuda_plan::kWarpLanes, sections - sec0);
    const bool owner = lane < lanes;
    const int s = sec0 + lane;
    T b0 = 0, b1 = 0, b2 = 0, a1 = 0, a2 = 0, s1 = 0, s2 = 0;
    if (owner) {
      const T* c = d_coef + 5 * s;
      b0 = c[0];
      b1 = c[1];
      b2 = c[2];
      a1 = c[3];
      a2 = c[4];
      s1 = d_state[static_cast<long long>(2 * s) * channels + ch];
      s2 = d_state[static_cast<long long>(2 * s + 1) * channels + ch];
    }

    // Prefetch windows: window w holds samples [32w, 32w + 32), one per lane.
    T win_cur = load_sample(d_data, lane, frames, channels, ch);
    T win_next = load_sample(d_data, 32 + lane, frames, channels, ch);
    int win = 0;

    T y[B];
#pragma unroll
    for (int i = 0; i < B; ++i) y[i] = T(0);

    const int steps = nblocks + lanes - 1;
    for (int t = 0; t < steps; ++t) {
      // Lane l receives the block lane l-1 produced in the previous step.
      T x[B];
#pragma unroll
      for (int i = 0; i < B; ++i) x[i] = __shfl_up_sync(kFullMask, y[i], 1);

      // Lane 0 reads block t from the prefetch window, rotating it when block t enters
      // the next window (the load it issues is needed one window later).
      const int first = t * B;
      if ((first >> 5) != win) {
        win = first >> 5;
        win_cur = win_next;
        win_next = load_sample(d_data, 32 * (win + 1) + lane, frames, channels, ch);
      }
#pragma unroll
      for (int i = 0; i < B; ++i) {
        const T v = __shfl_sync(kFullMask, win_cur, (first + i) & 31);
        if (lane == 0) x[i] = v;
      }

      const int blk = t - lane;  // the block this lane filters now
      if (owner && blk >= 0 && blk < nblocks) {
        const int n0 = blk * B;
#pragma unroll
        for (int i = 0; i < B; ++i)
          if (n0 + i < frames) y[i] = biquad_step(b0, b1, b2, a1, a2, s1, s2, x[i]);
        if (lane == lanes - 1) {
#pragma unroll
          for (int i = 0; i < B; ++i)
            if (n0 + i < frames) d_data[static_cast<long long>(n0 + i) * channels + ch] = y[i];
        }
      }
    }

    if (owner) {
      d_state[static_cast<long long>(2 * s) * channels + ch] = s1;
      d_state[static_cast<long long>(2 * s + 1) * channels + ch] = s2;
    }
    __syncwarp();  // this pass's writes before the next pass's reads
  }
}

// Launches the kernel for one B on `stream` and checks the launch. RT safe.
template <class T, int B>
cudaError_t launch_b(cudaStream_t stream, const cuda_plan::SosLayout& l, T* d_data, int frames, int channels,
                     const T* d_coef, int sections, T* d_state) noexcept {
  sos_cascade_kernel<T, B><<<dim3(static_cast<unsigned>(l.blocks)), dim3(static_cast<unsigned>(l.threads_per_block)), 0,
                             stream>>>(d_data, frames, channels, d_coef, sections, d_state);
  return cudaGetLastError();
}

}  // namespace

template <class T>
cudaError_t launch_sos_cascade(cudaStream_t stream, const cuda_plan::SosLayout& layout, T* d_data, int frames,
                               int channels, const T* d_coef, int sections, T* d_state) noexcept {
  if (stream == nullptr || layout.threads_per_block != cuda_plan::kWarpLanes || layout.blocks != channels)
    return cudaErrorInvalidValue;  // never the legacy default stream; the kernel assumes one warp per channel
  switch (layout.samples_per_step) {
    case 1: return launch_b<T, 1>(stream, layout, d_data, frames, channels, d_coef, sections, d_state);
    case 2: return launch_b<T, 2>(stream, layout, d_data, frames, channels, d_coef, sections, d_state);
    case 4: return launch_b<T, 4>(stream, layout, d_data, frames, channels, d_coef, sections, d_state);
    case 8: return launch_b<T, 8>(stream, layout, d_data, frames, channels, d_coef, sections, d_state);
    default: return cudaErrorInvalidValue;
  }
}

template cudaError_t launch_sos_cascade<float>(cudaStream_t, const cuda_plan::SosLayout&, float*, int, int,
                                               const float*, int, float*) noexcept;
template cudaError_t launch_sos_cascade<double>(cudaStream_t, const cuda_plan::SosLayout&, double*, int, int,
                                                const double*, int, double*) noexcept;

}  // namespace chunkscope
