#pragma once
// `chunkscope replay` and `chunkscope synth`: set up source, backend, engine and sink, run
// the stream, and write the reports. Not real-time.
#include <atomic>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "rt/backend.hpp"
#include "rt/engine.hpp"

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

class RunStats;

struct ReportPaths {
  std::string json, hgrm, trace;
};

/// The report files asked for (--report-dir fills in the ones not given), checked for
/// writability before anything streams. Throws InputError.
ReportPaths resolve_report_paths(const StreamOptions& opt);

/// Prints the terminal report (unless quiet) and writes the files in `paths`.
void write_reports(const nlohmann::json& report, const RunStats& stats, const Engine& engine, const EngineResult& er,
                   const ReportPaths& paths, bool quiet);

/// Runs `replay FILE` (command "replay") or `synth` (command "synth"; `input` unused).
/// Returns the exit code; throws InputError / RuntimeFailure for failures before streaming.
int run_stream(const std::string& command, const std::string& input, const StreamOptions& opt,
               const std::atomic<bool>* stop_flag);

}  // namespace chunkscope
