// plot-breakdown: where the time of a chunk goes.
//
// Design: a chunk's latency is the sum of its stage times, so the stage means add up to
// the mean latency and can be stacked; percentiles of different stages come from
// different chunks (and a part such as a calibration step may be paid by a few chunks
// only), so they are drawn side by side, never stacked. A part recorded on some chunks
// counts in the stack with its total spread over all counted chunks.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "src/render/plot.hpp"
#include "src/render/run_plots.hpp"
#include "src/report/format.hpp"

namespace chunkscope::render {

namespace {

using LK = LegendItem::Kind;

struct Comp {
  std::string name;
  const char* color;
  const HistSummary* h;  // nullptr: the rest of process that its parts leave
  double per_chunk = 0;  // mean over all counted chunks (a part on few chunks: its total / counted)
};

constexpr const char* kStageColors[kStageCount] = {"#9ecae1", "#c7e9c0", "#2ca02c", "#fee08b", "#6baed6"};
constexpr const char* kPartColors[kPartCount] = {"#e377c2", "#17becf", "#2ca02c", "#bcbd22", "#9467bd", "#969696"};
constexpr const char* kRestColor = "#c5b0d5";
constexpr double kStackTop = 20, kStackH = 22, kRowsTop = 54, kRowH = 24;  // pixels below the plot's top

double per_chunk(const HistSummary& h, double counted) {
  return h.has_data() && counted > 0 ? h.mean * static_cast<double>(h.count) / counted : 0;
}

// The components in the order a chunk passes them; process split into its recorded
// parts when they do not add up to more than process itself (overlapping parts would
// break the sum). `split` says which it is.
std::vector<Comp> components(const RunReport& r, bool& split) {
  const double counted = static_cast<double>(r.latency.count);
  std::vector<Comp> parts;
  double parts_sum = 0;
  for (int i = 0; i < kPartCount; ++i)
    if (const auto& h = r.part(static_cast<Part>(i)); h && h->has_data()) {
      parts.push_back({part_key(static_cast<Part>(i)), kPartColors[i], &*h, per_chunk(*h, counted)});
      parts_sum += parts.back().per_chunk;
    }
  const double proc = per_chunk(r.stage(Stage::process), counted);
  split = !parts.empty() && parts_sum <= proc * 1.001 + 1;
  std::vector<Comp> out;
  for (int i = 0; i < kStageCount; ++i) {
    const auto st = static_cast<Stage>(i);
    const HistSummary& h = r.stage(st);
    if (st != Stage::process || !split) {
      out.push_back({stage_key(st), kStageColors[i], &h, per_chunk(h, counted)});
      continue;
    }
    out.insert(out.end(), parts.begin(), parts.end());
    if (proc - parts_sum > 0.5) out.push_back({"process (rest)", kRestColor, nullptr, proc - parts_sum});
  }
  return out;
}

// The stacked bar of the means, the end-to-end mean marked; returns the bar's length.
double draw_stack(Plot& p, const std::vector<Comp>& comps, const RunReport& r) {
  const double y0 = p.y.b + kStackTop, counted = static_cast<double>(r.latency.count);
  std::string s = "<g class=\"stack\">";
  double x = 0;
  for (const auto& c : comps) {
    if (c.per_chunk <= 0) continue;
    const std::string who = c.h && static_cast<double>(c.h->count) < counted
                                ? fmt::format(" ({} of {} chunks)", c.h->count, r.latency.count)
                                : std::string();
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" style=\"fill:{}\"><title>{} mean per chunk {}{}</title></rect>",
        f1(p.x(x)), f1(y0), f1(std::max(0.5, p.x(x + c.per_chunk) - p.x(x))), f1(kStackH), c.color, esc(c.name), ft(c.per_chunk),
        esc(who));
    x += c.per_chunk;
  }
  p.body += s + "</g>";
  const double lx = p.x(r.latency.mean);
  p.body += fmt::format("<line class=\"latmark\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", f1(lx), f1(lx), f1(y0 - 4),
                        f1(y0 + kStackH + 4));
  p.text(p.x.a - 6, y0 + kStackH / 2 + 4, "mean", "end", "tick");
  p.text(p.x.a, y0 - 5,
         fmt::format("mean per counted chunk, stacked: sum {} = end-to-end mean {}", fmt_time(x), fmt_time(r.latency.mean)));
  return x;
}

// One row of two bars from 0, p50 above p95, with their values; a bar beyond the scale
// ends at the edge with a mark.
// `what` (a step's label) names the row in full beside its values, where a long label has room.
void pct_row(Plot& p, double y, const std::string& name, const char* color, const HistSummary& h, std::uint64_t counted,
             const std::string& what = "") {
  const double v50 = static_cast<double>(h.p50), v95 = static_cast<double>(h.p95);
  std::string& s = p.body;
  const std::string full = what.empty() ? name : name + " " + what;
  s += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"9\" style=\"fill:{};fill-opacity:0.5\"><title>{} p50 {}</title></rect>",
      f1(p.x.a), f1(y), f1(std::max(0.5, p.x(v50) - p.x.a)), color, esc(full), ft(v50));
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"9\" style=\"fill:{}\"><title>{} p95 {}</title></rect>",
                   f1(p.x.a), f1(y + 10), f1(std::max(0.5, p.x(v95) - p.x.a)), color, esc(full), ft(v95));
  const bool beyond = v95 > p.x.hi;
  if (beyond) s += fmt::format("<path class=\"clip\" d=\"M{} {}l-7 -4v8z\"/>", f1(p.x.b), f1(y + 14.5));
  p.text(p.x.a - 6, y + 14, name, "end", "tick");
  const std::string label = fmt::format("{}p50 {} · p95 {}{}{}", what.empty() ? "" : what + " · ", fmt_time(v50), fmt_time(v95),
                                        h.count < counted ? fmt::format(" ({} of {} chunks)", h.count, counted) : "",
                                        beyond ? ", beyond the scale" : "");
  const double lx = std::max(p.x(v50), p.x(v95)) + 6;
  const bool inside = lx + 6.2 * static_cast<double>(label.size()) > p.x.b;
  p.text(inside ? p.x.b - 10 : lx, y + 14, label, inside ? "end" : "start");
}

