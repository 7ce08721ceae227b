#pragma once
// `chunkscope compare`: the same input and configuration through several backend variants,
// interleaved in rounds, and one side-by-side table (schema chunkscope.compare/1). Not real-time.
#include <atomic>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "src/cli/stream_cmd.hpp"

namespace chunkscope {

/// One variant of --variants: "cpu", "cpu:fused", "cpu:unfused", "cuda:eager", "cuda:graph",
/// "cuda:eager:unfused", "cuda:graph:unfused".
struct VariantSpec {
  std::string name;
  BackendChoice choice;
  bool fuse = true;
  bool fuse_given = false;  // the variant says fused/unfused; else the run's --no-fuse decides
};

/// Parses a comma-separated variant list. Throws InputError naming the bad entry.
std::vector<VariantSpec> parse_variants(const std::string& list);

/// Runs the comparison and prints/writes it. Returns the exit code: 0, 1 (--fail-on-miss
/// and a variant broke its budget), 3 (a variant failed while running, or none can run).
/// Throws InputError / RuntimeFailure before streaming.
int run_compare(const CompareOptions& opt, const std::atomic<bool>* stop_flag);


}  // namespace chunkscope
