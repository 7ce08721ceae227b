#pragma once
// The typed report model: one run (RunReport) and one comparison (CompareReport), built
// once from a run's statistics and then read by every writer and reader (terminal, JSON,
// HTML, cadence, compare, diagnosis, stage-bench). Not real-time.
//
// Design: a report is a value. build_run_report() (src/report/build.hpp) fills every
// section from the run's statistics, then decides the verdict and the diagnosis once,
// when all sections (the device section of a monitor run included) are known. The JSON
// schema (chunkscope.report/1, chunkscope.compare/1) lives only in src/report/schema.cpp,
// which writes this model and reads it back, tolerating what older files lack and
// refusing, in one line naming the field, what is mistyped. No other file names a JSON
// key of a report.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rt/backend.hpp"
#include "rt/run_stats.hpp"
#include "src/environment.hpp"

namespace chunkscope {

/// A histogram as a report keeps it: exact count, min, max and mean, and the percentiles
/// of the log-linear histogram. Percentile fields are meaningful only when count > 0.
struct HistSummary {
  bool operator==(const HistSummary&) const = default;
  std::uint64_t count = 0;
  std::int64_t min = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, p99_9 = 0, max = 0;
  double mean = 0;
  bool has_data() const noexcept { return count > 0; }
};

/// The percentiles every report prints, in order, with their labels.
enum class Pct : int { p50, p90, p95, p99, p99_9, count };
inline constexpr int kPctCount = static_cast<int>(Pct::count);
/// The percentile's value in [0, 100] (50, 90, 95, 99, 99.9).
double pct_value(Pct p) noexcept;
/// "p50", "p90", "p95", "p99", "p99.9".
const char* pct_label(Pct p) noexcept;
/// The summary's value at `p`.
std::int64_t at(const HistSummary& h, Pct p) noexcept;

enum class RunState { complete, interrupted, incomplete };
/// "complete", "interrupted", "incomplete".
const char* run_state_name(RunState s) noexcept;

/// Where the samples of a run came from, so that it can be replayed.
struct InputDesc {
  bool operator==(const InputDesc&) const = default;
  enum class Kind { none, file, synth, device } kind = Kind::none;
  std::string path;                    // file
  std::string signal;                  // synth
  double rate = 0;                     // synth
  int channels = 0;                    // synth
  std::int64_t frames = 0;             // synth
  std::string device_name, host_api;   // device
};

/// The processing stage's I/O signature: what stage-bench must rebuild.
struct Signature {
  bool operator==(const Signature&) const = default;
  int frames = 0;
  int channels = 0;
  double rate = 0;
  DType dtype = DType::f32;
  std::string chain;
  bool fused = true;
  std::string backend = "cpu";  // cpu, cuda
  std::string mode;             // fused, unfused, eager, graph
  std::string cpu_isa;          // cpu: the kernels' instruction set (scalar, sse4, avx2, avx512); "" otherwise
  std::string cpu_layout;       // cpu: wavefront, channel-parallel or scalar; "" otherwise
  std::size_t state_values = 0;
  bool gpu_timing = false;
  std::string short_chunk = "eager";  // eager, recapture
};

/// How the engine ran (--wait, --rt, --cpus, --inline).
struct RunMode {
  bool operator==(const RunMode&) const = default;
  std::string wait = "block";
  bool rt = false;
  int rt_priority = 0;   // SCHED_FIFO priority with --rt
  std::string cpus;      // --cpus as given ("" when not pinned)
  bool inline_process = false;
  bool ftz = true;       // processed with denormals flushed (--ftz; older reports: on)
};

/// The audio file a run wrote (replay and synth with --output): its samples' levels.
struct OutputLevels {
  bool operator==(const OutputLevels&) const = default;
  std::string path;
  bool integer = false;              // integer samples: beyond full scale was clipped to it
  std::uint64_t samples = 0;         // samples written (frames x channels)
  std::uint64_t over_full_scale = 0;  // of them, beyond full scale (|x| > 1)
  double peak = 0;                   // the largest |sample| (1 is full scale)
  double peak_dbfs() const;          // 20 log10(peak); -inf for silence
};

struct ReportWorkload {
  bool operator==(const ReportWorkload&) const = default;
  std::string command;  // replay, synth, monitor, compare
  std::string source, sink;
  std::string chain;
  bool fused = true;
  int dispatches_per_chunk_planned = 0;
  int sections_per_sample = 0;
  int filter_stages = 0;  // stages of the chain that are filters (not spin/sleep)
  std::string backend = "cpu", mode;
  double rate = 0;
  int channels = 0;
  int chunk_frames = 0;
  DType dtype = DType::f32;
  std::uint64_t warmup_chunks = 0;
  std::optional<double> speed = 1.0;  // nullopt: --speed max
  std::string margin_text;
  std::int64_t margin_ns = 0;
  int queue_depth = 0;
  int pool_chunks = 0;
  double media_seconds = 0;
  InputDesc input;
  std::optional<Signature> signature;  // older reports may lack it
  std::optional<RunMode> run_mode;     // older reports lack it
  // the run's experiment flags, "--flag" or "--flag=value" (options.hpp experiment_args),
  // which every rerun hint starts from; older reports and monitor runs lack them
  std::vector<std::string> args;
  // a variant's report inside a comparison
  std::string variant;
  int rounds = 0;
  bool max_speed() const noexcept { return !speed.has_value(); }
};

/// ", avx2 wavefront kernels" for a CPU run whose report names its kernels, else "".
std::string cpu_kernels_text(const ReportWorkload& w);

struct GpuEnvironment {
  bool operator==(const GpuEnvironment&) const = default;
  std::string name, driver, compute_capability;
};

struct ReportEnvironment {
  bool operator==(const ReportEnvironment&) const = default;
  Environment host;
  std::optional<GpuEnvironment> gpu;  // CUDA runs only
};

struct Method {
  bool operator==(const Method&) const = default;
  std::string clock = "CLOCK_MONOTONIC";
  std::string percentiles;
  double relative_error = 0;
  std::string latency_from;
  // what judged the blame: the scheduler's record of the processing thread, or the
  // wall-clock rules (the thread CPU clock) and why ("" in older reports)
  std::string blame_from;
};

struct Timing {
  bool operator==(const Timing&) const = default;
  std::int64_t chunk_ns = 0;   // D
  std::int64_t budget_ns = 0;  // B
  bool paced = true;
};

struct MissRecord {
  bool operator==(const MissRecord&) const = default;
  std::uint64_t seq = 0;
  std::int64_t latency_ns = 0;
  Stage blame = Stage::process;
  double at_s = 0;
  std::optional<Owner> owner;  // older reports lack it
  std::optional<Cause> cause;  // the largest part of its latency
  std::int64_t cause_ns = 0;
  std::optional<int> step;     // 1-based planned step that took the most of its processing (CPU runs)
  std::int64_t step_ns = 0;    // and how long it took
  std::optional<std::int64_t> preempted_ns;  // its time preempted, by the scheduler's record (when kept)
};

/// One stall event (rt/run_stats.hpp StallEvent), times relative to the first scheduled
/// chunk.
struct StallRecord {
  bool operator==(const StallRecord&) const = default;
  std::uint64_t first_seq = 0, last_seq = 0, chunks = 0;
  double start_s = 0;              // the first chunk's deadline
  std::int64_t length_ns = 0;      // from the first chunk's deadline to the last missed chunk's emit
  std::int64_t worst_over_ns = 0;  // the largest L - B among its chunks
  Owner owner = Owner::chain;
  Cause cause = Cause::process;
  std::int64_t cause_ns = 0;
};

struct Counts {
  bool operator==(const Counts&) const = default;
  std::uint64_t produced = 0, emitted = 0, warmup = 0, counted = 0, short_chunks = 0, frames_emitted = 0;
  std::uint64_t drops = 0, drops_pool_empty = 0, drops_queue_full = 0;
  std::vector<std::uint64_t> drop_seqs;
  bool drop_seqs_truncated = false;
  std::uint64_t misses = 0;
  std::array<std::uint64_t, kStageCount> miss_blame{};
  std::vector<MissRecord> miss_list;
  // misses by owner, and the stall events they make (older reports lack them)
  std::optional<std::array<std::uint64_t, kOwnerCount>> miss_owner;
  // of those, misses whose largest part was a platform wait the baseline does not explain:
  // the chain's when their processing was abnormal or the run loads the machine, else still
  // the platform's (docs/profiler.md, "Owners of a late chunk"; older reports lack it)
  std::optional<std::uint64_t> platform_unexplained;
  std::optional<std::uint64_t> stalls;
  std::array<std::uint64_t, kOwnerCount> stall_owner{};
  std::vector<StallRecord> stall_list;
  bool stall_list_truncated = false;
  /// Stall events when the report has them, else the misses (each its own event).
  std::uint64_t events() const noexcept { return stalls.value_or(misses); }
};

struct Headroom {
  bool operator==(const Headroom&) const = default;
  std::int64_t p95 = 0, p99 = 0, max = 0;
};

/// "Safe" is a claim about the p95 and rests on at least kChunksToJudgeP95 counted chunks:
/// kTailChunks of them beyond the p95 (docs/profiler.md, "Enough chunks to judge"). A miss,
/// a drop or an xrun is a counted fact and makes a run not safe at any count.
inline constexpr std::uint64_t kTailChunks = 10;
inline constexpr std::uint64_t kChunksToJudgeP95 = kTailChunks * 20;  // 10 / (1 - 0.95)

/// A verdict in a word or two: "safe", "NOT safe", "cannot judge" (needed > 0: too few
/// counted chunks to call it safe) or "-" (no deadline verdict).
const char* verdict_word(const std::optional<bool>& safe, std::uint64_t needed) noexcept;
/// "cannot judge (84 chunks, need 200)".
std::string cannot_judge_words(std::uint64_t counted, std::uint64_t needed);

struct Verdict {
  bool operator==(const Verdict&) const = default;
  std::optional<bool> realtime_safe;  // nullopt: no deadline verdict (--speed max, nothing counted), or too few chunks
  std::uint64_t needed_chunks = 0;    // above 0: nothing missed, but too few counted chunks to call it safe
  std::optional<Stage> blame;         // paced runs with counted chunks only
  std::optional<Owner> owner;         // who the misses belong to (chain, platform, io, consumer); with misses only
  std::string text;                   // the headline
};

struct LongestGap {
  bool operator==(const LongestGap&) const = default;
  std::int64_t ns = 0;
  std::uint64_t seq = 0;
  double at_s = 0;
};

struct Cadence {
  bool operator==(const Cadence&) const = default;
  HistSummary period;
  std::optional<std::int64_t> jitter_p95_ns;  // nullopt without a schedule
  std::optional<double> drift_ppm;            // nullopt without a schedule
  LongestGap longest_gap;
  double period_ratio_p95 = 0;  // p95(P) / D: above 1 for any jitter, not a speed (older reports: cadence.realtime_factor)
  // A consumer holding the margin's worth of audio runs dry when a chunk is out later than
  // B + margin (or is dropped): steady when it never would have. nullopt: no schedule, or an
  // older report.
  std::optional<bool> steady;
  std::int64_t dry_after_ns = 0;  // B + margin
  std::uint64_t dry_chunks = 0;   // chunks out later than that
  std::int64_t dry_worst_ns = 0;  // the most any was beyond it
  std::uint64_t dry_first_seq = 0;
};

struct Throughput {
  bool operator==(const Throughput&) const = default;
  // speed_factor: media time / wall time, the real-time factor (JSON also as realtime_factor)
  double wall_seconds = 0, media_seconds = 0, speed_factor = 0, chunks_per_second = 0;
};

struct Queues {
  bool operator==(const Queues&) const = default;
  int depth = 0;
  std::uint64_t in_high_water = 0, out_high_water = 0;
};

struct Checksums {
  bool operator==(const Checksums&) const = default;
  std::string algorithm = "fnv1a64";
  std::vector<std::string> input, output;  // 16 hex digits per chunk
};

/// Per-chunk data for plots, in emit order (warm-up chunks included and flagged). Stage and
/// part durations are clamped to 0..2^31-1 ns when recorded (rt/run_stats.hpp
/// SeriesPoint) and kept in 32 bits, like the flags: a long run's series is the largest
/// part of its report.
struct Series {
  bool operator==(const Series&) const = default;
  std::uint64_t capacity = 0;
  bool truncated = false;
  std::uint64_t not_kept = 0;
  std::vector<std::int64_t> seq, sched_ns, emit_ns, latency_ns, period_ns;
  std::array<std::vector<std::int32_t>, kStageCount> stage_ns;  // per Stage
  std::array<std::vector<std::int32_t>, 5> part_ns;             // launch, h2d, kernel, d2h, sync
  std::vector<std::int32_t> flags;                              // kSeriesShort | kSeriesWarmup | kSeriesMiss
  std::vector<std::int32_t> source_wake_ns;  // woke - sched, part of source_ns (zeros in older reports)
  std::size_t size() const noexcept { return latency_ns.size(); }
  bool empty() const noexcept { return latency_ns.empty(); }
};
inline constexpr std::int64_t kSeriesShort = 1, kSeriesWarmup = 2, kSeriesMiss = 4;

struct XrunRecord {
  bool operator==(const XrunRecord&) const = default;
  std::uint64_t callback = 0;
  double at_s = 0;
  std::uint64_t flags = 0;
};

/// A monitor run's device section.
struct DeviceSection {
  bool operator==(const DeviceSection&) const = default;
  std::string input, output;  // output "none" when input only
  std::string host_api;
  bool duplex = false;
  int latency_chunks = 0;  // K: output callbacks between a chunk's input and its output
  std::string budget_rule;
  double reported_input_latency_s = 0, reported_output_latency_s = 0;
  double stream_rate = 0;
  std::uint64_t callbacks = 0;
  HistSummary callback_period;
  std::uint64_t xruns = 0, input_overflows = 0, output_underflows = 0, priming = 0;
  std::vector<XrunRecord> xrun_list;
  std::uint64_t underruns = 0, late_chunks = 0;
  std::vector<std::uint64_t> underrun_seqs;
};

/// One side of the platform baseline (rt/baseline_probe.hpp).
struct BaselineSummary {
  bool operator==(const BaselineSummary&) const = default;
  std::int64_t period_ns = 0, duration_ns = 0;
  HistSummary wake;     // timer wake-up lateness at the period
  HistSummary handoff;  // thread hand-off round trip through the engine's kind of queue
};

/// What one engine thread used over the run (getrusage per thread).
struct ThreadRecord {
  bool operator==(const ThreadRecord&) const = default;
  std::string thread;  // source, processor, sink
  int tid = 0;
  std::int64_t voluntary = 0, involuntary = 0;  // context switches: waited, preempted
  std::int64_t cpu_ns = 0;
  // the scheduler's record of the thread, where it was kept: its time preempted and blocked
  std::optional<std::int64_t> preempted_ns, blocked_ns;
};

/// The machine's load (/proc/loadavg) at one moment.
struct MachineLoad {
  bool operator==(const MachineLoad&) const = default;
  double load1 = 0;
  int runnable = 0;
  int cpus_online = 0;
};

/// The platform around a run: the baseline before and after it, per-thread context
/// switches, and the machine's load and steal.
struct PlatformSection {
  bool operator==(const PlatformSection&) const = default;
  std::optional<BaselineSummary> before, after;
  std::vector<ThreadRecord> threads;
  std::optional<MachineLoad> load_before, load_after;
  std::optional<double> busy_share, steal_share;  // of all CPUs' time over the run, [0, 1]
  /// The baseline's wake-up p99 (the larger of before and after), or nullopt.
  std::optional<std::int64_t> wake_p99() const noexcept;
  /// The baseline's hand-off round trip p99 (the larger of before and after), or nullopt.
  std::optional<std::int64_t> handoff_p99() const noexcept;
  bool has_baseline() const noexcept { return before.has_value() || after.has_value(); }
};

/// What the real-time audit counted in a hosted step's process() calls (rt/hosted.hpp):
/// every call of the run, warm-up included. "first" fields: the chunk's sequence number.
struct StepAudit {
  bool operator==(const StepAudit&) const = default;
  std::uint64_t calls = 0;
  bool allocations_counted = true;  // false: this build counts no heap calls (sanitizers)
  std::uint64_t allocations = 0, frees = 0;
  std::uint64_t blocking_calls = 0, voluntary_switches = 0;
  std::int64_t blocked_ns = 0;      // time blocked in the blocking calls (the record), else their wall - CPU time
  std::int64_t preempted_ns = 0;    // the record only: time preempted inside calls (the platform's)
  std::uint64_t paging_calls = 0, major_faults = 0;  // calls that waited for pages read in
  std::int64_t paging_ns = 0;
  std::uint64_t nonfinite = 0, subnormal = 0;
  std::optional<std::uint64_t> first_alloc, first_block, first_nonfinite, first_paging;
  /// Heap calls or blocking waits: not real-time safe, whatever the latencies say.
  bool unsafe() const noexcept { return allocations + frees > 0 || blocking_calls > 0; }
};

/// One planned step of the processor (a fused cascade, a calibration step, a hosted step),
/// timed on its own per counted chunk (CPU backend).
struct StepRecord {
  bool operator==(const StepRecord&) const = default;
  int index = 0;                 // 1-based, in plan order
  std::string kind;              // cascade, spin, sleep, hosted
  std::string label;             // its stages' specs, or the hosted step's label
  std::vector<int> stages;       // 1-based chain stages it covers
  HistSummary wall;              // per counted chunk
  std::optional<HistSummary> cpu;  // thread CPU time in the step (without the record: hosted steps only)
  std::optional<HistSummary> preempted;  // the record only: time the thread was preempted in the step
  double share = 0;              // mean wall / mean process
  std::uint64_t misses = 0;      // chain-owned misses whose processing's largest step it was
  std::uint32_t declared_latency_frames = 0;  // hosted steps: the delay the code declares
  bool converted_from_f64 = false;  // hosted step in an f64 run: its floats were converted
  std::optional<StepAudit> audit;   // hosted steps
  bool hosted() const noexcept { return kind == "hosted"; }
};

/// One diagnosis finding: a rule that fired, its numbers, how sure it is, and the smallest
/// next experiment.
struct Finding {
  bool operator==(const Finding&) const = default;
  enum class Severity { warning, info, ok } severity = Severity::info;
  enum class Confidence { high, medium, low } confidence = Confidence::medium;
  std::string rule;
  std::string text;
  std::vector<std::pair<std::string, double>> evidence;  // sorted by name
  std::string next;
};
const char* severity_name(Finding::Severity s) noexcept;
/// A cause of a late chunk and its time in words, e.g. "the source woke up 7.9 ms late".
std::string describe_cause(Cause c, std::int64_t ns);
const char* confidence_name(Finding::Confidence c) noexcept;

/// One stream of a run with --streams N: its own figures, from its own report.
struct StreamFigures {
  bool operator==(const StreamFigures&) const = default;
  int stream = 0;                 // 0-based
  std::int64_t offset_ns = 0;     // its schedule's offset from stream 0's
  RunState state = RunState::complete;
  std::uint64_t counted = 0, misses = 0, stalls = 0, drops = 0;
  HistSummary latency, process;
  std::optional<std::int64_t> headroom_p95_ns;  // paced runs with counted chunks
  std::optional<bool> realtime_safe;
  std::uint64_t needed_chunks = 0;  // its verdict's: too few chunks to judge
  std::optional<Owner> owner;     // who its misses belong to; with misses only
};

/// A run of N independent streams of one chain (--streams N): each stream's figures, the
/// worst stream and all chunks pooled. The rest of the report is the worst stream's.
struct StreamsSection {
  bool operator==(const StreamsSection&) const = default;
  int count = 1;
  bool staggered = true;          // schedules offset evenly over one chunk period (--stagger)
  std::int64_t offset_step_ns = 0;  // between consecutive streams (0 when aligned)
  // "independent": each stream its own engine and processing per chunk; "batched" (--batch):
  // one engine, every stream's chunk of a period in one chunk, so every stream has the
  // batch's figures
  std::string mode = "independent";
  std::vector<StreamFigures> streams;
  int worst = 0;                  // the stream this report's other sections describe
  std::optional<int> blame;       // the stream with the most stall events (most misses on a tie); none without misses
  // all streams' counted chunks pooled
  std::uint64_t counted = 0, misses = 0, stalls = 0, drops = 0;
  HistSummary latency, process;
  std::optional<std::int64_t> headroom_p95_ns;
  std::optional<bool> realtime_safe;  // every stream safe; nullopt when no stream has a verdict, or one cannot be judged
  std::uint64_t needed_chunks = 0;    // above 0: no stream unsafe, but one has too few chunks to judge
  /// "schedules staggered by 2.667 ms", "schedules aligned (--stagger off)", or for a run
  /// without a schedule (--speed max) "unpaced (--speed max): no schedules".
  std::string schedule_words(bool paced) const;
  bool batched() const noexcept { return mode == "batched"; }
  /// Streams whose verdict says not safe.
  int unsafe_streams() const noexcept {
    int n = 0;
    for (const auto& f : streams) n += f.realtime_safe == false ? 1 : 0;
    return n;
  }
};

/// A stage's time off the CPU per counted chunk, from the scheduler's record of the thread
/// that lived it: preempted (the platform's) and blocked.
struct StageOffCpu {
  bool operator==(const StageOffCpu&) const = default;
  HistSummary preempted, blocked;
};

/// Whether the command that made a report was given --fail-on-miss and --fail-on-unsafe.
struct ExitPolicy {
  bool operator==(const ExitPolicy&) const = default;
  bool fail_on_miss = false, fail_on_unsafe = false;
};

/// A hosted call that had not returned after the step timeout: the run stopped there.
struct StuckStep {
  bool operator==(const StuckStep&) const = default;
  int step = 0;            // the planned step, 1-based
  std::string label;       // its code ("so:libx.so")
  std::string call;        // "process", "reset"
  std::optional<std::uint64_t> chunk;  // the chunk it was processing
  std::int64_t stuck_ns = 0;    // how long it had been in the call
  std::int64_t timeout_ns = 0;  // --step-timeout
};

struct RunReport {
  bool operator==(const RunReport&) const = default;
  RunState state = RunState::complete;
  std::string reason;  // why not complete
  std::uint64_t not_processed = 0;  // queued chunks a stop sent back unprocessed (interrupted runs)
  ReportWorkload workload;
  ReportEnvironment environment;
  Method method;
  Timing timing;
  Counts counts;
  std::array<HistSummary, kStageCount> stages;                       // per Stage
  std::array<std::optional<HistSummary>, kPartCount> process_parts;  // present only when recorded
  HistSummary latency, engine_overhead, warmup;
  // the source stage split: its wake-up lateness (woke - sched) and its read (ready - woke);
  // paced runs (older reports lack them)
  std::optional<HistSummary> source_wake, source_read;
  // processing split per chunk by the scheduler's record: on the CPU, preempted, blocked
  std::optional<HistSummary> process_on_cpu, process_preempted, process_blocked;
  std::array<std::optional<StageOffCpu>, kStageCount> off_cpu;  // per stage, where its thread kept the record
  double dispatches_per_chunk = 0, launches_per_chunk = 0;
  std::optional<Headroom> headroom;  // paced runs with counted chunks
  Verdict verdict;
  Cadence cadence;
  Throughput throughput;
  Queues queues;
  BackendCounters backend_counters;
  Checksums checksums;
  Series series;
  std::optional<DeviceSection> device;  // monitor runs
  std::optional<PlatformSection> platform;  // paced runs (older reports lack it)
  std::optional<StreamsSection> streams;    // runs with --streams above 1
  std::optional<OutputLevels> output;       // runs that wrote an audio file (--output)
  // each planned step on its own (CPU runs; older reports lack them), the mean time of
  // process() outside every step (the conversions around hosted steps, the loop), and the
  // frames of delay the hosted steps declare, summed
  std::vector<StepRecord> steps;
  std::int64_t steps_outside_mean_ns = 0;
  std::uint32_t declared_latency_frames = 0;
  std::vector<Finding> diagnosis;
  // How the command that made this report ends, for the note under a not-safe headline. Not
  // written to the JSON: unknown (nullopt) in a saved report.
  std::optional<ExitPolicy> exit_policy;
  std::optional<StuckStep> stuck;  // runs a hosted call stopped (--step-timeout)

