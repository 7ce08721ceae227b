#pragma once
// The scheduler's own record of one thread's time off the CPU (docs/profiler.md, "Blame from
// the scheduler's record").
//
// Design: the thread opens a perf event on itself (a software dummy event that counts
// nothing, with context-switch records, timestamps on CLOCK_MONOTONIC) and maps its ring.
// The kernel writes a record each time the thread leaves the CPU (marked preempted when it
// was still runnable: the platform's time; else it gave the CPU up, blocked: the caller's)
// and each time it comes back. The thread itself reads the ring from memory: no system call
// per read, and nothing to read when it was never switched out (one load of the ring's
// head). Because the thread is running when it reads, every switch-out it finds already has
// its switch-in: the intervals it holds are complete up to now.
//
// The reads are the owning thread's only; open() and close() run on it too, outside the
// real-time loop. Intervals are kept in a fixed ring of the most recent ones: a window asked
// about that lies further back than they reach is counted as lost.
#include <cstdint>

namespace chunkscope {

/// Off-CPU time inside a window, split by why the thread was off.
struct OffCpu {
  std::int64_t preempted_ns = 0;  // runnable but not running: the platform's
  std::int64_t blocked_ns = 0;    // gave the CPU up (a wait, a sleep, I/O): whoever made the call
  std::uint32_t preemptions = 0, blocks = 0;  // the switch-outs of each kind that overlap the window
  std::int64_t total() const noexcept { return preempted_ns + blocked_ns; }
};

/// Whole-thread totals since open().
struct SwitchTotals {
  std::uint64_t preemptions = 0, blocks = 0;  // switch-outs of each kind
  std::int64_t preempted_ns = 0, blocked_ns = 0;
  std::uint64_t lost = 0;  // records the kernel could not write (ring full), or intervals overwritten
};

class SchedRecord {
 public:
  SchedRecord() = default;
  SchedRecord(const SchedRecord&) = delete;
  SchedRecord& operator=(const SchedRecord&) = delete;
  ~SchedRecord();

  /// Opens the record for the calling thread, or for thread `tid` of this process (a thread
  /// another library started: a device callback's), which alone reads it afterwards. False
  /// when the kernel refuses (errno kept in error(): perf_event_paranoid 3, a seccomp filter,
  /// no perf events in a container). `refuse` makes it fail as a refused kernel would (the
  /// fallback, on request). Not real-time.
  bool open(bool refuse = false, int tid = 0);
  /// Stops recording. Not real-time; on the owning thread, or after it ended.
  void close() noexcept;
  bool active() const noexcept { return base_ != nullptr; }
  /// The errno of a refused open(), 0 when open.
  int error() const noexcept { return error_; }

  /// Reads what the kernel wrote since the last read. [no-alloc, no-block] The owner only.
  void poll() noexcept;
  /// Time off the CPU within [a, b] (b at most now), read first. [no-alloc, no-block]
  OffCpu off_between(std::int64_t a, std::int64_t b) noexcept;
  /// Totals since open(), read first. [no-alloc, no-block]
  SwitchTotals totals() noexcept;

  /// The calling thread's open record, or nullptr (set by the engine's threads). [no-alloc, no-block]
  static SchedRecord* current() noexcept;
  static void set_current(SchedRecord* r) noexcept;

 private:
  struct Interval {
    std::int64_t out = 0, in = 0;
    bool preempted = false;
  };
  static constexpr int kKept = 256;  // intervals kept: a power of two
  void take(const unsigned char* rec, std::uint16_t type, std::uint16_t misc, std::uint16_t size) noexcept;
  void add_interval(std::int64_t out, std::int64_t in, bool preempted) noexcept;

  int fd_ = -1;
  int error_ = 0;
  void* base_ = nullptr;  // the mapped header page and ring
  std::size_t map_bytes_ = 0, ring_bytes_ = 0;
  unsigned char* ring_ = nullptr;
  Interval kept_[kKept];
  std::uint64_t count_ = 0;  // intervals added so far; kept_[i % kKept]
  std::int64_t pending_out_ = -1;  // a switch-out whose switch-in is not read yet
  bool pending_preempt_ = false;
  SwitchTotals totals_;
};

}  // namespace chunkscope
