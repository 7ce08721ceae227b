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
#include "src/report/compare.hpp"
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

/// Runs the comparison and prints/writes it. Returns the exit code: 0, 1 (--fail-on-miss
/// and a variant broke its budget), 3 (a variant failed while running, or none can run).
/// Throws InputError / RuntimeFailure before streaming.
int run_compare(const CompareOptions& opt, const std::atomic<bool>* stop_flag);


}  // namespace chunkscope
