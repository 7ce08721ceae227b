#pragma once
// Statistics of a streaming run, fed one finished chunk at a time on the sink thread.
// prepare() allocates every histogram and list; add() is O(1), noexcept, allocation-free.
#include <array>
#include <atomic>
#include <type_traits>
#include <cstdint>
#include <vector>

#include "rt/chunk.hpp"
#include "rt/stats/histogram.hpp"
#include "rt/stats/interval_recorder.hpp"

namespace chunkscope {

enum class Stage : int { source, wait_in, process, wait_out, sink, count };
inline constexpr int kStageCount = static_cast<int>(Stage::count);
/// "source", "queue_in", "process", "queue_out", "sink". [no-alloc, no-block]
const char* stage_key(Stage s) noexcept;

/// Parts of the processing time (GPU backends fill them; zero on the CPU).
enum class Part : int { launch, h2d, kernel, d2h, sync, calib, count };
inline constexpr int kPartCount = static_cast<int>(Part::count);
/// [no-alloc, no-block]
const char* part_key(Part p) noexcept;

/// Who a late chunk's time belongs to (docs/profiler.md, "Blame"): the chain (processing
/// itself), the platform (a wake-up, a hand-off, or the processing thread descheduled), I/O
/// (the source's read, the sink's write) and the consumer side (the sink busy with earlier
/// chunks: backpressure).
enum class Owner : int { chain, platform, io, consumer, count };
inline constexpr int kOwnerCount = static_cast<int>(Owner::count);
/// "chain", "platform", "io", "consumer". [no-alloc, no-block]
const char* owner_key(Owner o) noexcept;

/// The parts a chunk's latency splits into, each with one owner.
///   source_wake          woke - sched: the source's wake-up lateness            platform
///   source_read          ready - woke: the source's read                        io
///   processor_busy       queue_in while the processor worked on earlier chunks  chain
///   handoff_in           the rest of queue_in: the processor's wake-up          platform
///   process              processing on the CPU (or in spin, sleep, GPU sync, or a hosted
///                        step's own waits: a lock, a sleep, I/O)               chain
///   process_descheduled  processing wall time off the CPU (and the same share of processor_busy)  platform
///   sink_busy            queue_out while the sink wrote earlier chunks          consumer
///   handoff_out          the rest of queue_out: the sink's wake-up              platform
///   sink_write           emit - sink_start                                      io
enum class Cause : int {
  source_wake,
  source_read,
  processor_busy,
  handoff_in,
  process,
  process_descheduled,
  sink_busy,
  handoff_out,
  sink_write,
  count
};
inline constexpr int kCauseCount = static_cast<int>(Cause::count);
/// The keys above. [no-alloc, no-block]
const char* cause_key(Cause c) noexcept;
/// The owner of a cause. [no-alloc, no-block]
Owner cause_owner(Cause c) noexcept;

/// A chunk's latency split into its causes (ns, each >= 0). [no-alloc, no-block]
/// `prev_proc_end`, `prev_emit`: the previous chunk's stamps (0: none); `prev_off_share`:
/// the share of the previous chunk's processing spent off the CPU.
struct LatencySplit {
  std::array<std::int64_t, kCauseCount> ns{};
  std::array<std::int64_t, kOwnerCount> owner_ns{};
  double off_share = 0;  // this chunk's processing off the CPU, as a share of it
  Cause largest = Cause::process;
};
LatencySplit split_latency(const ChunkRecord& r, std::int64_t prev_proc_end, std::int64_t prev_emit,
                           double prev_off_share) noexcept;

/// One stall: consecutive missed chunks held up by one late stage. A miss joins the open
/// event when its scheduled arrival came before the event's last missed chunk was emitted
/// (it was already waiting behind the same hold-up); otherwise it opens a new one.
struct StallEvent {
  std::uint64_t first_seq = 0, last_seq = 0;
  std::uint64_t chunks = 0;         // missed chunks in it
  std::int64_t start_ns = 0;        // the first chunk's deadline (sched + B)
  std::int64_t end_ns = 0;          // the last missed chunk's emit
  std::int64_t worst_over_ns = 0;   // the largest L - B among its chunks
  Owner owner = Owner::chain;       // the owner of its first chunk's miss: the cause
  Cause cause = Cause::process;     // the largest part of its first chunk's latency
  std::int64_t cause_ns = 0;        // and how long it was
};

struct RunStatsConfig {
  std::int64_t chunk_ns = 0;   // D: media duration of a full chunk at the replay speed
  std::int64_t budget_ns = 0;  // B = D - margin
  bool paced = true;           // false at --speed max: no deadlines
  std::uint64_t warmup = 0;    // chunks reported apart
  double media_ns_per_frame = 0;  // 1e9 / (rate x speed)
  std::size_t miss_list_capacity = 4096;
  std::size_t series_capacity = 0;  // per-chunk points kept for plots (the first N emitted)
  std::size_t stall_list_capacity = 1024;
  // Cadence: a consumer holding the margin's worth of audio runs dry when a chunk is out
  // later than its deadline plus the margin, L > B + margin. 0: D (B + margin = D).
  std::int64_t dry_after_ns = 0;
  int steps = 0;  // planned steps the backend times (at most kMaxTimedSteps): one histogram each
  // The platform baseline's longest wake-up lateness and hand-off round trip (0: none
  // measured). A late chunk's platform waits are the platform's only within these
  // (docs/profiler.md, "Owners of a late chunk"); RunStats::set_platform_tails sets them once measured.
  std::int64_t baseline_wake_max_ns = 0;
  std::int64_t baseline_handoff_max_ns = 0;
  // What the run itself puts on the machine: the streams whose processing runs at once
  // (each with statistics of its own; 1 for a batch), and the CPUs its threads may use
  // (0: unknown, taken as 1). A wait beyond the baseline's tail is the run's own only when
  // its processing holds at least half of those CPUs.
  int load_streams = 1;
  int cpus = 0;
};

/// One emitted chunk, compact, for per-chunk plots: stamps relative to nothing (raw ns),
/// durations in ns clamped to 32 bits (2.1 s).
struct SeriesPoint {
  std::uint64_t seq;
  std::int64_t sched, emit;
  std::int32_t stage[kStageCount];  // source, queue_in, process, queue_out, sink
  std::int32_t part[5];             // launch, h2d, kernel, d2h, sync
  std::uint32_t flags;              // kChunkShort | kChunkWarmup | kChunkMiss
  std::int32_t wake;                // woke - sched: the source's wake-up lateness
  std::int32_t reserved;
};
static_assert(std::is_trivially_copyable_v<SeriesPoint>);
static_assert(sizeof(SeriesPoint) == 80, "SeriesPoint is a fixed-size record");

struct MissEntry {
  std::uint64_t seq;
  std::int64_t latency_ns;
  std::int64_t emit_ns;
  Stage blame;
  Owner owner;
  Cause cause;       // the largest part of its latency
  std::int64_t cause_ns;
  std::int32_t step;      // 0-based planned step that took the most time in processing; -1: none timed
  std::int64_t step_ns;   // and its time
  std::int64_t preempted_ns;  // its stages' time preempted, by the records kept; -1: no record
};

class RunStats {
 public:
  /// Allocates histograms and lists. [allocates, no-block]
  void prepare(const RunStatsConfig& cfg);
  /// Records one finished chunk (its record gets kChunkWarmup / kChunkMiss set). [no-alloc, no-block]
  /// O(1), no allocation.
  void add(ChunkRecord& r) noexcept;