  bool complete() const noexcept { return state == RunState::complete; }
  /// The steps get rows of their own (terminal, page, trace): more than one step, or a hosted
  /// one; a single built-in step would repeat the process row.
  bool has_step_rows() const noexcept { return steps.size() > 1 || (!steps.empty() && steps[0].hosted()); }
  /// A hosted step's audit found code that is not real-time safe (heap calls, blocking) or
  /// NaN/Inf output: what --fail-on-unsafe fails on.
  bool unsafe_code() const noexcept {
    for (const auto& s : steps)
      if (s.audit && (s.audit->unsafe() || s.audit->nonfinite > 0)) return true;
    return false;
  }
  const HistSummary& stage(Stage s) const noexcept { return stages[static_cast<std::size_t>(s)]; }
  const std::optional<HistSummary>& part(Part p) const noexcept { return process_parts[static_cast<std::size_t>(p)]; }
  /// Full duplex on a device, L ends when the chunk is ready to play: its wait for the
  /// output callback (queue_out) and that callback's copy (sink) come after L, by design.
  bool stage_after_latency(Stage s) const noexcept {
    return device && device->duplex && (s == Stage::wait_out || s == Stage::sink);
  }
  /// What the rows after L mean, for the line under a stage table (empty when none are).
  std::string after_latency_note() const;
};

/// One variant of a comparison: its name and either its full run report or why it could
/// not run.
struct CompareVariant {
  bool operator==(const CompareVariant&) const = default;
  std::string name;
  bool available = false;
  std::string reason;
  std::optional<RunReport> report;
};

/// A row of the side-by-side table: one stage (stage key, part key or "end-to-end") of one
/// variant, with ratios to the baseline (nullopt where the baseline has none or 0).
struct CompareRow {
  bool operator==(const CompareRow&) const = default;
  std::string variant, stage;
  std::int64_t p50 = 0, p95 = 0, p99 = 0;
  std::optional<double> ratio_p50, ratio_p95, ratio_p99;
};

struct CompareSummary {
  bool operator==(const CompareSummary&) const = default;
  std::string variant;
  RunState state = RunState::complete;
  std::optional<std::int64_t> latency_p95_ns, process_p50_ns, process_p95_ns, headroom_p95_ns;
  double launches_per_chunk = 0, dispatches_per_chunk = 0;
  std::optional<std::int64_t> launch_p50_ns, gpu_p50_ns;
  std::uint64_t misses = 0, drops = 0;
  std::optional<bool> realtime_safe;
  std::uint64_t counted = 0, needed_chunks = 0;  // needed_chunks above 0: too few counted chunks to judge
  std::optional<double> ratio_latency_p95, ratio_process_p50;
  // what the verdict counts: `verdict_events` events of kind `verdict_events_of` ("misses"
  // today); older files lack them (read as the misses)
  std::uint64_t verdict_events = 0;
  std::string verdict_events_of = "misses";
  // who the events belong to, as the variant's own verdict says (older files lack it)
  std::optional<Owner> owner;

