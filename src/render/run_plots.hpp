#pragma once
// The run page's plots beyond the percentile curves: latency per chunk (plot-timeline),
// output period per chunk (plot-cadence) and where the time goes (plot-breakdown). Each
// returns its <svg> and the caption under it. Not real-time.
#include <string>

#include "src/render/sections.hpp"
#include "src/report/model.hpp"

namespace chunkscope::render {

/// Latency per chunk on a log axis, min/max per pixel column above 300 chunks; every
/// column with a miss shows its worst miss, the worst chunk is circled and labelled,
/// drops are marked on the axis. Without a series: the summary's misses and drops.
std::string timeline_svg(const RunReport& r, const RunTiming& t);

/// The output period per chunk against D and D + margin (without a series: the period's
/// summary percentiles).
std::string cadence_svg(const RunReport& r, const RunTiming& t);

/// The mean time of each component per counted chunk, stacked (the means add up to the
/// mean end-to-end latency), and each component's p50 and p95 side by side.
std::string breakdown_svg(const RunReport& r, const RunTiming& t);

}  // namespace chunkscope::render
