#include "src/render/plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "src/render/html.hpp"
#include "src/render/series_view.hpp"
#include "src/report/format.hpp"

namespace chunkscope::render {

std::string esc(const std::string& s) { return html_escape(s); }

std::string short_time(double ns) {
  const double a = std::fabs(ns);
  const char* unit = "ns";
  double v = ns;
  if (a >= 1e9) {
    v = ns / 1e9;
    unit = "s";
  } else if (a >= 1e6) {
    v = ns / 1e6;
    unit = "ms";
  } else if (a >= 1e3) {
    v = ns / 1e3;
    unit = "µs";
  }
  return fmt::format("{:.3g} {}", v, unit);
}

std::string ft(double ns) { return esc(fmt_time(ns)); }
std::string f1(double v) { return fmt::format("{:.1f}", v); }

// ---------------------------------------------------------------- scales and ticks

double Scale::operator()(double v) const {
  double t;
  if (log) {
    const double l = std::log10(std::max(v, lo));
    t = (l - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  } else {
    t = (v - lo) / (hi - lo);
  }
  t = std::clamp(t, 0.0, 1.0);
  return a + t * (b - a);
}

Ticks log_time_ticks(double lo, double hi) {
  Ticks t;
  const int k0 = static_cast<int>(std::floor(std::log10(lo))), k1 = static_cast<int>(std::ceil(std::log10(hi)));
  const bool dense = k1 - k0 <= 3;
  for (int k = k0; k <= k1; ++k)
    for (double m : {1.0, 2.0, 5.0}) {
      if (!dense && m != 1.0) continue;
      const double v = m * std::pow(10.0, k);
      if (v >= lo * 0.999 && v <= hi * 1.001) t.emplace_back(v, short_time(v));
    }
  return t;
}

namespace {
double nice_step(double span, int target) {
  const double raw = span / std::max(1, target);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}
}  // namespace

Ticks linear_ticks(double lo, double hi, int target, const std::function<std::string(double)>& label) {
  Ticks t;
  if (!(hi > lo)) return t;
  const double step = nice_step(hi - lo, target);
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.emplace_back(v, label(v));
  return t;
}

Ticks time_ticks(double lo, double hi, int target) {
  return linear_ticks(lo, hi, target, [](double v) { return short_time(v); });
}

Ticks count_ticks(double lo, double hi, int target) {
  return linear_ticks(lo, hi, target, [](double v) { return fmt::format("{:.0f}", v); });
}

// ---------------------------------------------------------------- a plot

Plot::Plot(std::string id, std::string title, int w, int h) : id_(std::move(id)), title_(std::move(title)), w_(w), h_(h) {
  x.a = kL;
  x.b = w - kR;
  y.a = h - kB;
  y.b = kT;
}

void Plot::hline(double v, const std::string& cls) {
  const double py = y(v);
  body += fmt::format("<line class=\"{}\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", cls, f1(x.a), f1(x.b), f1(py), f1(py));
}

void Plot::vline(double v, const std::string& cls) {
  const double px = x(v);
  body += fmt::format("<line class=\"{}\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", cls, f1(px), f1(px), f1(y.b), f1(y.a));
}

void Plot::hband(double lo, double hi, const std::string& cls) {
  body += fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", cls, f1(x.a), f1(y(hi)), f1(x.b - x.a),
                      f1(std::max(0.5, y(lo) - y(hi))));
}

void Plot::text(double px, double py, const std::string& s, const std::string& anchor, const std::string& cls) {
  body += fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text>", cls, f1(px), f1(py), anchor, esc(s));
}

void Plot::add_legend(LegendItem::Kind kind, std::string cls, std::string label, std::string style) {
  legend.push_back({kind, std::move(cls), std::move(style), std::move(label)});
}

// The legend in rows under the title; `extra` is how far the rows beyond the first push
// the plot down.
std::string Plot::legend_svg(double& extra) const {
  std::string s = "<g class=\"legend\">";
  double lx = kL, ly = 34;
  for (const auto& it : legend) {
    const double wdt = 30 + 6.2 * static_cast<double>(it.label.size());
    if (lx > kL && lx + wdt > w_ - kR) {
      lx = kL;
      ly += 15;
    }
    s += "<g class=\"li\">";
    switch (it.kind) {
      case LegendItem::Kind::line:
        s += fmt::format("<line class=\"{}\" style=\"{}\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", it.cls, it.style, f1(lx),
                         f1(lx + 18), f1(ly - 4), f1(ly - 4));
        break;
      case LegendItem::Kind::dot:
        s += fmt::format("<circle class=\"{}\" style=\"{}\" cx=\"{}\" cy=\"{}\" r=\"4\"/>", it.cls, it.style, f1(lx + 9),
                         f1(ly - 4));
        break;
      case LegendItem::Kind::band:
        s += fmt::format("<rect class=\"{}\" style=\"{}\" x=\"{}\" y=\"{}\" width=\"18\" height=\"9\"/>", it.cls, it.style,
                         f1(lx), f1(ly - 9));
        break;
    }
    s += fmt::format("<text class=\"leg\" x=\"{}\" y=\"{}\">{}</text></g>", f1(lx + 22), f1(ly), esc(it.label));
    lx += wdt;
  }
  extra = ly - 34;
  return s + "</g>";
}

std::string Plot::axes_svg() const {
  std::string s;
  for (const auto& [v, l] : yticks) {
    const double py = y(v);
    s += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", f1(x.a), f1(x.b), f1(py), f1(py));
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", f1(x.a - 6), f1(py + 4), esc(l));
  }
  for (const auto& [v, l] : xticks) {
    const double px = x(v);
    s += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", f1(px), f1(px), f1(y.b), f1(y.a));
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", f1(px), f1(y.a + 16), esc(l));
  }
  return s;
}

std::string Plot::str() const {
  double extra = 0;
  const std::string leg = legend_svg(extra);
  const int h = static_cast<int>(h_ + extra);
  std::string s = fmt::format(
      "<svg id=\"{}\" class=\"plot\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"{}\"><title>{}</title>",
      id_, w_, h, w_, h, esc(title_), esc(title_));
  s += fmt::format("<rect class=\"bg\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\"/>", w_, h);
  s += fmt::format("<text class=\"ttl\" x=\"{}\" y=\"18\">{}</text>", kL, esc(title_));
  s += leg;
  s += fmt::format("<g transform=\"translate(0 {})\">", f1(extra));
  s += axes_svg();
  s += body;
  s += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", f1(x.a), f1(y.b), f1(x.b - x.a),
                   f1(y.a - y.b));
  s += fmt::format("<text class=\"axl\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", f1((x.a + x.b) / 2), f1(h_ - 10.0),
                   esc(xlabel));
  s += fmt::format("<text class=\"axl\" transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
                   f1((y.a + y.b) / 2), esc(ylabel));
  return s + "</g></svg>";
}

