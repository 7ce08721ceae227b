// The HTML page of one run report.
#include <fmt/format.h>

#include "src/render/html.hpp"
#include "src/render/plot.hpp"
#include "src/render/run_plots.hpp"
#include "src/render/sections.hpp"
#include "src/render/series_view.hpp"
#include "src/report/format.hpp"

namespace chunkscope {

namespace {

using namespace render;

std::string percentile_caption(bool series) {
  std::string s = "x: percentile p on a log scale of 1/(1−p), so 90%, 99%, 99.9% are evenly spaced; y: time on a log scale. ";
  s += series ? "Curves are exact nearest-rank percentiles of the counted chunks of the series; the points are the report's "
                "histogram percentiles (within its relative error)."
              : "Points are the report's histogram percentiles.";
  return s + " The red dashed line is the budget B, the grey dotted line D; the shaded band between them is the margin.";
}

std::string percentile_section(const RunReport& r, const RunTiming& t) {
  const bool series = !r.series.empty();
  std::vector<HLine> lines;
  if (t.has_budget()) lines.push_back({t.B, "budget", "budget B " + fmt_time(t.B)});
  if (t.D > 0) lines.push_back({t.D, "dline", "D = B + margin " + fmt_time(t.D)});
  const Band band = t.paced ? Band{t.B, t.D, "margin " + fmt_time(t.D - t.B)} : Band{};
  std::string s = "<h2>Percentiles per stage</h2>";
  if (!series)
    s += "<p class=\"note\">This report has no per-chunk series: the curves join the report's summary percentiles (hollow "
         "points rest on fewer samples than their percentile needs). Per-chunk plots need a report with a series.</p>";
  s += percentile_svg(
      "plot-percentiles-latency", "End-to-end latency L by percentile",
      {Curve{"latency", "", series ? counted_sorted(r.series, r.series.latency_ns) : std::vector<std::int64_t>{}, &r.latency}},
      lines, band, 1100, 340);
  s += "<div class=\"grid2\">";
  for (int i = 0; i < kStageCount; ++i) {
    const auto st = static_cast<Stage>(i);
    const std::string key = stage_key(st);
    auto sorted = series ? counted_sorted(r.series, r.series.stage_ns[static_cast<std::size_t>(i)]) : std::vector<std::int64_t>{};
    if (!r.stage(st).has_data() && sorted.empty()) continue;
    s += percentile_svg("plot-percentiles-" + key, "Stage " + key + " by percentile",
                        {Curve{key, "", std::move(sorted), &r.stage(st)}}, lines, band);
  }
  return s + "</div><p class=\"caption\">" + esc(percentile_caption(series)) + "</p>";
}

std::string cadence_section(const RunReport& r, const RunTiming& t) {
  const Cadence& c = r.cadence;
  std::string s = "<h2>Cadence</h2>";
  s += fmt::format(
      "<p>Jitter p95 (abs(P − D)): <b>{}</b>; drift: <b>{}</b>; longest gap {} (chunk {} at {:.3f} s); "
      "period p95(P)/D {:.3f} (a ratio of periods, not a speed).</p>",
      c.jitter_p95_ns ? ft(static_cast<double>(*c.jitter_p95_ns)) : std::string("- (no schedule)"),
      c.drift_ppm ? fmt::format("{:+.1f} ppm", *c.drift_ppm) : std::string("- (no schedule)"),
      ft(static_cast<double>(c.longest_gap.ns)), c.longest_gap.seq, c.longest_gap.at_s, c.period_ratio_p95);
  s += cadence_svg(r, t);
  if (r.device && r.device->callback_period.has_data()) {
    const HistSummary& cb = r.device->callback_period;
    s += fmt::format("<p>Device callback period over {} callbacks: p50 {}, p95 {}, p99 {}, max {}.</p>", cb.count,
                     ft(static_cast<double>(cb.p50)), ft(static_cast<double>(cb.p95)), ft(static_cast<double>(cb.p99)),
                     ft(static_cast<double>(cb.max)));
  }
  return s;
}

std::string device_section(const RunReport& r) {
  if (!r.device) return "";
  const DeviceSection& d = *r.device;
  std::string xruns;
  for (std::size_t i = 0; i < d.xrun_list.size() && i < 10; ++i)
    xruns += fmt::format("{}callback {} at {:.3f} s", i ? ", " : "", d.xrun_list[i].callback, d.xrun_list[i].at_s);
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"input → output", esc(d.input) + " → " + esc(d.output)},
      {"host API", esc(d.host_api.empty() ? "-" : d.host_api)},
      {"mode", d.host_api == "probe"
                   ? fmt::format("an application's own callback (probe), {:g} Hz", d.stream_rate)
                   : fmt::format("{}, {:g} Hz, K = {} chunk(s) between input and output", d.duplex ? "full duplex" : "input only",
                                 d.stream_rate, d.latency_chunks)},
      {"budget rule", esc(d.budget_rule.empty() ? "-" : d.budget_rule)},
      {"reported latency", fmt::format("input {}, output {}", ft(d.reported_input_latency_s * 1e9),
                                       d.duplex || d.reported_output_latency_s > 0 ? ft(d.reported_output_latency_s * 1e9)
                                                                                    : std::string("-"))},
      {"callbacks", fmt::format("{}, priming {}", d.callbacks, d.priming)},
      {"xruns", fmt::format("{} (input overflows {}, output underflows {}){}", d.xruns, d.input_overflows, d.output_underflows,
                            xruns.empty() ? "" : ": " + xruns + (d.xrun_list.size() > 10 ? ", ..." : ""))},
      {"underruns", fmt::format("{}, late chunks {}", d.underruns, d.late_chunks)},
  };
  return "<h2>Device</h2>" + kv_table(rows);
}

std::string run_body(const RunReport& r) {
  const RunTiming t = timing_of(r);
  std::string s;
  s += verdict_box(r);
  s += headroom_line(r);
  s += workload_section(r);
  s += streams_section(r);
  s += "<h2>Stages</h2>" + stage_table(r);
  s += steps_section(r);
  s += percentile_section(r, t);
  s += "<h2>Latency per chunk</h2>" + timeline_svg(r, t);
  s += "<h2>Where the time goes</h2>" + breakdown_svg(r, t);
  s += stalls_section(r);
  s += cadence_section(r, t);
  s += platform_section(r);
  s += device_section(r);
  s += diagnosis_section(r.diagnosis);
  return s;
}

}  // namespace

std::string render_html(const RunReport& r) {
  const std::string title =
      fmt::format("chunkscope {}: {}", r.workload.command.empty() ? "run" : r.workload.command, r.workload.source);
  std::string s = page_head(title);
  s += fmt::format("<h1>{}</h1>", esc(title));
  s += run_body(r);
  return s + page_foot("Written by chunkscope report from a saved run report.");
}

}  // namespace chunkscope
