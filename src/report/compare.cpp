#include "src/report/compare.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "src/report/format.hpp"

namespace chunkscope {

// ---------------------------------------------------------------- across rounds

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t n = v.size(), h = n / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
  const double hi = v[h];
  if (n % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h));
  return lo + (hi - lo) / 2;
}

std::vector<double> round_values(const CompareRounds& r, CompareFigure figure) {
  std::vector<double> out;
  for (const auto& rd : r.rounds)
    if (rd.complete)
      if (const auto v = rd.figure(figure)) out.push_back(*v);
  return out;
}

std::vector<CompareSpread> spreads_of(const std::vector<CompareRound>& rounds) {
  CompareRounds r;
  r.rounds = rounds;
  std::vector<CompareSpread> out;
  for (int f = 0; f < kCompareFigureCount; ++f) {
    const auto fig = static_cast<CompareFigure>(f);
    const std::vector<double> v = round_values(r, fig);
    if (v.empty()) continue;
    CompareSpread s;
    s.figure = fig;
    s.rounds = static_cast<int>(v.size());
    s.min = *std::min_element(v.begin(), v.end());
    s.max = *std::max_element(v.begin(), v.end());
    s.median = median_of(v);
    out.push_back(s);
  }
  return out;
}

namespace {

// splitmix64: a small generator whose sequence is the same on every platform and library
// (std:: distributions are not), so a seeded bootstrap gives the same interval everywhere.
struct SplitMix64 {
  std::uint64_t s;
  std::uint64_t next() noexcept {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) noexcept {  // 0..n-1 (the bias of % is below 2^-57 for n <= 100)
    return static_cast<std::size_t>(next() % n);
  }
};

// The median of a resample (with replacement) of `v`, using `buf` as scratch.
double resampled_median(const std::vector<double>& v, SplitMix64& rng, std::vector<double>& buf) {
  buf.resize(v.size());
  for (auto& x : buf) x = v[rng.below(v.size())];
  return median_of(buf);
}

std::string fig_value(CompareFigure f, double v) {
  return CompareRound::figure_is_time(f) ? fmt_time(v) : fmt::format("{:g}", v);
}

}  // namespace

