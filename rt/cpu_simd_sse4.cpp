// The vector cascade kernels built for SSE4.2 (-msse4.2, set on this file alone by
// CMakeLists.txt), called only on CPUs that have it (rt/cpu_simd.cpp checks).
#define CS_SIMD_NS sse4
#define CS_SIMD_TABLE kernels_sse4
#define CS_VEC_BYTES 16
#include "rt/cpu_simd_kernels.inl"
