#pragma once
// A comparison's figures from its variants' run reports: the side-by-side table, each
// variant's summary, the spread of each figure across rounds and the calls against the
// baseline (docs/profiler.md, compare). `chunkscope compare` (src/cli/compare_cmd.cpp) runs
// the variants and hands their reports here. Not real-time.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/report/model.hpp"

namespace chunkscope {

// ---------------------------------------------------------------- across rounds
//
// A difference is called a difference only when it holds across rounds (docs/profiler.md,
// compare): the variant's and the baseline's per-round ranges (min..max) do not overlap,
// or a seeded bootstrap interval of the ratio of their medians excludes 1. Fewer than
// rule.min_rounds values on either side: the spread cannot be judged.

/// The median of `v` (the mean of the middle two for an even count); 0 when empty.
double median_of(std::vector<double> v);

/// The spread of each figure over the complete rounds that have a value for it, in
/// CompareFigure order.
std::vector<CompareSpread> spreads_of(const std::vector<CompareRound>& rounds);

/// The bootstrap percentile interval (rule.confidence, rule.resamples, rule.seed) of
/// median(variant) / median(baseline), each side resampled with replacement on its own.
/// nullopt when either side is empty or a baseline value is 0 or below (a ratio to 0 is
/// not defined). Deterministic: the same values and rule give the same interval.
std::optional<std::pair<double, double>> bootstrap_ratio_interval(const std::vector<double>& baseline,
                                                                  const std::vector<double>& variant,
                                                                  const CompareRule& rule);

/// The call for one figure from the baseline's and the variant's per-round values.
CompareCall judge_figure(CompareFigure figure, const std::vector<double>& baseline, const std::vector<double>& variant,
                         const CompareRule& rule);

/// The values of `figure` over the complete rounds that have one.
std::vector<double> round_values(const CompareRounds& r, CompareFigure figure);

/// Every figure of every variant but the baseline, judged against the baseline's rounds.
std::vector<CompareCall> judge_rounds(const std::vector<CompareRounds>& per_round, const std::string& baseline,
                                      const CompareRule& rule);

/// The count a variant's verdict judges by, and what it counts ("stall events": one stall
/// that delays several chunks is one event; a report without events counts its misses).
std::uint64_t verdict_events(const RunReport& rep);
const char* verdict_events_of();

/// Completes a comparison whose variants hold their run reports: the baseline (the first
/// variant that ran), its environment, workload and timing, the table and the summaries
/// against the baseline, each variant's rounds (`per_round`, one per variant that ran) with
/// their spreads, and the calls on every figure.
void summarize_compare(CompareReport& out, std::vector<CompareRounds> per_round);

}  // namespace chunkscope
