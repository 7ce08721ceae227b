#pragma once
// The one monotonic clock every host stamp uses (CLOCK_MONOTONIC, nanoseconds).
#include <cerrno>
#include <cstdint>
#include <ctime>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace chunkscope {

/// Monotonic time in ns. [no-alloc, no-block] A vDSO call.
inline std::int64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// CPU time of the calling thread in ns (a system call: CLOCK_THREAD_CPUTIME_ID is not in
/// the vDSO). [no-alloc, no-block]
inline std::int64_t thread_cpu_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Sleeps until the absolute monotonic time `t` (TIMER_ABSTIME: no drift from wake-up
/// latency). [no-alloc, blocks] Sleeps by design; for pacing threads.
inline void sleep_until_ns(std::int64_t t) noexcept {
  timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

/// One pause of a busy-wait loop (x86 `pause`, Arm `yield`): eases the loop's pressure on
/// the core and its sibling hyperthread. [no-alloc, no-block]
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  asm volatile("" ::: "memory");
#endif
}

/// Busy-waits until the monotonic clock reads `t` or later, never sleeping. [no-alloc, no-block]
inline void spin_until_ns(std::int64_t t) noexcept {
  while (now_ns() < t) cpu_relax();
}

}  // namespace chunkscope