  /// [no-alloc, no-block]
  const RunStatsConfig& config() const { return cfg_; }
  /// Frees the per-chunk series once a report holds its copy (the largest part of a long
  /// run's memory: the report's files are then written without both). Not while a stream runs.
  void release_series() noexcept { std::vector<SeriesPoint>().swap(series); }
  /// The platform baseline measured before the run: its longest wake-up lateness and
  /// hand-off round trip (0: none). Set before the run, not while it streams.
  void set_platform_tails(std::int64_t wake_max_ns, std::int64_t handoff_max_ns) noexcept {
    cfg_.baseline_wake_max_ns = wake_max_ns;
    cfg_.baseline_handoff_max_ns = handoff_max_ns;
  }
  /// Starts a new stream segment feeding the same statistics (compare rounds): the next
  /// chunks pay their own warm-up, the period restarts, and drift is fitted per segment
  /// origin (a pooled slope). [no-alloc, no-block]; not while a stream runs.
  void begin_segment() noexcept {
    have_prev_ = false;
    have_origin_ = false;
    seg_warmup_ = 0;
    prev_proc_end_ = 0;
    prev_emit_ = 0;
    prev_off_share_ = 0;
    stall_open_ = false;
  }

  /// Live view: when set (before the run), add() also records latency and |P - D| here,
  /// and keeps live_counted / live_misses, for a reader thread. [no-alloc, no-block]; set before the run.
  void enable_live(stats::IntervalRecorder* live_lat, stats::IntervalRecorder* live_jit) {
    live_latency_ = live_lat;
    live_jitter_ = live_jit;
  }
  /// Live metrics (--metrics-listen): when set (before the run), add() also records each
  /// counted chunk's latency, stage times and output period here for a reader thread.
  /// Null pointers record nothing. [no-alloc, no-block]; set before the run.
  struct MetricRecorders {
    stats::IntervalRecorder* latency = nullptr;                 // L = emit - sched
    std::array<stats::IntervalRecorder*, kStageCount> stage{};  // per Stage
    stats::IntervalRecorder* period = nullptr;                  // emit_k - emit_{k-1}
    std::array<stats::IntervalRecorder*, kMaxTimedSteps> step{};  // each timed step's wall time
  };
  void enable_metrics(const MetricRecorders& m) { metrics_ = m; }
  /// Counters a reader thread may load while the run goes on (relaxed stores on the sink
  /// thread; exact once the run has joined): counted chunks, warm-up chunks, misses, stall events.
  std::atomic<std::uint64_t> live_counted{0}, live_warmup{0}, live_misses{0}, live_stalls{0};

