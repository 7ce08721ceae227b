// The HTML page of a compare report: the variants side by side.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "src/render/html.hpp"
#include "src/render/plot.hpp"
#include "src/render/sections.hpp"
#include "src/render/series_view.hpp"
#include "src/report/format.hpp"

namespace chunkscope {

namespace {

using namespace render;
using LK = LegendItem::Kind;

struct Variant {
  std::string name;
  const RunReport* report;
};
using Pick = std::function<const HistSummary&(const RunReport&)>;

constexpr Pct kBarPcts[] = {Pct::p50, Pct::p95, Pct::p99};
constexpr const char* kBarColors[] = {"#9ecae1", "#3182bd", "#08519c"};

// The variants that ran, the baseline first.
std::vector<Variant> measured(const CompareReport& c) {
  std::vector<Variant> vs;
  for (const auto& v : c.variants)
    if (v.available && v.report) vs.push_back({v.name, &*v.report});
  const std::string& base = c.baseline;
  std::stable_partition(vs.begin(), vs.end(), [&](const Variant& v) { return v.name == base; });
  return vs;
}

// One variant's three bars (p50, p95, p99), each labelled with its ratio to the baseline.
void variant_bars(Plot& p, const Variant& v, const Variant& base, const Pick& pick, double top) {
  const HistSummary& h = pick(*v.report);
  const HistSummary& b = pick(*base.report);
  for (int k = 0; k < 3; ++k) {
    if (!h.has_data()) continue;
    const auto val = static_cast<double>(at(h, kBarPcts[k]));
    const auto bv = static_cast<double>(at(b, kBarPcts[k]));
    const double y = top + 16 + k * 14;
    p.body += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"12\" style=\"fill:{}\"/>", f1(p.x.a), f1(y),
                          f1(std::max(0.5, p.x(val) - p.x.a)), kBarColors[k]);
    const std::string ratio = b.has_data() && bv > 0 ? fmt::format("  ×{:.2f}", val / bv) : "";
    p.text(p.x(val) + 4, y + 10, fmt::format("{} {}{}", pct_label(kBarPcts[k]), fmt_time(val), ratio));
  }
}

std::string compare_bars(const std::string& id, const std::string& title, const std::vector<Variant>& vs, const Pick& pick,
                         const std::string& what) {
  double vmax = 0;
  for (const auto& v : vs)
    if (pick(*v.report).has_data()) vmax = std::max(vmax, static_cast<double>(pick(*v.report).p99));
  if (vmax <= 0) return fmt::format("<p class=\"note\">No {} figures in the variants.</p>", esc(what));
  const int rowh = 66;
  Plot p(id, title, 1100, static_cast<int>(Plot::kT + Plot::kB) + rowh * static_cast<int>(vs.size()) + 10);
  p.x.lo = 0;
  p.x.hi = vmax * 1.25;
  p.y.lo = 0;
  p.y.hi = static_cast<double>(vs.size());
  p.xticks = time_ticks(0, p.x.hi, 10);
  p.xlabel = what;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    const double top = p.y(static_cast<double>(vs.size() - i)) + 4;
    p.text(p.x.a + 4, top + 11, vs[i].name + (i == 0 ? " (baseline)" : ""), "start", "lbl vname");
    variant_bars(p, vs[i], vs.front(), pick, top);
  }
  for (int k = 0; k < 3; ++k) p.add_legend(LK::band, "", pct_label(kBarPcts[k]), std::string("fill:") + kBarColors[k]);
  return p.str();
}

std::string overlay_percentiles(const std::vector<Variant>& vs) {
  if (vs.empty()) return "";
  std::vector<Curve> curves;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    const RunReport& rep = *vs[i].report;
    curves.push_back({vs[i].name, kCurvePalette[i % kCurvePalette.size()],
                      rep.series.empty() ? std::vector<std::int64_t>{} : counted_sorted(rep.series, rep.series.latency_ns),
                      &rep.latency});
  }
  std::vector<HLine> lines;
  const RunTiming t = timing_of(*vs.front().report);
  if (t.has_budget()) lines.push_back({t.B, "budget", "budget B " + fmt_time(t.B)});
  if (t.D > 0) lines.push_back({t.D, "dline", "D " + fmt_time(t.D)});
  return percentile_svg("plot-compare-percentiles", "End-to-end latency by percentile, all variants", curves, lines, {}, 1100,
                        360);
}

