#pragma once
// One stream from its options to its report, shared by replay, synth, monitor and compare.
//
// Design: a stream goes through four steps.
//   setup    setup_stream (a file or a synthetic signal) or setup_device_stream (a live
//            device): every option checked and resolved before any backend exists (the
//            source's rate and channels, the plan, D, margin and budget), so bad input fails
//            before anything streams; resolve_report_paths checks where the files go.
//   prepare  StreamSession::prepare: the backend for the plan, the statistics, and the
//            engine over a source and a sink.
//   run      StreamSession::run: the engine until the source ends, the stop flag is raised
//            or a stage fails (a device's callback feeds it from outside).
//   outcome  StreamSession::outcome reads the engine's result (a monitor adds its own
//            reading of a device that stopped); then report(), write() and finish().
// compare runs several variants over one setup with the free functions (open_source,
// plan_for, stats_config, engine_config, make_workload). Not real-time.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "rt/backend.hpp"
#include "rt/engine.hpp"
#include "rt/run_stats.hpp"
#include "src/backends.hpp"
#include "src/options.hpp"
#include "src/plan.hpp"
#include <optional>

#include "src/io/output_file.hpp"
#include "src/report/build.hpp"

namespace chunkscope {

// ---------------------------------------------------------------- setup

/// Parses "1.5ms" or "20%" against chunk duration D (ns). Throws InputError, also when the
/// margin leaves no budget (margin >= D).
std::int64_t parse_margin_ns(const std::string& text, std::int64_t chunk_ns);

struct ReportPaths {
  std::string json, hgrm, trace;
  std::string html;  // --report-dir: the page beside the JSON report
  std::string dir;   // --report-dir: created when the reports are written
};

/// The report files asked for (--report-dir fills in the ones not given). Checks nothing.
ReportPaths report_paths(const StreamOptions& opt);
/// report_paths(), checked for writability before anything streams; creates nothing (the
/// folders are made when the reports are written). Throws InputError.
ReportPaths resolve_report_paths(const StreamOptions& opt);
/// What a stream reads (`input`, when not empty, and the chain's SOS files) and writes
/// (--output and the report files), named by their options, for check_distinct_paths().
std::vector<PathRole> stream_inputs(const std::string& input, const StreamOptions& opt);
std::vector<PathRole> stream_outputs(const StreamOptions& opt);

/// Everything a stream's options resolve to before any backend exists: the source's rate
/// and channels, the plan, D, the margin and budget, and the description of the input.
struct StreamSetup {
  std::string command;  // replay, synth, monitor
  std::string input;    // replay: the file
  double rate = 0;
  int channels = 0;     // of each chunk: batch x stream_channels()
  int batch = 1;        // streams whose chunks of a period travel in one chunk (--batch)
  int in_format = 0;    // libsndfile format of the input (output format default)
  bool max_speed = false;
  double speed = 1;
  Plan plan;            // planned with opt.fuse
  std::int64_t chunk_ns = 0, margin_ns = 0;
  std::int64_t budget_ns = 0;         // D - margin; a full-duplex device: K x D - margin
  std::int64_t total_frames = 0;      // of the whole source; -1: a live device
  std::int64_t frame_limit = -1;      // replay: the frames of the file streamed (-1: all)
  std::int64_t expected_chunks = -1;  // chunks the run should see; -1: not known
  InputDesc input_desc;               // workload.input
  /// The channels of one stream (of each batched stream).
  int stream_channels() const noexcept { return channels / batch; }
};

/// The setup of one engine that carries `n` streams of `su` batched (--batch): each chunk
/// holds every stream's chunk of that period side by side, `n` x su.channels channels.
StreamSetup batched_setup(const StreamSetup& su, int n);

/// Checks what every stream takes: chunk size, queue depth, warm-up, series limit, and the
/// run modes (--baseline, --rt-priority, --cpus: CPUs that exist and this process may use;
/// --wait spin under --rt: a CPU of its own for each engine thread). Throws InputError
/// naming the flag.
void check_stream_options(const StreamOptions& opt);

/// What --rt and --cpus need from the system, before anything streams: the thread policy
/// is tried on a short-lived thread for each engine thread, then --rt locks the process's
/// memory (mlockall(MCL_CURRENT | MCL_FUTURE)). Throws RuntimeFailure (exit 3), one line
/// saying what was refused and why. A no-op without --rt and --cpus. setup_stream and
/// setup_device_stream call it last.
void prepare_run_modes(const StreamOptions& opt);

/// Checks the options of `replay FILE` (command "replay", `input` the file) or `synth`
/// and resolves them (opens the file once to read its format). Throws InputError.
StreamSetup setup_stream(const std::string& command, const std::string& input, const StreamOptions& opt);

/// The setup of a live device at `rate` with `channels`: a chunk is due `budget_chunks`
/// chunk durations after its input arrived (1 for input only, K for full duplex);
/// `duration_ns` (0: until stopped) sizes the series. Throws InputError.
StreamSetup setup_device_stream(const StreamOptions& opt, double rate, int channels, int budget_chunks,
                                std::int64_t duration_ns, InputDesc input_desc);

/// A fresh source for the setup (a new reader or generator at position 0; for a batched
/// setup, a BatchSource over one per stream). Throws InputError.
std::unique_ptr<ChunkSource> open_source(const StreamSetup& su, const StreamOptions& opt);
/// The plan for `fuse` (the setup's plan when it matches). Throws InputError.
Plan plan_for(const StreamSetup& su, const StreamOptions& opt, bool fuse);
/// The reason an interrupted run's report gives: stopped by a signal, and how many queued
/// chunks were not processed (EngineResult::not_processed).
std::string interrupted_reason(std::uint64_t not_processed);
/// The reason a run a hosted call stopped gives: "step 2, so:libx.so, had not returned from
/// process() after 2.0 s while processing chunk 50 (--step-timeout 2s)".
std::string stuck_reason(const StuckCall& s);
/// Statistics for `rounds` passes over the input (the series is sized for all of them).
RunStatsConfig stats_config(const StreamSetup& su, const StreamOptions& opt, int rounds = 1);
EngineConfig engine_config(const StreamSetup& su, const StreamOptions& opt, std::size_t trace_capacity);
/// The workload block of the report for a run of `backend` from `source` into `sink`.
/// The platform baseline for a run of `su` with `opt` (docs/profiler.md, "Platform
/// baseline"): nothing at --speed max or with --baseline 0. [allocates, blocks]
std::optional<BaselineResult> measure_baseline(const StreamSetup& su, const StreamOptions& opt);
/// Judges `stats`' late chunks against baseline `b` (its longest wake-up and hand-off); no
/// baseline, or one that could not run, leaves them judged by their largest share. Before the run.
void judge_against(RunStats& stats, const std::optional<BaselineResult>& b);

Workload make_workload(const StreamSetup& su, const StreamOptions& opt, const Backend& backend,
                       const ChunkSource& source, const ChunkSink& sink);

// ---------------------------------------------------------------- one run

class StreamSession {
 public:
  /// A session over a setup, its options and the report paths resolved for them.
  StreamSession(StreamSetup setup, const StreamOptions& opt, ReportPaths paths);
  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;

