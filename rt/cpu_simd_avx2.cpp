// The vector cascade kernels built for AVX2 (-mavx2, without FMA, set on this file alone by
// CMakeLists.txt), called only on CPUs that have it (rt/cpu_simd.cpp checks).
#define CS_SIMD_NS avx2
#define CS_SIMD_TABLE kernels_avx2
#define CS_VEC_BYTES 32
#include "rt/cpu_simd_kernels.inl"
