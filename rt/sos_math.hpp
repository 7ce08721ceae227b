#pragma once
// Per-sample arithmetic shared by the CPU backend and the CUDA kernels, so that the CPU
// tests exercise the same math the GPU runs. [no-alloc, no-block], no branches on data.
#if defined(__CUDACC__)
#define CS_HD __host__ __device__ __forceinline__
#else
#define CS_HD inline
#endif

namespace chunkscope {

/// One sample through a section in transposed direct form II (the form scipy's sosfilt
/// uses); s1, s2 are the section's state for this channel. [no-alloc, no-block]
template <class T>
CS_HD T biquad_step(T b0, T b1, T b2, T a1, T a2, T& s1, T& s2, T x) {
  const T y = b0 * x + s1;
  s1 = b1 * x - a1 * y + s2;
  s2 = b2 * x - a2 * y;
  return y;
}

}  // namespace chunkscope
