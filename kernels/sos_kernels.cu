// The fused SOS-cascade kernel. See kernels/cuda_plan.hpp for the layout and why, and
// kernels/sos_lanes.hpp for the lane logic (which lane holds which section at which step,
// the shuffles, the tail guards, the passes beyond 32 sections): the kernel runs that
// header's cascade_channel with DeviceWarp below, the CPU tests run the same code with an
// emulated warp (tests/test_warp_emulation.cpp).
//
// The per-sample arithmetic is biquad_step from rt/sos_math.hpp, the function the CPU
// backend runs. The kernels are compiled with --fmad=false (CMakeLists.txt), so every
// multiply and add rounds separately as in the CPU backend, and -ftz=true, which flushes
// single-precision subnormals as the CPU backend's FTZ/DAZ mode does.
#include "kernels/sos_kernels.cuh"
#include "kernels/sos_lanes.hpp"

namespace chunkscope {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;

// The warp of sos_lanes' Warp interface on the device: this thread is lane threadIdx.x and
// holds that lane's registers. Device code.
template <class T, int B>
struct DeviceWarp {
  sos_lanes::LaneRegs<T, B> r;

  // [no-alloc, no-block]
  __device__ __forceinline__ explicit DeviceWarp(int lane) { r.lane = lane; }
  // f on this thread's lane. [no-alloc, no-block]
  template <class F>
  __device__ __forceinline__ void each(F&& f) {
    f(r);
  }
  // Lane l gets lane l-1's value. [no-alloc, no-block] A shuffle: waits only for the warp's own lanes.
  template <class Get, class Put>
  __device__ __forceinline__ void shfl_up(Get&& get, Put&& put) {
    put(r, __shfl_up_sync(kFullMask, get(static_cast<const sos_lanes::LaneRegs<T, B>&>(r)), 1));
  }
  // Every lane gets lane src's value. [no-alloc, no-block] A shuffle: waits only for the warp's own lanes.
  template <class Get, class Put>
  __device__ __forceinline__ void shfl(Get&& get, int src, Put&& put) {
    put(r, __shfl_sync(kFullMask, get(static_cast<const sos_lanes::LaneRegs<T, B>&>(r)), src));
  }
  // [no-alloc, no-block] Waits only for the warp's own lanes.
  __device__ __forceinline__ void sync() { __syncwarp(); }
};

// One cascade step over one chunk, in place; state read at the start and written back at
// the end of each pass. B: samples per step (1, 2, 4 or 8); Tail: per-sample guards for a
// short last block (sos_lanes::needs_tail_guards). Device code: [no-alloc, no-block]
template <class T, int B, bool Tail>
__global__ void __launch_bounds__(cuda_plan::kWarpLanes) sos_cascade_kernel(T* __restrict__ d_data, int frames,
                                                                             int channels,
                                                                             const T* __restrict__ d_coef,
                                                                             int sections, T* __restrict__ d_state) {
  const int ch = blockIdx.x;
  if (ch >= channels) return;  // whole warp leaves together
  DeviceWarp<T, B> w(static_cast<int>(threadIdx.x));
  sos_lanes::cascade_channel<T, B, Tail>(w, d_data, frames, channels, ch, d_coef, sections, d_state);
}

// Launches the kernel for one B on `stream`, with the tail guards only when the chunk's
// last block is short, and checks the launch. [no-alloc, no-block]
template <class T, int B>
cudaError_t launch_b(cudaStream_t stream, const cuda_plan::SosLayout& l, T* d_data, int frames, int channels,
                     const T* d_coef, int sections, T* d_state) noexcept {
  const dim3 grid(static_cast<unsigned>(l.blocks)), block(static_cast<unsigned>(l.threads_per_block));
  if (sos_lanes::needs_tail_guards(frames, B))
    sos_cascade_kernel<T, B, true><<<grid, block, 0, stream>>>(d_data, frames, channels, d_coef, sections, d_state);
  else
    sos_cascade_kernel<T, B, false><<<grid, block, 0, stream>>>(d_data, frames, channels, d_coef, sections, d_state);
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