  // -- results (read after the run) --
  std::vector<stats::LogHistogram> stage;   // per Stage
  std::vector<stats::LogHistogram> part;    // per Part
  stats::LogHistogram latency;        // L = emit - sched
  stats::LogHistogram period;         // emit_k - emit_{k-1}
  stats::LogHistogram jitter;         // |period - D|
  stats::LogHistogram overhead;       // L - processing time: what the engine adds
  stats::LogHistogram warmup_latency;
  stats::LogHistogram source_wake;    // woke - sched (paced sources)
  stats::LogHistogram source_read;    // ready - woke
  std::vector<stats::LogHistogram> step_wall;  // per timed step: its wall time (RunStatsConfig::steps)
  std::vector<stats::LogHistogram> step_cpu;   // per timed step: CPU time (without the record: hosted steps only)
  std::vector<stats::LogHistogram> step_preempted;  // per timed step, with the record: time preempted
  std::vector<std::uint64_t> step_miss;        // chain-owned misses whose processing's largest step it was

  std::uint64_t chunks = 0;          // after warm-up
  std::uint64_t warmup_chunks = 0;
  std::uint64_t frames = 0;          // all emitted frames, warm-up included
  std::uint64_t short_chunks = 0;
  std::uint64_t misses = 0;
  std::array<std::uint64_t, kStageCount> miss_blame{};
  std::vector<MissEntry> miss_list;  // the first miss_list_capacity misses
  std::array<std::uint64_t, kOwnerCount> miss_owner{};  // misses per owner
  std::array<std::int64_t, kOwnerCount> miss_owner_ns{};  // their latency parts summed, per owner
  std::uint64_t stalls = 0;                             // stall events
  std::array<std::uint64_t, kOwnerCount> stall_owner{};  // stall events per owner
  // misses whose largest part was a platform wait the baseline does not explain (longer
  // than the machine did on its own, or with processing above its normal range): owned by
  // the chain instead
  std::uint64_t platform_unexplained = 0;
  // the scheduler's record (rt/sched_record.hpp), over counted chunks it timed: processing
  // on the CPU, preempted and blocked per chunk; the chain's own processing time summed (for
  // "the run loads the machine")
  std::uint64_t recorded_chunks = 0;
  stats::LogHistogram proc_on_cpu;  // preempted and blocked: off_preempted / off_blocked of Stage::process
  // each stage's time off the CPU per counted chunk, by the record of the thread that lived it
  std::array<stats::LogHistogram, kStageCount> off_preempted, off_blocked;
  std::int64_t chain_process_sum = 0;
  std::vector<StallEvent> stall_list;                   // the first stall_list_capacity events
  // cadence: chunks a consumer holding the margin's worth of audio would have run dry on
  std::uint64_t dry_chunks = 0;
  std::int64_t dry_worst_ns = 0;   // the largest L - (B + margin) among them
  std::uint64_t dry_first_seq = 0;
  std::vector<SeriesPoint> series;   // the first series_capacity emitted chunks, warm-up included
  std::uint64_t series_dropped = 0;  // emitted chunks beyond series_capacity
  std::uint64_t dispatches = 0, launches = 0;  // sums over counted chunks
  std::int64_t first_emit = 0, last_emit = 0;  // all chunks
  std::int64_t first_sched = 0;
  // cadence
  std::int64_t longest_gap_ns = 0;
  std::uint64_t longest_gap_seq = 0;
  std::int64_t longest_gap_at = 0;
  /// [no-alloc, no-block]
  double drift_ppm() const noexcept;  // slope of emit time against media time, minus 1
  /// [no-alloc, no-block]
  std::uint64_t drift_points() const noexcept { return n_; }

 private:
  /// [no-alloc, no-block]
  void record_point(const ChunkRecord& r) noexcept;
  RunStatsConfig cfg_;
  stats::IntervalRecorder* live_latency_ = nullptr;
  stats::IntervalRecorder* live_jitter_ = nullptr;
  MetricRecorders metrics_;
  bool have_prev_ = false;
  std::uint64_t seg_warmup_ = 0;
  std::int64_t prev_emit_ = 0;
  std::int64_t prev_proc_end_ = 0;  // the previous chunk's, for the blame split
  double prev_off_share_ = 0;
  bool stall_open_ = false;
  bool open_stall_listed_ = false;
  std::int64_t open_stall_end_ = 0;  // the open event's latest emit
  /// [no-alloc, no-block]
  void note_stall(const ChunkRecord& r, std::int64_t L, Owner owner, Cause cause, std::int64_t cause_ns) noexcept;
  void note_miss(ChunkRecord& r, std::int64_t L, const std::int64_t (&st)[kStageCount], const LatencySplit& split,
                 int top_step, std::int64_t top_ns) noexcept;
  // regression sums, in seconds relative to the first counted chunk
  std::uint64_t n_ = 0;
  long double sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
  std::int64_t x0_ = 0, y0_ = 0;
  bool have_origin_ = false;
};

}  // namespace chunkscope
