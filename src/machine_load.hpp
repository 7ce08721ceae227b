#pragma once
// The machine's load around a run, read from /proc: load, CPUs online, and the CPU time
// counters (steal included) whose difference over the run says how busy the machine was.
// (The machine's description is src/environment.hpp; how late it wakes a thread and what a
// hand-off costs is rt/baseline_probe.hpp.) Not real-time.
#include <cstdint>
#include <optional>
#include <string>

namespace chunkscope {

struct ProcSnapshot {
  std::int64_t at_ns = 0;   // CLOCK_MONOTONIC when read
  int cpus_online = 0;      // sysconf(_SC_NPROCESSORS_ONLN)
  double load1 = 0, load5 = 0, load15 = 0;  // /proc/loadavg
  int runnable = 0;         // /proc/loadavg: runnable scheduling entities now
  // /proc/stat "cpu" line, in clock ticks, summed over CPUs
  std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  std::uint64_t total() const noexcept { return user + nice + system + idle + iowait + irq + softirq + steal; }
};

/// Reads the snapshot; nullopt when /proc cannot be read (the report then omits it).
std::optional<ProcSnapshot> read_proc_snapshot();

/// Over [a, b]: the machine's busy share (1 - (idle + iowait) / total) and steal share
/// (steal / total), in [0, 1]; nullopt when no tick passed.
struct ProcShares {
  double busy = 0, steal = 0;
};
std::optional<ProcShares> proc_shares(const ProcSnapshot& a, const ProcSnapshot& b);

}  // namespace chunkscope
