// Tests of the statistics core: LogHistogram, IntervalRecorder and the .hgrm writer.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "src/report/hgrm.hpp"
#include "rt/stats/histogram.hpp"
#include "rt/stats/interval_recorder.hpp"

namespace {

using chunkscope::stats::IntervalRecorder;
using chunkscope::stats::LogHistogram;

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

// Nearest-rank percentile of sorted data: the k-th smallest value, k = ceil(ppm * N / 1e6)
// (ppm = percentile in parts per million, so k is computed exactly in integers).
std::uint64_t nearest_rank(const std::vector<std::uint64_t>& sorted, std::uint64_t ppm) {
  const std::uint64_t n = sorted.size();
  std::uint64_t k = (ppm * n + 999'999) / 1'000'000;
  k = std::clamp<std::uint64_t>(k, 1, n);
  return sorted[k - 1];
}

std::vector<std::uint64_t> uniform_data(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint64_t> dist(1'000, 50'000'000);
  std::vector<std::uint64_t> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<std::uint64_t> lognormal_data(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> dist(std::log(200'000.0), 0.8);  // ~200 us median
  std::vector<std::uint64_t> v(n);
  for (auto& x : v) x = static_cast<std::uint64_t>(std::llround(dist(rng)));
  return v;
}

// Pareto (alpha 1.3, scale 20 us) plus a few huge outliers up to ~1 h.
std::vector<std::uint64_t> pareto_data(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::vector<std::uint64_t> v(n);
  for (auto& x : v) {
    const double u = 1.0 - u01(rng);  // (0, 1]
    const double p = 20'000.0 / std::pow(u, 1.0 / 1.3);
    x = static_cast<std::uint64_t>(std::min(p, 3.0e12));
  }
  const std::uint64_t outliers[] = {100'000'000'000ULL, 333'333'333'333ULL, 1'000'000'000'001ULL,
                                    2'718'281'828'459ULL, 3'599'999'999'999ULL};
  for (std::size_t i = 0; i < std::size(outliers); ++i) v[(i * 7919 + 13) % n] = outliers[i];
  return v;
}

LogHistogram histogram_of(const std::vector<std::uint64_t>& data) {
  LogHistogram h;
  for (auto x : data) h.record(x);
  return h;
}

void check_percentiles_against_exact(const std::vector<std::uint64_t>& data) {
  LogHistogram h = histogram_of(data);
  std::vector<std::uint64_t> sorted = data;
  std::sort(sorted.begin(), sorted.end());
  REQUIRE(h.count() == data.size());
  CHECK(h.min() == sorted.front());
  CHECK(h.max() == sorted.back());
  CHECK(h.relative_error_bound() <= 0.001);

  const std::uint64_t ppms[] = {500'000, 900'000, 950'000, 990'000, 999'000, 999'900, 1'000'000};
  for (std::uint64_t ppm : ppms) {
    const double p = static_cast<double>(ppm) / 10'000.0;
    const std::uint64_t exact = nearest_rank(sorted, ppm);
    const std::uint64_t got = h.value_at_percentile(p);
    const double rel = std::fabs(static_cast<double>(got) - static_cast<double>(exact)) /
                       static_cast<double>(exact);
    INFO("p = " << p << "  exact = " << exact << "  histogram = " << got << "  rel = " << rel);
    CHECK(rel <= 0.001);                        // the promise
    CHECK(rel < h.relative_error_bound());      // the documented (sharper) bound, 1/1024
    CHECK(got >= exact);                        // highest-equivalent reporting never undershoots
  }
  CHECK(h.value_at_percentile(100.0) == sorted.back());
  CHECK(h.value_at_percentile(0.0) == sorted.front());

  // Mean against an exact long-double mean of the data.
  long double s = 0;
  for (auto x : data) s += static_cast<long double>(x);
  const long double m = s / static_cast<long double>(data.size());
  CHECK(h.mean() == doctest::Approx(static_cast<double>(m)).epsilon(1e-12));
  long double ss = 0;
  for (auto x : data) {
    const long double d = static_cast<long double>(x) - m;
    ss += d * d;
  }
  const double sd = static_cast<double>(std::sqrt(ss / static_cast<long double>(data.size())));
  CHECK(h.stddev() == doctest::Approx(sd).epsilon(1e-9));
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_SUITE("stats") {

TEST_CASE("LogHistogram: layout of the default configuration") {
  LogHistogram h;
  CHECK(h.highest_trackable() == 3'600'000'000'000ULL);
  CHECK(h.significant_digits() == 3);
  CHECK(h.sub_bucket_count() == 2048);
  CHECK(h.bucket_count() == 32);  // 2048 * 2^31 > 3.6e12 >= 2048 * 2^30
  CHECK(h.counts_length() == 33 * 1024);
  CHECK(h.relative_error_bound() == 1.0 / 1024.0);
  CHECK(h.memory_bytes() >= 33 * 1024 * sizeof(std::uint64_t));
  CHECK(h.index_of(3'600'000'000'000ULL) < h.counts_length());

  CHECK(LogHistogram(1000, 1).sub_bucket_count() == 32);
  CHECK(LogHistogram(1000, 2).sub_bucket_count() == 256);
  CHECK(LogHistogram(1000, 4).sub_bucket_count() == 32768);
  CHECK(LogHistogram(1000, 5).sub_bucket_count() == 262144);
  CHECK(LogHistogram(2047, 3).bucket_count() == 1);
  CHECK(LogHistogram(2048, 3).bucket_count() == 2);

  LogHistogram full(kU64Max, 3);
  CHECK(full.bucket_count() == 54);
  CHECK(full.index_of(kU64Max) == full.counts_length() - 1);
  CHECK(full.highest_equivalent_value(kU64Max) == kU64Max);
}

TEST_CASE("LogHistogram: constructor clamps bad configurations instead of throwing") {
  CHECK(LogHistogram(1'000'000, 0).significant_digits() == 1);
  CHECK(LogHistogram(1'000'000, 6).significant_digits() == 5);
  CHECK(LogHistogram(1, 3).highest_trackable() == 2);
  CHECK(LogHistogram(0, 3).highest_trackable() == 2);
  CHECK(LogHistogram(2, 3).highest_trackable() == 2);
}

TEST_CASE("LogHistogram: slot mapping is contiguous, monotonic and within the error bound") {
  for (int digits = 1; digits <= 5; ++digits) {
    LogHistogram h(kU64Max, digits);
    std::vector<std::uint64_t> probes;
    for (std::uint64_t v = 0; v < 5000; ++v) probes.push_back(v);
    for (int b = 1; b < 64; ++b) {
      const std::uint64_t p2 = std::uint64_t{1} << b;
      probes.insert(probes.end(), {p2 - 1, p2, p2 + 1, p2 + p2 / 3});
    }
    std::mt19937_64 rng(1234 + static_cast<std::uint64_t>(digits));
    for (int i = 0; i < 20000; ++i) probes.push_back(rng() >> (rng() % 64));
    probes.push_back(kU64Max);
    std::sort(probes.begin(), probes.end());
    std::size_t prev_index = 0;
    for (std::uint64_t v : probes) {
      const std::size_t i = h.index_of(v);
      const std::uint64_t lo = h.lowest_equivalent_value(v);
      const std::uint64_t hi = h.highest_equivalent_value(v);
      REQUIRE(i < h.counts_length());
      REQUIRE(i >= prev_index);
      prev_index = i;
      REQUIRE(lo <= v);
      REQUIRE(v <= hi);
      REQUIRE(h.value_from_index(i) == lo);
      REQUIRE(hi - lo + 1 == h.slot_width(i));
      REQUIRE(h.median_equivalent_value(v) >= lo);
      REQUIRE(h.median_equivalent_value(v) <= hi);
      if (hi != kU64Max) REQUIRE(h.index_of(hi + 1) == i + 1);  // no gaps between slots
      // (hi - lo) / lo < 1 / H, in exact integer arithmetic
      const auto half = static_cast<chunkscope::stats::uint128>(h.sub_bucket_count() / 2);
      if (lo > 0) REQUIRE(static_cast<chunkscope::stats::uint128>(hi - lo) * half < lo);
    }
    CHECK(h.relative_error_bound() <= std::pow(10.0, -digits));
  }
}

TEST_CASE("LogHistogram: exact statistics on small known data") {
  LogHistogram h;
  CHECK(h.empty());
  CHECK(h.count() == 0);
  CHECK(h.min() == 0);
  CHECK(h.max() == 0);
  CHECK(h.mean() == 0.0);
  CHECK(h.stddev() == 0.0);
  CHECK(h.value_at_percentile(50) == 0);
  CHECK(h.percentile_rank(100) == 0.0);

  for (std::uint64_t v : {10u, 20u, 30u, 40u}) h.record(v);
  CHECK(h.count() == 4);
  CHECK(h.min() == 10);
  CHECK(h.max() == 40);
  CHECK(h.sum() == 100);
  CHECK(h.mean() == 25.0);
  CHECK(h.stddev() == doctest::Approx(std::sqrt(125.0)).epsilon(1e-15));
  CHECK(h.saturated() == 0);
  CHECK(h.value_at_percentile(50) == 20);
  CHECK(h.value_at_percentile(75) == 30);
  CHECK(h.value_at_percentile(75.000001) == 40);

  // Large values spread over wide slots: min/max/mean remain exact.
  LogHistogram g;
  g.record(1'234'567'891);
  g.record(1'234'567'893);
  CHECK(g.min() == 1'234'567'891);
  CHECK(g.max() == 1'234'567'893);
  CHECK(g.mean() == 1'234'567'892.0);
  CHECK(g.stddev() == 1.0);
  CHECK(g.value_at_percentile(0) == 1'234'567'891);
  CHECK(g.value_at_percentile(100) == 1'234'567'893);
  CHECK(g.value_at_percentile(50) == 1'234'567'893);  // same slot: clamped to max

  // Values below 2048 are exact.
  LogHistogram e;
  for (std::uint64_t v = 0; v < 2048; ++v) e.record(v);
  CHECK(e.value_at_percentile(50) == 1023);
  CHECK(e.value_at_percentile(99) == 2027);  // k = ceil(0.99 * 2048) = 2028
  CHECK(e.value_at_percentile(100) == 2047);
  CHECK(e.value_at_percentile(0) == 0);
  CHECK(e.mean() == 1023.5);
}

TEST_CASE("LogHistogram: percentiles within 0.1 % of exact nearest-rank, uniform data") {
  check_percentiles_against_exact(uniform_data(1'000'000, 0x5eed0001));
}

TEST_CASE("LogHistogram: percentiles within 0.1 % of exact nearest-rank, lognormal data") {
  check_percentiles_against_exact(lognormal_data(1'000'000, 0x5eed0002));
}

TEST_CASE("LogHistogram: percentiles within 0.1 % of exact nearest-rank, Pareto data with outliers") {
  const auto data = pareto_data(1'200'000, 0x5eed0003);
  CHECK(*std::max_element(data.begin(), data.end()) == 3'599'999'999'999ULL);
  check_percentiles_against_exact(data);
}

TEST_CASE("LogHistogram: p0 is min and p100 is max exactly") {
  std::mt19937_64 rng(77);
  std::uniform_int_distribution<std::uint64_t> dist(10'000'001, 987'654'321);
  LogHistogram h;
  std::uint64_t lo = kU64Max, hi = 0;
  for (int i = 0; i < 100'000; ++i) {
    const std::uint64_t v = dist(rng);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    h.record(v);
  }
  REQUIRE(h.lowest_equivalent_value(lo) != lo);    // min is not a slot boundary...
  REQUIRE(h.highest_equivalent_value(hi) != hi);   // ...nor is max
  CHECK(h.value_at_percentile(0.0) == lo);
  CHECK(h.value_at_percentile(-5.0) == lo);
  CHECK(h.value_at_percentile(100.0) == hi);
  CHECK(h.value_at_percentile(250.0) == hi);
  CHECK(h.value_at_percentile(std::nan("")) == lo);
  for (double p : {1e-9, 10.0, 50.0, 99.999, 99.99999999}) {
    const std::uint64_t v = h.value_at_percentile(p);
    CHECK(v >= lo);
    CHECK(v <= hi);
  }
}

TEST_CASE("LogHistogram: values above highest_trackable saturate into the top slot") {
  LogHistogram h(1'000'000, 3);
  h.record(500);
  h.record(900'000);
  h.record(2'000'000);
  h.record(5'000'000);
  h.record_n(kU64Max, 2);
  CHECK(h.count() == 6);
  CHECK(h.saturated() == 4);
  CHECK(h.max() == kU64Max);
  CHECK(h.min() == 500);
  CHECK(h.index_of(5'000'000) == h.index_of(1'000'000));
  CHECK(h.count_at_index(h.index_of(1'000'000)) == 4);  // 2e6, 5e6 and the two maxima
  CHECK(h.value_at_percentile(100) == kU64Max);
  const std::uint64_t p50 = h.value_at_percentile(50);
  CHECK(p50 >= h.lowest_equivalent_value(1'000'000));
  CHECK(p50 <= h.highest_equivalent_value(1'000'000));
  CHECK(h.sum() == static_cast<chunkscope::stats::uint128>(500 + 900'000 + 2'000'000 + 5'000'000) +
                       2 * static_cast<chunkscope::stats::uint128>(kU64Max));

  // Exact statistics do not overflow near 2^64.
  LogHistogram g;
  g.record(std::uint64_t{1} << 63);
  g.record((std::uint64_t{1} << 63) + 2);
  CHECK(g.saturated() == 2);
  CHECK(g.mean() == 9223372036854775809.0);
  CHECK(g.stddev() == 1.0);
}

TEST_CASE("LogHistogram: reset clears everything and keeps the allocation") {
  LogHistogram h;
  const std::size_t bytes = h.memory_bytes();
  for (auto v : lognormal_data(100'000, 9)) h.record(v);
  h.record(kU64Max);
  REQUIRE(h.count() == 100'001);
  h.reset();
  CHECK(h.count() == 0);
  CHECK(h.saturated() == 0);
  CHECK(h.min() == 0);
  CHECK(h.max() == 0);
  CHECK(h.sum() == 0);
  CHECK(h.memory_bytes() == bytes);
  CHECK(h == LogHistogram());
  std::uint64_t nonzero = 0;
  for (std::size_t i = 0; i < h.counts_length(); ++i) nonzero += h.count_at_index(i) != 0;
  CHECK(nonzero == 0);
  h.record(42);
  CHECK(h.count() == 1);
  CHECK(h.min() == 42);
  CHECK(h.max() == 42);
  CHECK(h.value_at_percentile(50) == 42);
}

TEST_CASE("LogHistogram: add equals recording the union") {
  const auto data = pareto_data(300'000, 31);
  LogHistogram direct, a, b;
  std::mt19937_64 rng(5);
  for (auto v : data) {
    direct.record(v);
    ((rng() & 1) ? a : b).record(v);
  }
  direct.record(kU64Max);
  b.record(kU64Max);
  LogHistogram merged = a;
  merged.add(b);
  CHECK(merged == direct);
  CHECK(merged.count() == direct.count());
  CHECK(merged.saturated() == 1);
  CHECK(merged.stddev() == direct.stddev());

  LogHistogram empty;
  merged.add(empty);
  CHECK(merged == direct);
  empty.add(direct);
  CHECK(empty == direct);

  LogHistogram other_layout(1'000'000, 3);
  CHECK_FALSE(merged.add(other_layout));
  LogHistogram other_digits(LogHistogram::kDefaultHighestTrackable, 2);
  CHECK_FALSE(merged.add(other_digits));
  CHECK(merged == direct);
}

TEST_CASE("LogHistogram: record_n equals n records") {
  const std::pair<std::uint64_t, std::uint64_t> cases[] = {
      {0, 5}, {1, 1}, {2047, 3}, {123'456'789, 1000}, {3'000'000'000'000ULL, 777},
      {(std::uint64_t{1} << 63) + 12345, 7},  // v^2 * n overflows 128 bits
      {kU64Max, 9}};
  LogHistogram by_n, by_one;
  for (auto [v, n] : cases) {
    by_n.record_n(v, n);
    for (std::uint64_t i = 0; i < n; ++i) by_one.record(v);
    CHECK(by_n == by_one);
  }
  by_n.record_n(999, 0);
  CHECK(by_n == by_one);
  CHECK(by_n.count() == 5 + 1 + 3 + 1000 + 777 + 7 + 9);
  CHECK(by_n.stddev() == by_one.stddev());
}

TEST_CASE("LogHistogram: percentile_rank is consistent with value_at_percentile") {
  const auto data = lognormal_data(200'000, 21);
  LogHistogram h = histogram_of(data);
  for (double p : {0.5, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99}) {
    const std::uint64_t v = h.value_at_percentile(p);
    INFO("p = " << p << "  v = " << v);
    CHECK(h.percentile_rank(v) >= p - 1e-9);
    const std::uint64_t lo = h.lowest_equivalent_value(v);
    if (lo > h.min()) CHECK(h.percentile_rank(lo - 1) < p);
  }
  CHECK(h.percentile_rank(h.max()) == 100.0);
  CHECK(h.percentile_rank(kU64Max) == 100.0);
  CHECK(h.percentile_rank(h.min() - 1) == 0.0);

  // "97.2 % of chunks within budget"
  LogHistogram chunks;
  chunks.record_n(100'000, 972);     // 100 us
  chunks.record_n(10'000'000, 28);   // 10 ms
  CHECK(chunks.percentile_rank(5'000'000) == doctest::Approx(97.2).epsilon(1e-12));
  CHECK(chunks.percentile_rank(99'999) == 0.0);
  CHECK(chunks.percentile_rank(10'000'000) == 100.0);
}

TEST_CASE("IntervalRecorder: concurrent intervals add up to exactly what was recorded") {
  constexpr std::size_t kValues = 2'000'000;
  std::vector<std::uint64_t> values = lognormal_data(kValues, 0xabcdef);
  values[12345] = kU64Max;  // one saturated value too
  LogHistogram direct = histogram_of(values);

  IntervalRecorder rec;
  std::atomic<bool> done{false};
  std::atomic<int> samples_taken{0};
  std::thread writer([&] {
    for (std::size_t i = 0; i < kValues; ++i) {
      rec.record(values[i]);
      // Halfway, let the reader take a few samples so intervals surely split the data.
      if (i == kValues / 2) {
        const int seen = samples_taken.load();
        while (samples_taken.load() < seen + 3) std::this_thread::yield();
      }
    }
    done.store(true);
  });

  LogHistogram total = rec.make_histogram();
  LogHistogram interval = rec.make_histogram();
  std::uint64_t counted = 0;
  int non_empty = 0;
  while (!done.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    rec.sample_into(interval);
    counted += interval.count();
    non_empty += interval.count() != 0;
    total.add(interval);
    samples_taken.fetch_add(1);
  }
  writer.join();
  rec.sample_into(interval);  // final sample
  counted += interval.count();
  non_empty += interval.count() != 0;
  total.add(interval);

  CHECK(counted == kValues);
  CHECK(total.count() == kValues);
  CHECK(non_empty >= 2);
  CHECK(total.saturated() == 1);
  CHECK(total == direct);  // same counts in every slot, same exact statistics
  for (std::size_t i = 0; i < total.counts_length(); ++i) {
    if (total.count_at_index(i) != direct.count_at_index(i)) {
      FAIL_CHECK("slot " << i << " differs");
      break;
    }
  }
  rec.sample_into(interval);
  CHECK(interval.empty());
}

TEST_CASE("IntervalRecorder: sample_into replaces the output and accepts any layout") {
  IntervalRecorder rec(1'000'000'000, 3);
  rec.record(5);
  rec.record_n(700, 3);
  LogHistogram out(10'000, 2);  // different layout: copied, then holds the recorder's layout
  out.record(1);
  rec.sample_into(out);
  CHECK(out.count() == 4);
  CHECK(out.min() == 5);
  CHECK(out.max() == 700);
  CHECK(out.highest_trackable() == 1'000'000'000);
  CHECK(out.significant_digits() == 3);
  rec.record(9);
  rec.sample_into(out);  // same layout now: swapped, old contents discarded
  CHECK(out.count() == 1);
  CHECK(out.min() == 9);
  rec.sample_into(out);
  CHECK(out.empty());
  CHECK(rec.memory_bytes() >= 2 * out.memory_bytes() - 2 * sizeof(LogHistogram));
}

TEST_CASE("hgrm: exact output for a small histogram") {
  LogHistogram h;
  for (std::uint64_t v = 1; v <= 10; ++v) h.record(v);
  std::ostringstream os;
  chunkscope::stats::write_hgrm(os, h, 1.0);
  const std::string expected =
      "       Value     Percentile TotalCount 1/(1-Percentile)\n"
      "\n"
      "       1.000 0.000000000000          1           1.00\n"
      "       1.000 0.100000000000          1           1.11\n"
      "       2.000 0.200000000000          2           1.25\n"
      "       3.000 0.300000000000          3           1.43\n"
      "       4.000 0.400000000000          4           1.67\n"
      "       5.000 0.500000000000          5           2.00\n"
      "       6.000 0.550000000000          6           2.22\n"
      "       6.000 0.600000000000          6           2.50\n"
      "       7.000 0.650000000000          7           2.86\n"
      "       7.000 0.700000000000          7           3.33\n"
      "       8.000 0.750000000000          8           4.00\n"
      "       8.000 0.775000000000          8           4.44\n"
      "       8.000 0.800000000000          8           5.00\n"
      "       9.000 0.825000000000          9           5.71\n"
      "       9.000 0.850000000000          9           6.67\n"
      "       9.000 0.875000000000          9           8.00\n"
      "       9.000 0.887500000000          9           8.89\n"
      "       9.000 0.900000000000          9          10.00\n"
      "      10.000 0.912500000000         10          11.43\n"
      "      10.000 1.000000000000         10\n"
      "#[Mean    =        5.500, StdDeviation   =        2.872]\n"
      "#[Max     =       10.000, Total count    =           10]\n"
      "#[Buckets =           32, SubBuckets     =         2048]\n";
  CHECK(os.str() == expected);
}

TEST_CASE("hgrm: written text parses back to the histogram") {
  LogHistogram h = histogram_of(lognormal_data(300'000, 4242));
  h.record(987'654'321);  // a max that is not a slot boundary
  std::ostringstream os;
  chunkscope::stats::write_hgrm(os, h);  // microseconds
  const std::vector<std::string> lines = split_lines(os.str());
  REQUIRE(lines.size() > 5);
  CHECK(lines[0] == "       Value     Percentile TotalCount 1/(1-Percentile)");
  CHECK(lines[1].empty());

  struct Row {
    double value, percentile;
    unsigned long long total;
  };
  std::vector<Row> rows;
  std::size_t li = 2;
  for (; li < lines.size() && lines[li].rfind("#[", 0) != 0; ++li) {
    Row r{};
    double inv = 0;
    const int n = std::sscanf(lines[li].c_str(), "%lf %lf %llu %lf", &r.value, &r.percentile, &r.total, &inv);
    REQUIRE(n >= 3);
    if (r.percentile < 1.0) {
      REQUIRE(n == 4);
      CHECK(inv == doctest::Approx(1.0 / (1.0 - r.percentile)).epsilon(0.01));
    } else {
      CHECK(n == 3);
    }
    rows.push_back(r);
  }
  REQUIRE(!rows.empty());
  CHECK(rows.size() == chunkscope::stats::percentile_distribution(h).size());
  for (std::size_t i = 1; i < rows.size(); ++i) {
    CHECK(rows[i].value >= rows[i - 1].value);
    CHECK(rows[i].percentile > rows[i - 1].percentile);
    CHECK(rows[i].total >= rows[i - 1].total);
  }
  CHECK(rows.front().percentile == 0.0);
  CHECK(rows.front().value == doctest::Approx(static_cast<double>(h.min()) / 1000.0).epsilon(0.001));
  CHECK(rows.back().percentile == 1.0);
  CHECK(rows.back().total == h.count());
  CHECK(std::fabs(rows.back().value - 987'654.321) <= 0.0005 + 1e-9);  // max / 1000, 3 decimals

  REQUIRE(lines.size() == li + 3);
  double mean = 0, sd = 0, mx = 0;
  unsigned long long total = 0;
  int buckets = 0, sub_buckets = 0;
  REQUIRE(std::sscanf(lines[li].c_str(), "#[Mean    = %lf, StdDeviation   = %lf]", &mean, &sd) == 2);
  REQUIRE(std::sscanf(lines[li + 1].c_str(), "#[Max     = %lf, Total count    = %llu]", &mx, &total) == 2);
  REQUIRE(std::sscanf(lines[li + 2].c_str(), "#[Buckets = %d, SubBuckets     = %d]", &buckets, &sub_buckets) == 2);
  CHECK(total == h.count());
  CHECK(mx == doctest::Approx(987'654.321).epsilon(1e-12));
  CHECK(std::fabs(mean - h.mean() / 1000.0) <= 0.0005 + 1e-9);  // 3 decimals
  CHECK(std::fabs(sd - h.stddev() / 1000.0) <= 0.0005 + 1e-9);
  CHECK(buckets == h.bucket_count());
  CHECK(sub_buckets == 2048);

  // Each row's value is the histogram's own percentile answer at that level.
  for (const auto& r : chunkscope::stats::percentile_distribution(h)) {
    if (r.percentile > 0.0 && r.percentile < 100.0) {
      CHECK(r.value >= h.value_at_percentile(r.percentile));
    }
  }
}

TEST_CASE("hgrm: empty histogram and bad arguments") {
  LogHistogram h;
  std::ostringstream os;
  chunkscope::stats::write_hgrm(os, h);
  CHECK(os.str() ==
        "       Value     Percentile TotalCount 1/(1-Percentile)\n"
        "\n"
        "#[Mean    =        0.000, StdDeviation   =        0.000]\n"
        "#[Max     =        0.000, Total count    =            0]\n"
        "#[Buckets =           32, SubBuckets     =         2048]\n");
  CHECK(chunkscope::stats::percentile_distribution(h).empty());
  CHECK_THROWS_AS(chunkscope::stats::write_hgrm(os, h, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(chunkscope::stats::write_hgrm(os, h, 1000.0, 0), std::invalid_argument);
}

}  // TEST_SUITE
