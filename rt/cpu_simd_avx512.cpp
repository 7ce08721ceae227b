// The vector cascade kernels built for AVX-512 (-mavx512f -mavx512vl -mavx512dq -mavx512bw,
// set on this file alone by CMakeLists.txt), called only on CPUs that have it
// (rt/cpu_simd.cpp checks).
#define CS_SIMD_NS avx512
#define CS_SIMD_TABLE kernels_avx512
#define CS_VEC_BYTES 64
#include "rt/cpu_simd_kernels.inl"
