#include "src/render/series_view.hpp"

#include <algorithm>
#include <cmath>

namespace chunkscope::render {

double rank_percentile(const std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double n = static_cast<double>(sorted.size());
  auto r = static_cast<std::size_t>(std::ceil(p / 100.0 * n * (1 - 1e-12)));
  r = std::clamp<std::size_t>(r, 1, sorted.size());
  return static_cast<double>(sorted[r - 1]);
}

std::int64_t seq_at(const Series& s, std::size_t i) { return i < s.seq.size() ? s.seq[i] : static_cast<std::int64_t>(i); }

bool is_warmup(const Series& s, std::size_t i) { return i < s.flags.size() && (s.flags[i] & kSeriesWarmup) != 0; }

namespace {

template <typename Int>
std::vector<std::int64_t> counted_sorted_of(const Series& s, const std::vector<Int>& column) {
  std::vector<std::int64_t> v;
  v.reserve(column.size());
  for (std::size_t i = 0; i < column.size(); ++i)
    if (!is_warmup(s, i)) v.push_back(column[i]);
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

std::vector<std::int64_t> counted_sorted(const Series& s, const std::vector<std::int64_t>& column) {
  return counted_sorted_of(s, column);
}

std::vector<std::int64_t> counted_sorted(const Series& s, const std::vector<std::int32_t>& column) {
  return counted_sorted_of(s, column);
}

std::vector<PeriodPoint> counted_periods(const Series& s) {
  std::vector<PeriodPoint> out;
  const auto& period = s.period_ns;
  out.reserve(period.size());
  for (std::size_t i = 1; i < period.size(); ++i) {
    if (is_warmup(s, i) || is_warmup(s, i - 1) || period[i] <= 0) continue;
    out.push_back({seq_at(s, i), period[i], i < s.emit_ns.size() ? s.emit_ns[i] : 0});
  }
  return out;
}

}  // namespace chunkscope::render
