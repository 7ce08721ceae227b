// Cost of the statistics core: LogHistogram::record (plain and through the
// IntervalRecorder phaser), value_at_percentile and percentile_rank. Values come from
// arrays generated before timing, so the random number generator is not measured.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <random>
#include <vector>

#include "rt/stats/histogram.hpp"
#include "rt/stats/interval_recorder.hpp"

namespace {

using chunkscope::stats::IntervalRecorder;
using chunkscope::stats::LogHistogram;

constexpr std::size_t kValues = 1 << 16;  // power of two: index with a mask

// Chunk-latency-like values: lognormal around 200 us, spread over many slots.
const std::vector<std::uint64_t>& values() {
  static const std::vector<std::uint64_t> v = [] {
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> dist(std::log(200'000.0), 1.0);
    std::vector<std::uint64_t> out(kValues);
    for (auto& x : out) x = static_cast<std::uint64_t>(dist(rng));
    return out;
  }();
  return v;
}

void BM_Record(benchmark::State& state) {
  const std::vector<std::uint64_t>& v = values();
  LogHistogram h;
  std::size_t i = 0;
  for (auto _ : state) {
    h.record(v[i++ & (kValues - 1)]);
  }
  benchmark::DoNotOptimize(h.count());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_Record);

void BM_RecordSameValue(benchmark::State& state) {
  LogHistogram h;
  std::uint64_t x = 123'456;
  for (auto _ : state) {
    benchmark::DoNotOptimize(x);
    h.record(x);
  }
  benchmark::DoNotOptimize(h.count());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_RecordSameValue);

void BM_IntervalRecorderRecord(benchmark::State& state) {
  const std::vector<std::uint64_t>& v = values();
  IntervalRecorder rec;
  std::size_t i = 0;
  for (auto _ : state) {
    rec.record(v[i++ & (kValues - 1)]);
  }
  LogHistogram out = rec.make_histogram();
  rec.sample_into(out);
  benchmark::DoNotOptimize(out.count());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_IntervalRecorderRecord);

LogHistogram filled(std::size_t n) {
  LogHistogram h;
  const std::vector<std::uint64_t>& v = values();
  for (std::size_t i = 0; i < n; ++i) h.record(v[i & (kValues - 1)] + i % 977);
  return h;
}

void BM_ValueAtPercentile(benchmark::State& state) {
  const LogHistogram h = filled(1'000'000);
  const double p = static_cast<double>(state.range(0)) / 1000.0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(h.value_at_percentile(p));
  }
  char label[32];
  std::snprintf(label, sizeof label, "p%g", p);
  state.SetLabel(label);
}
BENCHMARK(BM_ValueAtPercentile)->Arg(50'000)->Arg(99'000)->Arg(99'990);

void BM_PercentileRank(benchmark::State& state) {
  const LogHistogram h = filled(1'000'000);
  const std::uint64_t budget = 1'000'000;  // 1 ms
  for (auto _ : state) {
    benchmark::DoNotOptimize(h.percentile_rank(budget));
  }
}
BENCHMARK(BM_PercentileRank);

void BM_Reset(benchmark::State& state) {
  LogHistogram h;
  const std::vector<std::uint64_t>& v = values();
  for (auto _ : state) {
    state.PauseTiming();
    for (std::size_t i = 0; i < 4096; ++i) h.record(v[i]);
    state.ResumeTiming();
    h.reset();
  }
}
BENCHMARK(BM_Reset);

}  // namespace

BENCHMARK_MAIN();
