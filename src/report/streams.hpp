#pragma once
// The report of a run of several streams (--streams N): each stream's own report, then one
// report for all of them: the worst stream's sections with a streams section beside them
// (each stream's figures, the worst, the stream to blame, all chunks pooled). Not real-time.
#include <cstdint>
#include <vector>

#include "rt/run_stats.hpp"
#include "src/report/model.hpp"

namespace chunkscope {

/// One stream's report and the statistics it was built from.
struct StreamRun {
  const RunReport* report = nullptr;
  const RunStats* stats = nullptr;
  std::int64_t offset_ns = 0;  // its schedule's offset from stream 0's
};

/// Which stream is worst: an incomplete one first, then one not safe, then the least p95
/// headroom (the most p95 latency at --speed max), then the lowest index. Returns 0 for
/// none.
int worst_stream(const std::vector<StreamFigures>& streams);

/// The counted chunks of the stream that counted fewest (0 without streams).
std::uint64_t fewest_counted(const StreamsSection& s) noexcept;

/// The streams section of `runs` (at least one): each stream's figures, the worst, the
/// stream to blame (the most stall events, then the most misses, then the lowest index;
/// none without misses) and every stream's counted chunks pooled (merged histograms).
StreamsSection build_streams_section(const std::vector<StreamRun>& runs, bool staggered, std::int64_t offset_step_ns);

/// The report of the whole run: the worst stream's report with the streams section, its
/// verdict safe only when every stream's is, and its headline naming the worst stream.
RunReport combine_streams(const std::vector<StreamRun>& runs, bool staggered, std::int64_t offset_step_ns);

/// The report of `n` streams batched into one engine (--batch): the batch's report with a
/// streams section of mode "batched", where every stream has the batch's figures (their
/// chunks travelled together), all of them pooled (each stream's chunks count: misses and
/// drops are n times the batch's; stall events are the batch's), and no stream to blame.
RunReport combine_batched(const RunReport& batch, const RunStats& stats, int n);

}  // namespace chunkscope
