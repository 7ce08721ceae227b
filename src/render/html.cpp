#include "src/render/html.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/report/diagnosis.hpp"
#include "src/errors.hpp"
#include "src/report/report_json.hpp"
#include "src/report/format.hpp"
#include "src/report/schema.hpp"

namespace chunkscope {

using nlohmann::json;
using rj::hv;
using rj::num;
using rj::num_or;
using rj::str_or;

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size() + 8);
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

namespace {

std::string esc(const std::string& s) { return html_escape(s); }

// "4.71 ms" with at most three significant digits, for axis ticks.
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

// ---------------------------------------------------------------- axes and plots

struct Scale {
  double lo = 0, hi = 1;  // data range
  double a = 0, b = 1;    // pixel range (b may be below a for the y axis)
  bool log = false;
  double operator()(double v) const {
    double t;
    if (log) {
      const double l = std::log10(std::max(v, lo));
      t = (l - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    } else {
      t = (v - lo) / (hi - lo);
    }
    t = std::clamp(t, 0.0, 1.0);  // out-of-range values sit on the edge
    return a + t * (b - a);
  }
};

using Ticks = std::vector<std::pair<double, std::string>>;

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

double nice_step(double span, int target) {
  const double raw = span / std::max(1, target);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

template <typename Label>
Ticks linear_ticks(double lo, double hi, int target, Label label) {
  Ticks t;
  if (!(hi > lo)) return t;
  const double step = nice_step(hi - lo, target);
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.emplace_back(v, label(v));
  return t;
}

struct LegendItem {
  std::string kind;  // line, dot, band
  std::string cls, style, label;
};

class Plot {
 public:
  Plot(std::string id, std::string title, int w, int h) : id_(std::move(id)), title_(std::move(title)), w_(w), h_(h) {
    x.a = kL;
    x.b = w - kR;
    y.a = h - kB;
    y.b = kT;
  }
  static constexpr double kL = 84, kR = 24, kT = 46, kB = 48;
  Scale x, y;
  std::string body;
  Ticks xticks, yticks;
  std::string xlabel, ylabel;
  std::vector<LegendItem> legend;

  void hline(double v, const std::string& cls, const std::string& label) {
    const double py = y(v);
    body += fmt::format("<line class=\"{}\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", cls, f1(x.a), f1(x.b), f1(py), f1(py));
    if (!label.empty())
      body += fmt::format("<text class=\"lbl\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", f1(x.b - 4), f1(py - 4),
                          esc(label));
  }
  void text(double px, double py, const std::string& s, const std::string& anchor = "start", const std::string& cls = "lbl") {
    body += fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text>", cls, f1(px), f1(py), anchor,
                        esc(s));
  }
  std::string str() const {
    // lay the legend out in rows under the title; extra rows push the plot down
    struct Placed {
      const LegendItem* it;
      double x, y;
    };
    std::vector<Placed> placed;
    double lx = kL, ly = 34;
    for (const auto& it : legend) {
      const double wdt = 30 + 6.2 * static_cast<double>(it.label.size());
      if (lx > kL && lx + wdt > w_ - kR) {
        lx = kL;
        ly += 15;
      }
      placed.push_back({&it, lx, ly});
      lx += wdt;
    }
    const double extra = ly - 34;
    const int h = static_cast<int>(h_ + extra);
    std::string s = fmt::format(
        "<svg id=\"{}\" class=\"plot\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" "
        "aria-label=\"{}\"><title>{}</title>",
        id_, w_, h, w_, h, esc(title_), esc(title_));
    s += fmt::format("<rect class=\"bg\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\"/>", w_, h);
    s += fmt::format("<text class=\"ttl\" x=\"{}\" y=\"18\">{}</text>", kL, esc(title_));
    for (const auto& pl : placed) {
      const auto& it = *pl.it;
      const double lx0 = pl.x, ly0 = pl.y;
      if (it.kind == "line")
        s += fmt::format("<line class=\"{}\" style=\"{}\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", it.cls, it.style, f1(lx0),
                         f1(lx0 + 18), f1(ly0 - 4), f1(ly0 - 4));
      else if (it.kind == "dot")
        s += fmt::format("<circle class=\"{}\" style=\"{}\" cx=\"{}\" cy=\"{}\" r=\"4\"/>", it.cls, it.style, f1(lx0 + 9),
                         f1(ly0 - 4));
      else
        s += fmt::format("<rect class=\"{}\" style=\"{}\" x=\"{}\" y=\"{}\" width=\"18\" height=\"9\"/>", it.cls, it.style,
                         f1(lx0), f1(ly0 - 9));
      s += fmt::format("<text class=\"leg\" x=\"{}\" y=\"{}\">{}</text>", f1(lx0 + 22), f1(ly0), esc(it.label));
    }
    s += fmt::format("<g transform=\"translate(0 {})\">", f1(extra));
    // grid and ticks
    for (const auto& [v, l] : yticks) {
      const double py = y(v);
      s += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", f1(x.a), f1(x.b), f1(py), f1(py));
      s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", f1(x.a - 6), f1(py + 4),
                       esc(l));
    }
    for (const auto& [v, l] : xticks) {
      const double px = x(v);
      s += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", f1(px), f1(px), f1(y.b), f1(y.a));
      s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", f1(px), f1(y.a + 16),
                       esc(l));
    }
    s += body;
    s += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", f1(x.a), f1(y.b),
                     f1(x.b - x.a), f1(y.a - y.b));
    s += fmt::format("<text class=\"axl\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", f1((x.a + x.b) / 2),
                     f1(h_ - 10.0), esc(xlabel));
    s += fmt::format("<text class=\"axl\" transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
                     f1((y.a + y.b) / 2), esc(ylabel));
    s += "</g></svg>";
    return s;
  }

 private:
  std::string id_, title_;
  int w_, h_;
};

// ---------------------------------------------------------------- data from the report

constexpr const char* kStages[] = {"source", "queue_in", "process", "queue_out", "sink"};

struct Timing {
  double D = 0, B = 0, m = 0;
  bool paced = false;
};
Timing timing_of(const json& r) {
  Timing t;
  t.D = num_or(r, {"timing", "chunk_ns"}, 0);
  t.B = num_or(r, {"timing", "budget_ns"}, 0);
  t.m = num_or(r, {"workload", "margin", "ns"}, t.D - t.B);
  t.paced = rj::boolean(r, {"timing", "paced"}).value_or(false);
  return t;
}

// The counted chunks' values of one series column, sorted.
std::vector<std::int64_t> counted_sorted(const json& r, const char* col) {
  auto v = rj::column(r, col);
  const auto flags = rj::column(r, "flags");
  if (!flags.empty() && flags.size() == v.size()) {
    std::size_t k = 0;
    for (std::size_t i = 0; i < v.size(); ++i)
      if ((flags[i] & rj::kFlagWarmup) == 0) v[k++] = v[i];
    v.resize(k);
  }
  std::sort(v.begin(), v.end());
  return v;
}

// ---------------------------------------------------------------- percentile plots

struct Curve {
  std::string label, color;
  std::vector<std::int64_t> sorted;  // exact, from the series (preferred)
  const json* h = nullptr;           // summary percentiles
};

struct HLine {
  double v;
  std::string cls, label;
};

double px_of(double p) { return std::log10(1.0 / (1.0 - p / 100.0)); }

