#pragma once
// Flush-to-zero / denormals-are-zero for the calling thread. [no-alloc, no-block] No
// system call; two register moves.
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif
#include <cstdint>

namespace chunkscope {

/// True when the calling thread flushes subnormals: FTZ and DAZ on x86, FZ on AArch64 (what
/// ScopedFlushDenormals sets). [no-alloc, no-block]
inline bool thread_flushes_denormals() noexcept {
#if defined(__x86_64__) || defined(__SSE__)
  return (_mm_getcsr() & 0x8040u) == 0x8040u;
#elif defined(__aarch64__)
  std::uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  return (fpcr & (1ull << 24)) != 0;
#else
  return false;
#endif
}

class ScopedFlushDenormals {
 public:
  /// Sets FTZ and DAZ on this thread (when `on`, else clears them); the destructor restores
  /// the previous mode. [no-alloc, no-block]
  explicit ScopedFlushDenormals(bool on = true) noexcept {
#if defined(__x86_64__) || defined(__SSE__)
    saved_ = _mm_getcsr();
    _mm_setcsr(on ? (saved_ | 0x8040u) : (saved_ & ~0x8040u));  // FTZ (bit 15) | DAZ (bit 6)
#elif defined(__aarch64__)
    std::uint64_t fpcr;
    asm volatile("mrs %0, fpcr" : "=r"(fpcr));
    saved_ = fpcr;
    asm volatile("msr fpcr, %0" ::"r"(on ? (fpcr | (1ull << 24)) : (fpcr & ~(1ull << 24))));  // FZ
#endif
  }
  /// [no-alloc, no-block]
  ~ScopedFlushDenormals() noexcept {
#if defined(__x86_64__) || defined(__SSE__)
    _mm_setcsr(static_cast<unsigned>(saved_));
#elif defined(__aarch64__)
    asm volatile("msr fpcr, %0" ::"r"(saved_));
#endif
  }
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
  std::uint64_t saved_ = 0;
};

}  // namespace chunkscope
