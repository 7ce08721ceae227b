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
#include "src/options.hpp"
#include "src/report/report.hpp"
#include "rt/run_stats.hpp"

namespace chunkscope {

/// Parses "1.5ms" or "20%" against chunk duration D (ns). Throws InputError, also when the
/// margin leaves no budget (margin >= D).
std::int64_t parse_margin_ns(const std::string& text, std::int64_t chunk_ns);

struct ReportPaths {
  std::string json, hgrm, trace;
};

/// The report files asked for (--report-dir fills in the ones not given), checked for
/// writability before anything streams. Throws InputError.
ReportPaths resolve_report_paths(const StreamOptions& opt);

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
