#pragma once
// NVTX ranges for Nsight Systems, compiled away unless the build defines
// CHUNKSCOPE_WITH_NVTX (CMake option CHUNKSCOPE_NVTX, CUDA builds only).
// [no-alloc, no-block] With no tool attached a push/pop is a call through a no-op function pointer.
#if defined(CHUNKSCOPE_WITH_NVTX)
#include <nvtx3/nvToolsExt.h>
#define CS_NVTX_PUSH(name) nvtxRangePushA(name)
#define CS_NVTX_POP() nvtxRangePop()
#else
#define CS_NVTX_PUSH(name) ((void)0)
#define CS_NVTX_POP() ((void)0)
#endif

namespace chunkscope {

/// Pushes an NVTX range for the lifetime of the object (a no-op without NVTX). `name` must
/// be a string literal. [no-alloc, no-block]
class NvtxRange {
 public:
  /// [no-alloc, no-block]
  explicit NvtxRange(const char* name) noexcept {
    (void)name;
    CS_NVTX_PUSH(name);
  }
  /// [no-alloc, no-block]
  ~NvtxRange() noexcept { CS_NVTX_POP(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace chunkscope
