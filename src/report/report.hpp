#pragma once
// Reports of a streaming run: the JSON document (schema chunkscope.report/1) is built
// first, and the terminal table, .hgrm files and Chrome trace are written from the run's
// data. Not real-time.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "rt/engine.hpp"
#include "src/environment.hpp"
#include "src/plan.hpp"
#include "rt/run_stats.hpp"

namespace chunkscope {

inline constexpr const char* kReportSchema = "chunkscope.report/1";

struct Workload {
  std::string command;      // replay, synth
  std::string source, sink;
  std::string backend, mode;
  double rate = 0;
  int channels = 0;
  int chunk_frames = 0;
  DType dtype = DType::f32;
  std::uint64_t warmup = 0;
  bool max_speed = false;
  double speed = 1;
  std::string margin_text;
  std::int64_t margin_ns = 0;
  int queue_depth = 0;
  double media_seconds = 0;  // of the whole source
  // the I/O signature a later isolated replay (stage-bench) must reproduce
  nlohmann::json input = nlohmann::json::object();  // {"kind":"file","path"} | {"kind":"synth",...} | {"kind":"device",...}
  std::size_t state_values = 0;
  bool gpu_timing = false;
  std::string short_chunk = "eager";  // graph mode: eager fallback or recapture
  BackendCounters counters;
};

struct RunOutcome {
  std::string state = "complete";  // complete, interrupted, incomplete
  std::string reason;              // why not complete
};

/// The whole report as JSON. `trace` may be empty.
nlohmann::json build_report(const Workload& w, const Plan& plan, const Environment& env, const RunStats& st,
                            const EngineResult& er, const RunOutcome& outcome);

/// The per-chunk series as columns (schema in docs/profiler.md, "series").
nlohmann::json series_json(const RunStats& st);

/// A histogram as the report writes it: count, then min, p50, p90, p95, p99, p99_9, max, mean.
nlohmann::json histogram_json(const stats::LogHistogram& h);

/// Hex text of a 64-bit checksum (16 lower-case digits).
std::string hex64(std::uint64_t v);

/// The terminal table and headline, from the JSON report.
void print_report(std::ostream& os, const nlohmann::json& report);

/// True when --fail-on-miss should fail the run: negative p95 headroom, misses or drops.
bool budget_broken(const nlohmann::json& report);

/// One HdrHistogram percentile file per stage (and end-to-end, period) into `dir`, each
/// through an OutputTarget (output_file.hpp).
void write_hgrm_files(const std::string& dir, const RunStats& st);
/// The names of the files write_hgrm_files() writes ("process.hgrm", ...).
std::vector<std::string> hgrm_file_names();

/// Chrome trace JSON (X slices per chunk per stage, C counters for queue depths, M names).
nlohmann::json build_trace(const std::vector<ChunkRecord>& trace, std::int64_t origin_ns);

/// Formats ns as "4.71 ms" / "812 µs" / "95 ns".
std::string fmt_time(double ns);

}  // namespace chunkscope