std::string ratio_table(const CompareReport& c) {
  if (c.table.empty()) return "";
  auto rt = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("-"); };
  std::string s =
      "<table><tr><th>variant</th><th>stage</th><th class=\"n\">p50</th><th class=\"n\">p95</th><th class=\"n\">p99</th>"
      "<th class=\"n\">ratio p50</th><th class=\"n\">ratio p95</th><th class=\"n\">ratio p99</th></tr>";
  for (const auto& row : c.table)
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
        esc(row.variant), esc(row.stage), ft(static_cast<double>(row.p50)), ft(static_cast<double>(row.p95)),
        ft(static_cast<double>(row.p99)), rt(row.ratio_p50), rt(row.ratio_p95), rt(row.ratio_p99));
  return s + "</table><p class=\"caption\">Ratios are each variant's pooled percentile over the baseline's (below 1: "
             "faster); whether a ratio holds across rounds is judged under <a href=\"#rounds\">Across rounds</a>.</p>";
}

// The class of a verdict's cell.
const char* verdict_class(const std::optional<bool>& safe) { return !safe ? "none" : *safe ? "ok" : "bad"; }

// What the summary says of a variant's end-to-end p95 across rounds.
std::string over_rounds(const CompareReport& c, const std::string& variant) {
  if (variant == c.baseline) return "baseline";
  const CompareCall* d = c.call_of(variant, CompareFigure::latency_p95);
  return d ? d->word() : "-";
}

std::string summary_table(const CompareReport& c) {
  if (c.summary.empty()) return "";
  auto tm = [](const std::optional<std::int64_t>& v) { return v ? ft(static_cast<double>(*v)) : std::string("-"); };
  auto rt = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("-"); };
  std::string s =
      "<table class=\"summary\"><tr><th>variant</th><th class=\"n\">latency p95</th><th class=\"n\">headroom p95</th>"
      "<th class=\"n\">launches/chunk</th><th class=\"n\">dispatches/chunk</th><th class=\"n\">launch p50</th>"
      "<th class=\"n\">GPU p50</th><th class=\"n\">ratio p95</th><th>p95 over rounds</th><th class=\"n\">misses</th>"
      "<th class=\"n\">drops</th><th>verdict</th></tr>";
  for (const auto& row : c.summary) {
    const char* cls = verdict_class(row.realtime_safe);
    s += fmt::format(
        "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.2f}</td><td class=\"n\">{:.2f}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"{}\">{}{}</td></tr>",
        esc(row.variant), tm(row.latency_p95_ns), tm(row.headroom_p95_ns), row.launches_per_chunk, row.dispatches_per_chunk,
        tm(row.launch_p50_ns), tm(row.gpu_p50_ns), rt(row.ratio_latency_p95), esc(over_rounds(c, row.variant)), row.misses,
        row.drops, cls, esc(row.verdict_words()), row.state == RunState::complete ? "" : fmt::format(" ({})", run_state_name(row.state)));
  }
  return s +
         "</table><p class=\"caption\">GPU p50 adds the p50s of H2D, kernel and D2H; ratio p95 is the pooled end-to-end "
         "p95 over the baseline's, and a ratio alone is no difference: <i>p95 over rounds</i> says whether it holds across "
         "rounds (see <a href=\"#rounds\">Across rounds</a>).</p>";
}

// ---------------------------------------------------------------- across rounds

std::string fig_text(CompareFigure f, double v) {
  return CompareRound::figure_is_time(f) ? ft(v) : fmt::format("{:g}", v);
}

// Each variant's end-to-end p95 round by round: a dot per complete round, its min..max
// range as a line and its median as a tick, so overlapping ranges are seen at once.
std::string rounds_plot(const CompareReport& c) {
  double vmax = 0;
  std::size_t rows = 0;
  for (const auto& v : c.per_round)
    if (const CompareSpread* sp = v.find(CompareFigure::latency_p95)) {
      vmax = std::max(vmax, sp->max);
      ++rows;
    }
  if (rows == 0 || vmax <= 0) return "";
  const int rowh = 36;
  Plot p("plot-compare-rounds", "End-to-end p95 of each round, per variant (range and median)", 1100,
         static_cast<int>(Plot::kT + Plot::kB) + rowh * static_cast<int>(rows) + 10);
  p.x.lo = 0;
  p.x.hi = vmax * 1.15;
  p.y.lo = 0;
  p.y.hi = static_cast<double>(rows);
  p.xticks = time_ticks(0, p.x.hi, 10);
  p.xlabel = "end-to-end p95 of one round";
  std::size_t i = 0;
  for (const auto& v : c.per_round) {
    const CompareSpread* sp = v.find(CompareFigure::latency_p95);
    if (!sp) continue;
    const double yc = p.y(static_cast<double>(rows - i) - 0.5) + 6;
    const char* color = kCurvePalette[i % kCurvePalette.size()];
    p.body += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" style=\"stroke:{};stroke-width:2\"/>",
                          f1(p.x(sp->min)), f1(yc), f1(p.x(sp->max)), f1(yc), color);
    p.body += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" style=\"stroke:{};stroke-width:3\"/>",
                          f1(p.x(sp->median)), f1(yc - 8), f1(p.x(sp->median)), f1(yc + 8), color);
    for (const auto& rd : v.rounds)
      if (rd.complete && rd.latency_p95_ns)
        p.body += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" style=\"fill:{}\"><title>round {}: {}</title></circle>",
                              f1(p.x(static_cast<double>(*rd.latency_p95_ns))), f1(yc), color, rd.round,
                              esc(fmt_time(static_cast<double>(*rd.latency_p95_ns))));
    p.text(p.x.a + 4, yc - 10,
           fmt::format("{}{}: median {}, range {} – {}", v.variant, v.variant == c.baseline ? " (baseline)" : "",
                       fmt_time(sp->median), fmt_time(sp->min), fmt_time(sp->max)),
           "start", "lbl vname");
    ++i;
  }
  p.add_legend(LK::dot, "", "one round");
  p.add_legend(LK::line, "", "min..max over rounds, tick at the median");
  return p.str();
}

