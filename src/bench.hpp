#pragma once
// `chunkscope bench`: CPU filter throughput in biquad-samples per second (sections x
// frames x channels / second) for fused and unfused chains. A benchmark, not a test:
// figures depend on the machine and its load.
#include <functional>
#include <string>
#include <vector>

#include "rt/backend.hpp"
#include "src/options.hpp"  // BenchOptions

namespace chunkscope {

struct BenchRow {
  bool fused = true;
  int channels = 0, sections = 0, chunk = 0;
  DType dtype = DType::f32;
  std::size_t dispatches = 0;
  double median_gbs = 0, min_gbs = 0, max_gbs = 0;  // G biquad-samples/s over the repeats
  double median_ns_per_chunk = 0;
};

/// The bench chain of `sections` one-section peaking filters.
std::string bench_chain(int sections);

/// Runs every configuration; calls on_row after each. Not real-time; allocates.
std::vector<BenchRow> run_filter_bench(const BenchOptions& opt, const std::function<void(const BenchRow&)>& on_row);

}  // namespace chunkscope
