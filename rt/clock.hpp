#pragma once
// The one monotonic clock every host stamp uses (CLOCK_MONOTONIC, nanoseconds).
#include <cerrno>
#include <cstdint>
#include <ctime>

namespace chunkscope {

/// Monotonic time in ns. [no-alloc, no-block] A vDSO call.
inline std::int64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Sleeps until the absolute monotonic time `t` (TIMER_ABSTIME: no drift from wake-up
/// latency). [no-alloc, blocks] Sleeps by design; for pacing threads.
inline void sleep_until_ns(std::int64_t t) noexcept {
  timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

}  // namespace chunkscope
