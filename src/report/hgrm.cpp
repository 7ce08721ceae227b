#include "src/report/hgrm.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace chunkscope::stats {

namespace {

void check_ticks(int ticks_per_half_distance) {
  if (ticks_per_half_distance < 1) {
    throw std::invalid_argument("hgrm: ticks_per_half_distance must be >= 1, got " +
                                std::to_string(ticks_per_half_distance));
  }
}

// HdrHistogram PercentileIterator.incrementIterationLevel.
double next_level(double level, int ticks_per_half_distance) {
  const double halvings = std::log(100.0 / (100.0 - level)) / std::log(2.0);
  // Java casts to long; only the last row can reach level 100 (halvings = inf).
  const long long k = halvings < 62.0 ? static_cast<long long>(halvings) : 62;
  const double ticks = static_cast<double>(ticks_per_half_distance) * std::ldexp(1.0, static_cast<int>(k + 1));
  return level + 100.0 / ticks;
}

void pad_left(std::string& out, const char* first, const char* last, int width) {
  const auto len = static_cast<int>(last - first);
  if (len < width) out.append(static_cast<std::size_t>(width - len), ' ');
  out.append(first, last);
}

// printf("%<width>.<precision>f"), locale-independent; Java spells infinities out.
void put_fixed(std::string& out, double v, int width, int precision) {
  if (!std::isfinite(v)) {
    const std::string_view s = std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
    pad_left(out, s.data(), s.data() + s.size(), width);
    return;
  }
  char buf[400];  // the longest double in fixed notation with <= 12 decimals fits
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, precision);
  pad_left(out, buf, r.ptr, width);
}

// printf("%<width>d")
void put_int(std::string& out, std::uint64_t v, int width) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  pad_left(out, buf, r.ptr, width);
}

}  // namespace

std::vector<PercentileRow> percentile_distribution(const LogHistogram& h, int ticks_per_half_distance) {
  check_ticks(ticks_per_half_distance);
  std::vector<PercentileRow> rows;
  const std::uint64_t total = h.count();
  if (total == 0) return rows;
  const std::uint64_t lo = h.min();
  const std::uint64_t hi = h.max();
  const std::size_t last = h.last_recorded_index();
  auto value_at = [&](std::size_t i) {
    const std::uint64_t top = h.value_from_index(i) + (h.slot_width(i) - 1);
    return std::clamp(top, lo, hi);
  };

  // Mirrors AbstractHistogramIterator.next() driven by PercentileIterator: find the
  // first slot (at or after the current one) whose cumulative share reaches the level,
  // write a row, raise the level, and repeat while values remain beyond this slot.
  double level = 0.0;
  std::size_t i = h.first_recorded_index();
  std::uint64_t running = h.count_at_index(i);
  do {
    for (;;) {
      const double share = (100.0 * static_cast<double>(running)) / static_cast<double>(total);
      if (h.count_at_index(i) != 0 && (share >= level || i == last)) break;
      ++i;
      running += h.count_at_index(i);
    }
    rows.push_back({value_at(i), level, running});
    const double next = next_level(level, ticks_per_half_distance);
    level = next > level ? next : 100.0;  // only if the step vanished in rounding
  } while (running < total);
  // One last step to 100 % at the last slot.
  rows.push_back({value_at(i), 100.0, running});
  return rows;
}

void write_hgrm(std::ostream& os, const LogHistogram& h, double unit_divisor, int ticks_per_half_distance) {
  if (!(unit_divisor > 0.0) || !std::isfinite(unit_divisor)) {
    throw std::invalid_argument("hgrm: unit_divisor must be finite and > 0");
  }
  const std::vector<PercentileRow> rows = percentile_distribution(h, ticks_per_half_distance);
  const int digits = h.significant_digits();

  std::string out;
  out.reserve(64 * (rows.size() + 8));
  // printf("%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)")
  out += "       Value     Percentile TotalCount 1/(1-Percentile)\n\n";
  for (const PercentileRow& r : rows) {
    const double fraction = r.percentile / 100.0;
    put_fixed(out, static_cast<double>(r.value) / unit_divisor, 12, digits);  // %12.<d>f
    out += ' ';
    put_fixed(out, fraction, 2, 12);  // %2.12f
    out += ' ';
    put_int(out, r.total_count, 10);  // %10d
    if (r.percentile != 100.0) {
      out += ' ';
      put_fixed(out, 1.0 / (1.0 - fraction), 14, 2);  // %14.2f
    }
    out += '\n';
  }
  out += "#[Mean    = ";
  put_fixed(out, h.mean() / unit_divisor, 12, digits);
  out += ", StdDeviation   = ";
  put_fixed(out, h.stddev() / unit_divisor, 12, digits);
  out += "]\n#[Max     = ";
  put_fixed(out, static_cast<double>(h.max()) / unit_divisor, 12, digits);
  out += ", Total count    = ";
  put_int(out, h.count(), 12);
  out += "]\n#[Buckets = ";
  put_int(out, static_cast<std::uint64_t>(h.bucket_count()), 12);
  out += ", SubBuckets     = ";
  put_int(out, static_cast<std::uint64_t>(h.sub_bucket_count()), 12);
  out += "]\n";
  os.write(out.data(), static_cast<std::streamsize>(out.size()));
}

}  // namespace chunkscope::stats