std::string percentile_svg(const std::string& id, const std::string& title, const std::vector<Curve>& curves,
                           const std::vector<HLine>& lines, double band_lo, double band_hi, const std::string& band_label,
                           int w = 560, int h = 300) {
  Plot p(id, title, w, h);
  double xmax = 0;
  double vmin = std::numeric_limits<double>::infinity(), vmax = 0;
  auto see = [&](double v) {
    if (v > 0) vmin = std::min(vmin, v);
    vmax = std::max(vmax, v);
  };
  for (const auto& c : curves) {
    if (!c.sorted.empty()) {
      xmax = std::max(xmax, std::log10(static_cast<double>(c.sorted.size())));
      see(static_cast<double>(c.sorted.front()));
      see(static_cast<double>(c.sorted.back()));
    } else if (c.h) {
      xmax = std::max(xmax, 3.0);
      for (const char* k : {"min", "p50", "max"}) see(hv(c.h, k).value_or(0));
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
  const std::pair<double, const char*> xt[] = {{0, "0%"}, {px_of(50), "50%"}, {1, "90%"}, {2, "99%"}, {3, "99.9%"}, {4, "99.99%"}};
  for (const auto& [v, l] : xt)
    if (v <= xmax + 1e-9) p.xticks.emplace_back(v, l);
  p.xlabel = "percentile (log scale of 1/(1−p))";
  p.ylabel = "time (log scale)";
  if (band_hi > band_lo && band_lo > 0) {
    p.body += fmt::format("<rect class=\"mband\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", f1(p.x.a), f1(p.y(band_hi)),
                          f1(p.x.b - p.x.a), f1(std::max(0.5, p.y(band_lo) - p.y(band_hi))));
    p.legend.push_back({"band", "mband", "", band_label});
  }
  for (const auto& l : lines) {
    p.hline(l.v, l.cls, "");
    p.legend.push_back({"line", l.cls, "", l.label});
  }
  for (const auto& c : curves) {
    const std::string style = c.color.empty() ? "" : fmt::format("stroke:{}", c.color);
    if (!c.sorted.empty()) {
      std::string pts;
      const int samples = 240;
      for (int i = 0; i < samples; ++i) {
        const double x = xmax * i / (samples - 1);
        const double pp = 100.0 * (1.0 - std::pow(10.0, -x));
        pts += fmt::format("{},{} ", f1(p.x(x)), f1(p.y(rj::rank_percentile(c.sorted, pp))));
      }
      p.body += fmt::format("<polyline class=\"curve\" style=\"{}\" points=\"{}\"/>", style, pts);
      const double mx = static_cast<double>(c.sorted.back());
      p.body += fmt::format("<circle class=\"maxdot\" style=\"{}\" cx=\"{}\" cy=\"{}\" r=\"3\"/>",
                            c.color.empty() ? "" : "fill:" + c.color, f1(p.x.b), f1(p.y(mx)));
      p.legend.push_back({"line", "curve", style,
                          fmt::format("{} ({} chunks, exact)", c.label, c.sorted.size())});
      if (curves.size() == 1) p.text(p.x.b - 6, p.y(mx) - 6, "max " + fmt_time(mx), "end");
    }
    if (c.h) {
      const double count = num_or(*c.h, {"count"}, 0);
      const double enough = std::log10(std::max(1.0, count));
      const std::pair<const char*, double> keys[] = {{"min", 0}, {"p50", px_of(50)}, {"p90", 1}, {"p95", px_of(95)},
                                                     {"p99", 2}, {"p99_9", 3}};
      std::string line;
      std::string dots;
      for (const auto& [k, x] : keys) {
        const auto v = hv(c.h, k);
        if (!v || x > xmax + 1e-9) continue;
        line += fmt::format("{},{} ", f1(p.x(x)), f1(p.y(*v)));
        dots += fmt::format("<circle class=\"{}\" style=\"{}\" cx=\"{}\" cy=\"{}\" r=\"3.5\"><title>{} {}</title></circle>",
                            x > enough + 1e-9 ? "hollow" : "pts", c.color.empty() ? "" : "stroke:" + c.color, f1(p.x(x)),
                            f1(p.y(*v)), k, esc(fmt_time(*v)));
      }
      if (c.sorted.empty() && !line.empty()) {
        p.body += fmt::format("<polyline class=\"curve thin\" style=\"{}\" points=\"{}\"/>", style, line);
        const auto mx = hv(c.h, "max");
        if (mx && curves.size() == 1) {
          p.body += fmt::format("<circle class=\"maxdot\" cx=\"{}\" cy=\"{}\" r=\"3\"/>", f1(p.x.b), f1(p.y(*mx)));
          p.text(p.x.b - 6, p.y(*mx) - 6, "max " + fmt_time(*mx), "end");
        }
        p.legend.push_back({"line", "curve thin", style, fmt::format("{} (summary percentiles)", c.label)});
      }
      p.body += dots;
      if (curves.size() == 1) p.legend.push_back({"dot", "pts", "", "report percentiles"});
    }
  }
  return p.str();
}

// ---------------------------------------------------------------- per-chunk plots

struct Column {
  double lo = std::numeric_limits<double>::infinity(), hi = -1;
  double wlo = std::numeric_limits<double>::infinity(), whi = -1;  // warm-up chunks
  double miss = -1;                                                // worst miss in the column
  bool drop = false;
};

std::string minmax_path(const std::vector<Column>& cols, const Plot& p, bool warm, double colw) {
  std::string d;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const double lo = warm ? cols[i].wlo : cols[i].lo, hi = warm ? cols[i].whi : cols[i].hi;
    if (hi < 0) continue;
    const double x = p.x.a + (static_cast<double>(i) + 0.5) * colw;
    const double y0 = p.y(lo), y1 = p.y(hi);
    d += fmt::format("M{} {}V{}", f1(x), f1(y0 + 0.6), f1(std::min(y1, y0) - 0.6));
  }
  return d;
}

struct SeriesView {
  std::vector<std::int64_t> seq, value, flags;
};

// Latency per chunk, min/max per pixel column; misses and the worst chunk always shown.
std::string timeline_svg(const json& r, const Timing& t) {
  Plot p("plot-timeline", "End-to-end latency per chunk", 1100, 340);
  const auto seq_c = rj::column(r, "seq");
  const auto lat = rj::column(r, "latency_ns");
  const auto flags = rj::column(r, "flags");
  std::vector<std::int64_t> drops;
  if (const json* ds = rj::find(r, {"counts", "drop_seqs"}); ds && ds->is_array())
    for (const auto& d : *ds)
      if (d.is_number()) drops.push_back(d.get<std::int64_t>());
  const std::size_t n = lat.size();
  auto seq_at = [&](std::size_t i) { return i < seq_c.size() ? seq_c[i] : static_cast<std::int64_t>(i); };
  auto is_warm = [&](std::size_t i) { return i < flags.size() && (flags[i] & rj::kFlagWarmup) != 0; };
  auto is_miss = [&](std::size_t i) {
    if (i < flags.size()) return (flags[i] & rj::kFlagMiss) != 0;
    return t.paced && static_cast<double>(lat[i]) > t.B;
  };
  // misses from the summary when there is no series
  std::vector<std::pair<std::int64_t, double>> summary_misses;
  if (n == 0)
    if (const json* ml = rj::find(r, {"counts", "miss_list"}); ml && ml->is_array())
      for (const auto& m : *ml)
        if (m.is_object()) summary_misses.emplace_back(static_cast<std::int64_t>(num_or(m, {"seq"}, 0)), num_or(m, {"latency_ns"}, 0));

  // a compare variant pools its rounds, whose sequence numbers each start at 0
  const double rounds = std::max(1.0, num_or(r, {"workload", "rounds"}, 1));
  std::int64_t x1 = static_cast<std::int64_t>(num_or(r, {"counts", "produced"}, 0) / rounds) - 1;
  double vmin = std::numeric_limits<double>::infinity(), vmax = 0;
  for (std::size_t i = 0; i < n; ++i) {
    x1 = std::max(x1, seq_at(i));
    const double v = static_cast<double>(lat[i]);
    if (v > 0) vmin = std::min(vmin, v);
    vmax = std::max(vmax, v);
  }
  for (auto d : drops) x1 = std::max(x1, d);
  for (const auto& [s, v] : summary_misses) {
    x1 = std::max(x1, s);
    vmin = std::min(vmin, v);
    vmax = std::max(vmax, v);
  }
  x1 = std::max<std::int64_t>(x1, 1);
  for (double v : {t.B, t.D})
    if (v > 0) {
      vmin = std::min(vmin, v);
      vmax = std::max(vmax, v);
    }
  if (!(vmin < std::numeric_limits<double>::infinity())) vmin = 1;
  p.x.lo = 0;
  p.x.hi = static_cast<double>(x1 + 1);
  p.y.log = true;
  p.y.lo = std::max(1.0, vmin / 1.6);
  p.y.hi = std::max(p.y.lo * 10, vmax * 1.6);
  p.yticks = log_time_ticks(p.y.lo, p.y.hi);
  p.xticks = linear_ticks(0, static_cast<double>(x1), 10, [](double v) { return fmt::format("{:.0f}", v); });
  p.xlabel = "chunk (sequence number)";
  p.ylabel = "latency L = emit − sched (log scale)";

  const int ncols = static_cast<int>(std::min<std::int64_t>(kPlotColumns, x1 + 1));
  const double colw = (p.x.b - p.x.a) / ncols;
  auto col_of = [&](std::int64_t s) {
    return static_cast<std::size_t>(std::clamp<std::int64_t>(
        static_cast<std::int64_t>(static_cast<double>(s) * ncols / static_cast<double>(x1 + 1)), 0, ncols - 1));
  };
  std::vector<Column> cols(static_cast<std::size_t>(ncols));
  std::size_t worst = n;
  std::size_t counted = 0, misses = 0;
  for (std::size_t i = 0; i < n; ++i) {
    auto& c = cols[col_of(seq_at(i))];
    const double v = static_cast<double>(lat[i]);
    if (is_warm(i)) {
      c.wlo = std::min(c.wlo, v);
      c.whi = std::max(c.whi, v);
      continue;
    }
    ++counted;
    c.lo = std::min(c.lo, v);
    c.hi = std::max(c.hi, v);
    if (is_miss(i)) {
      ++misses;
      c.miss = std::max(c.miss, v);
    }
    if (worst == n || lat[i] > lat[worst]) worst = i;
  }
  if (worst == n)
    for (std::size_t i = 0; i < n; ++i)
      if (worst == n || lat[i] > lat[worst]) worst = i;
  for (const auto& [s, v] : summary_misses) {
    auto& c = cols[col_of(s)];
    c.miss = std::max(c.miss, v);
  }
  for (auto d : drops) cols[col_of(d)].drop = true;

  if (t.paced && t.B > 0 && t.D > t.B) {
    p.body += fmt::format("<rect class=\"mband\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", f1(p.x.a), f1(p.y(t.D)),
                          f1(p.x.b - p.x.a), f1(std::max(0.5, p.y(t.B) - p.y(t.D))));
  }
  const bool sparse = n > 0 && n <= 300;
  if (n > 0) {
    if (sparse) {
      std::string pts, dots;
      for (std::size_t i = 0; i < n; ++i) {
        const double x = p.x(static_cast<double>(seq_at(i)) + 0.5), y = p.y(static_cast<double>(lat[i]));
        pts += fmt::format("{},{} ", f1(x), f1(y));
        dots += fmt::format("<circle class=\"{}\" cx=\"{}\" cy=\"{}\" r=\"2.5\"/>", is_warm(i) ? "wdot" : "dot", f1(x), f1(y));
      }
      p.body += fmt::format("<polyline class=\"curve thin\" points=\"{}\"/>", pts) + dots;
    } else {
      const double sw = std::max(1.0, colw);
      const std::string w = minmax_path(cols, p, true, colw);
      if (!w.empty()) p.body += fmt::format("<path class=\"warm\" style=\"stroke-width:{}\" d=\"{}\"/>", f1(sw), w);
      p.body += fmt::format("<path class=\"cols\" style=\"stroke-width:{}\" d=\"{}\"/>", f1(sw), minmax_path(cols, p, false, colw));
    }
  }
  if (t.paced && t.B > 0) p.hline(t.B, "budget", "");
  if (t.D > 0) p.hline(t.D, "dline", "");
  // every column that holds a miss shows it
  std::string miss_marks;
  for (std::size_t i = 0; i < cols.size(); ++i)
    if (cols[i].miss >= 0)
      miss_marks += fmt::format("<circle class=\"miss\" cx=\"{}\" cy=\"{}\" r=\"3.5\"/>",
                                f1(p.x.a + (static_cast<double>(i) + 0.5) * colw), f1(p.y(cols[i].miss)));
  p.body += "<g class=\"misses\">" + miss_marks + "</g>";
  // dropped chunks: marks on the time axis
  std::string drop_marks;
  for (std::size_t i = 0; i < cols.size(); ++i)
    if (cols[i].drop) {
      const double x = p.x.a + (static_cast<double>(i) + 0.5) * colw;
      drop_marks += fmt::format("<path class=\"drop\" d=\"M{} {}l-4 8h8z\"/>", f1(x), f1(p.y.a - 8));
    }
  p.body += "<g class=\"drops\">" + drop_marks + "</g>";
  if (worst < n) {
    const double x = p.x(static_cast<double>(seq_at(worst)) + 0.5), y = p.y(static_cast<double>(lat[worst]));
    p.body += fmt::format("<circle class=\"worst\" cx=\"{}\" cy=\"{}\" r=\"7\"/>", f1(x), f1(y));
    const std::string label = fmt::format("worst: chunk {}, {}", seq_at(worst), fmt_time(static_cast<double>(lat[worst])));
    p.body += fmt::format("<text class=\"lbl worstlbl\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text>", f1(x + (x > 800 ? -10 : 10)),
                          f1(std::max(p.y.b + 12, y - 8)), x > 800 ? "end" : "start", esc(label));
  }
  if (n > 0) {
    if (sparse)
      p.legend.push_back({"dot", "dot", "", "latency per chunk"});
    else
      p.legend.push_back({"band", "colsleg", "", "latency min–max per column"});
    p.legend.push_back({"band", "warmleg", "", "warm-up"});
  }
  p.legend.push_back({"dot", "miss", "", fmt::format("deadline miss ({})", n ? misses : summary_misses.size())});
  if (n > 0) p.legend.push_back({"dot", "worst", "", "worst chunk"});
  p.legend.push_back({"band", "drop", "", fmt::format("dropped ({})", drops.size())});
  if (t.paced && t.B > 0) p.legend.push_back({"line", "budget", "", "budget B " + fmt_time(t.B)});
  if (t.D > 0) p.legend.push_back({"line", "dline", "", "D " + fmt_time(t.D)});
  if (t.paced && t.B > 0 && t.D > t.B) p.legend.push_back({"band", "mband", "", "margin"});
  std::string s = p.str();
  s += "<p class=\"caption\">";
  if (n > 0)
    s += fmt::format("{} chunks ({} counted, {} in warm-up){}, chunk numbers 0 to {} drawn in {} pixel columns: ", n, counted,
                     n - counted, rj::boolean(r, {"series", "truncated"}).value_or(false) ? " (the series is truncated)" : "",
                     x1, ncols) +
         (sparse ? "one point per chunk. " : "each column shows the least and the greatest latency of its chunks. ") +
         "Every column that holds a deadline miss shows its worst miss in red; the worst chunk of the run is circled and "
         "labelled; dropped chunks are marked on the axis.";
  else
    s += "This report has no per-chunk series, so only the chunks it lists (misses from <code>counts.miss_list</code>, "
         "drops from <code>counts.drop_seqs</code>) are drawn; per-chunk plots need a report with a series.";
  s += "</p>";
  return s;
}

// Output period per chunk against D.
std::string cadence_svg(const json& r, const Timing& t) {
  const auto pts = rj::counted_periods(r);
  const json* ph = rj::hist(r, {"cadence", "period"});
  if (pts.empty()) {
    if (!ph) return "<p class=\"note\">No output period: fewer than two counted chunks.</p>";
    std::vector<HLine> lines;
    if (t.D > 0) lines.push_back({t.D, "dline", "D " + fmt_time(t.D)});
    if (t.paced && t.m > 0) lines.push_back({t.D + t.m, "budget", "D + margin " + fmt_time(t.D + t.m)});
    return percentile_svg("plot-cadence", "Output period P (percentiles)", {Curve{"period", "", {}, ph}}, lines, 0, 0, "",
                          1100, 320) +
           "<p class=\"caption\">This report has no per-chunk series: the period is drawn from its summary percentiles; "
           "per-chunk plots need a report with a series.</p>";
  }
  Plot p("plot-cadence", "Output period per chunk against D", 1100, 320);
  std::int64_t x1 = 1;
  std::size_t gap = 0;
  std::vector<std::int64_t> sorted;
  sorted.reserve(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    sorted.push_back(pts[i].period_ns);
    x1 = std::max(x1, pts[i].seq);
    if (pts[i].period_ns > pts[gap].period_ns) gap = i;
  }
  std::sort(sorted.begin(), sorted.end());
  // the scale follows the bulk (p0.1..p99.9, D and D + margin); rarer outliers far above
  // it are clipped to the top edge and marked there
  double vmin = rj::rank_percentile(sorted, 0.1), vmax = rj::rank_percentile(sorted, 99.9);
  if (t.D > 0) {
    vmin = std::min(vmin, t.D);
    vmax = std::max(vmax, t.D + (t.paced ? t.m : 0));
  }
  const double top = static_cast<double>(sorted.back());
  const bool clip = top > vmax + 0.5 * (vmax - vmin);
  if (!clip) vmax = std::max(vmax, top);
  vmin = std::min(vmin, static_cast<double>(sorted.front()));
  const double pad = std::max(1.0, (vmax - vmin) * 0.08);
  p.x.lo = 0;
  p.x.hi = static_cast<double>(x1 + 1);
  p.y.lo = std::max(0.0, vmin - pad);
  p.y.hi = vmax + pad;
  p.yticks = linear_ticks(p.y.lo, p.y.hi, 6, [](double v) { return short_time(v); });
  p.xticks = linear_ticks(0, static_cast<double>(x1), 10, [](double v) { return fmt::format("{:.0f}", v); });
  p.xlabel = "chunk (sequence number of the chunk that ends the period)";
  p.ylabel = "period P = emit_k − emit_k−1";
  const int ncols = static_cast<int>(std::min<std::int64_t>(kPlotColumns, x1 + 1));
  const double colw = (p.x.b - p.x.a) / ncols;
  std::vector<Column> cols(static_cast<std::size_t>(ncols));
  for (const auto& q : pts) {
    auto& c = cols[static_cast<std::size_t>(std::clamp<std::int64_t>(
        static_cast<std::int64_t>(static_cast<double>(q.seq) * ncols / static_cast<double>(x1 + 1)), 0, ncols - 1))];
    c.lo = std::min(c.lo, static_cast<double>(q.period_ns));
    c.hi = std::max(c.hi, static_cast<double>(q.period_ns));
  }
  if (pts.size() <= 300) {
    std::string line;
    for (const auto& q : pts)
      line += fmt::format("{},{} ", f1(p.x(static_cast<double>(q.seq) + 0.5)), f1(p.y(static_cast<double>(q.period_ns))));
    p.body += fmt::format("<polyline class=\"curve\" points=\"{}\"/>", line);
    p.legend.push_back({"line", "curve", "", "period per chunk"});
  } else {
    p.body += fmt::format("<path class=\"cols\" style=\"stroke-width:{}\" d=\"{}\"/>", f1(std::max(1.0, colw)),
                          minmax_path(cols, p, false, colw));
    p.legend.push_back({"band", "colsleg", "", "period min–max per column"});
  }
  if (t.D > 0) {
    p.hline(t.D, "dline", "");
    p.legend.push_back({"line", "dline", "", "D " + fmt_time(t.D)});
  }
  if (t.paced && t.m > 0) {
    p.hline(t.D + t.m, "budget", "");
    p.legend.push_back({"line", "budget", "", "D + margin " + fmt_time(t.D + t.m)});
  }
  std::size_t clipped = 0;
  if (clip) {
    std::string marks;
    for (std::size_t i = 0; i < cols.size(); ++i)
      if (cols[i].hi > p.y.hi)
        marks += fmt::format("<path class=\"clip\" d=\"M{} {}l-4 7h8z\"/>", f1(p.x.a + (static_cast<double>(i) + 0.5) * colw),
                             f1(p.y.b));
    for (auto v : sorted) clipped += static_cast<double>(v) > p.y.hi ? 1 : 0;
    p.body += "<g class=\"clipped\">" + marks + "</g>";
    p.legend.push_back({"band", "clip", "", fmt::format("above the scale ({})", clipped)});
  }
  const double gx = p.x(static_cast<double>(pts[gap].seq) + 0.5), gy = p.y(static_cast<double>(pts[gap].period_ns));
  p.body += fmt::format("<circle class=\"worst\" cx=\"{}\" cy=\"{}\" r=\"6\"/>", f1(gx), f1(gy));
  p.text(gx + (gx > 800 ? -10 : 10), std::max(p.y.b + 12, gy - 6),
         fmt::format("longest gap: {} before chunk {}", fmt_time(static_cast<double>(pts[gap].period_ns)), pts[gap].seq),
         gx > 800 ? "end" : "start");
  p.legend.push_back({"dot", "worst", "", "longest gap"});
  return p.str() + fmt::format("<p class=\"caption\">{} periods between counted chunks{}.{}</p>", pts.size(),
                               pts.size() > 300 ? ", each pixel column showing the shortest and the longest of its periods" : "",
                               clip ? fmt::format(" The scale follows the bulk of the periods; {} longer ones (up to {}) are "
                                                  "drawn to the top edge and marked there.",
                                                  clipped, ft(top))
                                    : "");
}

// Where the time goes: stacked bars of each component's p50 and p95.
std::string breakdown_svg(const json& r, const Timing& t) {
  struct Comp {
    std::string name, color;
    const json* h;
  };
  std::vector<Comp> comps;
  const char* part_names[] = {"launch", "h2d", "kernel", "d2h", "sync", "calibration"};
  const char* part_colors[] = {"#e377c2", "#17becf", "#2ca02c", "#bcbd22", "#8c564b", "#7f7f7f"};
  bool parts = false;
  for (const char* k : part_names)
    if (rj::hist(r, {"process_parts", k})) parts = true;
  comps.push_back({"source", "#9ecae1", rj::hist(r, {"stages", "source"})});
  comps.push_back({"queue_in", "#fdd0a2", rj::hist(r, {"stages", "queue_in"})});
  if (parts) {
    for (int i = 0; i < 6; ++i)
      if (const json* h = rj::hist(r, {"process_parts", part_names[i]})) comps.push_back({part_names[i], part_colors[i], h});
  } else {
    comps.push_back({"process", "#2ca02c", rj::hist(r, {"stages", "process"})});
  }
  comps.push_back({"queue_out", "#fdae6b", rj::hist(r, {"stages", "queue_out"})});
  comps.push_back({"sink", "#6baed6", rj::hist(r, {"stages", "sink"})});
  const json* lat = rj::hist(r, {"latency"});
  const json* proc = rj::hist(r, {"stages", "process"});
  Plot p("plot-breakdown", "Where the time goes per chunk (p50 and p95 of each component)", 1100, 250);
  double total_max = 0;
  std::vector<double> sums;
  std::vector<double> others;
  for (const char* q : {"p50", "p95"}) {
    double s = 0, psum = 0;
    for (const auto& c : comps) {
      s += hv(c.h, q).value_or(0);
      if (parts && c.name != "source" && c.name != "queue_in" && c.name != "queue_out" && c.name != "sink")
        psum += hv(c.h, q).value_or(0);
    }
    const double other = parts ? std::max(0.0, hv(proc, q).value_or(0) - psum) : 0;
    others.push_back(other);
    s += other;
    sums.push_back(s);
    total_max = std::max({total_max, s, hv(lat, q).value_or(0)});
  }
  if (total_max <= 0) return "<p class=\"note\">No stage times: no counted chunks.</p>";
  const bool budget_in = t.paced && t.B > 0 && t.B <= total_max * 1.5;
  p.x.lo = 0;
  p.x.hi = (budget_in ? std::max(total_max, t.B) : total_max) * 1.08;
  p.xticks = linear_ticks(0, p.x.hi, 10, [](double v) { return short_time(v); });
  p.xlabel = "time per chunk";
  p.ylabel = "percentile";
  p.y.lo = 0;
  p.y.hi = 2;
  const char* qs[] = {"p50", "p95"};
  for (int b = 0; b < 2; ++b) {
    const double y0 = p.y(2.0 - b - 0.2), y1 = p.y(2.0 - b - 0.8);
    const double hgt = y1 - y0;
    double x = 0;
    for (const auto& c : comps) {
      const double v = hv(c.h, qs[b]).value_or(0);
      if (v <= 0) continue;
      p.body += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" style=\"fill:{}\"><title>{} {} {}</title></rect>",
                            f1(p.x(x)), f1(y0), f1(std::max(0.5, p.x(x + v) - p.x(x))), f1(hgt), c.color, esc(c.name), qs[b],
                            esc(fmt_time(v)));
      x += v;
    }
    if (others[static_cast<std::size_t>(b)] > 0) {
      const double v = others[static_cast<std::size_t>(b)];
      p.body += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" style=\"fill:#c5b0d5\"><title>process (rest) {} {}</title></rect>",
                            f1(p.x(x)), f1(y0), f1(std::max(0.5, p.x(x + v) - p.x(x))), f1(hgt), qs[b], esc(fmt_time(v)));
      x += v;
    }
    p.text(p.x.a - 6, (y0 + y1) / 2 + 4, qs[b], "end", "tick");
    p.text(p.x(x) + 6, (y0 + y1) / 2 + 4, "sum " + fmt_time(x), "start");
    if (const auto l = hv(lat, qs[b])) {
      const double lx = p.x(*l);
      p.body += fmt::format("<line class=\"latmark\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", f1(lx), f1(lx), f1(y0 - 4),
                            f1(y1 + 4));
    }
  }
  if (budget_in) {
    const double bx = p.x(t.B);
    p.body += fmt::format("<line class=\"budget\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", f1(bx), f1(bx), f1(p.y.b), f1(p.y.a));
  }
  for (const auto& c : comps)
    if (c.h) p.legend.push_back({"band", "", "fill:" + c.color, c.name});
  if (others[0] > 0 || others[1] > 0) p.legend.push_back({"band", "", "fill:#c5b0d5", "process (rest)"});
  p.legend.push_back({"line", "latmark", "", "end-to-end"});
  if (budget_in) p.legend.push_back({"line", "budget", "", "budget B"});
  std::string s = p.str();
  s += "<p class=\"caption\">Each bar stacks the p50 (or p95) of each component of a chunk's latency. Percentiles of the "
       "parts do not add up to the percentile of the whole: the black mark is the measured end-to-end percentile.";
  if (parts) s += " Process is split into its recorded parts; \"process (rest)\" is the process percentile minus the sum of its parts' percentiles, when positive.";
  if (t.paced && t.B > 0 && !budget_in)
    s += fmt::format(" The budget B {} is off the scale ({:.0f}x the largest bar).", ft(t.B), t.B / total_max);
  s += "</p>";
  return s;
}

