#include "src/render/cadence_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "src/render/sections.hpp"
#include "src/render/series_view.hpp"
#include "src/report/format.hpp"

namespace chunkscope {

namespace {

using render::PeriodPoint;
using render::rank_percentile;
using render::RunTiming;

// A bin width in µs from the 1-2-5 series that splits `span_us` into at most `bins` bins.
double bin_width_us(double span_us, int bins) {
  for (double dec = 1; dec < 1e9; dec *= 10)
    for (double m : {1.0, 2.0, 5.0})
      if (span_us / (m * dec) <= bins) return m * dec;
  return 1e9;
}

std::string us(double ns) {
  const double u = ns / 1e3;
  return std::fabs(u) >= 100 ? fmt::format("{:.0f}", u) : fmt::format("{:.1f}", u);
}

std::string hist_line(const HistSummary& h) {
  std::string s = fmt::format("min {}", fmt_time(static_cast<double>(h.min)));
  for (int i = 0; i < kPctCount; ++i)
    s += fmt::format(", {} {}", pct_label(static_cast<Pct>(i)), fmt_time(static_cast<double>(at(h, static_cast<Pct>(i)))));
  return s + fmt::format(", max {}", fmt_time(static_cast<double>(h.max)));
}

// The bins of the histogram: the width follows the bulk (p10..p90 in about 8 bins); at
// most 25 bins around the median cover p0.5..p99.5 and D when it is near; the rest goes
// to two outer rows.
struct Bins {
  double start = 0, w = 1;
  std::vector<std::uint64_t> n;
  std::uint64_t below = 0, above = 0;
};

Bins bin_periods(const std::vector<std::int64_t>& v, double D) {
  Bins b;
  const double med = rank_percentile(v, 50);
  b.w = bin_width_us(std::max(1.0, (rank_percentile(v, 90) - rank_percentile(v, 10)) / 1e3), 8) * 1e3;
  double lo = std::max(rank_percentile(v, 0.5), med - 12 * b.w), hi = std::min(rank_percentile(v, 99.5), med + 12 * b.w);
  if (D > 0 && D >= med - 12 * b.w && D <= med + 12 * b.w) {
    lo = std::min(lo, D);
    hi = std::max(hi, D);
  }
  b.start = std::floor(lo / b.w) * b.w;
  const int nbins = std::max(1, static_cast<int>(std::floor((hi - b.start) / b.w)) + 1);
  b.n.assign(static_cast<std::size_t>(nbins), 0);
  for (auto x : v) {
    const double k = std::floor((static_cast<double>(x) - b.start) / b.w);
    if (k < 0)
      ++b.below;
    else if (k >= nbins)
      ++b.above;
    else
      ++b.n[static_cast<std::size_t>(k)];
  }
  return b;
}

void histogram(std::string& out, const std::vector<PeriodPoint>& pts, double D) {
  std::vector<std::int64_t> v;
  v.reserve(pts.size());
  for (const auto& p : pts) v.push_back(p.period_ns);
  std::sort(v.begin(), v.end());
  const Bins b = bin_periods(v, D);
  const int nbins = static_cast<int>(b.n.size());
  std::uint64_t most = std::max(b.below, b.above);
  for (auto x : b.n) most = std::max(most, x);
  const int width = 40;
  auto bar = [&](std::uint64_t n) {
    const int len = most ? static_cast<int>(std::ceil(static_cast<double>(n) * width / static_cast<double>(most))) : 0;
    return std::string(static_cast<std::size_t>(len), '#') + std::string(static_cast<std::size_t>(width - len), ' ');
  };
  const int dbin = D > 0 ? static_cast<int>(std::floor((D - b.start) / b.w)) : -1;
  out += fmt::format("histogram  output period P in bins of {} µs ({} periods between counted chunks)\n", us(b.w), v.size());
  if (b.below)
    out += fmt::format("  {:>21} |{}| {:>8}   (min {} µs)\n", fmt::format("< {} µs", us(b.start)), bar(b.below), b.below,
                       us(static_cast<double>(v.front())));
  for (int i = 0; i < nbins; ++i) {
    const double a = b.start + i * b.w;
    out += fmt::format("  {:>21} |{}| {:>8}{}\n", fmt::format("{} .. {} µs", us(a), us(a + b.w)),
                       bar(b.n[static_cast<std::size_t>(i)]), b.n[static_cast<std::size_t>(i)], i == dbin ? "   <- D" : "");
  }
  if (b.above)
    out += fmt::format("  {:>21} |{}| {:>8}   (max {} µs)\n", fmt::format(">= {} µs", us(b.start + nbins * b.w)), bar(b.above),
                       b.above, us(static_cast<double>(v.back())));
}

void header(std::string& out, const RunReport& r, const RunTiming& t) {
  const ReportWorkload& w = r.workload;
  out += fmt::format("cadence    {}: {} -> {}, chunk {} frames at {:g} Hz, {} ch\n", w.command.empty() ? "run" : w.command,
                     w.source.empty() ? "?" : w.source, w.sink.empty() ? "?" : w.sink, w.chunk_frames, w.rate, w.channels);
  out += fmt::format("           D {}, margin {} = {}, budget B {}, {}\n", fmt_time(t.D),
                     w.margin_text.empty() ? "-" : w.margin_text, fmt_time(t.m), fmt_time(t.B),
                     t.paced ? "paced (absolute schedule)" : "--speed max (no schedule: the period measures throughput)");
  const HistSummary& ph = r.cadence.period;
  if (ph.has_data())
    out += fmt::format("period     {} periods: {}\n", ph.count, hist_line(ph));
  else
    out += "period     - (fewer than two counted chunks)\n";
}

void regularity(std::string& out, const Cadence& c, const RunTiming& t) {
  const auto& jit = c.jitter_p95_ns;
  out +=
      fmt::format("jitter     {}\n",
                  jit ? fmt::format("p95 of abs(P - D) = {}{}", fmt_time(static_cast<double>(*jit)),
                                    t.m > 0 ? fmt::format(" ({:.0f}% of the margin)", 100 * static_cast<double>(*jit) / t.m) : "")
                      : std::string("- (no schedule)"));
  const auto& drift = c.drift_ppm;
  out += fmt::format("drift      {}\n",
                     drift ? fmt::format("{:+.1f} ppm: the output {} real time by {:.3f} s per hour", *drift,
                                         *drift >= 0 ? "falls behind" : "runs ahead of", std::fabs(*drift) * 3600e-6)
                           : std::string("- (no schedule)"));
  if (c.period.has_data())
    out += fmt::format("period/D   p95(P) / D = {:.3f} (above 1 for any jitter: a ratio of periods, not a speed)\n",
                       c.period_ratio_p95);
}

void longest_gaps(std::string& out, const std::vector<PeriodPoint>& pts, const Cadence& c, double D) {
  out += "longest gaps\n";
  if (!pts.empty()) {
    std::vector<PeriodPoint> top(pts);
    const std::size_t k = std::min<std::size_t>(5, top.size());
    std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(k), top.end(), [](const auto& a, const auto& b) {
      return a.period_ns > b.period_ns || (a.period_ns == b.period_ns && a.seq < b.seq);
    });
    for (std::size_t i = 0; i < k; ++i)
      out += fmt::format("  {}. {:>10}  ended by chunk {} at {:.3f} s{}\n", i + 1,
                         fmt_time(static_cast<double>(top[i].period_ns)), top[i].seq, static_cast<double>(top[i].emit_ns) / 1e9,
                         D > 0 ? fmt::format("  ({:.2f} D)", static_cast<double>(top[i].period_ns) / D) : "");
  } else if (c.longest_gap.ns > 0) {
    out += fmt::format("  1. {:>10}  ended by chunk {} at {:.3f} s  (only the longest is in a report without a series)\n",
                       fmt_time(static_cast<double>(c.longest_gap.ns)), c.longest_gap.seq, c.longest_gap.at_s);
  } else {
    out += "  -\n";
  }
}

// Late outputs (a period beyond D + margin would drain a sink buffer one margin deep),
// misses and drops; returns the number of late outputs.
std::uint64_t lateness(std::string& out, const RunReport& r, const std::vector<PeriodPoint>& pts, const RunTiming& t) {
  std::uint64_t late = 0;
  if (t.paced && t.D > 0 && !pts.empty()) {
    std::string list;
    for (const auto& p : pts)
      if (static_cast<double>(p.period_ns) > t.D + t.m) {
        if (late < 10) list += fmt::format("{}{}", late ? ", " : "", p.seq);
        ++late;
      }
    out += fmt::format("late       {} output(s) with P > D + margin ({}){}\n", late, fmt_time(t.D + t.m),
                       late ? ": chunks " + list + (late > 10 ? ", ..." : "") : "");
  }
  if (t.paced) out += fmt::format("misses     {} of {} counted chunks with latency L > B\n", r.counts.misses, r.counts.counted);
  if (r.counts.drops > 0) out += fmt::format("drops      {} chunk(s) never reached the output\n", r.counts.drops);
  return late;
}

void device_clock(std::string& out, const RunReport& r, double D) {
  if (!r.device || !r.device->callback_period.has_data()) return;
  const DeviceSection& d = *r.device;
  const HistSummary& cb = d.callback_period;
  const auto p50 = static_cast<double>(cb.p50);
  out += fmt::format("device     callback period over {} callbacks: min {}, p50 {}, p95 {}, p99 {}, max {}{}\n", cb.count,
                     fmt_time(static_cast<double>(cb.min)), fmt_time(p50), fmt_time(static_cast<double>(cb.p95)),
                     fmt_time(static_cast<double>(cb.p99)), fmt_time(static_cast<double>(cb.max)),
                     D > 0 ? fmt::format(" (p50 = {:.3f} D)", p50 / D) : "");
  out += fmt::format("           xruns {}, underruns {}\n", d.xruns, d.underruns);
}

// Chunks a consumer holding the margin's worth of audio would have run dry on: out later
// than B + margin. The report's count, or for an older report one from its series.
struct DryCount {
  bool known = false;
  std::uint64_t chunks = 0, first_seq = 0;
  std::int64_t worst_ns = 0, after_ns = 0;
};

DryCount dry_count(const RunReport& r, const RunTiming& t) {
  DryCount d;
  const Cadence& c = r.cadence;
  if (c.steady) return {true, c.dry_chunks, c.dry_first_seq, c.dry_worst_ns, c.dry_after_ns};
  if (r.series.empty()) return d;
  d.known = true;
  d.after_ns = static_cast<std::int64_t>(t.B + t.m);
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    if (r.series.flags[i] & kSeriesWarmup) continue;
    const std::int64_t over = r.series.latency_ns[i] - d.after_ns;
    if (over <= 0) continue;
    if (d.chunks++ == 0) d.first_seq = static_cast<std::uint64_t>(r.series.seq[i]);
    d.worst_ns = std::max(d.worst_ns, over);
  }
  return d;
}

