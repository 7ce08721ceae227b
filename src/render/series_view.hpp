#pragma once
// What the renderers read from a report's per-chunk series: the counted chunks' values,
// exact nearest-rank percentiles of them, and the output periods between counted chunks.
// Not real-time.
#include <cstdint>
#include <vector>

#include "src/report/model.hpp"

namespace chunkscope::render {

/// Nearest-rank percentile of sorted values (p in 0..100); 0 when there are none.
double rank_percentile(const std::vector<std::int64_t>& sorted, double p);

/// The sequence number of point `i` (its index when the series has no numbers).
std::int64_t seq_at(const Series& s, std::size_t i);

/// True when point `i` of the series is a warm-up chunk.
bool is_warmup(const Series& s, std::size_t i);

/// The values of `column` (one of the series' columns) at the counted chunks (warm-up
/// left out), sorted.
std::vector<std::int64_t> counted_sorted(const Series& s, const std::vector<std::int64_t>& column);
std::vector<std::int64_t> counted_sorted(const Series& s, const std::vector<std::int32_t>& column);

/// One output period of the series: the chunk that ended it, P and that chunk's emit time.
struct PeriodPoint {
  std::int64_t seq, period_ns, emit_ns;
};

/// The output periods between consecutive counted chunks (warm-up chunks and the first
/// chunk after them left out, as in the report's period histogram).
std::vector<PeriodPoint> counted_periods(const Series& s);

}  // namespace chunkscope::render
