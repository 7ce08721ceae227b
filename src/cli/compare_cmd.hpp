#pragma once
// `chunkscope compare`: the same input and configuration through several backend variants,
// interleaved in rounds, and one side-by-side table (schema chunkscope.compare/1). Not real-time.
#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "src/cli/stream_cmd.hpp"
#include "src/report/model.hpp"

namespace chunkscope {

/// One variant of --variants: a backend ("cpu", "cpu:fused", "cpu:unfused", "cuda:eager",
/// "cuda:graph", "cuda:eager:unfused", "cuda:graph:unfused") running the run's chain, or a
/// chain of its own ("NAME=CHAIN") on the run's backend.
struct VariantSpec {
  std::string name;
  BackendChoice choice;
  bool fuse = true;
  bool fuse_given = false;  // the variant says fused/unfused; else the run's --no-fuse decides
  std::string chain;        // a chain variant's chain ("" : the run's --chain)
  bool chain_variant() const noexcept { return !chain.empty(); }
};

/// Parses a variant list: entries separated by ';' when the list has one, else by ','.
/// An entry NAME=CHAIN (NAME of letters, digits, '_', '-', '.') is a chain variant, which
/// takes the run's backend (`run_backend`); "@FILE" reads the entries from a file, one a line
/// ('#' starts a comment). Throws InputError naming the bad entry.
std::vector<VariantSpec> parse_variants(const std::string& list, const BackendChoice& run_backend = {});

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

/// Runs the comparison and prints/writes it. Returns the exit code: 0, 1 (--fail-on-miss
/// and a variant broke its budget), 3 (a variant failed while running, or none can run).
/// Throws InputError / RuntimeFailure before streaming.
int run_compare(const CompareOptions& opt, const std::atomic<bool>* stop_flag);


}  // namespace chunkscope
