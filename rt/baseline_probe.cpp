#include "rt/baseline_probe.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <pthread.h>
#include <readerwriterqueue/readerwriterqueue.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

#include "rt/clock.hpp"

namespace chunkscope {

namespace {

std::int64_t timeval_ns(const timeval& tv) noexcept {
  return static_cast<std::int64_t>(tv.tv_sec) * 1'000'000'000 + static_cast<std::int64_t>(tv.tv_usec) * 1000;
}

using TokenQueue = moodycamel::BlockingReaderWriterQueue<int>;
constexpr int kStopToken = -1;
constexpr std::int64_t kBaselineStartSlackNs = 1'000'000;  // the first wake-up is scheduled this far ahead

/// Takes a token from `q`, waiting the way an engine consumer waits in `mode`. [no-alloc, blocks]
int take_token(TokenQueue& q, WaitMode mode) noexcept {
  int v = 0;
  if (mode == WaitMode::spin) {
    while (!q.try_dequeue(v)) cpu_relax();
    return v;
  }
  if (mode == WaitMode::hybrid) {
    const std::int64_t until = now_ns() + kHybridSpinNs;
    do {
      if (q.try_dequeue(v)) return v;
      cpu_relax();
    } while (now_ns() < until);
  }
  q.wait_dequeue(v);
  return v;
}

}  // namespace

const char* wait_mode_name(WaitMode m) noexcept {
  switch (m) {
    case WaitMode::block:
      return "block";
    case WaitMode::spin:
      return "spin";
    case WaitMode::hybrid:
      return "hybrid";
  }
  return "block";
}

Status apply_thread_policy(const ThreadPolicy& policy, int index) noexcept {
  Status st = Status::ok;
  if (policy.rt_priority > 0) {
    sched_param sp{};
    sp.sched_priority = policy.rt_priority;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0) st = Status::unsupported;
  }
  if (index >= 0 && index < static_cast<int>(policy.cpus.size()) && policy.cpus[static_cast<std::size_t>(index)] >= 0) {
    const int cpu = policy.cpus[static_cast<std::size_t>(index)];
    if (cpu >= CPU_SETSIZE) return Status::unsupported;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) st = Status::unsupported;
  }
  return st;
}

void wait_until_ns(std::int64_t t, WaitMode mode) noexcept {
  switch (mode) {
    case WaitMode::block:
      sleep_until_ns(t);
      return;
    case WaitMode::spin:
      spin_until_ns(t);
      return;
    case WaitMode::hybrid:
      if (t - kHybridSpinNs > now_ns()) sleep_until_ns(t - kHybridSpinNs);
      spin_until_ns(t);
      return;
  }
}

ThreadUsage thread_usage_now() noexcept {
  ThreadUsage u;
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) != 0) return u;
  u.present = true;
  u.tid = static_cast<int>(syscall(SYS_gettid));
  u.voluntary = ru.ru_nvcsw;
  u.involuntary = ru.ru_nivcsw;
  // the thread's CPU clock has ns resolution (getrusage's user and system times have µs)
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
    u.cpu_ns = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  else
    u.cpu_ns = timeval_ns(ru.ru_utime) + timeval_ns(ru.ru_stime);
  return u;
}

ThreadUsage usage_delta(const ThreadUsage& a, const ThreadUsage& b) noexcept {
  ThreadUsage d;
  d.present = b.present;
  d.tid = b.tid;
  d.voluntary = b.voluntary - a.voluntary;
  d.involuntary = b.involuntary - a.involuntary;
  d.cpu_ns = b.cpu_ns - a.cpu_ns;
  return d;
}

BaselineResult measure_platform(const BaselineConfig& cfg) {
  BaselineResult res;
  res.period_ns = cfg.period_ns;
  res.duration_ns = cfg.duration_ns;
  if (cfg.period_ns <= 0 || cfg.duration_ns <= 0) return res;
  // one wake-up per period that starts within the duration, and at least one
  const std::int64_t wakes = std::max<std::int64_t>(1, (cfg.duration_ns + cfg.period_ns - 1) / cfg.period_ns);
  TokenQueue out(4), back(4);
  std::atomic<bool> refused{false};
  const WaitMode mode = cfg.wait;

  // the second thread: hands each token straight back, waiting the way a consumer waits
  std::thread echo([&]() noexcept {
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    if (!ok(apply_thread_policy(cfg.policy, 1))) refused.store(true, std::memory_order_relaxed);
    for (;;) {
      const int v = take_token(out, mode);
      if (v == kStopToken) break;
      back.try_enqueue(v);
    }
  });
  // the pacing thread: wakes every period, then a round trip through the two queues
  std::thread pacer([&]() noexcept {
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    if (!ok(apply_thread_policy(cfg.policy, 0))) refused.store(true, std::memory_order_relaxed);
    const std::int64_t t0 = now_ns() + kBaselineStartSlackNs;
    for (std::int64_t k = 0; k < wakes && !refused.load(std::memory_order_relaxed); ++k) {
      const std::int64_t t = t0 + k * cfg.period_ns;
      wait_until_ns(t, mode);
      const std::int64_t woke = now_ns();
      res.wake.record(static_cast<std::uint64_t>(std::max<std::int64_t>(0, woke - t)));
      const std::int64_t h0 = now_ns();
      out.try_enqueue(static_cast<int>(k & 0x3fffffff));
      (void)take_token(back, mode);
      const std::int64_t h1 = now_ns();
      res.handoff.record(static_cast<std::uint64_t>(std::max<std::int64_t>(0, h1 - h0)));
    }
    out.try_enqueue(kStopToken);
  });
  pacer.join();
  echo.join();
  if (refused.load()) res.status = Status::unsupported;
  return res;
}

}  // namespace chunkscope
