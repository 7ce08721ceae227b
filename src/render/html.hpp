#pragma once
// One self-contained HTML page of a report: inline CSS and inline SVG plots, no scripts,
// fonts or anything fetched from elsewhere, readable offline. Every page reads the typed
// report (src/report/model.hpp); no JSON is read here. Not real-time.
//
// Plots (each an <svg> with the id named here): plot-percentiles-<stage> per stage and
// plot-percentiles-latency (log 1/(1-p) axis, budget and D lines), plot-timeline (latency
// per chunk, min/max per pixel column, every miss and the worst chunk kept), plot-breakdown
// (the stage means stacked, adding up to the mean latency, and each stage's p50 and p95
// side by side), plot-cadence (output period per chunk against D); a compare report gets
// plot-compare, plot-compare-process and plot-compare-percentiles.
#include <string>
#include <variant>

#include "src/report/model.hpp"

namespace chunkscope {

/// The page of a run report. Not real-time.
std::string render_html(const RunReport& report);

/// The page of a compare report: the variants side by side (with each one's misses,
/// drops and verdict), then each variant's verdict, stages and diagnosis. Not real-time.
std::string render_html(const CompareReport& report);

/// The page of a saved report of either kind (a SavedReport, src/report/schema.hpp).
std::string render_html(const std::variant<RunReport, CompareReport>& report);

/// Escapes text for HTML content and attribute values (& < > " '). Not real-time.
std::string html_escape(const std::string& s);

/// The number of pixel columns the per-chunk plots down-sample to.
inline constexpr int kPlotColumns = 1000;

}  // namespace chunkscope
