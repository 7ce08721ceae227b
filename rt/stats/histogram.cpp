#include "rt/stats/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace chunkscope::stats {

namespace {

// 256-bit unsigned integer, little-endian 64-bit limbs; just enough for stddev().
struct U256 {
  std::uint64_t w[4] = {0, 0, 0, 0};
};

// a (192 bits: a0 + a1 * 2^64 + a2 * 2^128) * n
U256 mul_192_64(std::uint64_t a0, std::uint64_t a1, std::uint64_t a2, std::uint64_t n) noexcept {
  U256 r;
  uint128 t = static_cast<uint128>(a0) * n;
  r.w[0] = static_cast<std::uint64_t>(t);
  t = static_cast<uint128>(a1) * n + (t >> 64);
  r.w[1] = static_cast<std::uint64_t>(t);
  t = static_cast<uint128>(a2) * n + (t >> 64);
  r.w[2] = static_cast<std::uint64_t>(t);
  r.w[3] = static_cast<std::uint64_t>(t >> 64);
  return r;
}

// a^2 for a 128-bit a
U256 square_128(uint128 a) noexcept {
  const std::uint64_t a0 = static_cast<std::uint64_t>(a);
  const std::uint64_t a1 = static_cast<std::uint64_t>(a >> 64);
  const uint128 p00 = static_cast<uint128>(a0) * a0;
  const uint128 p01 = static_cast<uint128>(a0) * a1;  // counted twice
  const uint128 p11 = static_cast<uint128>(a1) * a1;
  U256 r;
  r.w[0] = static_cast<std::uint64_t>(p00);
  // limb 1: hi(p00) + 2 * lo(p01)
  uint128 t = (p00 >> 64) + 2 * static_cast<uint128>(static_cast<std::uint64_t>(p01));
  r.w[1] = static_cast<std::uint64_t>(t);
  // limb 2: carry + 2 * hi(p01) + lo(p11)
  t = (t >> 64) + 2 * (p01 >> 64) + static_cast<std::uint64_t>(p11);
  r.w[2] = static_cast<std::uint64_t>(t);
  // limb 3: carry + hi(p11)
  t = (t >> 64) + (p11 >> 64);
  r.w[3] = static_cast<std::uint64_t>(t);
  return r;
}

// a - b, requires a >= b
U256 sub(const U256& a, const U256& b) noexcept {
  U256 r;
  std::uint64_t borrow = 0;
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t bi = b.w[i] + borrow;
    const std::uint64_t carry_in = (bi < borrow) ? 1 : 0;  // b.w[i] == max and borrow == 1
    r.w[i] = a.w[i] - bi;
    borrow = carry_in | (a.w[i] < bi ? 1 : 0);
  }
  return r;
}

bool less(const U256& a, const U256& b) noexcept {
  for (int i = 3; i >= 0; --i) {
    if (a.w[i] != b.w[i]) return a.w[i] < b.w[i];
  }
  return false;
}

long double to_long_double(const U256& a) noexcept {
  constexpr long double k2_64 = 18446744073709551616.0L;
  long double r = static_cast<long double>(a.w[3]);
  r = r * k2_64 + static_cast<long double>(a.w[2]);
  r = r * k2_64 + static_cast<long double>(a.w[1]);
  r = r * k2_64 + static_cast<long double>(a.w[0]);
  return r;
}

}  // namespace

LogHistogram::LogHistogram(std::uint64_t highest_trackable, int significant_digits) {
  significant_digits = std::clamp(significant_digits, kMinSignificantDigits, kMaxSignificantDigits);
  highest_trackable = std::max<std::uint64_t>(highest_trackable, 2);
  const int m = sub_bucket_count_magnitude_for(significant_digits);
  digits_ = significant_digits;
  highest_ = highest_trackable;
  half_mag_ = m - 1;
  lzc_base_ = 64 - m;
  sub_mask_ = (std::uint64_t{1} << m) - 1;
  // Fewest buckets b such that S * 2^(b-1) > highest_trackable.
  bucket_count_ = std::max(1, static_cast<int>(std::bit_width(highest_trackable)) - m + 1);
  counts_.assign(static_cast<std::size_t>(bucket_count_ + 1) << half_mag_, 0);
}

double LogHistogram::mean() const noexcept {
  if (total_ == 0) return 0.0;
  return static_cast<double>(static_cast<long double>(sum_) / static_cast<long double>(total_));
}

double LogHistogram::stddev() const noexcept {
  if (total_ < 2) return 0.0;
  // N^2 * variance = N * sum(v^2) - (sum v)^2, computed exactly in 256 bits.
  const U256 a = mul_192_64(static_cast<std::uint64_t>(sumsq_lo_),
                            static_cast<std::uint64_t>(sumsq_lo_ >> 64), sumsq_hi_, total_);
  const U256 b = square_128(sum_);
  if (less(a, b)) return 0.0;  // cannot happen (Cauchy-Schwarz); defensive
  const long double d = to_long_double(sub(a, b));
  const long double n = static_cast<long double>(total_);
  return static_cast<double>(std::sqrt(d / (n * n)));
}

