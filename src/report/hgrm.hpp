#pragma once
// HdrHistogram's classic percentile-distribution text (".hgrm"), as written by
// HdrHistogram's AbstractHistogram.outputPercentileDistribution, so HdrHistogram's
// plotter and log tools read it:
//
//        Value     Percentile TotalCount 1/(1-Percentile)
//
//       18.255 0.000000000000          1           1.00
//      105.279 0.100000000000      10013           1.11
//   ...
//     1620.506 0.999990844727     100000      109226.67
//     1620.506 1.000000000000     100000
// #[Mean    =      227.180, StdDeviation   =      121.169]
// #[Max     =     1620.506, Total count    =       100000]
// #[Buckets =           32, SubBuckets     =         2048]
//
// Rows follow HdrHistogram's PercentileIterator: percentile levels start at 0 % and
// each half of the remaining distance to 100 % is cut into ticks_per_half_distance
// steps; a row is written at the first slot whose cumulative share reaches the level,
// and a final row at 100 %. Every value (rows, Mean, StdDeviation, Max) is divided by
// unit_divisor, so with the default 1000 a nanosecond histogram is written in
// microseconds. Values print with significant_digits() decimals, as in HdrHistogram.
// Differences from HdrHistogram, all within the format: row values are the slot's
// highest equivalent value clamped to the exact [min, max] (so the 100 % row is the
// exact max), Max is the exact max, and Mean/StdDeviation come from the exact sums
// rather than from slot midpoints. Output is locale-independent ('.' decimals).
// Not real-time (allocates).
#include <cstdint>
#include <iosfwd>
#include <vector>

#include "rt/stats/histogram.hpp"

namespace chunkscope::stats {

/// One step of the percentile distribution.
struct PercentileRow {
  std::uint64_t value = 0;        // slot's highest equivalent value, clamped to [min, max]
  double percentile = 0.0;        // level iterated to, in percent (0..100)
  std::uint64_t total_count = 0;  // values at or below this slot
};

/// The rows write_hgrm writes (empty for an empty histogram). Allocates. Throws
/// std::invalid_argument unless ticks_per_half_distance >= 1.
std::vector<PercentileRow> percentile_distribution(const LogHistogram& h, int ticks_per_half_distance = 5);

/// Writes the .hgrm text of h to os, values divided by unit_divisor (default ns -> us).
/// Allocates. Throws std::invalid_argument unless unit_divisor is finite and > 0 and
/// ticks_per_half_distance >= 1.
void write_hgrm(std::ostream& os, const LogHistogram& h, double unit_divisor = 1000.0 /* ns -> us */,
                int ticks_per_half_distance = 5);

}  // namespace chunkscope::stats