// The rows of percentiles: each stage with data, the parts of process after it, then
// the end-to-end latency.
struct Row {
  std::string name;
  const char* color;
  const HistSummary* h;
  std::string what = "";  // a step's label
};
std::vector<Row> pct_rows(const RunReport& r) {
  std::vector<Row> rows;
  for (int i = 0; i < kStageCount; ++i) {
    const auto st = static_cast<Stage>(i);
    if (r.stage(st).has_data()) rows.push_back({stage_key(st), kStageColors[i], &r.stage(st)});
    if (st == Stage::process)
      for (int k = 0; k < kPartCount; ++k)
        if (const auto& h = r.part(static_cast<Part>(k)); h && h->has_data())
          rows.push_back({part_key(static_cast<Part>(k)), kPartColors[k], &*h});
    if (st == Stage::process && r.has_step_rows())
      for (const auto& step : r.steps)
        if (step.wall.has_data()) rows.push_back({fmt::format("step {}", step.index), "#7a7a9a", &step.wall, step.label});
  }
  rows.push_back({"end-to-end", "#888888", &r.latency});
  return rows;
}

void draw_pct_rows(Plot& p, const std::vector<Row>& rows, const RunReport& r) {
  p.body += "<g class=\"pcts\">";
  double y = p.y.b + kRowsTop;
  for (const auto& row : rows) {
    pct_row(p, y, row.name, row.color, *row.h, r.latency.count, row.what);
    y += kRowH;
  }
  p.body += "</g>";
}

// The scale covers the stack, the end-to-end mean and p95 and every stage's p95; a part
// beyond it (a calibration step on a few chunks) is marked at the edge.
double scale_max(const std::vector<Comp>& comps, const RunReport& r) {
  double m = std::max(r.latency.mean, static_cast<double>(r.latency.p95));
  double sum = 0;
  for (const auto& c : comps) sum += c.per_chunk;
  for (const auto& h : r.stages)
    if (h.has_data()) m = std::max(m, static_cast<double>(h.p95));
  return std::max(m, sum);
}

std::string breakdown_caption(bool split, bool budget_in, const RunTiming& t, double total_max) {
  std::string s =
      "The top bar stacks the mean time per counted chunk of each component of the latency; a chunk's latency is the sum of "
      "its stage times, so the means add up to the mean end-to-end latency (black mark). A part paid by only some chunks "
      "counts with its total spread over all counted chunks. Below, each stage's and part's p50 (light) and p95 side by "
      "side: percentiles of different components come from different chunks and do not add up, so they are not stacked; "
      "a bar beyond the scale ends at the edge with an orange mark.";
  if (split) s += " Process is split into its recorded parts; \"process (rest)\" is the process time the parts do not cover.";
  if (t.has_budget() && !budget_in)
    s += fmt::format(" The budget B {} is off the scale ({:.0f}x the largest bar).", fmt_time(t.B), t.B / total_max);
  return s;
}

}  // namespace

std::string breakdown_svg(const RunReport& r, const RunTiming& t) {
  if (!r.latency.has_data()) return "<p class=\"note\">No stage times: no counted chunks.</p>";
  bool split = false;
  const std::vector<Comp> comps = components(r, split);
  const std::vector<Row> rows = pct_rows(r);
  const int h = static_cast<int>(Plot::kT + Plot::kB + kRowsTop + kRowH * static_cast<double>(rows.size()) + 6);
  Plot p("plot-breakdown", "Where the time goes per chunk (mean of each component, stacked; p50 and p95 side by side)", 1100, h);
  const double total_max = scale_max(comps, r);
  const bool budget_in = t.has_budget() && t.B <= total_max * 1.5;
  p.x.lo = 0;
  p.x.hi = (budget_in ? std::max(total_max, t.B) : total_max) * 1.3;  // room for the labels
  p.xticks = time_ticks(0, p.x.hi, 10);
  p.xlabel = "time per chunk";
  p.ylabel = "";
  draw_stack(p, comps, r);
  draw_pct_rows(p, rows, r);
  if (budget_in) p.vline(t.B, "budget");
  for (const auto& c : comps) p.add_legend(LK::band, "", c.name, std::string("fill:") + c.color);
  p.add_legend(LK::line, "latmark", "end-to-end mean " + fmt_time(r.latency.mean));
  if (budget_in) p.add_legend(LK::line, "budget", "budget B " + fmt_time(t.B));
  return p.str() + "<p class=\"caption\">" + esc(breakdown_caption(split, budget_in, t, total_max)) + "</p>";
}

}  // namespace chunkscope::render