std::string verdict(const RunReport& r, const RunTiming& t) {
  const Cadence& c = r.cadence;
  const HistSummary& ph = c.period;
  if (!ph.has_data()) return "no verdict: fewer than two counted chunks";
  if (!t.paced)
    return fmt::format("no schedule (--speed max): p95 period {} = {:.3f} x D; throughput {:.2f}x real time",
                       fmt_time(static_cast<double>(ph.p95)), c.period_ratio_p95, r.throughput.speed_factor);
  const DryCount d = dry_count(r, t);
  if (!d.known) return "no verdict: this report keeps neither the count of late chunks nor a per-chunk series";
  const std::uint64_t drops = r.counts.drops;
  const std::string consumer = fmt::format("a consumer holding the margin's {} of audio", fmt_time(t.m));
  if (d.chunks == 0 && drops == 0)
    return fmt::format("steady: {} would never have run dry (every chunk out within B + margin = {})", consumer,
                       fmt_time(static_cast<double>(d.after_ns)));
  std::string s = "not steady: " + consumer + " would have run dry";
  if (d.chunks > 0)
    s += fmt::format(" on {} chunk(s) out later than B + margin = {} (first chunk {}, worst {} beyond)", d.chunks,
                     fmt_time(static_cast<double>(d.after_ns)), d.first_seq, fmt_time(static_cast<double>(d.worst_ns)));
  if (drops > 0) s += fmt::format("{} {} dropped chunk(s)", d.chunks > 0 ? " and on" : " on", drops);
  return s;
}

}  // namespace

void print_cadence(std::ostream& os, const RunReport& r) {
  const RunTiming t = render::timing_of(r);
  const auto pts = render::counted_periods(r.series);
  std::string out;
  header(out, r, t);
  if (!pts.empty())
    histogram(out, pts, t.D);
  else
    out += "histogram  - (needs the per-chunk series, which this report does not have)\n";
  regularity(out, r.cadence, t);
  longest_gaps(out, pts, r.cadence, t.D);
  lateness(out, r, pts, t);
  device_clock(out, r, t.D);
  out += "verdict    " + verdict(r, t) + "\n";
  os << out;
}

}  // namespace chunkscope