std::string calls_table(const CompareReport& c) {
  std::string s =
      "<table class=\"rounds\"><tr><th>figure</th><th>variant</th><th class=\"n\">rounds</th><th class=\"n\">min</th>"
      "<th class=\"n\">median</th><th class=\"n\">max</th><th class=\"n\">ratio of medians</th>"
      "<th class=\"n\">bootstrap interval</th><th>across rounds</th></tr>";
  for (int f = 0; f < kCompareFigureCount; ++f) {
    const auto fig = static_cast<CompareFigure>(f);
    bool first = true;
    for (const auto& v : c.per_round) {
      const CompareSpread* sp = v.find(fig);
      if (!sp) continue;
      std::string ratio = "-", interval = "-", call = "baseline";
      if (v.variant != c.baseline) {
        call = "-";
        if (const CompareCall* d = c.call_of(v.variant, fig)) {
          if (d->ratio_of_medians) ratio = fmt::format("{:.3f}", *d->ratio_of_medians);
          if (d->interval_low && d->interval_high) interval = fmt::format("{:.3f} – {:.3f}", *d->interval_low, *d->interval_high);
          call = "<b>" + esc(d->word()) + "</b>: " + esc(d->reason);
        }
      }
      s += fmt::format(
          "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\"{nw}>{}</td><td class=\"n\"{nw}>{}</td>"
          "<td class=\"n\"{nw}>{}</td><td class=\"n\">{}</td><td class=\"n\"{nw}>{}</td><td>{}</td></tr>",
          first ? compare_figure_label(fig) : "", esc(v.variant), sp->rounds, fig_text(fig, sp->min), fig_text(fig, sp->median),
          fig_text(fig, sp->max), ratio, interval, call, fmt::arg("nw", " style=\"white-space:nowrap\""));
      first = false;
    }
  }
  return s + "</table>";
}

std::string per_round_table(const CompareRounds& v) {
  auto tm = [](const std::optional<std::int64_t>& x) { return x ? ft(static_cast<double>(*x)) : std::string("-"); };
  std::string s = fmt::format(
      "<details><summary>{}: {} round(s)</summary><table><tr><th class=\"n\">round</th><th class=\"n\">ran</th>"
      "<th class=\"n\">counted</th><th class=\"n\">end-to-end p50</th><th class=\"n\">end-to-end p95</th>"
      "<th class=\"n\">process p50</th><th class=\"n\">process p95</th><th class=\"n\">misses</th>"
      "<th class=\"n\">drops</th><th></th></tr>",
      esc(v.variant), v.rounds.size());
  for (const auto& rd : v.rounds)
    s += fmt::format(
        "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td>{}</td></tr>",
        rd.round, rd.position > 0 ? fmt::format("{}.", rd.position) : std::string("-"), rd.counted, tm(rd.latency_p50_ns),
        tm(rd.latency_p95_ns), tm(rd.process_p50_ns), tm(rd.process_p95_ns), rd.misses, rd.drops,
        rd.complete ? "" : "incomplete (not in the spread)");
  return s + "</table></details>";
}

