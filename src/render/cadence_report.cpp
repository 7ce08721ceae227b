#include "src/render/cadence_report.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <string>
#include <vector>

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

namespace {

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

void histogram(std::string& out, const std::vector<rj::PeriodPoint>& pts, double D) {
  std::vector<std::int64_t> v;
  v.reserve(pts.size());
  for (const auto& p : pts) v.push_back(p.period_ns);
  std::sort(v.begin(), v.end());
  // the bin width follows the bulk (p10..p90 in about 8 bins); at most 25 bins around the
  // median cover p0.5..p99.5 and D when it is near; the rest goes to two outer rows
  const double med = rj::rank_percentile(v, 50);
  const double w = bin_width_us(std::max(1.0, (rj::rank_percentile(v, 90) - rj::rank_percentile(v, 10)) / 1e3), 8) * 1e3;
  double lo = std::max(rj::rank_percentile(v, 0.5), med - 12 * w), hi = std::min(rj::rank_percentile(v, 99.5), med + 12 * w);
  if (D > 0 && D >= med - 12 * w && D <= med + 12 * w) {
    lo = std::min(lo, D);
    hi = std::max(hi, D);
  }
  const double start = std::floor(lo / w) * w;
  const int nbins = std::max(1, static_cast<int>(std::floor((hi - start) / w)) + 1);
  std::vector<std::uint64_t> bins(static_cast<std::size_t>(nbins), 0);
  std::uint64_t below = 0, above = 0;
  for (auto x : v) {
    const double b = std::floor((static_cast<double>(x) - start) / w);
    if (b < 0)
      ++below;
    else if (b >= nbins)
      ++above;
    else
      ++bins[static_cast<std::size_t>(b)];
  }
  std::uint64_t most = std::max(below, above);
  for (auto b : bins) most = std::max(most, b);
  const int width = 40;
  auto bar = [&](std::uint64_t n) {
    const int len = most ? static_cast<int>(std::ceil(static_cast<double>(n) * width / static_cast<double>(most))) : 0;
    return std::string(static_cast<std::size_t>(len), '#') + std::string(static_cast<std::size_t>(width - len), ' ');
  };
  const int dbin = D > 0 ? static_cast<int>(std::floor((D - start) / w)) : -1;
  out += fmt::format("histogram  output period P in bins of {} µs ({} periods between counted chunks)\n", us(w), v.size());
  if (below)
    out += fmt::format("  {:>21} |{}| {:>8}   (min {} µs)\n", fmt::format("< {} µs", us(start)), bar(below), below,
                       us(static_cast<double>(v.front())));
  for (int i = 0; i < nbins; ++i) {
    const double a = start + i * w;
    out += fmt::format("  {:>21} |{}| {:>8}{}\n", fmt::format("{} .. {} µs", us(a), us(a + w)), bar(bins[static_cast<std::size_t>(i)]),
                       bins[static_cast<std::size_t>(i)], i == dbin ? "   <- D" : "");
  }
  if (above)
    out += fmt::format("  {:>21} |{}| {:>8}   (max {} µs)\n", fmt::format(">= {} µs", us(start + nbins * w)), bar(above),
                       above, us(static_cast<double>(v.back())));
}

}  // namespace

