#pragma once
// Live metrics for Prometheus: the typed snapshot a scrape serves and its two text forms,
// the Prometheus text exposition format 0.0.4 and OpenMetrics 1.0 text. Metric names,
// types, labels and the bucket rule are listed in docs/profiler.md ("Live metrics"); the
// names live only here. Not real-time: the snapshot is built on the sampler thread
// (src/metrics/exporter.hpp) and rendered on the HTTP thread.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rt/run_stats.hpp"
#include "rt/stats/histogram.hpp"

namespace chunkscope::metrics {

// ---------------------------------------------------------------- formats

enum class Format { prometheus_text, openmetrics };

/// "text/plain; version=0.0.4; charset=utf-8" or
/// "application/openmetrics-text; version=1.0.0; charset=utf-8".
const char* content_type(Format f) noexcept;

/// The format an HTTP Accept header asks for: OpenMetrics when it lists
/// application/openmetrics-text (version 1.0.0 or none given) with a q above 0 and at least
/// the q of text/plain (or a wildcard); else the Prometheus text format (also for an empty
/// or missing header).
Format negotiate(std::string_view accept);

// ---------------------------------------------------------------- the snapshot

/// One Prometheus histogram: cumulative counts at each bound (the +Inf bucket is count),
/// the exact count and the exact sum.
struct HistogramData {
  std::vector<std::uint64_t> cumulative;  // one per bound
  std::uint64_t count = 0;
  std::uint64_t sum_ns = 0;
};

/// The bucket upper bounds (ns) of the latency histograms for budget B (ns):
/// B x {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, ..., 1.0, 1.25, 1.5, 2, 3, 5, 10},
/// each rounded to a whole microsecond (at least 1 us), duplicates removed.
std::vector<std::int64_t> latency_bounds(std::int64_t budget_ns);
/// The bucket upper bounds (ns) of the output period histogram for chunk duration D (ns):
/// D x {0.5, 0.9, 0.95, 0.99, 0.999, 1.001, 1.01, 1.05, 1.1, 1.5, 2, 4}, rounded to a whole
/// microsecond (at least 1 us), duplicates removed.
std::vector<std::int64_t> period_bounds(std::int64_t chunk_ns);

/// `h` in buckets of `bounds`: a histogram slot counts as <= a bound when its lowest value
/// is (so bucket counts carry the histogram's resolution, relative error <= 0.1 %; count and
/// sum are exact). [allocates]
HistogramData bucketize(const stats::LogHistogram& h, const std::vector<std::int64_t>& bounds);

/// Everything one stream exports.
struct StreamMetrics {
  // labels
  std::string stream = "0";
  std::string chain, backend, mode;
  int chunk = 0;
  double rate = 0;
  // run constants
  std::int64_t budget_ns = 0, chunk_ns = 0;
  bool paced = true;
  int queue_capacity = 0;
  // counters
  std::uint64_t chunks = 0, warmup_chunks = 0, misses = 0, drops = 0, xruns = 0, underruns = 0, stalls = 0;
  // gauges
  bool running = false;
  std::optional<std::int64_t> headroom_p95_ns;       // B - p95 latency over the last interval with chunks
  std::uint64_t interval_chunks = 0;                 // chunks in that interval
  std::size_t queue_depth = 0;
  std::optional<std::int64_t> baseline_wake_p99_ns;  // measured before the run
  // histograms (over the run so far, warm-up excluded)
  HistogramData latency;
  std::array<HistogramData, kStageCount> stage;
  HistogramData period;
  std::vector<HistogramData> step;        // each planned step inside process (CPU runs)
  std::vector<std::string> step_labels;   // and how the report names it
};

struct MetricsSnapshot {
  std::vector<std::int64_t> latency_bounds_ns, period_bounds_ns;
  std::vector<StreamMetrics> streams;
};

// ---------------------------------------------------------------- rendering

/// The exposition of `s` in `f`: HELP and TYPE (and, in OpenMetrics, UNIT) per family, the
/// same samples in both, OpenMetrics closed by "# EOF". Label values escaped (\\, \", \n).
std::string render(const MetricsSnapshot& s, Format f);

/// A label value escaped for the exposition: backslash, double quote and newline.
std::string escape_label_value(std::string_view v);
/// A bound in seconds as written in `le`: the exact decimal of whole nanoseconds
/// ("0.0042", "1", "0.000001").
std::string seconds_text(std::int64_t ns);

}  // namespace chunkscope::metrics
