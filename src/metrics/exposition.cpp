#include "src/metrics/exposition.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>

namespace chunkscope::metrics {

// ---------------------------------------------------------------- formats

const char* content_type(Format f) noexcept {
  return f == Format::openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                  : "text/plain; version=0.0.4; charset=utf-8";
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Format negotiate(std::string_view accept) {
  double q_om = 0, q_text = 0;
  while (!accept.empty()) {
    const std::size_t comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
    // media type, then ;param=value pairs
    const std::size_t semi = range.find(';');
    const std::string type = lower(trim(range.substr(0, semi)));
    double q = 1;
    std::string version;
    std::string_view params = semi == std::string_view::npos ? std::string_view{} : range.substr(semi + 1);
    while (!params.empty()) {
      const std::size_t next = params.find(';');
      const std::string_view param = trim(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view{} : params.substr(next + 1);
      const std::size_t eq = param.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string key = lower(trim(param.substr(0, eq)));
      const std::string value(trim(param.substr(eq + 1)));
      if (key == "q") {
        char* end = nullptr;
        q = std::strtod(value.c_str(), &end);
        if (end == value.c_str() || !std::isfinite(q)) q = 0;
      } else if (key == "version") {
        version = value;
      }
    }
    if (type == "application/openmetrics-text") {
      if (version.empty() || version == "1.0.0") q_om = std::max(q_om, q);
    } else if (type == "text/plain" || type == "text/*" || type == "*/*") {
      q_text = std::max(q_text, q);
    }
  }
  return q_om > 0 && q_om >= q_text ? Format::openmetrics : Format::prometheus_text;
}

// ---------------------------------------------------------------- buckets

namespace {

std::vector<std::int64_t> scaled_bounds(std::int64_t base_ns, const std::vector<double>& factors) {
  std::vector<std::int64_t> out;
  for (double f : factors) {
    const double ns = static_cast<double>(base_ns) * f;
    std::int64_t us = std::llround(ns / 1000.0);
    if (us < 1) us = 1;
    const std::int64_t b = us * 1000;
    if (out.empty() || b > out.back()) out.push_back(b);
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> latency_bounds(std::int64_t budget_ns) {
  return scaled_bounds(budget_ns, {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8,
                                   0.9, 1.0, 1.25, 1.5, 2, 3, 5, 10});
}

std::vector<std::int64_t> period_bounds(std::int64_t chunk_ns) {
  return scaled_bounds(chunk_ns, {0.5, 0.9, 0.95, 0.99, 0.999, 1.001, 1.01, 1.05, 1.1, 1.5, 2, 4});
}

HistogramData bucketize(const stats::LogHistogram& h, const std::vector<std::int64_t>& bounds) {
  HistogramData d;
  d.cumulative.assign(bounds.size(), 0);
  d.count = h.count();
  const stats::uint128 sum = h.sum();
  d.sum_ns = sum > stats::uint128(UINT64_MAX) ? UINT64_MAX : static_cast<std::uint64_t>(sum);
  // per-bucket counts first, then the running sum
  std::vector<std::uint64_t> per(bounds.size() + 1, 0);
  std::size_t b = 0;
  h.for_each_recorded([&](std::uint64_t lo, std::uint64_t, std::uint64_t n) {
    while (b < bounds.size() && lo > static_cast<std::uint64_t>(bounds[b])) ++b;
    per[b] += n;
  });
  std::uint64_t run = 0;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    run += per[i];
    d.cumulative[i] = run;
  }
  return d;
}

// ---------------------------------------------------------------- rendering

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string seconds_text(std::int64_t ns) {
  const bool neg = ns < 0;
  const std::uint64_t a = neg ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  std::string frac = fmt::format("{:09d}", a % 1'000'000'000u);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  std::string out = fmt::format("{}{}", neg ? "-" : "", a / 1'000'000'000u);
  if (!frac.empty()) out += "." + frac;
  return out;
}

namespace {

enum class Kind { counter, gauge, histogram };

// The family's lines are written by one Writer; it knows the format's differences.
class Writer {
 public:
  explicit Writer(Format f) : f_(f) {}

  // HELP and TYPE (and UNIT in OpenMetrics) of a family; `name` without _total.
  void family(const std::string& name, Kind kind, const std::string& help) {
    const char* type = kind == Kind::counter ? "counter" : kind == Kind::gauge ? "gauge" : "histogram";
    // Prometheus text names a counter's family by its sample (…_total); OpenMetrics without.
    const std::string fam = (kind == Kind::counter && f_ == Format::prometheus_text) ? name + "_total" : name;
    out_ += fmt::format("# HELP {} {}\n", fam, escape_help(help));
    out_ += fmt::format("# TYPE {} {}\n", fam, type);
    if (f_ == Format::openmetrics && name.size() > 8 && name.ends_with("_seconds"))
      out_ += fmt::format("# UNIT {} seconds\n", fam);
  }
  void sample(const std::string& name, const std::string& labels, const std::string& value) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += " " + value + "\n";
  }
  void end() {
    if (f_ == Format::openmetrics) out_ += "# EOF\n";
  }
  std::string take() { return std::move(out_); }

 private:
  std::string escape_help(const std::string& h) const {
    std::string out;
    for (char c : h) {
      if (c == '\\') {
        out += "\\\\";
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '"' && f_ == Format::openmetrics) {
        out += "\\\"";
      } else {
        out += c;
      }
    }
    return out;
  }
  Format f_;
  std::string out_;
};

std::string stream_labels(const StreamMetrics& m) {
  return fmt::format(R"(stream="{}",chain="{}",backend="{}",mode="{}",chunk="{}",rate="{}")",
                     escape_label_value(m.stream), escape_label_value(m.chain), escape_label_value(m.backend),
                     escape_label_value(m.mode), m.chunk, m.rate);
}

std::string with(const std::string& labels, const std::string& more) { return labels + "," + more; }

void histogram_samples(Writer& w, const std::string& name, const std::string& labels, const HistogramData& h,
                       const std::vector<std::int64_t>& bounds) {
  for (std::size_t i = 0; i < bounds.size(); ++i)
    w.sample(name + "_bucket", with(labels, fmt::format(R"(le="{}")", seconds_text(bounds[i]))),
             fmt::format("{}", i < h.cumulative.size() ? h.cumulative[i] : h.count));
  w.sample(name + "_bucket", with(labels, R"(le="+Inf")"), fmt::format("{}", h.count));
  w.sample(name + "_count", labels, fmt::format("{}", h.count));
  w.sample(name + "_sum", labels, seconds_text(static_cast<std::int64_t>(std::min<std::uint64_t>(h.sum_ns, INT64_MAX))));
}

struct CounterDef {
  const char* name;
  const char* help;
  std::uint64_t StreamMetrics::*field;
};
constexpr CounterDef kCounters[] = {
    {"chunkscope_chunks", "Chunks counted after warm-up (the report's counts.counted).", &StreamMetrics::chunks},
    {"chunkscope_warmup_chunks", "Warm-up chunks, left out of every other figure.", &StreamMetrics::warmup_chunks},
    {"chunkscope_deadline_misses", "Counted chunks whose latency L = emit - sched exceeded the budget B = D - margin.",
     &StreamMetrics::misses},
    {"chunkscope_dropped_chunks", "Chunks the source dropped: no free chunk in the pool or the queue full.",
     &StreamMetrics::drops},
    {"chunkscope_xruns", "Overflows and underflows the audio device reported (monitor; 0 for files and synth).",
     &StreamMetrics::xruns},
    {"chunkscope_underruns", "Device callbacks whose output chunk was not ready, silence played (monitor full duplex).",
     &StreamMetrics::underruns},
    {"chunkscope_stall_events", "Stall events: consecutive missed chunks held up by one late stage.",
     &StreamMetrics::stalls},
};

}  // namespace

std::string render(const MetricsSnapshot& s, Format f) {
  Writer w(f);
  std::vector<std::string> labels;
  for (const auto& m : s.streams) labels.push_back(stream_labels(m));
  const std::size_t n = s.streams.size();

  for (const auto& c : kCounters) {
    w.family(c.name, Kind::counter, c.help);
    for (std::size_t i = 0; i < n; ++i)
      w.sample(std::string(c.name) + "_total", labels[i], fmt::format("{}", s.streams[i].*c.field));
  }

  w.family("chunkscope_chunk_latency_seconds", Kind::histogram,
           "End-to-end chunk latency L = emit - sched, counted chunks; buckets are fractions of the budget B.");
  for (std::size_t i = 0; i < n; ++i)
    histogram_samples(w, "chunkscope_chunk_latency_seconds", labels[i], s.streams[i].latency, s.latency_bounds_ns);
  w.family("chunkscope_stage_latency_seconds", Kind::histogram,
           "Time each counted chunk spent in a stage: source, queue_in, process, queue_out, sink.");
  for (std::size_t i = 0; i < n; ++i)
    for (int st = 0; st < kStageCount; ++st)
      histogram_samples(w, "chunkscope_stage_latency_seconds",
                        with(labels[i], fmt::format(R"(stage="{}")", stage_key(static_cast<Stage>(st)))),
                        s.streams[i].stage[static_cast<std::size_t>(st)], s.latency_bounds_ns);
  w.family("chunkscope_step_latency_seconds", Kind::histogram,
           "Time each counted chunk spent in one planned step inside process (CPU backend): step is its 1-based "
           "index, step_label its stages or hosted code.");
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < s.streams[i].step.size(); ++k)
      histogram_samples(w, "chunkscope_step_latency_seconds",
                        with(labels[i], fmt::format(R"(step="{}",step_label="{}")", k + 1,
                                                    escape_label_value(s.streams[i].step_labels[k]))),
                        s.streams[i].step[k], s.latency_bounds_ns);
  w.family("chunkscope_output_period_seconds", Kind::histogram,
           "Output period P = emit_k - emit_(k-1); buckets are fractions of the chunk duration D.");
  for (std::size_t i = 0; i < n; ++i)
    histogram_samples(w, "chunkscope_output_period_seconds", labels[i], s.streams[i].period, s.period_bounds_ns);

  w.family("chunkscope_headroom_p95_seconds", Kind::gauge,
           "Budget B minus the p95 latency over the last 1 s interval that had chunks (absent before one).");
  for (std::size_t i = 0; i < n; ++i)
    if (s.streams[i].headroom_p95_ns) w.sample("chunkscope_headroom_p95_seconds", labels[i], seconds_text(*s.streams[i].headroom_p95_ns));
  w.family("chunkscope_budget_seconds", Kind::gauge, "Budget B = D - margin.");
  for (std::size_t i = 0; i < n; ++i) w.sample("chunkscope_budget_seconds", labels[i], seconds_text(s.streams[i].budget_ns));
  w.family("chunkscope_chunk_duration_seconds", Kind::gauge, "Chunk media duration D = frames / rate / speed.");
  for (std::size_t i = 0; i < n; ++i)
    w.sample("chunkscope_chunk_duration_seconds", labels[i], seconds_text(s.streams[i].chunk_ns));
  w.family("chunkscope_queue_depth", Kind::gauge, "Chunks waiting in the source to processor queue.");
  for (std::size_t i = 0; i < n; ++i) w.sample("chunkscope_queue_depth", labels[i], fmt::format("{}", s.streams[i].queue_depth));
  w.family("chunkscope_queue_capacity", Kind::gauge, "Capacity of each queue (--queue-depth).");
  for (std::size_t i = 0; i < n; ++i)
    w.sample("chunkscope_queue_capacity", labels[i], fmt::format("{}", s.streams[i].queue_capacity));
  w.family("chunkscope_baseline_wakeup_p99_seconds", Kind::gauge,
           "Platform baseline measured before the run: p99 timer wake-up lateness (absent without a baseline).");
  for (std::size_t i = 0; i < n; ++i)
    if (s.streams[i].baseline_wake_p99_ns)
      w.sample("chunkscope_baseline_wakeup_p99_seconds", labels[i], seconds_text(*s.streams[i].baseline_wake_p99_ns));
  w.family("chunkscope_running", Kind::gauge, "1 while the stream runs, 0 once it has ended (served on under --metrics-hold).");
  for (std::size_t i = 0; i < n; ++i) w.sample("chunkscope_running", labels[i], s.streams[i].running ? "1" : "0");
  w.end();
  return w.take();
}

}  // namespace chunkscope::metrics
