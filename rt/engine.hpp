#pragma once
// The streaming engine: source, processor and sink on their own threads, linked by
// fixed-capacity single-producer/single-consumer queues, chunks from a fixed pool that
// return through a free-list queue.
//
// Design: prepare() allocates everything (pool, queues, trace ring, statistics). run()
// starts the three threads and joins them; once they run, no thread allocates, locks or
// logs. A paced source never blocks: with no free chunk or a full queue it drops the chunk,
// counts it and lists its sequence number. At --speed max the source waits instead (there
// is no schedule to keep). The sink never drops: when it is slow the chunks pile up in the
// processor->sink queue and the pool runs dry, which the paced source sees as drops.
// Consumers sleep on the queue's semaphore (a futex wake per enqueue when they wait), or,
// as EngineConfig::wait says, spin on it. Inline, the source thread (or the device
// callback, in push()) processes each chunk itself and queues it for the sink: there is no
// processor thread, and processor_tid is the source's (the callback's for a device).
// A stop request (request_stop(), the watched flag, or a failed stage) ends a run within
// one chunk's processing: the source makes no more chunks, the processor finishes the
// chunk it holds and returns the queued ones to the pool unprocessed, counting them
// (EngineResult::not_processed), and the sink finishes what was processed.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "rt/backend.hpp"
#include "rt/chunk.hpp"
#include "rt/baseline_probe.hpp"
#include "rt/sched_record.hpp"
#include "rt/stream_io.hpp"

namespace chunkscope {

class RunStats;  // rt/run_stats.hpp: fed on the sink thread

struct EngineConfig {
  ProcessSpec spec;           // rate, channels, chunk frames (max_frames), dtype
  int queue_depth = 8;        // capacity of each link queue
  double speed = 1.0;         // media time per wall time; ignored when max_speed
  bool max_speed = false;     // as fast as possible: no schedule, no drops
  std::size_t trace_capacity = 0;  // chunk records kept for the trace (a ring: the last N)
  std::size_t drop_list_capacity = 4096;
  // Device streams: the audio callback is the source (push) and, full duplex, the sink (pull)
  bool external_source = false;  // no source thread: push() feeds the stream
  bool external_sink = false;    // no sink thread: pull() takes processed chunks
  int latency_chunks = 2;        // pull(): the output of input chunk k plays at callback k + K
  // FNV-1a of input and output of chunks 0..N-1 (stops at a drop). Hashing adds to those
  // chunks' latency: keep N within the warm-up.
  std::size_t checksum_chunks = 0;
  // How the engine's threads wait and run (docs/profiler.md, "Run modes")
  WaitMode wait = WaitMode::block;  // the source's pacing and the consumers' queue waits
  ThreadPolicy policy;              // SCHED_FIFO priority and CPU pinning of the engine threads
  // The processor runs on the source's thread (no source->processor queue); for device
  // streams push() processes inside the audio callback, as a JACK or PipeWire client does.
  bool inline_process = false;
  // Paced runs: the first chunk's scheduled arrival on the monotonic clock (ns); 0: a
  // moment after run() starts. Several engines given one start, offset each, keep their
  // schedules in a fixed phase (--streams, --stagger).
  std::int64_t start_at_ns = 0;
  // Each engine thread keeps the scheduler's record of its time off the CPU (rt/sched_record.hpp)
  // and processing is split and blamed from it; false, or where the kernel refuses, the
  // thread CPU clock and the wall-clock rules judge instead.
  bool switch_record = true;
  // A hosted call that has not returned after this long (ns) ends the run: the thread running
  // it is left behind and the run returns Status::stage_stuck with the call described. 0: no
  // watch. The run's own thread polls the backend's HostedWatch, at a tenth of this period
  // (at most every 50 ms).
  std::int64_t step_timeout_ns = 0;
};

/// A hosted call that did not return within EngineConfig::step_timeout_ns.
struct StuckCall {
  bool stuck = false;
  int step = 0;                  // the planned step, 1-based
  const char* label = nullptr;   // the step's code, as reports name it (the backend's storage)
  const char* call = nullptr;    // "process", "reset"
  std::uint64_t chunk = ~std::uint64_t{0};  // the chunk it was processing (none: all ones)
  std::int64_t for_ns = 0;       // how long it had been in the call when the run gave up on it
  std::int64_t timeout_ns = 0;   // the step timeout it broke
};

struct EngineResult {
  Status status = Status::ok;        // ok, interrupted, io_error (source), device_error...
  Status source_status = Status::ok;  // how the source ended: end_of_stream or an error
  Status sink_status = Status::ok;
  Status process_status = Status::ok;
  std::uint64_t produced = 0;  // chunks the source made (sequence numbers used)
  std::uint64_t drops = 0;
  std::uint64_t drops_pool = 0, drops_queue = 0;
  std::uint64_t not_processed = 0;  // queued when a stop was requested: back to the pool unprocessed
  std::vector<std::uint64_t> drop_seqs;  // the first drop_list_capacity dropped chunks
  std::size_t q_in_high_water = 0, q_out_high_water = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::size_t pool_chunks = 0;
  std::uint64_t underruns = 0;     // pull(): the due chunk was not ready, silence played
  std::uint64_t late_chunks = 0;   // pull(): arrived after its callback, discarded
  std::vector<std::uint64_t> underrun_seqs;
  // FNV-1a 64 of each chunk's samples just before and just after process(), for chunks
  // 0..checksummed-1 in order (recording stops at the first sequence gap or failure).
  std::vector<std::uint64_t> input_checksums, output_checksums;
  std::size_t checksummed = 0;
  // Linux thread ids of the engine's threads (0 for a side the device callback plays)
  int source_tid = 0, processor_tid = 0, sink_tid = 0;
  // What each engine thread used over the run (not present for a side a device callback
  // plays, or the processor when it runs inline); policy_status: unsupported when a
  // thread's policy (--rt, --cpus) was refused, and the run stopped at once.
  ThreadUsage source_usage, processor_usage, sink_usage;
  Status policy_status = Status::ok;
  // The scheduler's record of each engine thread (source, processor, sink): whether it was
  // kept, its totals, and the errno of a refusal (0: kept, or not asked for)
  struct SwitchRecordResult {
    bool kept = false;
    int refused_errno = 0;
    SwitchTotals totals;
  };
  SwitchRecordResult switch_records[3];
  // stage_stuck: the call that did not return. Its thread still runs it: the engine keeps
  // what that thread may touch (its Impl) for the life of the process, and the caller must
  // end the process, not destroy the backend, once it has reported.
  StuckCall stuck;
};

class Engine {
 public:
  /// [allocates, no-block] makes its Impl (one allocation); construct before the run, off the real-time path.
  Engine();
  /// [no-alloc, no-block]
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Device streams: once the audio callback has run, opens its thread's context-switch
  /// record (a thread the engine did not start: opened from here, then read by the callback
  /// alone). Call from a supervising thread until it returns true; false while no callback
  /// ran. Whether the kernel refused is in the result. Not real-time (a system call and a mapping).
  bool attach_callback_record() noexcept;
  /// Whether the run gave up on a hosted call that did not return (EngineResult::stuck), for
  /// a supervising thread while run() is under way: the device stream must then be left as it
  /// is (a callback inside the call cannot be waited for). [no-alloc, no-block]
  bool gave_up_on_hosted_call() const noexcept;
  /// Whether a hosted call is under way now and the run watches it (a step timeout is set):
  /// a device that stops calling back meanwhile is waiting for that call, which the watch
  /// will give up on, not stalled on its own. [no-alloc, no-block]
  bool watching_hosted_call() const noexcept;