  /// The engine configuration of the setup (a trace ring only when a trace is written).
  EngineConfig engine_config() const;
  /// prepare: the backend for the setup's plan (RuntimeFailure when it cannot be made,
  /// e.g. no usable GPU), the statistics (with interval recorders for a live view when
  /// given, and the live metrics' recorders when given) and the engine over `source` and `sink`, which must outlive the session.
  void prepare(ChunkSource& source, ChunkSink& sink, const EngineConfig& ec,
               stats::IntervalRecorder* live_latency = nullptr, stats::IntervalRecorder* live_jitter = nullptr,
               const RunStats::MetricRecorders* metrics = nullptr);
  /// The machine before the run: a /proc snapshot and, for a paced run with --baseline
  /// above 0, the platform baseline (measure_platform with D as period, the run's wait
  /// mode and thread policy). Call right before the engine runs (a device: before its
  /// stream starts). [blocks for --baseline]
  void measure_before();
  /// The same after the run (a device: after its stream stopped).
  void measure_after();
  /// run: the engine on the calling thread until the source ends, `stop` is raised or a
  /// stage fails.
  void run(const std::atomic<bool>* stop);
  /// outcome: what the engine's result says (interrupted by the stop flag, or incomplete
  /// because the source, processing or the sink failed).
  RunOutcome outcome() const;

  /// The report's workload: the setup, the backend, the source and the sink, the run modes,
  /// and what measure_before() and measure_after() found.
  Workload workload() const;
  /// The whole report (build_run_report); a monitor run hands over its device section so
  /// that the verdict and the diagnosis see it. Once per run: the statistics' per-chunk
  /// series moves into the report (RunStats::release_series), which keeps a long run's
  /// report writing within twice its streaming memory.
  RunReport report(const Workload& w, const RunOutcome& outcome, std::optional<DeviceSection> device = std::nullopt);
  /// The terminal report (unless --quiet) and the report files.
  void write(const RunReport& report) const;
  /// The exit code: 3 for an incomplete run (its reason printed on stderr, one line), 1
  /// when --fail-on-miss and the budget broke (or `also_broken`), else 0.
  int finish(const RunReport& report, const RunOutcome& outcome, bool also_broken = false) const;

  const StreamSetup& setup() const { return su_; }
  const StreamOptions& options() const { return opt_; }
  const ReportPaths& paths() const { return paths_; }
  Engine& engine() { return engine_; }
  const Engine& engine() const { return engine_; }
  const RunStats& stats() const { return stats_; }
  const Backend& backend() const { return *backend_; }
  const EngineResult& result() const { return result_; }
  /// Takes over the machine's measurements of `other` (the baselines and /proc snapshots
  /// around a run of several streams, measured once by one of them).
  void adopt_measurements(const StreamSession& other);
  /// The platform baseline measure_before() took (none at --speed max or --baseline 0).
  const std::optional<BaselineResult>& baseline_before() const { return baseline_before_; }
  /// Judges this session's late chunks against a baseline measured before the run (its
  /// longest wake-up and hand-off; docs/profiler.md, "Blame"). measure_before does it for
  /// its own; a set of streams hands the first stream's to the others. Before the run.
  void adopt_platform_tails(const std::optional<BaselineResult>& b);

 private:
  StreamSetup su_;
  StreamOptions opt_;
  ReportPaths paths_;
  std::unique_ptr<Backend> backend_;
  RunStats stats_;
  Engine engine_;
  EngineResult result_;
  const ChunkSource* source_ = nullptr;
  const ChunkSink* sink_ = nullptr;
  std::optional<BaselineResult> baseline_before_, baseline_after_;
  std::optional<ProcSnapshot> proc_before_, proc_after_;
  std::optional<BaselineResult> measure_baseline() const;
};

}  // namespace chunkscope
