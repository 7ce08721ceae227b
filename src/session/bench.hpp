#pragma once
// `chunkscope bench`: CPU filter throughput in biquad-samples per second (sections x
// frames x channels / second) for fused and unfused chains. A benchmark, not a test:
// figures depend on the machine and its load.
#include <functional>
#include <string>
#include <vector>

#include "rt/backend.hpp"
#include "rt/cpu_simd.hpp"
#include "src/options.hpp"  // BenchOptions

namespace chunkscope {

struct BenchRow {
  bool fused = true;
  CpuIsa isa = CpuIsa::scalar;                     // the kernels' instruction set
  bool isa_auto = true;                            // chosen by --isa auto (not forced)
  CascadeLayout layout = CascadeLayout::scalar;    // how they laid the cascade out
  int channels = 0, sections = 0, chunk = 0;
  DType dtype = DType::f32;
  std::size_t dispatches = 0;
  double median_gbs = 0, min_gbs = 0, max_gbs = 0;  // G biquad-samples/s over the repeats
  double median_ns_per_chunk = 0;
  double spread = 0;               // (max - min) / median of the repeats' throughput
  double shortest_repeat_ns = 0;   // wall time of the shortest repeat
  double clock_resolution_ns = 0;  // the clock's measured step
  std::string warning;             // empty when the repeats agree within what the bench resolves
};

/// Repeats whose throughput spreads by more than this share of their median, (max - min)
/// / median, disagree by more than the bench can resolve: the row is flagged.
inline constexpr double kBenchSpreadLimit = 0.10;
/// A repeat shorter than this many steps of the clock is flagged too: the clock's step
/// alone would then move its figure by more than 0.1 %.
inline constexpr double kBenchMinClockSteps = 1000;

/// The spread of one configuration's repeats (G biquad-samples/s) and, when they disagree
/// by more than kBenchSpreadLimit or the shortest repeat lasts fewer than
/// kBenchMinClockSteps clock steps, the warning that says so (else empty).
struct RepeatCheck {
  double spread = 0;
  std::string warning;
};
RepeatCheck check_repeats(const std::vector<double>& gbs, double shortest_repeat_ns, double clock_resolution_ns);

/// The steady clock's step as measured here: the smallest non-zero difference between
/// consecutive readings (at least 1 ns). Not real-time.
double measure_clock_resolution_ns();

/// The bench chain of `sections` one-section peaking filters.
std::string bench_chain(int sections);

/// Runs every configuration; calls on_row after each. Not real-time; allocates.
std::vector<BenchRow> run_filter_bench(const BenchOptions& opt, const std::function<void(const BenchRow&)>& on_row);

}  // namespace chunkscope