// ---------------------------------------------------------------- per-chunk columns

ColumnMap::ColumnMap(std::int64_t last_seq, int max_columns)
    : last(std::max<std::int64_t>(last_seq, 1)), n(static_cast<int>(std::min<std::int64_t>(max_columns, last + 1))) {}

std::size_t ColumnMap::of(std::int64_t seq) const {
  const auto c = static_cast<std::int64_t>(static_cast<double>(seq) * n / static_cast<double>(last + 1));
  return static_cast<std::size_t>(std::clamp<std::int64_t>(c, 0, n - 1));
}

double ColumnMap::width(const Plot& p) const { return (p.x.b - p.x.a) / n; }

double ColumnMap::centre(const Plot& p, std::size_t col) const { return p.x.a + (static_cast<double>(col) + 0.5) * width(p); }

std::string minmax_path(const std::vector<Column>& cols, const Plot& p, const ColumnMap& m, bool warm) {
  std::string d;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const double lo = warm ? cols[i].wlo : cols[i].lo, hi = warm ? cols[i].whi : cols[i].hi;
    if (hi < 0) continue;
    const double y0 = p.y(lo), y1 = p.y(hi);
    d += fmt::format("M{} {}V{}", f1(m.centre(p, i)), f1(y0 + 0.6), f1(std::min(y1, y0) - 0.6));
  }
  return d;
}

// ---------------------------------------------------------------- percentile plots

