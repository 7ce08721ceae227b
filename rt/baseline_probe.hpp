#pragma once
// The platform baseline: how late this machine wakes a paced thread and what a thread
// hand-off through the engine's kind of queue costs, measured with the policy the engine's
// threads run under. It is the floor under every latency a run reports.
//
// Design: one pacing thread wakes every `period_ns` for `duration_ns` (the same wait the
// source uses: sleep, spin, or sleep then spin), records how late it woke, then hands a
// token to a second thread through a BlockingReaderWriterQueue and waits for it to come
// back through a second one (the second thread waits the way the engine's consumers wait),
// recording the round trip. Both threads sleep between periods, as the engine's do, so the
// hand-off pays a real wake-up.
#include <array>
#include <cstdint>

#include "rt/stats/histogram.hpp"
#include "rt/status.hpp"

namespace chunkscope {

/// How the source waits for its schedule and the consumers for their queues.
///   block  : sleep (clock_nanosleep to the schedule; the queue's semaphore, a futex)
///   spin   : busy-wait to the schedule and on the queues, never sleeping (costs a core per thread)
///   hybrid : sleep until kHybridSpinNs before the schedule, then spin; consumers spin for
///            kHybridSpinNs on an empty queue, then sleep
enum class WaitMode : std::uint8_t { block, spin, hybrid };
inline constexpr std::int64_t kHybridSpinNs = 200'000;
/// "block", "spin", "hybrid". [no-alloc, no-block]
const char* wait_mode_name(WaitMode m) noexcept;

/// The engine threads' scheduling: SCHED_FIFO at rt_priority (0: the default policy) and,
/// for each engine thread (source, processor, sink), the CPU it is pinned to (-1: none).
struct ThreadPolicy {
  int rt_priority = 0;
  std::array<int, 3> cpus{-1, -1, -1};
};
inline constexpr int kDefaultRtPriority = 70;  // the SCHED_FIFO priority --rt gives (1..99; --rt-priority changes it)

/// Applies `policy` to the calling thread as engine thread `index` (0 source, 1 processor,
/// 2 sink). Returns ok, or unsupported when the system refused (no permission, no such
/// CPU). [no-alloc, no-block]
Status apply_thread_policy(const ThreadPolicy& policy, int index) noexcept;

/// Waits until the absolute monotonic time `t` the way `mode` says. [no-alloc, blocks]
void wait_until_ns(std::int64_t t, WaitMode mode) noexcept;

/// What the calling thread has used so far: context switches from getrusage(RUSAGE_THREAD),
/// CPU time from CLOCK_THREAD_CPUTIME_ID (ns resolution; getrusage's is µs).
struct ThreadUsage {
  bool present = false;          // false: not measured (the side is a device callback)
  int tid = 0;
  std::int64_t voluntary = 0;    // context switches: the thread waited
  std::int64_t involuntary = 0;  // context switches: the thread was preempted
  std::int64_t cpu_ns = 0;       // user + system CPU time (CLOCK_THREAD_CPUTIME_ID)
};
/// [no-alloc, no-block]
ThreadUsage thread_usage_now() noexcept;
/// b - a, field by field (present and tid from b). [no-alloc, no-block]
ThreadUsage usage_delta(const ThreadUsage& a, const ThreadUsage& b) noexcept;

struct BaselineConfig {
  std::int64_t period_ns = 0;    // the chunk period D
  std::int64_t duration_ns = 0;  // how long to measure (0: nothing)
  WaitMode wait = WaitMode::block;
  ThreadPolicy policy;           // the pacing thread takes the source's (index 0), the other the processor's (index 1)
};

struct BaselineResult {
  Status status = Status::ok;  // unsupported: the policy could not be applied
  std::int64_t period_ns = 0, duration_ns = 0;
  stats::LogHistogram wake;     // lateness of the paced wake-up: woke - scheduled
  stats::LogHistogram handoff;  // hand-off round trip: token out and back through two queues
};

/// Measures the baseline: creates two threads and joins them. [allocates, blocks]
BaselineResult measure_platform(const BaselineConfig& cfg);

}  // namespace chunkscope
