// The per-chunk plots of the run page: plot-timeline and plot-cadence.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/render/html.hpp"
#include "src/render/plot.hpp"
#include "src/render/run_plots.hpp"
#include "src/render/series_view.hpp"
#include "src/report/format.hpp"

namespace chunkscope::render {

namespace {

using LK = LegendItem::Kind;
constexpr std::size_t kSparse = 300;  // up to this many points, one mark per point

// ---------------------------------------------------------------- plot-timeline

// What the timeline draws, before any pixel: drops, misses of a report without a series,
// the last chunk number and the value range.
struct TimelineScan {
  std::vector<std::int64_t> drops;
  std::vector<std::pair<std::int64_t, double>> summary_misses;  // no series: counts.miss_list
  std::int64_t last = 1;
  double vmin = std::numeric_limits<double>::infinity(), vmax = 0;
};

TimelineScan scan_timeline(const RunReport& r, const RunTiming& t) {
  TimelineScan sc;
  const Series& s = r.series;
  for (auto d : r.counts.drop_seqs) sc.drops.push_back(static_cast<std::int64_t>(d));
  if (s.empty())
    for (const auto& m : r.counts.miss_list)
      sc.summary_misses.emplace_back(static_cast<std::int64_t>(m.seq), static_cast<double>(m.latency_ns));
  // a compare variant pools its rounds, whose sequence numbers each start at 0
  const auto rounds = static_cast<std::uint64_t>(std::max(1, r.workload.rounds));
  sc.last = static_cast<std::int64_t>(r.counts.produced / rounds) - 1;
  auto see = [&](std::int64_t seq, double v) {
    sc.last = std::max(sc.last, seq);
    if (v > 0) sc.vmin = std::min(sc.vmin, v);
    sc.vmax = std::max(sc.vmax, v);
  };
  for (std::size_t i = 0; i < s.size(); ++i) see(seq_at(s, i), static_cast<double>(s.latency_ns[i]));
  for (const auto& [seq, v] : sc.summary_misses) see(seq, v);
  for (auto d : sc.drops) sc.last = std::max(sc.last, d);
  for (double v : {t.B, t.D})
    if (v > 0) see(0, v);
  sc.last = std::max<std::int64_t>(sc.last, 1);
  if (!(sc.vmin < std::numeric_limits<double>::infinity())) sc.vmin = 1;
  return sc;
}

bool is_miss(const Series& s, std::size_t i, const RunTiming& t) {
  return (i < s.flags.size() && (s.flags[i] & kSeriesMiss) != 0) ||
         (t.has_budget() && static_cast<double>(s.latency_ns[i]) > t.B);
}

// The columns, the worst chunk (index into the series) and the counts the caption gives.
struct TimelineCols {
  std::vector<Column> cols;
  std::size_t worst = 0, counted = 0, misses = 0;
};

TimelineCols fill_columns(const RunReport& r, const RunTiming& t, const ColumnMap& m, const TimelineScan& sc) {
  const Series& s = r.series;
  const std::size_t n = s.size();
  TimelineCols tc;
  tc.cols.resize(static_cast<std::size_t>(m.n));
  tc.worst = n;
  for (std::size_t i = 0; i < n; ++i) {
    auto& c = tc.cols[m.of(seq_at(s, i))];
    const double v = static_cast<double>(s.latency_ns[i]);
    if (is_warmup(s, i)) {
      c.wlo = std::min(c.wlo, v);
      c.whi = std::max(c.whi, v);
      continue;
    }
    ++tc.counted;
    c.lo = std::min(c.lo, v);
    c.hi = std::max(c.hi, v);
    if (is_miss(s, i, t)) {
      ++tc.misses;
      c.miss = std::max(c.miss, v);
    }
    if (tc.worst == n || s.latency_ns[i] > s.latency_ns[tc.worst]) tc.worst = i;
  }
  if (tc.worst == n)  // only warm-up chunks
    for (std::size_t i = 0; i < n; ++i)
      if (tc.worst == n || s.latency_ns[i] > s.latency_ns[tc.worst]) tc.worst = i;
  for (const auto& [seq, v] : sc.summary_misses) tc.cols[m.of(seq)].miss = std::max(tc.cols[m.of(seq)].miss, v);
  for (auto d : sc.drops) tc.cols[m.of(d)].drop = true;
  return tc;
}

// The chunks themselves: one point each when sparse, else a min/max segment per column.
void draw_latency(Plot& p, const Series& s, const TimelineCols& tc, const ColumnMap& m) {
  const std::size_t n = s.size();
  if (n == 0) return;
  if (n <= kSparse) {
    std::string pts, dots;
    for (std::size_t i = 0; i < n; ++i) {
      const double x = p.x(static_cast<double>(seq_at(s, i)) + 0.5), y = p.y(static_cast<double>(s.latency_ns[i]));
      pts += fmt::format("{},{} ", f1(x), f1(y));
      dots += fmt::format("<circle class=\"{}\" cx=\"{}\" cy=\"{}\" r=\"2.5\"/>", is_warmup(s, i) ? "wdot" : "dot", f1(x), f1(y));
    }
    p.body += fmt::format("<polyline class=\"curve thin\" points=\"{}\"/>", pts) + dots;
    return;
  }
  const double sw = std::max(1.0, m.width(p));
  const std::string w = minmax_path(tc.cols, p, m, true);
  if (!w.empty()) p.body += fmt::format("<path class=\"warm\" style=\"stroke-width:{}\" d=\"{}\"/>", f1(sw), w);
  p.body += fmt::format("<path class=\"cols\" style=\"stroke-width:{}\" d=\"{}\"/>", f1(sw), minmax_path(tc.cols, p, m, false));
}

// Misses (one per column that holds one), drops on the axis and the worst chunk.
void draw_marks(Plot& p, const Series& s, const TimelineCols& tc, const ColumnMap& m) {
  std::string miss_marks, drop_marks;
  for (std::size_t i = 0; i < tc.cols.size(); ++i) {
    if (tc.cols[i].miss >= 0)
      miss_marks +=
          fmt::format("<circle class=\"miss\" cx=\"{}\" cy=\"{}\" r=\"3.5\"/>", f1(m.centre(p, i)), f1(p.y(tc.cols[i].miss)));
    if (tc.cols[i].drop)
      drop_marks += fmt::format("<path class=\"drop\" d=\"M{} {}l-4 8h8z\"/>", f1(m.centre(p, i)), f1(p.y.a - 8));
  }
  p.body += "<g class=\"misses\">" + miss_marks + "</g>";
  p.body += "<g class=\"drops\">" + drop_marks + "</g>";
  if (tc.worst >= s.size()) return;
  const auto lat = static_cast<double>(s.latency_ns[tc.worst]);
  const double x = p.x(static_cast<double>(seq_at(s, tc.worst)) + 0.5), y = p.y(lat);
  const bool right = x > 800;
  p.body += fmt::format("<circle class=\"worst\" cx=\"{}\" cy=\"{}\" r=\"7\"/>", f1(x), f1(y));
  p.text(x + (right ? -10 : 10), std::max(p.y.b + 12, y - 8),
         fmt::format("worst: chunk {}, {}", seq_at(s, tc.worst), fmt_time(lat)), right ? "end" : "start", "lbl worstlbl");
}

void timeline_legend(Plot& p, const RunReport& r, const RunTiming& t, const TimelineCols& tc, const TimelineScan& sc) {
  const std::size_t n = r.series.size();
  if (n > 0) {
    if (n <= kSparse)
      p.add_legend(LK::dot, "dot", "latency per chunk");
    else
      p.add_legend(LK::band, "colsleg", "latency min–max per column");
    p.add_legend(LK::band, "warmleg", "warm-up");
  }
  p.add_legend(LK::dot, "miss", fmt::format("deadline miss ({})", n ? tc.misses : sc.summary_misses.size()));
  if (n > 0) p.add_legend(LK::dot, "worst", "worst chunk");
  p.add_legend(LK::band, "drop", fmt::format("dropped ({})", sc.drops.size()));
  if (t.has_budget()) p.add_legend(LK::line, "budget", "budget B " + fmt_time(t.B));
  if (t.D > 0) p.add_legend(LK::line, "dline", "D " + fmt_time(t.D));
  if (t.has_budget() && t.D > t.B) p.add_legend(LK::band, "mband", "margin " + fmt_time(t.D - t.B));
}

std::string timeline_caption(const RunReport& r, const TimelineCols& tc, const ColumnMap& m) {
  const std::size_t n = r.series.size();
  if (n == 0)
    return "This report has no per-chunk series, so only the chunks it lists (its deadline misses and drops) are drawn; "
           "per-chunk plots need a report with a series.";
  return fmt::format("{} chunks ({} counted, {} in warm-up){}, chunk numbers 0 to {} drawn in {} pixel columns: ", n, tc.counted,
                     n - tc.counted, r.series.truncated ? " (the series is truncated)" : "", m.last, m.n) +
         (n <= kSparse ? "one point per chunk. " : "each column shows the least and the greatest latency of its chunks. ") +
         "Every column that holds a deadline miss shows its worst miss in red; the worst chunk of the run is circled and "
         "labelled; dropped chunks are marked on the axis.";
}

// ---------------------------------------------------------------- plot-cadence

std::string cadence_summary_svg(const RunReport& r, const RunTiming& t) {
  if (!r.cadence.period.has_data()) return "<p class=\"note\">No output period: fewer than two counted chunks.</p>";
  std::vector<HLine> lines;
  if (t.D > 0) lines.push_back({t.D, "dline", "D " + fmt_time(t.D)});
  if (t.paced && t.m > 0) lines.push_back({t.D + t.m, "budget", "D + margin " + fmt_time(t.D + t.m)});
  return percentile_svg("plot-cadence", "Output period P (percentiles)", {Curve{"period", "", {}, &r.cadence.period}}, lines, {},
                        1100, 320) +
         "<p class=\"caption\">This report has no per-chunk series: the period is drawn from its summary percentiles; "
         "per-chunk plots need a report with a series.</p>";
}

// The scale follows the bulk (p0.1..p99.9, D and D + margin); rarer outliers far above
// it are clipped to the top edge. Returns whether it clips.
bool cadence_scales(Plot& p, const std::vector<std::int64_t>& sorted, std::int64_t last, const RunTiming& t) {
  double vmin = rank_percentile(sorted, 0.1), vmax = rank_percentile(sorted, 99.9);
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
  p.x.hi = static_cast<double>(last + 1);
  p.y.lo = std::max(0.0, vmin - pad);
  p.y.hi = vmax + pad;
  p.yticks = time_ticks(p.y.lo, p.y.hi, 6);
  p.xticks = count_ticks(0, static_cast<double>(last), 10);
  p.xlabel = "chunk (sequence number of the chunk that ends the period)";
  p.ylabel = "period P = emit_k − emit_k−1";
  return clip;
}

void draw_periods(Plot& p, const std::vector<PeriodPoint>& pts, const ColumnMap& m, const std::vector<std::int64_t>& sorted) {
  const std::string p95 = fmt_time(rank_percentile(sorted, 95));
  if (pts.size() <= kSparse) {
    std::string line;
    for (const auto& q : pts)
      line += fmt::format("{},{} ", f1(p.x(static_cast<double>(q.seq) + 0.5)), f1(p.y(static_cast<double>(q.period_ns))));
    p.body += fmt::format("<polyline class=\"curve\" points=\"{}\"/>", line);
    p.add_legend(LK::line, "curve", "period per chunk (p95 " + p95 + ")");
    return;
  }
  std::vector<Column> cols(static_cast<std::size_t>(m.n));
  for (const auto& q : pts) {
    auto& c = cols[m.of(q.seq)];
    c.lo = std::min(c.lo, static_cast<double>(q.period_ns));
    c.hi = std::max(c.hi, static_cast<double>(q.period_ns));
  }
  p.body += fmt::format("<path class=\"cols\" style=\"stroke-width:{}\" d=\"{}\"/>", f1(std::max(1.0, m.width(p))),
                        minmax_path(cols, p, m, false));
  p.add_legend(LK::band, "colsleg", "period min–max per column (p95 " + p95 + ")");
}

// Orange marks on the top edge for the columns holding periods above the scale; returns
// how many periods are above it.
std::size_t draw_clipped(Plot& p, const std::vector<PeriodPoint>& pts, const ColumnMap& m) {
  std::vector<bool> hit(static_cast<std::size_t>(m.n), false);
  std::size_t clipped = 0;
  for (const auto& q : pts)
    if (static_cast<double>(q.period_ns) > p.y.hi) {
      hit[m.of(q.seq)] = true;
      ++clipped;
    }
  std::string marks;
  for (std::size_t i = 0; i < hit.size(); ++i)
    if (hit[i]) marks += fmt::format("<path class=\"clip\" d=\"M{} {}l-4 7h8z\"/>", f1(m.centre(p, i)), f1(p.y.b));
  p.body += "<g class=\"clipped\">" + marks + "</g>";
  p.add_legend(LK::band, "clip", fmt::format("above the scale ({})", clipped));
  return clipped;
}

void draw_longest_gap(Plot& p, const PeriodPoint& gap) {
  const double gx = p.x(static_cast<double>(gap.seq) + 0.5), gy = p.y(static_cast<double>(gap.period_ns));
  p.body += fmt::format("<circle class=\"worst\" cx=\"{}\" cy=\"{}\" r=\"6\"/>", f1(gx), f1(gy));
  p.text(gx + (gx > 800 ? -10 : 10), std::max(p.y.b + 12, gy - 6),
         fmt::format("longest gap: {} before chunk {}", fmt_time(static_cast<double>(gap.period_ns)), gap.seq),
         gx > 800 ? "end" : "start");
  p.add_legend(LK::dot, "worst", "longest gap " + fmt_time(static_cast<double>(gap.period_ns)));
}

}  // namespace

std::string timeline_svg(const RunReport& r, const RunTiming& t) {
  Plot p("plot-timeline", "End-to-end latency per chunk", 1100, 340);
  const TimelineScan sc = scan_timeline(r, t);
  p.x.lo = 0;
  p.x.hi = static_cast<double>(sc.last + 1);
  p.y.log = true;
  p.y.lo = std::max(1.0, sc.vmin / 1.6);
  p.y.hi = std::max(p.y.lo * 10, sc.vmax * 1.6);
  p.yticks = log_time_ticks(p.y.lo, p.y.hi);
  p.xticks = count_ticks(0, static_cast<double>(sc.last), 10);
  p.xlabel = "chunk (sequence number)";
  p.ylabel = "latency L = emit − sched (log scale)";
  const ColumnMap m(sc.last, kPlotColumns);
  const TimelineCols tc = fill_columns(r, t, m, sc);
  if (t.has_budget() && t.D > t.B) p.hband(t.B, t.D, "mband");
  draw_latency(p, r.series, tc, m);
  if (t.has_budget()) p.hline(t.B, "budget");
  if (t.D > 0) p.hline(t.D, "dline");
  draw_marks(p, r.series, tc, m);
  timeline_legend(p, r, t, tc, sc);
  return p.str() + "<p class=\"caption\">" + esc(timeline_caption(r, tc, m)) + "</p>";
}

std::string cadence_svg(const RunReport& r, const RunTiming& t) {
  const auto pts = counted_periods(r.series);
  if (pts.empty()) return cadence_summary_svg(r, t);
  std::int64_t last = 1;
  std::size_t gap = 0;
  std::vector<std::int64_t> sorted;
  sorted.reserve(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    sorted.push_back(pts[i].period_ns);
    last = std::max(last, pts[i].seq);
    if (pts[i].period_ns > pts[gap].period_ns) gap = i;
  }
  std::sort(sorted.begin(), sorted.end());
  Plot p("plot-cadence", "Output period per chunk against D", 1100, 320);
  const bool clip = cadence_scales(p, sorted, last, t);
  const ColumnMap m(last, kPlotColumns);
  draw_periods(p, pts, m, sorted);
  if (t.D > 0) {
    p.hline(t.D, "dline");
    p.add_legend(LK::line, "dline", "D " + fmt_time(t.D));
  }
  if (t.paced && t.m > 0) {
    p.hline(t.D + t.m, "budget");
    p.add_legend(LK::line, "budget", "D + margin " + fmt_time(t.D + t.m));
  }
  const std::size_t clipped = clip ? draw_clipped(p, pts, m) : 0;
  draw_longest_gap(p, pts[gap]);
  std::string caption =
      fmt::format("{} periods between counted chunks{}.", pts.size(),
                  pts.size() > kSparse ? ", each pixel column showing the shortest and the longest of its periods" : "");
  if (clip)
    caption += fmt::format(
        " The scale follows the bulk of the periods; {} longer ones (up to {}) are drawn to the top edge and "
        "marked there.",
        clipped, fmt_time(static_cast<double>(sorted.back())));
  return p.str() + "<p class=\"caption\">" + esc(caption) + "</p>";
}

}  // namespace chunkscope::render