  /// Allocates the pool, queues and trace. `backend` must already be prepared for
  /// cfg.spec. Returns invalid_argument for an impossible configuration. [allocates, no-block]
  Status prepare(const EngineConfig& cfg, Backend& backend, ChunkSource& source, ChunkSink& sink, RunStats& stats);
  /// Streams until the source ends, a stage fails, or stop is requested. [allocates, blocks]
  /// (creates threads, joins them); the threads it runs are [no-alloc] and block only on their queues and I/O. Call once per prepare().
  EngineResult run();
  /// Asks the run to stop: the source makes no more chunks, the processor finishes the one
  /// it holds and takes no more queued ones. [no-alloc, no-block] Async-signal safe.
  void request_stop() noexcept { stop_.store(true, std::memory_order_relaxed); }
  /// Stop when *flag becomes true (e.g. set by a SIGINT handler). [no-alloc, no-block]; set before run().
  void watch_stop_flag(const std::atomic<bool>* flag) noexcept { external_stop_ = flag; }

  /// Device callback as source: copies `frames` interleaved frames into a pooled chunk
  /// stamped `sched` and queues it; drops (and counts) when no chunk or no room.
  /// [no-alloc, no-block] No lock. Call from one thread only.
  Status push(const void* src, int frames, std::int64_t sched) noexcept;
  /// Device callback as sink: writes the output due at callback `index` (the processed
  /// input chunk index - K) into `dst`, or silence with an underrun before it is ready.
  /// [no-alloc, no-block] No lock. Same thread as push().
  Status pull(void* dst, int frames, std::uint64_t index) noexcept;
  /// No more push() calls: run() finishes the chunks in flight and returns. [no-alloc, no-block]
  void finish_source() noexcept;
  /// Counters readable while running (relaxed, for a live view). [no-alloc, no-block]
  std::uint64_t live_drops() const noexcept;
  /// [no-alloc, no-block]
  std::uint64_t live_underruns() const noexcept;
  /// [no-alloc, no-block]
  std::size_t live_queue_depth() const noexcept;

  /// Chunk records of the run in emit order (the last trace_capacity). [allocates, no-block]
  std::vector<ChunkRecord> trace() const;
  /// [no-alloc, no-block]
  const EngineConfig& config() const noexcept { return cfg_; }
  /// Sets the first chunk's scheduled arrival (EngineConfig::start_at_ns) after prepare(),
  /// before run(). [no-alloc, no-block]
  void schedule_start(std::int64_t start_at_ns) noexcept { cfg_.start_at_ns = start_at_ns; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  EngineConfig cfg_;
  std::atomic<bool> stop_{false};
  const std::atomic<bool>* external_stop_ = nullptr;
};

}  // namespace chunkscope
