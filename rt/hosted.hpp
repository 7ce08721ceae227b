#pragma once
// Hosted steps: processing chunkscope did not write (a user's shared object behind
// include/chunkscope/stage.h, later plugins), run by the CPU backend on the processor thread
// between cascades, on planar float buffers.
//
// Design: one mechanism serves every hosted kind. The planner holds a HostedFactory per
// hosted step (non-real-time: it has loaded and checked the code); the backend's prepare()
// asks it for a HostedProcessor for the stream's shape, and process() calls that processor
// once per chunk after converting the interleaved chunk to planar floats in scratch sized at
// prepare. Around each call the backend times the step (wall and thread CPU time) and audits
// it: heap allocations and frees made on this thread inside the call (rt/alloc_audit.hpp),
// voluntary context switches and the time spent off the CPU in the calls that had them, and
// NaN, infinite and subnormal samples in the step's output.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace chunkscope {

/// The stream a hosted processor is made for.
struct HostedShape {
  double rate = 48000;
  int max_frames = 1024;  // the largest block process() will see
  int channels = 2;       // planar buffers per call
};

/// One instance of hosted processing, made for one stream shape.
class HostedProcessor {
 public:
  virtual ~HostedProcessor() = default;
  /// Processes `frames` frames in place on `channels` planar buffers. Returns false on
  /// failure (last_error() says why). [no-alloc, no-block] by contract: the audit counts
  /// what the code behind it does instead.
  virtual bool process(float* const* channels, int frames) noexcept = 0;
  /// Clears the processing state. [no-alloc, no-block] by contract.
  virtual void reset() noexcept = 0;
  /// The reason for the last failed process(), or "". [no-alloc, no-block]
  virtual const char* last_error() const noexcept { return ""; }
  /// Frames of delay the processing declares (lookahead). [no-alloc, no-block]
  virtual std::uint32_t latency_frames() const noexcept { return 0; }
};

/// Makes hosted processors: the checked, loaded code of one hosted step. Not real-time.
class HostedFactory {
 public:
  virtual ~HostedFactory() = default;
  /// The step as reports name it ("so:libcompressor_stage.so"). [no-alloc, no-block]
  virtual const std::string& label() const noexcept = 0;
  /// A processor for `shape`, or nullptr with a one-line reason in `error`. [allocates, blocks]
  virtual std::unique_ptr<HostedProcessor> create(const HostedShape& shape, std::string& error) const = 0;
};

/// What the audit counted for one hosted step since prepare()/reset(). Plain counters.
/// A "first" field holds the 0-based index of the first process() call (the backend's
/// chunk counter) that showed it, or kNoChunk.
inline constexpr std::uint64_t kNoChunk = ~std::uint64_t{0};
struct HostedAudit {
  std::uint64_t calls = 0;
  std::uint64_t allocations = 0, frees = 0;  // heap calls made inside process()
  // calls that gave up the CPU: with the thread's context-switch record, any that blocked
  // (paging included); without it, those with a voluntary context switch and no major fault
  std::uint64_t blocking_calls = 0;
  std::uint64_t voluntary_switches = 0;      // summed over all calls
  std::int64_t blocked_ns = 0;               // time blocked in them (the record), else their wall - CPU time
  std::int64_t preempted_ns = 0;             // the record only: time preempted inside calls (the platform's)
  std::uint64_t paging_calls = 0;            // calls that waited for pages read in (a major page fault)
  std::uint64_t major_faults = 0;            // summed over all calls
  std::int64_t paging_ns = 0;                // wall - CPU time of the paging calls
  std::uint64_t nonfinite = 0, subnormal = 0;  // output samples
  std::uint64_t first_alloc = kNoChunk, first_block = kNoChunk, first_nonfinite = kNoChunk, first_paging = kNoChunk;
  bool allocations_counted = true;           // false: this build has no allocation interposer
};

/// Where a thread is while it runs hosted code, for a crash handler and the exit guard.
/// `step` (1-based) and `chunk` say which planned step and which chunk the backend is running
/// (its own code around the call included; chunk kNoChunk outside process()); `phase` names
/// the call into foreign code under way ("process", "run", "reset", "create", "loading"...)
/// and is nullptr while chunkscope's own code runs: only a fault or an exit while `phase` is
/// set is blamed on the code named by `label`. Written by the backend and the hosts with
/// relaxed stores around each call. [no-alloc, no-block]
struct HostedWhere {
  std::atomic<int> step{0};
  std::atomic<const char*> label{nullptr};
  std::atomic<std::uint64_t> chunk{kNoChunk};
  std::atomic<const char*> phase{nullptr};
};
/// The calling thread's record (a fault is handled on the thread that faulted). [no-alloc, no-block]
HostedWhere& hosted_where() noexcept;

/// Marks the calling thread as inside one call into hosted code named `call` (static
/// storage), the label being the one the backend set: the mark covers the foreign call and
/// nothing of chunkscope's around it. Puts back the mark it found at scope exit (a plugin
/// calling back into the host, which calls it again). [no-alloc, no-block]
class ForeignCall {
 public:
  explicit ForeignCall(const char* call) noexcept : prev_(hosted_where().phase.load(std::memory_order_relaxed)) {
    hosted_where().phase.store(call, std::memory_order_relaxed);
  }
  ~ForeignCall() { hosted_where().phase.store(prev_, std::memory_order_relaxed); }
  ForeignCall(const ForeignCall&) = delete;
  ForeignCall& operator=(const ForeignCall&) = delete;

 private:
  const char* prev_;
};

/// Marks the calling thread as inside chunkscope's own code while a foreign call is under way
/// (a host function a plugin calls: the LV2 worker's schedule, the log, the URID map): a
/// fault there is the host's, not the plugin's. [no-alloc, no-block]
class HostCode : public ForeignCall {
 public:
  HostCode() noexcept : ForeignCall(nullptr) {}
};

/// A hosted call in progress on a backend's processing thread, for a watchdog on another
/// thread: `since` is the call's start on the monotonic clock (0: no call under way), the
/// rest says which. Written by the backend (relaxed stores, `since` last on entry and first
/// on return), read by anyone. [no-alloc, no-block]
struct HostedWatch {
  std::atomic<std::int64_t> since{0};
  std::atomic<int> step{0};
  std::atomic<const char*> label{nullptr};
  std::atomic<const char*> call{nullptr};
  std::atomic<std::uint64_t> chunk{kNoChunk};
};

/// Marks the calling thread as inside a non-real-time call of hosted code (`phase`, `label`:
/// static or outliving the scope) for a crash handler, and puts back the call it was in (a
/// worker's work run inside a restore, say) at scope exit.
class HostedPhase {
 public:
  HostedPhase(const char* phase, const char* label) noexcept
      : prev_phase_(hosted_where().phase.load(std::memory_order_relaxed)),
        prev_label_(hosted_where().label.load(std::memory_order_relaxed)) {
    hosted_where().label.store(label, std::memory_order_relaxed);
    hosted_where().phase.store(phase, std::memory_order_relaxed);
  }
  ~HostedPhase() {
    hosted_where().phase.store(prev_phase_, std::memory_order_relaxed);
    hosted_where().label.store(prev_label_, std::memory_order_relaxed);
  }
  HostedPhase(const HostedPhase&) = delete;
  HostedPhase& operator=(const HostedPhase&) = delete;

 private:
  const char* prev_phase_;
  const char* prev_label_;
};

}  // namespace chunkscope