namespace {

double px_of(double p) { return std::log10(1.0 / (1.0 - p / 100.0)); }

// The summary points of a curve: min, then each percentile, at their x.
std::vector<std::pair<std::string, std::pair<double, double>>> summary_points(const HistSummary& h) {
  std::vector<std::pair<std::string, std::pair<double, double>>> pts = {{"min", {0.0, static_cast<double>(h.min)}}};
  for (int i = 0; i < kPctCount; ++i) {
    const auto p = static_cast<Pct>(i);
    pts.push_back({pct_label(p), {px_of(pct_value(p)), static_cast<double>(at(h, p))}});
  }
  return pts;
}

bool has_summary(const Curve& c) { return c.h && c.h->has_data(); }

// The value range and the highest x (decades of 1/(1-p)) the curves and lines need.
void percentile_ranges(const std::vector<Curve>& curves, const std::vector<HLine>& lines, Plot& p) {
  double xmax = 0, vmin = std::numeric_limits<double>::infinity(), vmax = 0;
  auto see = [&](double v) {
    if (v > 0) vmin = std::min(vmin, v);
    vmax = std::max(vmax, v);
  };
  for (const auto& c : curves) {
    if (!c.sorted.empty()) {
      xmax = std::max(xmax, std::log10(static_cast<double>(c.sorted.size())));
      see(static_cast<double>(c.sorted.front()));
      see(static_cast<double>(c.sorted.back()));
    } else if (has_summary(c)) {
      xmax = std::max(xmax, 3.0);
      for (double v : {c.h->min, c.h->p50, c.h->max}) see(v);
    }
  }
  for (const auto& l : lines) see(l.v);
  if (!(vmin < std::numeric_limits<double>::infinity())) vmin = 1;
  if (vmax <= 0) vmax = 10;
  xmax = std::clamp(std::ceil(xmax * 10) / 10, 1.0, 4.0);
  p.x.lo = 0;
  p.x.hi = xmax;
  p.y.log = true;
  p.y.lo = std::max(1.0, vmin / 1.6);
  p.y.hi = std::max(p.y.lo * 10, vmax * 1.6);
  p.yticks = log_time_ticks(p.y.lo, p.y.hi);
  const std::pair<double, const char*> xt[] = {{0, "0%"},  {px_of(50), "50%"}, {1, "90%"},
                                               {2, "99%"}, {3, "99.9%"},       {4, "99.99%"}};
  for (const auto& [v, l] : xt)
    if (v <= xmax + 1e-9) p.xticks.emplace_back(v, l);
}

// The exact curve from the series, its max dot and its legend line.
void exact_curve(Plot& p, const Curve& c, bool alone) {
  const std::string color = c.color.empty() ? kCurveColor : c.color;
  std::string pts;
  const int samples = 240;
  for (int i = 0; i < samples; ++i) {
    const double x = p.x.hi * i / (samples - 1);
    const double pp = 100.0 * (1.0 - std::pow(10.0, -x));
    pts += fmt::format("{},{} ", f1(p.x(x)), f1(p.y(rank_percentile(c.sorted, pp))));
  }
  p.body += fmt::format("<polyline class=\"curve\" style=\"stroke:{}\" points=\"{}\"/>", color, pts);
  const double mx = static_cast<double>(c.sorted.back());
  p.body +=
      fmt::format("<circle class=\"maxdot\" style=\"fill:{}\" cx=\"{}\" cy=\"{}\" r=\"3\"/>", color, f1(p.x.b), f1(p.y(mx)));
  p.add_legend(LegendItem::Kind::line, "curve",
               fmt::format("{} p95 {} ({} chunks, exact)", c.label, fmt_time(rank_percentile(c.sorted, 95)), c.sorted.size()),
               "stroke:" + std::string(color));
  if (alone) p.text(p.x.b - 6, p.y(mx) - 6, "max " + fmt_time(mx), "end");
}

// The summary percentiles as points (hollow where fewer chunks lie above them than the
// percentile needs), joined by a thin line when there is no exact curve.
void summary_curve(Plot& p, const Curve& c, bool alone) {
  const std::string color = c.color.empty() ? kCurveColor : c.color;
  const double enough = std::log10(std::max(1.0, static_cast<double>(c.h->count)));
  std::string line, dots;
  for (const auto& [label, xy] : summary_points(*c.h)) {
    const auto [x, v] = xy;
    if (x > p.x.hi + 1e-9) continue;
    line += fmt::format("{},{} ", f1(p.x(x)), f1(p.y(v)));
    // a lone curve's points take the point colour of their class; several curves' their own
    dots += fmt::format("<circle class=\"{}\" style=\"{}\" cx=\"{}\" cy=\"{}\" r=\"3.5\"><title>{} {}</title></circle>",
                        x > enough + 1e-9 ? "hollow" : "pts", alone ? std::string() : "stroke:" + color, f1(p.x(x)), f1(p.y(v)),
                        label, ft(v));
  }
  if (c.sorted.empty()) {
    p.body += fmt::format("<polyline class=\"curve thin\" style=\"stroke:{}\" points=\"{}\"/>", color, line);
    const auto mx = static_cast<double>(c.h->max);
    if (alone) {
      p.body +=
          fmt::format("<circle class=\"maxdot\" style=\"fill:{}\" cx=\"{}\" cy=\"{}\" r=\"3\"/>", color, f1(p.x.b), f1(p.y(mx)));
      p.text(p.x.b - 6, p.y(mx) - 6, "max " + fmt_time(mx), "end");
    }
    p.add_legend(LegendItem::Kind::line, "curve thin",
                 fmt::format("{} p95 {} (summary percentiles)", c.label, fmt_time(static_cast<double>(c.h->p95))),
                 "stroke:" + color);
  }
  p.body += dots;
  if (alone) p.add_legend(LegendItem::Kind::dot, "pts", "report percentiles");
}

}  // namespace

