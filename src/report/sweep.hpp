#pragma once
// A capacity sweep (chunkscope sweep): a grid of chunk sizes x stream counts (x variants),
// each cell a short paced run of several streams with the platform baseline, judged by one
// rule, and the safe frontier it draws: the smallest safe chunk per stream count and the
// largest safe stream count per chunk. JSON schema chunkscope.sweep/1. Not real-time.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/report/model.hpp"

namespace chunkscope {

inline constexpr const char* kSweepSchema = "chunkscope.sweep/1";

/// One cell of the grid: `streams` streams of `variant` at `chunk` frames.
struct SweepCell {
  enum class State { done, interrupted, incomplete, skipped, unavailable };
  std::string variant;
  int chunk = 0;
  int streams = 0;
  State state = State::skipped;
  std::string reason;              // why not done
  std::optional<bool> safe;        // done cells only (docs/profiler.md, sweep: the rule); unset: too few chunks
  std::uint64_t needed_chunks = 0;  // above 0: nothing missed, but a stream has too few chunks to judge
  std::uint64_t fewest_counted = 0; // the counted chunks of the stream with the fewest
  std::int64_t chunk_ns = 0, budget_ns = 0;  // D and B of this chunk size
  std::optional<std::int64_t> headroom_p95_ns;         // the worst stream's
  std::optional<std::int64_t> pooled_headroom_p95_ns;  // all streams' chunks pooled
  HistSummary latency, process;    // pooled
  std::uint64_t counted = 0, misses = 0, stalls = 0, drops = 0;
  std::array<std::uint64_t, kOwnerCount> stall_owner{};  // stall events per owner, all streams
  int worst = 0;
  std::optional<int> blame;
  std::optional<double> busy_share;  // the machine's, over the cell's run (/proc/stat)
  std::int64_t engine_cpu_ns = 0;    // CPU time of every stream's engine threads
  double wall_s = 0;                 // the streams' run, first start to last end
  std::optional<std::int64_t> wake_p99_ns;  // the baseline's wake-up p99 (before and after, the larger)
  /// Engine CPU time as a share of the machine over the run: engine_cpu_ns / (wall x CPUs).
  std::optional<double> cpu_share(int cpus) const noexcept {
    if (!(wall_s > 0) || cpus <= 0) return std::nullopt;
    return static_cast<double>(engine_cpu_ns) / (wall_s * 1e9 * cpus);
  }
  /// A done cell's verdict: "safe", "NOT safe" or "cannot judge (84 chunks, need 200)".
  std::string verdict_words() const;
  /// The same in a mark: "ok", "NO", "?".
  const char* mark() const noexcept { return safe == true ? "ok" : safe == false ? "NO" : "?"; }
};
/// "done", "interrupted", "incomplete", "skipped", "unavailable".
const char* sweep_state_name(SweepCell::State s) noexcept;

/// Whether a finished cell is safe: every stream's p95 headroom above 0, no stall event (so
/// no chunk missed its deadline) and no drop in any stream.
bool sweep_cell_safe(const StreamsSection& s) noexcept;

/// The safe frontier of one variant.
struct SweepFrontier {
  std::string variant;
  std::map<int, std::optional<int>> smallest_safe_chunk;   // per stream count; nullopt: none safe
  std::map<int, std::optional<int>> largest_safe_streams;  // per chunk; nullopt: none safe
};

struct SweepReport {
  RunState state = RunState::complete;  // interrupted: Ctrl-C, the cells done are kept
  std::string reason;
  std::string command = "sweep";
  std::string source;    // "file X" or "synth noise"
  InputDesc input;
  std::string chain;
  double rate = 0;
  int channels = 0;
  DType dtype = DType::f32;
  std::string margin_text;
  double cell_media_seconds = 0;  // each cell's length of audio
  std::int64_t baseline_ns = 0;   // each cell's baseline, before and after
  bool staggered = true;
  bool batched = false;  // --batch: a cell's streams batched into one chunk per period
  RunMode run_mode;
  std::vector<int> chunks, streams;
  std::vector<std::string> variants;
  double planned_seconds = 0, wall_seconds = 0;
  std::string rule;  // the safe rule in words
  ReportEnvironment environment;
  std::vector<SweepCell> cells;  // variant-major, then chunk, then streams, in run order
  std::vector<SweepFrontier> frontier;

  const SweepCell* find(const std::string& variant, int chunk, int streams) const noexcept;
};

/// The rule in words, as the report states it.
std::string sweep_rule_text();
/// The frontier of every variant from the done cells.
std::vector<SweepFrontier> sweep_frontier(const SweepReport& r);
/// The cell's figures from a finished run of its streams.
void fill_sweep_cell(SweepCell& cell, const RunReport& combined, const std::vector<RunReport>& per_stream);

/// The chunkscope.sweep/1 document (written by src/report/schema.cpp, with the other schemas).
nlohmann::json to_json(const SweepReport& r);
/// The grid per variant (headroom and safe or not per cell), the frontier in sentences.
void print_sweep(std::ostream& os, const SweepReport& r);
/// The frontier in sentences: "1 stream: the smallest safe chunk is 64 frames", ...
std::vector<std::string> frontier_sentences(const SweepReport& r, const SweepFrontier& f);
/// The HTML page: per variant a heat map of the grid (p95 headroom as a share of B) with
/// the safe frontier drawn, the cells' table and the rule. Not real-time.
std::string render_sweep_html(const SweepReport& r);

}  // namespace chunkscope