std::optional<std::pair<double, double>> bootstrap_ratio_interval(const std::vector<double>& baseline,
                                                                  const std::vector<double>& variant,
                                                                  const CompareRule& rule) {
  if (baseline.empty() || variant.empty() || rule.resamples < 1) return std::nullopt;
  for (double b : baseline)
    if (!(b > 0)) return std::nullopt;
  SplitMix64 rng{rule.seed};
  std::vector<double> ratios, buf;
  ratios.reserve(static_cast<std::size_t>(rule.resamples));
  for (int i = 0; i < rule.resamples; ++i) {
    const double mb = resampled_median(baseline, rng, buf);
    const double mv = resampled_median(variant, rng, buf);
    ratios.push_back(mv / mb);
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = std::clamp((1 - rule.confidence) / 2, 0.0, 0.5);
  const auto k = std::min(static_cast<std::size_t>(tail * static_cast<double>(ratios.size())), ratios.size() - 1);
  return std::pair{ratios[k], ratios[ratios.size() - 1 - k]};
}

CompareCall judge_figure(CompareFigure figure, const std::vector<double>& baseline, const std::vector<double>& variant,
                         const CompareRule& rule) {
  CompareCall c;
  c.figure = figure;
  c.rounds = static_cast<int>(variant.size());
  c.baseline_rounds = static_cast<int>(baseline.size());
  if (baseline.empty() || variant.empty()) {
    c.call = CompareCall::Call::cannot_judge;
    c.reason = "no per-round values on one side";
    return c;
  }
  const double mb = median_of(baseline), mv = median_of(variant);
  if (mb > 0) c.ratio_of_medians = mv / mb;
  const auto [bmin, bmax] = std::minmax_element(baseline.begin(), baseline.end());
  const auto [vmin, vmax] = std::minmax_element(variant.begin(), variant.end());
  c.ranges_overlap = !(*vmax < *bmin || *vmin > *bmax);
  c.higher = mv > mb || (mv == mb && *vmin > *bmax);
  const auto range = [&](double lo, double hi) { return fmt::format("{}..{}", fig_value(figure, lo), fig_value(figure, hi)); };
  if (c.rounds < rule.min_rounds || c.baseline_rounds < rule.min_rounds) {
    c.call = CompareCall::Call::cannot_judge;
    c.reason = fmt::format("{} round(s) against the baseline's {}: the spread across rounds cannot be judged below {}",
                           c.rounds, c.baseline_rounds, rule.min_rounds);
    return c;
  }
  if (const auto iv = bootstrap_ratio_interval(baseline, variant, rule)) {
    c.interval_low = iv->first;
    c.interval_high = iv->second;
  }
  const int pct = static_cast<int>(std::lround(rule.confidence * 100));
  if (!c.ranges_overlap) {
    c.call = CompareCall::Call::difference;
    c.reason = fmt::format("ranges apart: every round {} the baseline's (range {} against {})",
                           c.higher ? "above" : "below", range(*vmin, *vmax), range(*bmin, *bmax));
    return c;
  }
  if (c.interval_low && (*c.interval_low > 1 || *c.interval_high < 1)) {
    c.call = CompareCall::Call::difference;
    c.higher = *c.interval_low > 1;
    c.reason = fmt::format("ranges overlap, but the {}% bootstrap interval of the ratio of medians, {:.3f}..{:.3f}, "
                           "excludes 1",
                           pct, *c.interval_low, *c.interval_high);
    return c;
  }
  c.call = CompareCall::Call::no_clear_difference;
  c.higher = false;
  if (c.interval_low)
    c.reason = fmt::format("ranges overlap ({} against {}) and the {}% bootstrap interval of the ratio of medians, "
                           "{:.3f}..{:.3f}, holds 1",
                           range(*vmin, *vmax), range(*bmin, *bmax), pct, *c.interval_low, *c.interval_high);
  else
    c.reason = fmt::format("ranges overlap ({} against {}); no ratio interval (a baseline round is 0)",
                           range(*vmin, *vmax), range(*bmin, *bmax));
  return c;
}

std::vector<CompareCall> judge_rounds(const std::vector<CompareRounds>& per_round, const std::string& baseline,
                                      const CompareRule& rule) {
  std::vector<CompareCall> out;
  const CompareRounds* base = nullptr;
  for (const auto& r : per_round)
    if (r.variant == baseline) base = &r;
  if (!base) return out;
  for (const auto& r : per_round) {
    if (&r == base) continue;
    for (int f = 0; f < kCompareFigureCount; ++f) {
      const auto fig = static_cast<CompareFigure>(f);
      const auto bv = round_values(*base, fig), vv = round_values(r, fig);
      if (bv.empty() && vv.empty()) continue;  // a figure neither side has (nothing counted)
      CompareCall c = judge_figure(fig, bv, vv, rule);
      c.variant = r.variant;
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::uint64_t verdict_events(const RunReport& rep) {
  // one stall that held up several chunks is one event
  return rep.counts.events();
}

const char* verdict_events_of() { return "stall events"; }

namespace {

// rows of the side-by-side table: the report's stages, the process parts, end-to-end
std::vector<std::pair<std::string, const HistSummary*>> table_rows(const RunReport& rep) {
  std::vector<std::pair<std::string, const HistSummary*>> rows;
  for (int s = 0; s < kStageCount; ++s) rows.emplace_back(stage_key(static_cast<Stage>(s)), &rep.stages[static_cast<std::size_t>(s)]);
  for (int p = 0; p < kPartCount; ++p)
    if (rep.process_parts[static_cast<std::size_t>(p)])
      rows.emplace_back(part_key(static_cast<Part>(p)), &*rep.process_parts[static_cast<std::size_t>(p)]);
  rows.emplace_back("end-to-end", &rep.latency);
  return rows;
}

std::optional<double> ratio(double a, double b) {
  if (!(b > 0)) return std::nullopt;
  return a / b;
}

std::optional<std::int64_t> p_of(const HistSummary& h, Pct p) {
  if (!h.has_data()) return std::nullopt;
  return at(h, p);
}

CompareSummary summarize_variant(const std::string& name, const RunReport& rep, const RunReport& base) {
  CompareSummary s;
  s.variant = name;
  s.state = rep.state;
  s.latency_p95_ns = p_of(rep.latency, Pct::p95);
  s.process_p50_ns = p_of(rep.stage(Stage::process), Pct::p50);
  s.process_p95_ns = p_of(rep.stage(Stage::process), Pct::p95);
  if (rep.headroom) s.headroom_p95_ns = rep.headroom->p95;
  s.launches_per_chunk = rep.launches_per_chunk;
  s.dispatches_per_chunk = rep.dispatches_per_chunk;
  if (rep.part(Part::launch)) s.launch_p50_ns = rep.part(Part::launch)->p50;
  std::int64_t gpu = 0;
  for (Part p : {Part::h2d, Part::kernel, Part::d2h})
    if (rep.part(p)) gpu += rep.part(p)->p50;
  if (gpu > 0) s.gpu_p50_ns = gpu;
  s.misses = rep.streams ? rep.streams->misses : rep.counts.misses;
  s.drops = rep.streams ? rep.streams->drops : rep.counts.drops;
  s.verdict_events = rep.streams ? rep.streams->stalls : verdict_events(rep);
  s.verdict_events_of = verdict_events_of();
  s.owner = rep.verdict.owner;
  // the run's own verdict, with the events above counted instead of the raw misses
  if (rep.verdict.realtime_safe)
    s.realtime_safe = (!rep.headroom || rep.headroom->p95 >= 0) && s.verdict_events == 0 && s.drops == 0;
  s.counted = rep.counts.counted;
  s.needed_chunks = rep.verdict.needed_chunks;
  s.ratio_latency_p95 = ratio(double(rep.latency.p95), double(base.latency.p95));
  s.ratio_process_p50 = ratio(double(rep.stage(Stage::process).p50), double(base.stage(Stage::process).p50));
  return s;
}

}  // namespace

void summarize_compare(CompareReport& out, std::vector<CompareRounds> per_round) {
  const CompareVariant* base = nullptr;
  for (const auto& e : out.variants)
    if (e.report) {
      base = &e;
      break;
    }
  out.baseline = base->name;
  out.environment = base->report->environment;
  out.workload = base->report->workload;  // the schema writes only the fields common to every variant
  out.timing = base->report->timing;
  const RunReport& b = *base->report;
  const auto base_rows = table_rows(b);
  for (const auto& e : out.variants) {
    if (!e.report) continue;
    for (const auto& [name, h] : table_rows(*e.report)) {
      if (!h->has_data()) continue;
      CompareRow row;
      row.variant = e.name;
      row.stage = name;
      row.p50 = h->p50;
      row.p95 = h->p95;
      row.p99 = h->p99;
      const HistSummary* bh = nullptr;
      for (const auto& [bn, bhh] : base_rows)
        if (bn == name) bh = bhh;
      if (bh && bh->has_data()) {
        row.ratio_p50 = ratio(double(h->p50), double(bh->p50));
        row.ratio_p95 = ratio(double(h->p95), double(bh->p95));
        row.ratio_p99 = ratio(double(h->p99), double(bh->p99));
      }
      out.table.push_back(row);
    }
    out.summary.push_back(summarize_variant(e.name, *e.report, b));
  }
  for (auto& v : per_round) v.spread = spreads_of(v.rounds);
  out.per_round = std::move(per_round);
  out.differences = judge_rounds(out.per_round, out.baseline, out.rule);
}

}  // namespace chunkscope