void print_cadence(std::ostream& os, const json& r) {
  if (str_or(r, {"schema"}, "") == "chunkscope.compare/1")
    throw InputError("a compare report holds one cadence per variant: save or pick one variant's report (variants[i].report)");
  const json* cad = rj::find(r, {"cadence"});
  if ((!cad || !cad->is_object()) && !rj::has_series(r)) throw InputError("the report has no cadence data (no \"cadence\" section)");
  static const json empty = json::object();
  const json& c = cad && cad->is_object() ? *cad : empty;

  const double D = num_or(r, {"timing", "chunk_ns"}, 0);
  const double B = num_or(r, {"timing", "budget_ns"}, 0);
  const double m = num_or(r, {"workload", "margin", "ns"}, D - B);
  const bool paced = rj::boolean(r, {"timing", "paced"}).value_or(false);
  const std::string cmd = str_or(r, {"workload", "command"}, "run");
  std::string out;
  out += fmt::format("cadence    {}: {} -> {}, chunk {:.0f} frames at {:g} Hz, {:.0f} ch\n", cmd,
                     str_or(r, {"workload", "source"}, "?"), str_or(r, {"workload", "sink"}, "?"),
                     num_or(r, {"workload", "chunk_frames"}, 0), num_or(r, {"workload", "rate"}, 0),
                     num_or(r, {"workload", "channels"}, 0));
  out += fmt::format("           D {}, margin {} = {}, budget B {}, {}\n", fmt_time(D),
                     str_or(r, {"workload", "margin", "text"}, "-"), fmt_time(m), fmt_time(B),
                     paced ? "paced (absolute schedule)" : "--speed max (no schedule: the period measures throughput)");

  const json* ph = rj::hist(c, {"period"});
  if (ph) {
    out += fmt::format("period     {:.0f} periods: min {}, p50 {}, p90 {}, p95 {}, p99 {}, p99.9 {}, max {}\n",
                       num_or(*ph, {"count"}, 0), fmt_time(hv(ph, "min").value_or(0)), fmt_time(hv(ph, "p50").value_or(0)),
                       fmt_time(hv(ph, "p90").value_or(0)), fmt_time(hv(ph, "p95").value_or(0)),
                       fmt_time(hv(ph, "p99").value_or(0)), fmt_time(hv(ph, "p99_9").value_or(0)),
                       fmt_time(hv(ph, "max").value_or(0)));
  } else {
    out += "period     - (fewer than two counted chunks)\n";
  }

  const auto pts = rj::counted_periods(r);
  if (!pts.empty())
    histogram(out, pts, D);
  else
    out += "histogram  - (needs the per-chunk series, which this report does not have)\n";

  const auto jit = num(c, {"jitter_p95_ns"});
  out += fmt::format("jitter     {}\n", jit ? fmt::format("p95 of abs(P - D) = {}{}", fmt_time(*jit),
                                                          m > 0 ? fmt::format(" ({:.0f}% of the margin)", 100 * *jit / m) : "")
                                            : std::string("- (no schedule)"));
  const auto drift = num(c, {"drift_ppm"});
  out += fmt::format("drift      {}\n", drift ? fmt::format("{:+.1f} ppm: the output {} real time by {:.3f} s per hour", *drift,
                                                            *drift >= 0 ? "falls behind" : "runs ahead of",
                                                            std::fabs(*drift) * 3600e-6)
                                              : std::string("- (no schedule)"));
  const auto rtf = num(c, {"realtime_factor"});
  if (rtf) out += fmt::format("rt factor  p95(P) / D = {:.3f}\n", *rtf);

  // the longest gaps
  out += "longest gaps\n";
  if (!pts.empty()) {
    std::vector<rj::PeriodPoint> top(pts);
    const std::size_t k = std::min<std::size_t>(5, top.size());
    std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(k), top.end(),
                      [](const auto& a, const auto& b) { return a.period_ns > b.period_ns || (a.period_ns == b.period_ns && a.seq < b.seq); });
    for (std::size_t i = 0; i < k; ++i)
      out += fmt::format("  {}. {:>10}  ended by chunk {} at {:.3f} s{}\n", i + 1, fmt_time(static_cast<double>(top[i].period_ns)),
                         top[i].seq, static_cast<double>(top[i].emit_ns) / 1e9,
                         D > 0 ? fmt::format("  ({:.2f} D)", static_cast<double>(top[i].period_ns) / D) : "");
  } else if (const auto g = num(c, {"longest_gap", "ns"}); g && *g > 0) {
    out += fmt::format("  1. {:>10}  ended by chunk {:.0f} at {:.3f} s  (only the longest is in a report without a series)\n",
                       fmt_time(*g), num_or(c, {"longest_gap", "seq"}, 0), num_or(c, {"longest_gap", "at_s"}, 0));
  } else {
    out += "  -\n";
  }

  // late outputs: a period beyond D + margin would drain a sink buffer one margin deep
  std::uint64_t late = 0;
  std::string late_list;
  if (paced && D > 0 && !pts.empty()) {
    for (const auto& p : pts)
      if (static_cast<double>(p.period_ns) > D + m) {
        if (late < 10) late_list += fmt::format("{}{}", late ? ", " : "", p.seq);
        ++late;
      }
    out += fmt::format("late       {} output(s) with P > D + margin ({}){}\n", late, fmt_time(D + m),
                       late ? ": chunks " + late_list + (late > 10 ? ", ..." : "") : "");
  }
  const double misses = num_or(r, {"counts", "misses"}, 0), counted = num_or(r, {"counts", "counted"}, 0);
  if (paced) out += fmt::format("misses     {:.0f} of {:.0f} counted chunks with latency L > B\n", misses, counted);
  const double drops = num_or(r, {"counts", "drops"}, 0);
  if (drops > 0) out += fmt::format("drops      {:.0f} chunk(s) never reached the output\n", drops);

  // the device's own clock (monitor runs)
  if (const json* cb = rj::hist(r, {"device", "callback_period"})) {
    const double p50 = hv(cb, "p50").value_or(0);
    out += fmt::format("device     callback period over {:.0f} callbacks: min {}, p50 {}, p95 {}, p99 {}, max {}{}\n",
                       num_or(*cb, {"count"}, 0), fmt_time(hv(cb, "min").value_or(0)), fmt_time(p50),
                       fmt_time(hv(cb, "p95").value_or(0)), fmt_time(hv(cb, "p99").value_or(0)),
                       fmt_time(hv(cb, "max").value_or(0)),
                       D > 0 ? fmt::format(" (p50 = {:.3f} D)", p50 / D) : "");
    out += fmt::format("           xruns {:.0f}, underruns {:.0f}\n", num_or(r, {"device", "xruns"}, 0),
                       num_or(r, {"device", "underruns"}, 0));
  }

  // verdict against D and the margin
  std::string verdict;
  if (!ph) {
    verdict = "no verdict: fewer than two counted chunks";
  } else if (!paced) {
    verdict = fmt::format("no schedule (--speed max): p95 period {} = {:.3f} x D, {}", fmt_time(hv(ph, "p95").value_or(0)),
                          rtf.value_or(0), rtf.value_or(0) <= 1 ? "faster than real time" : "slower than real time");
  } else {
    std::vector<std::string> bad;
    const double gap = num_or(c, {"longest_gap", "ns"}, hv(ph, "max").value_or(0));
    if (jit && *jit > m) bad.push_back(fmt::format("jitter p95 {} exceeds the margin {}", fmt_time(*jit), fmt_time(m)));
    if (gap > D + m)
      bad.push_back(fmt::format("the longest gap {} exceeds D + margin {}{}", fmt_time(gap), fmt_time(D + m),
                                late ? fmt::format(" ({} late outputs)", late) : ""));
    if (drift && std::fabs(*drift) >= 500) bad.push_back(fmt::format("drift {:+.0f} ppm", *drift));
    if (bad.empty())
      verdict = fmt::format("steady: jitter p95 {} within the margin {}, longest gap {} within D + margin {}",
                            fmt_time(jit.value_or(0)), fmt_time(m), fmt_time(gap), fmt_time(D + m));
    else {
      verdict = "not steady: ";
      for (std::size_t i = 0; i < bad.size(); ++i) verdict += (i ? "; " : "") + bad[i];
    }
  }
  out += "verdict    " + verdict + "\n";
  os << out;
}

}  // namespace chunkscope