void LogHistogram::reset() noexcept {
  if (total_ != 0) {
    const auto first = counts_.begin() + static_cast<std::ptrdiff_t>(index_of(min_));
    const auto last = counts_.begin() + static_cast<std::ptrdiff_t>(index_of(max_)) + 1;
    std::fill(first, last, 0);
  }
  total_ = 0;
  saturated_ = 0;
  min_ = ~std::uint64_t{0};
  max_ = 0;
  sum_ = 0;
  sumsq_lo_ = 0;
  sumsq_hi_ = 0;
}

bool LogHistogram::add(const LogHistogram& other) noexcept {
  if (!same_layout(other)) return false;
  if (other.total_ == 0) return true;
  const std::size_t last = other.last_recorded_index();
  for (std::size_t i = other.first_recorded_index(); i <= last; ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
  saturated_ += other.saturated_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
  sumsq_lo_ += other.sumsq_lo_;
  sumsq_hi_ += other.sumsq_hi_ + static_cast<std::uint64_t>(sumsq_lo_ < other.sumsq_lo_);
  return true;
}

std::uint64_t LogHistogram::value_at_percentile(double p) const noexcept {
  if (total_ == 0) return 0;
  if (!(p > 0.0)) return min_;  // also NaN
  if (p >= 100.0) return max_;
  // As HdrHistogram: step one ulp down so that p * N / 100 landing a hair above an
  // integer through rounding does not push the target count into the next slot.
  const double requested = std::nextafter(p, 0.0);
  const double fp_count = requested * static_cast<double>(total_) / 100.0;
  std::uint64_t target = static_cast<std::uint64_t>(std::ceil(fp_count));
  target = std::clamp<std::uint64_t>(target, 1, total_);
  std::uint64_t running = 0;
  const std::size_t last = last_recorded_index();
  for (std::size_t i = first_recorded_index(); i <= last; ++i) {
    running += counts_[i];
    if (running >= target) {
      const std::uint64_t lo = value_from_index(i);
      const std::uint64_t hi = lo + (slot_width(i) - 1);
      return std::clamp(hi, min_, max_);
    }
  }
  return max_;  // unreachable: the scan ends at max's slot with running == total
}

double LogHistogram::percentile_rank(std::uint64_t v) const noexcept {
  if (total_ == 0 || v < min_) return 0.0;
  if (v >= max_) return 100.0;
  const std::size_t last = index_of(v);
  std::uint64_t below = 0;
  for (std::size_t i = index_of(min_); i <= last; ++i) below += counts_[i];
  return 100.0 * static_cast<double>(below) / static_cast<double>(total_);
}

std::size_t LogHistogram::memory_bytes() const noexcept {
  return sizeof(*this) + counts_.capacity() * sizeof(std::uint64_t);
}

std::uint64_t LogHistogram::value_from_index(std::size_t i) const noexcept {
  const std::size_t half = std::size_t{1} << half_mag_;
  const std::size_t hb = i >> half_mag_;  // bucket + 1 for the upper-half layout
  if (hb == 0) return i;                  // bucket 0, lower half: exact values
  const std::size_t sub = (i & (half - 1)) + half;
  return static_cast<std::uint64_t>(sub) << (hb - 1);
}

std::uint64_t LogHistogram::slot_width(std::size_t i) const noexcept {
  const std::size_t hb = i >> half_mag_;
  return hb == 0 ? 1 : std::uint64_t{1} << (hb - 1);
}

std::uint64_t LogHistogram::lowest_equivalent_value(std::uint64_t v) const noexcept {
  const int b = lzc_base_ - clz_nonzero(v | sub_mask_);
  return (v >> b) << b;
}

std::uint64_t LogHistogram::highest_equivalent_value(std::uint64_t v) const noexcept {
  const int b = lzc_base_ - clz_nonzero(v | sub_mask_);
  return ((v >> b) << b) + ((std::uint64_t{1} << b) - 1);
}

std::uint64_t LogHistogram::median_equivalent_value(std::uint64_t v) const noexcept {
  const int b = lzc_base_ - clz_nonzero(v | sub_mask_);
  return ((v >> b) << b) + ((std::uint64_t{1} << b) >> 1);
}

bool operator==(const LogHistogram& a, const LogHistogram& b) noexcept {
  if (!a.same_layout(b) || a.total_ != b.total_ || a.saturated_ != b.saturated_ ||
      a.min_ != b.min_ || a.max_ != b.max_ || a.sum_ != b.sum_ || a.sumsq_lo_ != b.sumsq_lo_ ||
      a.sumsq_hi_ != b.sumsq_hi_) {
    return false;
  }
  return a.counts_ == b.counts_;
}

void swap(LogHistogram& a, LogHistogram& b) noexcept {
  using std::swap;
  swap(a.counts_, b.counts_);
  swap(a.highest_, b.highest_);
  swap(a.sub_mask_, b.sub_mask_);
  swap(a.total_, b.total_);
  swap(a.saturated_, b.saturated_);
  swap(a.min_, b.min_);
  swap(a.max_, b.max_);
  swap(a.sum_, b.sum_);
  swap(a.sumsq_lo_, b.sumsq_lo_);
  swap(a.sumsq_hi_, b.sumsq_hi_);
  swap(a.half_mag_, b.half_mag_);
  swap(a.lzc_base_, b.lzc_base_);
  swap(a.digits_, b.digits_);
  swap(a.bucket_count_, b.bucket_count_);
}

}  // namespace chunkscope::stats
