#pragma once
// `chunkscope replay` and `chunkscope synth`: set up source, backend, engine and sink, run
// the stream, and write the reports. Not real-time.
#include <atomic>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "rt/backend.hpp"
#include "rt/engine.hpp"
#include "src/plan.hpp"
#include "src/backends.hpp"
#include "src/report/report.hpp"
#include "rt/run_stats.hpp"
#include "src/io/output_file.hpp"

namespace chunkscope {

struct StreamOptions {
  std::string chain;          // empty: no processing stages
  int chunk = 256;
  DType dtype = DType::f32;
  bool fuse = true;
  int queue_depth = 8;
  std::string speed = "1";    // a positive factor or "max"
  long long warmup = 10;
  std::string margin = "20%";
  std::string output;         // file sink; empty: null sink
  std::string json_path, hgrm_dir, trace_path, report_dir;
  bool fail_on_miss = false;
  bool quiet = false;         // no terminal report
  std::size_t trace_capacity = 1u << 20;
  std::size_t series_limit = 1u << 20;  // per-chunk points kept in the report (0: none)
  BackendChoice backend;      // --backend, --mode, --gpu-timing, --short-chunk
  // replay: expected rate/channels (0: take the file's)
  double expect_rate = 0;
  int expect_channels = 0;
  // synth
  std::string signal = "sine:440";
  std::string duration = "5s";
  int channels = 2;
  double rate = 48000;
};

/// Parses "1.5ms" or "20%" against chunk duration D (ns). Throws InputError, also when the
/// margin leaves no budget (margin >= D).
std::int64_t parse_margin_ns(const std::string& text, std::int64_t chunk_ns);

struct ReportPaths {
  std::string json, hgrm, trace;
  std::string dir;  // --report-dir: created when the reports are written
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

/// Prints the terminal report (unless quiet) and writes the files in `paths`.
void write_reports(const nlohmann::json& report, const RunStats& stats, const Engine& engine, const EngineResult& er,
                   const ReportPaths& paths, bool quiet);

/// Everything a stream's options resolve to before any backend exists: the source's rate
/// and channels, the plan, D, the margin and the description of the input.
struct StreamSetup {
  std::string command;  // replay, synth
  std::string input;    // replay: the file
  double rate = 0;
  int channels = 0;
  int in_format = 0;    // libsndfile format of the input (output format default)
  bool max_speed = false;
  double speed = 1;
  Plan plan;            // planned with opt.fuse
  std::int64_t chunk_ns = 0, margin_ns = 0;
  std::int64_t total_frames = 0;
  nlohmann::json input_desc;  // workload.input
};

/// Checks the options and resolves them (opens the file once to read its format). Throws
/// InputError.
StreamSetup setup_stream(const std::string& command, const std::string& input, const StreamOptions& opt);
/// A fresh source for the setup (a new reader or generator at position 0). Throws InputError.
std::unique_ptr<ChunkSource> open_source(const StreamSetup& su, const StreamOptions& opt);
/// The plan for `fuse` (the setup's plan when it matches). Throws InputError.
Plan plan_for(const StreamSetup& su, const StreamOptions& opt, bool fuse);
/// Statistics for `rounds` passes over the input (the series is sized for all of them).
RunStatsConfig stats_config(const StreamSetup& su, const StreamOptions& opt, int rounds = 1);
EngineConfig engine_config(const StreamSetup& su, const StreamOptions& opt, std::size_t trace_capacity);
/// The workload block of the report for a run of `backend` with `plan`.
/// Fills the workload's backend fields from a prepared backend and the choice that made it:
/// name, mode, state values, GPU timing, short-chunk policy, counters.
void describe_backend(Workload& w, const Backend& backend, const BackendChoice& choice);
Workload make_workload(const StreamSetup& su, const StreamOptions& opt, const Backend& backend,
                       const ChunkSource& source, const ChunkSink& sink);

/// Runs `replay FILE` (command "replay") or `synth` (command "synth"; `input` unused).
/// Returns the exit code; throws InputError / RuntimeFailure for failures before streaming.
int run_stream(const std::string& command, const std::string& input, const StreamOptions& opt,
               const std::atomic<bool>* stop_flag);

}  // namespace chunkscope