  /// The verdict in words: "real-time safe", "throughput only", or "NOT safe" with what it
  /// counted and whose they are ("NOT safe (2 stall events, platform)").
  std::string verdict_words() const;
};

/// The per-round figures a comparison keeps, in the order they are listed and judged.
enum class CompareFigure : int { latency_p50, latency_p95, process_p50, process_p95, misses, drops, count };
inline constexpr int kCompareFigureCount = static_cast<int>(CompareFigure::count);
/// "e2e p50", "process p95", "misses", "drops": a figure as the terminal and the page label it.
const char* compare_figure_label(CompareFigure f) noexcept;

/// One round of one variant: figures of that round's counted chunks alone.
struct CompareRound {
  bool operator==(const CompareRound&) const = default;
  int round = 0;           // 1-based
  int position = 0;        // 1-based place of the variant in the round's order
  bool complete = true;    // false: the round was interrupted, or the variant failed in it
  std::uint64_t counted = 0;
  std::optional<std::int64_t> latency_p50_ns, latency_p95_ns, process_p50_ns, process_p95_ns;  // nullopt: nothing counted
  std::uint64_t misses = 0, drops = 0;

  /// The round's value of `f`, nullopt where it has none.
  std::optional<double> figure(CompareFigure f) const noexcept {
    auto t = [](const std::optional<std::int64_t>& v) { return v ? std::optional<double>(double(*v)) : std::nullopt; };
    switch (f) {
      case CompareFigure::latency_p50: return t(latency_p50_ns);
      case CompareFigure::latency_p95: return t(latency_p95_ns);
      case CompareFigure::process_p50: return t(process_p50_ns);
      case CompareFigure::process_p95: return t(process_p95_ns);
      case CompareFigure::misses: return double(misses);
      case CompareFigure::drops: return double(drops);
      case CompareFigure::count: break;
    }
    return std::nullopt;
  }
  /// The figure's key: "latency_p50_ns", ..., "misses", "drops".
  static const char* figure_key(CompareFigure f) noexcept {
    constexpr const char* keys[kCompareFigureCount] = {"latency_p50_ns", "latency_p95_ns", "process_p50_ns",
                                                       "process_p95_ns", "misses",         "drops"};
    const int i = static_cast<int>(f);
    return i >= 0 && i < kCompareFigureCount ? keys[i] : "?";
  }
  /// True for figures that are times in ns (the others are counts).
  static bool figure_is_time(CompareFigure f) noexcept {
    return f != CompareFigure::misses && f != CompareFigure::drops;
  }
};

/// The spread of one figure over a variant's complete rounds that have a value for it.
struct CompareSpread {
  bool operator==(const CompareSpread&) const = default;
  CompareFigure figure = CompareFigure::latency_p95;
  int rounds = 0;
  double min = 0, median = 0, max = 0;
};

/// One variant's rounds and the spread of each figure across them.
struct CompareRounds {
  bool operator==(const CompareRounds&) const = default;
  std::string variant;
  std::vector<CompareRound> rounds;
  std::vector<CompareSpread> spread;  // figures with a value in at least one complete round
  const CompareSpread* find(CompareFigure f) const noexcept {
    for (const auto& s : spread)
      if (s.figure == f) return &s;
    return nullptr;
  }
};

/// How a comparison decides that a figure differs: see docs/profiler.md (compare).
struct CompareRule {
  bool operator==(const CompareRule&) const = default;
  int min_rounds = 3;         // fewer complete rounds on either side: the spread cannot be judged
  int resamples = 2000;       // bootstrap resamples of the ratio of medians
  double confidence = 0.95;   // two-sided percentile interval
  std::uint64_t seed = 0x6368756e6b73636full;  // the resampling is seeded: the same rounds give the same call
};

/// Whether one figure of a variant differs from the baseline's, judged across rounds.
struct CompareCall {
  bool operator==(const CompareCall&) const = default;
  enum class Call { difference, no_clear_difference, cannot_judge };
  std::string variant;
  CompareFigure figure = CompareFigure::latency_p95;
  Call call = Call::cannot_judge;
  std::string reason;                       // in words: which rule decided, or why none could
  int rounds = 0, baseline_rounds = 0;      // values on each side
  bool ranges_overlap = true;               // the per-round min..max ranges touch or overlap
  bool higher = false;                      // with a difference: the variant's figure is the higher one
  std::optional<double> ratio_of_medians;   // variant's median over the baseline's; nullopt: baseline median 0
  std::optional<double> interval_low, interval_high;  // bootstrap interval of that ratio; nullopt: not computed
  /// "difference", "no clear difference", "cannot judge".
  static const char* call_name(Call c) noexcept {
    switch (c) {
      case Call::difference: return "difference";
      case Call::no_clear_difference: return "no clear difference";
      case Call::cannot_judge: return "cannot judge";
    }
    return "?";
  }
  /// The call in a few words: "slower" / "faster" for a time, "more" / "fewer" for a
  /// count, else the call's name ("no clear difference", "cannot judge").
  std::string word() const;
};

struct CompareReport {
  bool operator==(const CompareReport&) const = default;
  std::string baseline;
  int rounds = 0, rounds_completed = 0;
  std::string order;  // how the rounds were ordered, in words
  RunState state = RunState::complete;
  ReportWorkload workload;  // common to all variants (backend, mode, signature not meaningful)
  ReportEnvironment environment;
  Timing timing;
  std::vector<CompareVariant> variants;
  std::vector<CompareRow> table;
  std::vector<CompareSummary> summary;
  // across rounds (older files lack them: empty)
  std::vector<CompareRounds> per_round;  // one per variant that ran, in the variants' order
  std::vector<CompareCall> differences;  // each figure of each variant but the baseline
  CompareRule rule;

  /// The variant named `name`, or nullptr.
  const CompareVariant* find(const std::string& name) const noexcept;
  /// The call on figure `f` of `variant`, or nullptr (the baseline, or a figure neither has).
  const CompareCall* call_of(const std::string& variant, CompareFigure f) const noexcept;
};

}  // namespace chunkscope