std::string percentile_svg(const std::string& id, const std::string& title, const std::vector<Curve>& curves,
                           const std::vector<HLine>& lines, const Band& band, int w, int h) {
  Plot p(id, title, w, h);
  percentile_ranges(curves, lines, p);
  p.xlabel = "percentile (log scale of 1/(1−p))";
  p.ylabel = "time (log scale)";
  if (band.hi > band.lo && band.lo > 0) {
    p.hband(band.lo, band.hi, "mband");
    p.add_legend(LegendItem::Kind::band, "mband", band.label);
  }
  for (const auto& l : lines) {
    p.hline(l.v, l.cls);
    p.add_legend(LegendItem::Kind::line, l.cls, l.label);
  }
  const bool alone = curves.size() == 1;
  for (const auto& c : curves) {
    if (!c.sorted.empty()) exact_curve(p, c, alone);
    if (has_summary(c)) summary_curve(p, c, alone);
  }
  return p.str();
}

// ---------------------------------------------------------------- the page

namespace {

std::string css() {
  return fmt::format(
      R"(
body{{font-family:sans-serif;margin:24px;color:#222;max-width:1160px}}
h1{{font-size:22px;margin:0 0 8px}}h2{{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}}
table{{border-collapse:collapse;font-size:13px;margin:6px 0}}td,th{{padding:3px 10px;border-bottom:1px solid #eee;text-align:left}}
td.n,th.n{{text-align:right;font-variant-numeric:tabular-nums}}
.verdict{{padding:10px 14px;border-radius:4px;font-size:16px;margin:10px 0}}
.ok{{background:#e6f4ea;border:1px solid #5cb85c}}.bad{{background:#fdecea;border:1px solid #d9534f}}.none{{background:#f3f3f3;border:1px solid #aaa}}
td.ok,td.bad,td.none{{border-width:0 0 1px 0}}
.note{{background:#fff8e1;border:1px solid #e0c060;padding:6px 10px}}
.caption{{font-size:12px;color:#555;margin:2px 0 14px}}
.grid2{{display:flex;flex-wrap:wrap;gap:8px}}
code{{background:#f4f4f4;padding:1px 4px}}
.finding{{border-left:4px solid #aaa;padding:4px 10px;margin:10px 0}}.finding.warning{{border-color:#d9534f}}.finding.ok{{border-color:#5cb85c}}
.conf{{font-size:11px;text-transform:uppercase;color:#555;margin-left:6px}}
svg.plot{{background:#fff;border:1px solid #ddd;margin:4px 0}}
svg.plot text{{font-family:sans-serif;font-size:11px;fill:#222}}
svg.plot .ttl{{font-size:13px;font-weight:bold}}svg.plot .axl{{font-size:12px}}
svg.plot .bg{{fill:#fff}}svg.plot .frame{{fill:none;stroke:#333}}svg.plot .grid{{stroke:#e6e6e6}}
svg.plot .budget{{stroke:{budget};stroke-width:1.5;stroke-dasharray:6 4;fill:none}}
svg.plot .dline{{stroke:{d};stroke-width:1.5;stroke-dasharray:2 3;fill:none}}
svg.plot .mband{{fill:{budget};fill-opacity:0.1}}
svg.plot .curve{{fill:none;stroke:{curve};stroke-width:1.8}}svg.plot .thin{{stroke-width:1}}
svg.plot .pts{{fill:{point};stroke:#6b5200}}svg.plot .hollow{{fill:#fff;stroke:{point}}}
svg.plot .maxdot{{fill:{curve}}}
svg.plot .cols{{stroke:{curve};fill:none}}svg.plot .colsleg{{fill:{curve}}}
svg.plot .warm{{stroke:{warm};fill:none}}svg.plot .warmleg{{fill:{warm}}}
svg.plot .dot{{fill:{curve}}}svg.plot .wdot{{fill:{warm}}}
svg.plot .miss{{fill:{miss}}}svg.plot .worst{{fill:none;stroke:#000;stroke-width:2}}
svg.plot .drop{{fill:#8e44ad}}svg.plot .clip{{fill:#e67e22}}svg.plot .latmark{{stroke:#000;stroke-width:2.5}}
svg.plot .worstlbl{{font-weight:bold}}svg.plot .vname{{font-weight:bold}}
)",
      fmt::arg("budget", kBudgetColor), fmt::arg("d", kDColor), fmt::arg("curve", kCurveColor), fmt::arg("point", kPointColor),
      fmt::arg("warm", kWarmColor), fmt::arg("miss", kMissColor));
}

}  // namespace

std::string page_head(const std::string& title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{}</style></head><body>\n",
      esc(title), css());
}

std::string page_foot(const std::string& caption) {
  return fmt::format("<p class=\"caption\">{}</p></body></html>\n", esc(caption));
}

std::string kv_table(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string s = "<table>";
  for (const auto& [k, v] : rows) s += fmt::format("<tr><th>{}</th><td>{}</td></tr>", esc(k), v);
  return s + "</table>";
}

}  // namespace chunkscope::render
