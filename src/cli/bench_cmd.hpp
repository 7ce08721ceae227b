#pragma once
// `chunkscope bench`: the CPU filter throughput table (src/session/bench.hpp) on stdout, and
// optionally as JSON (schema chunkscope.bench/1). Not real-time.
#include "src/options.hpp"

namespace chunkscope {

/// Checks the grid, runs it and prints each row as it is measured. Returns the exit code;
/// throws InputError for a grid out of range.
int run_bench(const BenchCommandOptions& o);

}  // namespace chunkscope
