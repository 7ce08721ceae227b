#pragma once
// The SOS-cascade kernel: one cascade step over one chunk, in place on the device, with
// the sections' state resident in device memory across chunks. The layout (one warp per
// channel, sections pipelined over the lanes) is described in kernels/cuda_plan.hpp.
#include <cuda_runtime.h>

#include "kernels/cuda_plan.hpp"

namespace chunkscope {

/// Enqueues one cascade step on `stream` (never the default stream) and checks the launch
/// with cudaGetLastError.
///   d_data   interleaved [frame][channel] samples, `frames` x `channels`, filtered in place
///   d_coef   `sections` x {b0, b1, b2, a1, a2} (a0 = 1)
///   d_state  2 x `sections` rows of `channels` values: row 2s holds s1 and row 2s+1 s2 of
///            section s (the CPU backend's layout)
/// Returns the launch error (cudaSuccess when enqueued). [no-alloc, no-block] No host allocation; safe
/// to call during stream capture.
template <class T>
cudaError_t launch_sos_cascade(cudaStream_t stream, const cuda_plan::SosLayout& layout, T* d_data, int frames,
                               int channels, const T* d_coef, int sections, T* d_state) noexcept;

extern template cudaError_t launch_sos_cascade<float>(cudaStream_t, const cuda_plan::SosLayout&, float*, int, int,
                                                      const float*, int, float*) noexcept;
extern template cudaError_t launch_sos_cascade<double>(cudaStream_t, const cuda_plan::SosLayout&, double*, int, int,
                                                       const double*, int, double*) noexcept;

}  // namespace chunkscope