std::string rounds_section(const CompareReport& c) {
  std::string s = "<h2 id=\"rounds\">Across rounds</h2>";
  if (c.per_round.empty())
    return s + "<p class=\"note\">This report holds no per-round figures (it was written before they were kept): only "
               "the pooled figures above, which cannot tell a difference from noise.</p>";
  int fewest = -1;
  for (const auto& v : c.per_round) {
    int n = 0;
    for (const auto& rd : v.rounds) n += rd.complete ? 1 : 0;
    fewest = fewest < 0 ? n : std::min(fewest, n);
  }
  s += fmt::format(
      "<p>Each round's own figures (its counted chunks alone), and their spread over the complete rounds. A figure differs "
      "from the baseline's only when the difference holds across rounds: the two per-round ranges (min–max) do not "
      "overlap, or the {:.0f}% bootstrap interval of the ratio of medians ({} resamples, seeded) excludes 1; otherwise "
      "it is <i>no clear difference</i>. With fewer than {} complete rounds on either side the spread cannot be "
      "judged.</p>",
      c.rule.confidence * 100, c.rule.resamples, c.rule.min_rounds);
  if (fewest < c.rule.min_rounds)
    s += fmt::format("<p class=\"note\">{} complete round(s): the spread across rounds cannot be judged (run with "
                     "<code>--rounds {}</code> or more).</p>",
                     std::max(fewest, 0), c.rule.min_rounds);
  s += rounds_plot(c) + calls_table(c);
  for (const auto& v : c.per_round) s += per_round_table(v);
  return s + "<p class=\"caption\">ran: the variant's place in the round's order (the order rotates each round).</p>";
}

std::string variant_section(const Variant& v) {
  const RunReport& r = *v.report;
  std::string s = fmt::format("<h2>Variant {}</h2>", esc(v.name));
  s += verdict_box(r) + headroom_line(r);
  s += fmt::format("<p>{} of {} counted chunks missed the budget; {} dropped.</p>", r.counts.misses, r.counts.counted,
                   r.counts.drops);
  s += "<details><summary>stages</summary>" + stage_table(r) + "</details>";
  return s + diagnosis_section(r.diagnosis);
}

std::string compare_head(const CompareReport& c, const std::vector<Variant>& vs) {
  const ReportWorkload& wl = vs.empty() ? c.workload : vs.front().report->workload;
  const std::string title = fmt::format("chunkscope compare: {} through '{}'", wl.source.empty() ? "?" : wl.source, wl.chain);
  std::string s = page_head(title) + fmt::format("<h1>{}</h1>", esc(title));
  const std::string base = c.baseline.empty() && !vs.empty() ? vs.front().name : c.baseline;
  s += fmt::format("<p>Baseline <b>{}</b>, {} of {} round(s) completed{}, {} variant(s) measured.</p>", esc(base),
                   c.rounds_completed, c.rounds, c.order.empty() ? "" : " (" + esc(c.order) + ")", vs.size());
  if (c.state != RunState::complete)
    s += "<p class=\"note\">Run interrupted: figures cover the rounds completed and the variants that ran in the interrupted "
         "one.</p>";
  std::string unavailable;
  for (const auto& v : c.variants)
    if (!v.available || !v.report)
      unavailable += fmt::format("<li><b>{}</b>: {}</li>", esc(v.name), esc(v.reason.empty() ? "not available" : v.reason));
  if (!unavailable.empty()) s += "<p class=\"note\">Not measured:</p><ul>" + unavailable + "</ul>";
  if (!vs.empty())
    s += workload_section(*vs.front().report) +
         "<p class=\"caption\">Workload as run by the baseline; the variants differ in backend and mode.</p>";
  for (const auto& v : vs)
    if (v.report->platform && v.report->platform->has_baseline()) {
      s += "<h2>Platform</h2><p>The machine's own floor, measured once before the first round and once after the last "
           "with the engine's scheduling and wait mode; every variant's late chunks are judged against it.</p>" +
           baseline_table(*v.report->platform, static_cast<double>(v.report->workload.margin_ns));
      break;
    }
  return s;
}

}  // namespace

std::string render_html(const CompareReport& c) {
  const std::vector<Variant> vs = measured(c);
  std::string s = compare_head(c, vs);
  s += "<h2>Variants side by side</h2>";
  s += summary_table(c);
  if (!vs.empty()) {
    s += compare_bars(
        "plot-compare", "End-to-end latency per variant (ratios against the baseline)", vs,
        [](const RunReport& r) -> const HistSummary& { return r.latency; }, "end-to-end latency");
    s += compare_bars(
        "plot-compare-process", "Process stage per variant (ratios against the baseline)", vs,
        [](const RunReport& r) -> const HistSummary& { return r.stage(Stage::process); }, "time in the process stage");
  }
  s += overlay_percentiles(vs);
  s += ratio_table(c);
  s += rounds_section(c);
  for (const auto& v : vs) s += variant_section(v);
  return s + page_foot("Written by chunkscope report from a saved compare report.");
}

}  // namespace chunkscope
