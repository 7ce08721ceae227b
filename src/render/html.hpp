#pragma once
// One self-contained HTML page of a saved report: inline CSS and inline SVG plots, no
// scripts, fonts or anything fetched from elsewhere, readable offline. Not real-time.
//
// Plots (each an <svg> with the id named here): plot-percentiles-<stage> per stage and
// plot-percentiles-latency (log 1/(1-p) axis, budget and D lines), plot-timeline (latency
// per chunk, min/max per pixel column, every miss and the worst chunk kept), plot-breakdown
// (where the time goes at p50 and p95), plot-cadence (output period per chunk against D);
// a compare report gets plot-compare, plot-compare-process and plot-compare-percentiles.
#include <nlohmann/json.hpp>
#include <string>

namespace chunkscope {

/// The page for a run report (chunkscope.report/1) or a compare report
/// (chunkscope.compare/1). Throws InputError for any other document. Not RT safe.
std::string render_html(const nlohmann::json& report);

/// Escapes text for HTML content and attribute values (& < > " '). Not RT safe.
std::string html_escape(const std::string& s);

/// The number of pixel columns the per-chunk plots down-sample to.
inline constexpr int kPlotColumns = 1000;

}  // namespace chunkscope