// ---------------------------------------------------------------- page pieces

const char* kCss = R"(
body{font-family:sans-serif;margin:24px;color:#222;max-width:1160px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:6px 0}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{padding:10px 14px;border-radius:4px;font-size:16px;margin:10px 0}
.ok{background:#e6f4ea;border:1px solid #5cb85c}.bad{background:#fdecea;border:1px solid #d9534f}.none{background:#f3f3f3;border:1px solid #aaa}
.note{background:#fff8e1;border:1px solid #e0c060;padding:6px 10px}
.caption{font-size:12px;color:#555;margin:2px 0 14px}
.grid2{display:flex;flex-wrap:wrap;gap:8px}
code{background:#f4f4f4;padding:1px 4px}
.finding{border-left:4px solid #aaa;padding:4px 10px;margin:10px 0}.finding.warning{border-color:#d9534f}.finding.ok{border-color:#5cb85c}
.conf{font-size:11px;text-transform:uppercase;color:#555;margin-left:6px}
svg.plot{background:#fff;border:1px solid #ddd;margin:4px 0}
svg.plot text{font-family:sans-serif;font-size:11px;fill:#222}
svg.plot .ttl{font-size:13px;font-weight:bold}svg.plot .axl{font-size:12px}
svg.plot .bg{fill:#fff}svg.plot .frame{fill:none;stroke:#333}svg.plot .grid{stroke:#e6e6e6}
svg.plot .budget{stroke:#c0392b;stroke-width:1.5;stroke-dasharray:6 4;fill:none}
svg.plot .dline{stroke:#555;stroke-width:1.5;stroke-dasharray:2 3;fill:none}
svg.plot .mband{fill:#c0392b;fill-opacity:0.1}
svg.plot .curve{fill:none;stroke:#1f6fb2;stroke-width:1.8}svg.plot .thin{stroke-width:1}
svg.plot .pts{fill:#ff8c1a;stroke:#7a3e00}svg.plot .hollow{fill:#fff;stroke:#ff8c1a}
svg.plot .maxdot{fill:#1f6fb2}
svg.plot .cols{stroke:#1f6fb2;fill:none}svg.plot .colsleg{fill:#1f6fb2}
svg.plot .warm{stroke:#b0b0b0;fill:none}svg.plot .warmleg{fill:#b0b0b0}
svg.plot .dot{fill:#1f6fb2}svg.plot .wdot{fill:#b0b0b0}
svg.plot .miss{fill:#d62728}svg.plot .worst{fill:none;stroke:#000;stroke-width:2}
svg.plot .drop{fill:#8e44ad}svg.plot .clip{fill:#e67e22}svg.plot .latmark{stroke:#000;stroke-width:2.5}
svg.plot .worstlbl{font-weight:bold}svg.plot .vname{font-weight:bold}
)";

std::string page_head(const std::string& title) {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{}</style></head><body>\n",
                     esc(title), kCss);
}

std::string kv_table(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string s = "<table>";
  for (const auto& [k, v] : rows) s += fmt::format("<tr><th>{}</th><td>{}</td></tr>", esc(k), v);
  return s + "</table>";
}

std::string jstr(const json& r, std::initializer_list<std::string_view> path) {
  const json* p = rj::find(r, path);
  if (!p || p->is_null()) return "-";
  if (p->is_string()) return esc(p->get<std::string>());
  if (p->is_boolean()) return p->get<bool>() ? "yes" : "no";
  if (p->is_number_integer()) return fmt::format("{}", p->get<std::int64_t>());
  if (p->is_number()) return fmt::format("{:g}", p->get<double>());
  return esc(p->dump());
}

std::string verdict_box(const json& r) {
  const json* safe = rj::find(r, {"verdict", "realtime_safe"});
  const char* cls = safe && safe->is_boolean() ? (safe->get<bool>() ? "ok" : "bad") : "none";
  std::string s = fmt::format("<div class=\"verdict {}\"><b>Verdict:</b> {}</div>", cls,
                              esc(str_or(r, {"verdict", "text"}, "no verdict in this report")));
  const std::string state = str_or(r, {"state"}, "complete");
  if (state != "complete")
    s += fmt::format("<p class=\"note\">Run {}: {}</p>", esc(state), esc(str_or(r, {"reason"}, "-")));
  return s;
}

std::string workload_section(const json& r, const Timing& t) {
  std::vector<std::pair<std::string, std::string>> w = {
      {"command", jstr(r, {"workload", "command"})},
      {"source → sink", jstr(r, {"workload", "source"}) + " → " + jstr(r, {"workload", "sink"})},
      {"chain", "<code>" + jstr(r, {"workload", "chain"}) + "</code>"},
      {"backend", fmt::format("{} ({}), {}, {} dispatch(es) per chunk planned, {} sections per sample",
                              jstr(r, {"workload", "backend"}), jstr(r, {"workload", "mode"}), jstr(r, {"workload", "dtype"}),
                              jstr(r, {"workload", "dispatches_per_chunk_planned"}), jstr(r, {"workload", "sections_per_sample"}))},
      {"stream", fmt::format("{} Hz, {} ch, chunk {} frames", jstr(r, {"workload", "rate"}), jstr(r, {"workload", "channels"}),
                             jstr(r, {"workload", "chunk_frames"}))},
      {"timing", fmt::format("D {}, margin {} = {}, budget B {}, {}", ft(t.D), jstr(r, {"workload", "margin", "text"}), ft(t.m),
                             ft(t.B), t.paced ? "paced (absolute schedule)" : "--speed max (no schedule)")},
      {"run", fmt::format("speed {}, warm-up {} chunks, queue depth {}, media {} s", jstr(r, {"workload", "speed"}),
                          jstr(r, {"workload", "warmup_chunks"}), jstr(r, {"workload", "queue_depth"}),
                          jstr(r, {"workload", "media_seconds"}))},
      {"chunks", fmt::format("{} produced, {} emitted, {} counted, {} warm-up, {} dropped, {} missed", jstr(r, {"counts", "produced"}),
                             jstr(r, {"counts", "emitted"}), jstr(r, {"counts", "counted"}), jstr(r, {"counts", "warmup"}),
                             jstr(r, {"counts", "drops"}), jstr(r, {"counts", "misses"}))},
  };
  if (rj::find(r, {"dispatches_per_chunk"}))
    w.emplace_back("measured", fmt::format("{} dispatches and {} launches per chunk", jstr(r, {"dispatches_per_chunk"}),
                                           jstr(r, {"launches_per_chunk"})));
  std::vector<std::pair<std::string, std::string>> e = {
      {"chunkscope", jstr(r, {"environment", "version"}) + " (" + jstr(r, {"environment", "commit"}) + ")"},
      {"cpu", fmt::format("{}, {} logical CPUs", jstr(r, {"environment", "cpu"}), jstr(r, {"environment", "logical_cpus"}))},
      {"os", jstr(r, {"environment", "os"})},
      {"build", jstr(r, {"environment", "compiler"}) + ", " + jstr(r, {"environment", "build"}) +
                    ", CUDA built: " + jstr(r, {"environment", "cuda_built"})},
      {"gpu", rj::find(r, {"environment", "gpu"}) ? fmt::format("{}, driver {}, compute capability {}", jstr(r, {"environment", "gpu", "name"}),
                                                             jstr(r, {"environment", "gpu", "driver"}),
                                                             jstr(r, {"environment", "gpu", "compute_capability"}))
                                                 : std::string("-")},
      {"method", fmt::format("{}; {}; latency from {}", jstr(r, {"method", "clock"}), jstr(r, {"method", "percentiles"}),
                             jstr(r, {"method", "latency_from"}))},
  };
  return "<h2>Workload</h2>" + kv_table(w) + "<h2>Environment and method</h2>" + kv_table(e);
}

std::string stage_table(const json& r) {
  std::string s = "<table><tr><th>stage</th><th class=\"n\">count</th><th class=\"n\">min</th><th class=\"n\">p50</th>"
                  "<th class=\"n\">p90</th><th class=\"n\">p95</th><th class=\"n\">p99</th><th class=\"n\">p99.9</th>"
                  "<th class=\"n\">max</th><th class=\"n\">mean</th></tr>";
  auto row = [&](const std::string& name, const json* h) {
    s += "<tr><td>" + esc(name) + "</td>";
    if (!h) {
      s += "<td class=\"n\">0</td><td colspan=\"8\">-</td></tr>";
      return;
    }
    s += fmt::format("<td class=\"n\">{:.0f}</td>", num_or(*h, {"count"}, 0));
    for (const char* k : {"min", "p50", "p90", "p95", "p99", "p99_9", "max", "mean"})
      s += "<td class=\"n\">" + (hv(h, k) ? ft(*hv(h, k)) : std::string("-")) + "</td>";
    s += "</tr>";
  };
  for (const char* st : kStages) row(st, rj::hist(r, {"stages", st}));
  if (const json* pp = rj::find(r, {"process_parts"}); pp && pp->is_object())
    for (auto it = pp->begin(); it != pp->end(); ++it) row("  " + it.key(), rj::hist(*pp, {it.key()}));
  row("end-to-end", rj::hist(r, {"latency"}));
  row("overhead", rj::hist(r, {"engine_overhead"}));
  row("period", rj::hist(r, {"cadence", "period"}));
  s += "</table>";
  const double counted = num_or(r, {"counts", "counted"}, 0);
  if (counted > 0 && counted < 100)
    s += fmt::format("<p class=\"note\">Only {:.0f} counted chunks: p99 and p99.9 rest on fewer than 100 samples.</p>", counted);
  return s;
}

std::string headroom_line(const json& r) {
  if (!rj::find(r, {"headroom"})) return "";
  return fmt::format("<p>Headroom B − L: p95 {}, p99 {}, max {}.</p>", ft(num_or(r, {"headroom", "p95"}, 0)),
                     ft(num_or(r, {"headroom", "p99"}, 0)), ft(num_or(r, {"headroom", "max"}, 0)));
}

std::string percentile_section(const json& r, const Timing& t) {
  const bool series = rj::has_series(r);
  std::vector<HLine> lines;
  if (t.paced && t.B > 0) lines.push_back({t.B, "budget", "budget B " + fmt_time(t.B)});
  if (t.D > 0) lines.push_back({t.D, "dline", "D = B + margin " + fmt_time(t.D)});
  const double blo = t.paced ? t.B : 0, bhi = t.paced ? t.D : 0;
  std::string s = "<h2>Percentiles per stage</h2>";
  if (!series)
    s += "<p class=\"note\">This report has no per-chunk series: the curves join the report's summary percentiles (hollow "
         "points rest on fewer samples than their percentile needs). Per-chunk plots need a report with a series.</p>";
  s += percentile_svg("plot-percentiles-latency", "End-to-end latency L by percentile",
                      {Curve{"latency", "", series ? counted_sorted(r, "latency_ns") : std::vector<std::int64_t>{},
                             rj::hist(r, {"latency"})}},
                      lines, blo, bhi, "margin", 1100, 340);
  s += "<div class=\"grid2\">";
  for (const char* st : kStages) {
    const json* h = rj::hist(r, {"stages", st});
    auto sorted = series ? counted_sorted(r, (std::string(st) + "_ns").c_str()) : std::vector<std::int64_t>{};
    if (!h && sorted.empty()) continue;
    s += percentile_svg(std::string("plot-percentiles-") + st, std::string("Stage ") + st + " by percentile",
                        {Curve{st, "", std::move(sorted), h}}, lines, blo, bhi, "margin");
  }
  s += "</div><p class=\"caption\">x: percentile p on a log scale of 1/(1−p), so 90%, 99%, 99.9% are evenly spaced; "
       "y: time on a log scale. ";
  s += series ? "Curves are exact nearest-rank percentiles of the counted chunks of the series; the points are the report's "
                "histogram percentiles (within its relative error)."
              : "Points are the report's histogram percentiles.";
  s += " The red dashed line is the budget B, the grey dotted line D; the shaded band between them is the margin.</p>";
  return s;
}

std::string cadence_section(const json& r, const Timing& t) {
  std::string s = "<h2>Cadence</h2>";
  const auto jit = num(r, {"cadence", "jitter_p95_ns"});
  const auto drift = num(r, {"cadence", "drift_ppm"});
  s += fmt::format("<p>Jitter p95 (abs(P − D)): <b>{}</b>; drift: <b>{}</b>; longest gap {} (chunk {} at {:.3f} s); "
                   "real-time factor p95(P)/D {:.3f}.</p>",
                   jit ? ft(*jit) : std::string("- (no schedule)"),
                   drift ? fmt::format("{:+.1f} ppm", *drift) : std::string("- (no schedule)"),
                   ft(num_or(r, {"cadence", "longest_gap", "ns"}, 0)), num_or(r, {"cadence", "longest_gap", "seq"}, 0),
                   num_or(r, {"cadence", "longest_gap", "at_s"}, 0), num_or(r, {"cadence", "realtime_factor"}, 0));
  s += cadence_svg(r, t);
  if (const json* cb = rj::hist(r, {"device", "callback_period"}))
    s += fmt::format("<p>Device callback period over {:.0f} callbacks: p50 {}, p95 {}, p99 {}, max {}.</p>",
                     num_or(*cb, {"count"}, 0), ft(hv(cb, "p50").value_or(0)), ft(hv(cb, "p95").value_or(0)),
                     ft(hv(cb, "p99").value_or(0)), ft(hv(cb, "max").value_or(0)));
  return s;
}

std::string device_section(const json& r) {
  const json* d = rj::find(r, {"device"});
  if (!d || !d->is_object()) return "";
  std::vector<std::pair<std::string, std::string>> rows;
  for (auto it = d->begin(); it != d->end(); ++it) {
    if (it->is_array() || it->is_object()) continue;
    rows.emplace_back(it.key(), jstr(*d, {it.key()}));
  }
  return "<h2>Device</h2>" + kv_table(rows);
}

std::string diagnosis_section(const json& r) {
  const json* given = rj::find(r, {"diagnosis"});
  const json findings = given && given->is_array() ? *given : to_json(diagnose(run_report_from_json(r)));
  std::string s = "<h2>Diagnosis</h2>";
  if (findings.empty()) return s + "<p>No rule fired: nothing in the measured figures points at a limit.</p>";
  for (const auto& f : findings) {
    if (!f.is_object()) continue;
    const std::string sev = str_or(f, {"severity"}, "info");
    s += fmt::format("<div class=\"finding {}\"><b>{}</b><span class=\"conf\">{} · confidence {}</span><p>{}</p>", esc(sev),
                     esc(str_or(f, {"rule"}, "?")), esc(sev), esc(str_or(f, {"confidence"}, "?")),
                     esc(str_or(f, {"finding"}, "")));
    if (const json* ev = rj::find(f, {"evidence"}); ev && ev->is_object() && !ev->empty()) {
      s += "<table>";
      for (auto it = ev->begin(); it != ev->end(); ++it) {
        if (!it->is_number()) continue;
        const std::string& k = it.key();
        const double v = it->get<double>();
        const bool ns = k.size() > 3 && k.compare(k.size() - 3, 3, "_ns") == 0;
        s += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td></tr>", esc(k), ns ? ft(v) : fmt::format("{:g}", v));
      }
      s += "</table>";
    }
    s += fmt::format("<p>Next: {}</p></div>", esc(str_or(f, {"next"}, "-")));
  }
  return s;
}

std::string run_body(const json& r) {
  const Timing t = timing_of(r);
  std::string s;
  s += verdict_box(r);
  s += headroom_line(r);
  s += workload_section(r, t);
  s += "<h2>Stages</h2>" + stage_table(r);
  s += percentile_section(r, t);
  s += "<h2>Latency per chunk</h2>" + timeline_svg(r, t);
  s += "<h2>Where the time goes</h2>" + breakdown_svg(r, t);
  s += cadence_section(r, t);
  s += device_section(r);
  s += diagnosis_section(r);
  return s;
}

std::string render_run(const json& r) {
  const std::string title = fmt::format("chunkscope {}: {}", str_or(r, {"workload", "command"}, "run"),
                                        str_or(r, {"workload", "source"}, ""));
  std::string s = page_head(title);
  s += fmt::format("<h1>{}</h1>", esc(title));
  s += run_body(r);
  s += "<p class=\"caption\">Written by chunkscope report from a saved chunkscope.report/1 document.</p></body></html>\n";
  return s;
}

// ---------------------------------------------------------------- compare reports

struct Variant {
  std::string name;
  const json* report = nullptr;
};

std::string compare_bars(const std::string& id, const std::string& title, const std::vector<Variant>& vs,
                         const std::string& stage, const json& table) {
  const char* qs[] = {"p50", "p95", "p99"};
  const char* colors[] = {"#9ecae1", "#3182bd", "#08519c"};
  auto value = [&](const Variant& v, const char* q) -> std::optional<double> {
    if (v.report) {
      const json* h = stage == "latency" ? rj::hist(*v.report, {"latency"}) : rj::hist(*v.report, {"stages", stage});
      if (h) return hv(h, q);
    }
    if (table.is_array())
      for (const auto& row : table)
        if (str_or(row, {"variant"}, "") == v.name && str_or(row, {"stage"}, "") == stage) return num(row, {q});
    return std::nullopt;
  };
  auto ratio = [&](const Variant& v, const char* q, double val) -> std::optional<double> {
    if (table.is_array())
      for (const auto& row : table)
        if (str_or(row, {"variant"}, "") == v.name && str_or(row, {"stage"}, "") == stage)
          if (auto x = num(row, {std::string("ratio_") + q})) return x;
    if (!vs.empty())
      if (auto b = value(vs.front(), q); b && *b > 0) return val / *b;
    return std::nullopt;
  };
  double vmax = 0;
  for (const auto& v : vs)
    for (const char* q : qs) vmax = std::max(vmax, value(v, q).value_or(0));
  if (vmax <= 0) return fmt::format("<p class=\"note\">No {} figures in the variants.</p>", esc(stage));
  const int rowh = 66;
  Plot p(id, title, 1100, static_cast<int>(Plot::kT + Plot::kB) + rowh * static_cast<int>(vs.size()) + 10);
  p.x.lo = 0;
  p.x.hi = vmax * 1.25;
  p.y.lo = 0;
  p.y.hi = static_cast<double>(vs.size());
  p.xticks = linear_ticks(0, p.x.hi, 10, [](double v) { return short_time(v); });
  p.xlabel = stage == "latency" ? "end-to-end latency" : "time in the " + stage + " stage";
  p.ylabel = "";
  for (std::size_t i = 0; i < vs.size(); ++i) {
    const double top = p.y(static_cast<double>(vs.size() - i)) + 4;
    p.text(p.x.a + 4, top + 11, vs[i].name + (i == 0 ? " (baseline)" : ""), "start", "lbl vname");
    for (int k = 0; k < 3; ++k) {
      const auto v = value(vs[i], qs[k]);
      const double y = top + 16 + k * 14;
      if (!v) continue;
      p.body += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"12\" style=\"fill:{}\"/>", f1(p.x.a), f1(y),
                            f1(std::max(0.5, p.x(*v) - p.x.a)), colors[k]);
      const auto rr = ratio(vs[i], qs[k], *v);
      p.text(p.x(*v) + 4, y + 10, fmt::format("{} {}{}", qs[k], fmt_time(*v), rr ? fmt::format("  ×{:.2f}", *rr) : ""));
    }
  }
  for (int k = 0; k < 3; ++k) p.legend.push_back({"band", "", std::string("fill:") + colors[k], qs[k]});
  return p.str();
}

std::string render_compare(const json& c) {
  const json* variants = rj::find(c, {"variants"});
  if (!variants || !variants->is_array()) throw InputError("compare report without a \"variants\" array");
  std::vector<Variant> avail;
  std::string unavailable;
  const json* first_report = nullptr;
  for (const auto& v : *variants) {
    if (!v.is_object()) continue;
    const std::string name = str_or(v, {"name"}, "?");
    const json* rep = rj::find(v, {"report"});
    if (rj::boolean(v, {"available"}).value_or(rep != nullptr) && rep && rep->is_object()) {
      avail.push_back({name, rep});
      if (!first_report) first_report = rep;
    } else {
      unavailable += fmt::format("<li><b>{}</b>: {}</li>", esc(name), esc(str_or(v, {"reason"}, "not available")));
    }
  }
  // the baseline first
  const std::string baseline = str_or(c, {"baseline"}, avail.empty() ? "" : avail.front().name);
  std::stable_partition(avail.begin(), avail.end(), [&](const Variant& v) { return v.name == baseline; });
  if (!avail.empty()) first_report = avail.front().report;
  const json& wl = first_report ? *first_report : c;
  const std::string title = fmt::format("chunkscope compare: {} through '{}'", str_or(wl, {"workload", "source"}, "?"),
                                        str_or(wl, {"workload", "chain"}, ""));
  const json empty_table = json::array();
  const json* table = rj::find(c, {"table"});
  const json& tbl = table && table->is_array() ? *table : empty_table;
  std::string s = page_head(title);
  s += fmt::format("<h1>{}</h1>", esc(title));
  s += fmt::format("<p>Baseline <b>{}</b>, {} round(s), {} variant(s) measured.</p>", esc(baseline), jstr(c, {"rounds"}),
                   avail.size());
  if (!unavailable.empty()) s += "<p class=\"note\">Not measured:</p><ul>" + unavailable + "</ul>";
  if (first_report) {
    const Timing t = timing_of(*first_report);
    s += workload_section(*first_report, t);
    s += "<p class=\"caption\">Workload as run by the baseline; the variants differ in backend and mode.</p>";
  }
  s += "<h2>Variants side by side</h2>";
  s += compare_bars("plot-compare", "End-to-end latency per variant (ratios against the baseline)", avail, "latency", tbl);
  s += compare_bars("plot-compare-process", "Process stage per variant (ratios against the baseline)", avail, "process", tbl);
  // overlaid latency percentile curves
  std::vector<Curve> curves;
  const char* palette[] = {"#1f6fb2", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  for (std::size_t i = 0; i < avail.size(); ++i) {
    const json& rep = *avail[i].report;
    curves.push_back({avail[i].name, palette[i % 8],
                      rj::has_series(rep) ? counted_sorted(rep, "latency_ns") : std::vector<std::int64_t>{},
                      rj::hist(rep, {"latency"})});
  }
  std::vector<HLine> lines;
  if (first_report) {
    const Timing t = timing_of(*first_report);
    if (t.paced && t.B > 0) lines.push_back({t.B, "budget", "budget B"});
    if (t.D > 0) lines.push_back({t.D, "dline", "D"});
  }
  if (!curves.empty())
    s += percentile_svg("plot-compare-percentiles", "End-to-end latency by percentile, all variants", curves, lines, 0, 0, "",
                        1100, 360);
  // the table with ratios
  if (!tbl.empty()) {
    s += "<table><tr><th>variant</th><th>stage</th><th class=\"n\">p50</th><th class=\"n\">p95</th><th class=\"n\">p99</th>"
         "<th class=\"n\">ratio p50</th><th class=\"n\">ratio p95</th><th class=\"n\">ratio p99</th></tr>";
    for (const auto& row : tbl) {
      if (!row.is_object()) continue;
      s += fmt::format("<tr><td>{}</td><td>{}</td>", esc(str_or(row, {"variant"}, "?")), esc(str_or(row, {"stage"}, "?")));
      for (const char* k : {"p50", "p95", "p99"}) s += "<td class=\"n\">" + (num(row, {k}) ? ft(*num(row, {k})) : "-") + "</td>";
      for (const char* k : {"ratio_p50", "ratio_p95", "ratio_p99"})
        s += "<td class=\"n\">" + (num(row, {k}) ? fmt::format("{:.2f}", *num(row, {k})) : std::string("-")) + "</td>";
      s += "</tr>";
    }
    s += "</table><p class=\"caption\">Ratios are each variant's percentile over the baseline's (below 1: faster).</p>";
  }
  if (const json* sum = rj::find(c, {"summary"}); sum && sum->is_array() && !sum->empty()) {
    s += "<table><tr><th>variant</th><th class=\"n\">latency p95</th><th class=\"n\">headroom p95</th><th class=\"n\">launches/chunk</th>"
         "<th class=\"n\">dispatches/chunk</th><th class=\"n\">launch p50</th><th class=\"n\">GPU p50</th><th class=\"n\">ratio p95</th></tr>";
    for (const auto& row : *sum) {
      if (!row.is_object()) continue;
      auto t = [&](const char* k) { return num(row, {k}) ? ft(*num(row, {k})) : std::string("-"); };
      auto g = [&](const char* k) { return num(row, {k}) ? fmt::format("{:.2f}", *num(row, {k})) : std::string("-"); };
      s += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                       esc(str_or(row, {"variant"}, "?")), t("latency_p95_ns"), t("headroom_p95_ns"), g("launches_per_chunk"),
                       g("dispatches_per_chunk"), t("launch_p50_ns"), t("gpu_p50_ns"), g("ratio_latency_p95"));
    }
    s += "</table>";
  }
  // each variant's verdict and diagnosis
  for (const auto& v : avail) {
    s += fmt::format("<h2>Variant {}</h2>", esc(v.name));
    s += verdict_box(*v.report) + headroom_line(*v.report);
    s += "<details><summary>stages</summary>" + stage_table(*v.report) + "</details>";
    s += diagnosis_section(*v.report);
  }
  s += "<p class=\"caption\">Written by chunkscope report from a saved chunkscope.compare/1 document.</p></body></html>\n";
  return s;
}

}  // namespace

std::string render_html(const json& report) {
  if (!report.is_object()) throw InputError("not a chunkscope report (the document is not a JSON object)");
  const std::string schema = str_or(report, {"schema"}, "");
  if (schema == "chunkscope.report/1") return render_run(report);
  if (schema == "chunkscope.compare/1") return render_compare(report);
  if (schema.empty()) throw InputError("not a chunkscope report (no \"schema\" key)");
  throw InputError(fmt::format("not a chunkscope report (schema '{}'; expected chunkscope.report/1 or chunkscope.compare/1)", schema));
}

}  // namespace chunkscope
