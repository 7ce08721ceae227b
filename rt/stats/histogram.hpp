#pragma once
// LogHistogram: an HdrHistogram-style log-linear histogram of non-negative integer
// values (nanoseconds in chunkscope).
//
// Design: with d significant digits the histogram uses a sub-bucket count of
// S = 2^m, the smallest power of two >= 2 * 10^d (d = 3: m = 11, S = 2048), and
// H = S / 2 = 2^(m-1) >= 10^d (d = 3: H = 1024). Bucket 0 covers [0, S) with width-1
// slots, so those values are exact. Bucket b >= 1 covers [H * 2^b, S * 2^b) with H
// slots of width 2^b. The counts live in one flat array, bucket b's upper half at
// indices [b*H + H, b*H + S): index(v) = (b << (m-1)) + (v >> b) with
// b = (64 - m) - countl_zero(v | (S - 1)), so recording is a couple of shifts, a
// count-leading-zeros and an increment. There are bucket_count() buckets (the fewest
// that cover highest_trackable) and (bucket_count() + 1) * H counters, allocated once
// in the constructor (default range, 1 h in ns: 32 buckets, 33,792 counters, 264 KiB).
// Error bound: a slot of width w = 2^b starts at L >= H * w, so two values x <= y
// in the same slot satisfy (y - x) / x <= (w - 1) / (H * w) < 1 / H. Reported values
// are the slot's highest equivalent value (clamped to the exact [min, max]), so a
// reported percentile r and the exact nearest-rank value x satisfy
// 0 <= r - x < x / H: relative error < 1/H = 2^-(m-1) <= 10^-d. For d = 3 that is
// < 1/1024 = 0.09765625 %, which is <= 0.1 % (relative_error_bound() returns 1/H).
//
// count, min, max, sum and saturated() are exact. sum is a 128-bit integer and the
// sum of squares a 192-bit integer, so neither can overflow (count is 64-bit).
// mean() divides the exact sum in long double; stddev() takes the exact 256-bit
// integer N * sum(v^2) - sum(v)^2 and only then rounds, so neither suffers
// cancellation, and neither uses slot midpoints as HdrHistogram does (the record
// path pays one 64x64->128 multiply for this). Values above highest_trackable keep their
// exact value in min/max/sum/mean/stddev but are counted in the top slot (the one
// holding highest_trackable) and in saturated().
//
// Not thread-safe: one thread records at a time (see interval_recorder.hpp for a
// real-time writer with a concurrent reader). Functions marked [no-alloc, no-block] do not
// allocate, lock or make system calls.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace chunkscope::stats {

__extension__ typedef unsigned __int128 uint128;  // exact sums

class LogHistogram {
 public:
  static constexpr std::uint64_t kDefaultHighestTrackable = 3'600'000'000'000ULL;  // 1 h in ns
  static constexpr int kDefaultSignificantDigits = 3;
  static constexpr int kMinSignificantDigits = 1;
  static constexpr int kMaxSignificantDigits = 5;

  /// m = log2 of the sub-bucket count for d significant digits: ceil(log2(2 * 10^d)).
  /// [no-alloc, no-block]
  static constexpr int sub_bucket_count_magnitude_for(int digits) noexcept {
    std::uint64_t ten_pow = 1;
    for (int i = 0; i < digits; ++i) ten_pow *= 10;
    return static_cast<int>(std::bit_width(2 * ten_pow - 1));
  }

  /// Allocates the counts; never throws. Out-of-range arguments are clamped:
  /// highest_trackable to at least 2, significant_digits into 1..5 (read them back with
  /// highest_trackable() and significant_digits()).
  explicit LogHistogram(std::uint64_t highest_trackable = kDefaultHighestTrackable,
                        int significant_digits = kDefaultSignificantDigits);

  LogHistogram(const LogHistogram&) = default;             // allocates
  LogHistogram& operator=(const LogHistogram&) = default;  // allocates unless same layout
  // A moved-from histogram may only be destroyed or assigned to.
  LogHistogram(LogHistogram&&) noexcept = default;
  LogHistogram& operator=(LogHistogram&&) noexcept = default;
  ~LogHistogram() = default;

  /// Records one value. [no-alloc, no-block] O(1), branch-free.
  void record(std::uint64_t v) noexcept;
  /// Records value v n times (n == 0: no change). [no-alloc, no-block] O(1).
  void record_n(std::uint64_t v, std::uint64_t n) noexcept;
  /// Clears counts and statistics, keeping the allocation. [no-alloc, no-block]
  /// O(slots between min and max).
  void reset() noexcept;
  /// Adds another histogram's data. [no-alloc, no-block] O(slots): too slow for a real-time thread.
  /// Returns false, changing nothing, when other has another layout.
  bool add(const LogHistogram& other) noexcept;

  /// Number of recorded values. [no-alloc, no-block]
  std::uint64_t count() const noexcept { return total_; }
  /// True when nothing is recorded. [no-alloc, no-block]
  bool empty() const noexcept { return total_ == 0; }
  /// Number of recorded values above highest_trackable(). [no-alloc, no-block]
  std::uint64_t saturated() const noexcept { return saturated_; }
  /// Exact smallest recorded value (0 when empty). [no-alloc, no-block]
  std::uint64_t min() const noexcept { return total_ == 0 ? 0 : min_; }
  /// Exact largest recorded value (0 when empty). [no-alloc, no-block]
  std::uint64_t max() const noexcept { return max_; }
  /// Exact sum of all recorded values. [no-alloc, no-block]
  uint128 sum() const noexcept { return sum_; }
  /// Exact mean, rounded once (0 when empty). [no-alloc, no-block]
  double mean() const noexcept;
  /// Population standard deviation from exact sums, rounded once (0 below 2 values). [no-alloc, no-block]
  double stddev() const noexcept;

  /// HdrHistogram getValueAtPercentile: the smallest slot value v such that at least
  /// p % of the values are <= v at the histogram's resolution, reported as the slot's
  /// highest equivalent value and clamped to the exact [min(), max()]; p <= 0 (or NaN)
  /// gives min(), p >= 100 gives max(), an empty histogram gives 0.
  /// [no-alloc, no-block] O(slots between min and max).
  std::uint64_t value_at_percentile(double p) const noexcept;
  /// Percentage (0..100) of recorded values <= v at the histogram's resolution: values
  /// in v's slot count as <= v; exact at the ends (v >= max(): 100, v < min(): 0);
  /// 0 when empty. [no-alloc, no-block] O(slots between min and v).
  double percentile_rank(std::uint64_t v) const noexcept;

  /// Configured highest trackable value. [no-alloc, no-block]
  std::uint64_t highest_trackable() const noexcept { return highest_; }
  /// Configured significant decimal digits. [no-alloc, no-block]
  int significant_digits() const noexcept { return digits_; }
  /// Number of buckets (HdrHistogram "Buckets"). [no-alloc, no-block]
  int bucket_count() const noexcept { return bucket_count_; }
  /// Sub-bucket count S (HdrHistogram "SubBuckets"). [no-alloc, no-block]
  int sub_bucket_count() const noexcept { return 2 << half_mag_; }
  /// Number of counters (slots). [no-alloc, no-block]
  std::size_t counts_length() const noexcept { return counts_.size(); }
  /// Bound on the relative error of any reported value: 1 / (S / 2). [no-alloc, no-block]
  double relative_error_bound() const noexcept { return 1.0 / static_cast<double>(1u << half_mag_); }
  /// True when other has the same highest_trackable and significant_digits. [no-alloc, no-block]
  bool same_layout(const LogHistogram& other) const noexcept {
    return highest_ == other.highest_ && digits_ == other.digits_;
  }
  /// Bytes held by this object, counts included. [no-alloc, no-block]
  std::size_t memory_bytes() const noexcept;

  // ---- slot access (iteration); all [no-alloc, no-block]
  /// Slot index of v (values above highest_trackable map to the top slot).
  std::size_t index_of(std::uint64_t v) const noexcept { return index_unclamped(v < highest_ ? v : highest_); }
  /// Count in slot i (i < counts_length()).
  /// [no-alloc, no-block]
  std::uint64_t count_at_index(std::size_t i) const noexcept { return counts_[i]; }
  /// Lowest value of slot i.
  /// [no-alloc, no-block]
  std::uint64_t value_from_index(std::size_t i) const noexcept;
  /// Width of slot i (number of equivalent values).
  /// [no-alloc, no-block]
  std::uint64_t slot_width(std::size_t i) const noexcept;
  /// Lowest value equivalent to v (same slot).
  /// [no-alloc, no-block]
  std::uint64_t lowest_equivalent_value(std::uint64_t v) const noexcept;
  /// Highest value equivalent to v (same slot).
  /// [no-alloc, no-block]
  std::uint64_t highest_equivalent_value(std::uint64_t v) const noexcept;
  /// Middle value of v's slot (HdrHistogram medianEquivalentValue).
  /// [no-alloc, no-block]
  std::uint64_t median_equivalent_value(std::uint64_t v) const noexcept;
  /// Index range [first, last] holding every non-zero count (first > last when empty).
  /// [no-alloc, no-block]
  std::size_t first_recorded_index() const noexcept { return total_ == 0 ? 1 : index_of(min_); }
  /// [no-alloc, no-block]
  std::size_t last_recorded_index() const noexcept { return total_ == 0 ? 0 : index_of(max_); }
  /// Calls f(lowest_value, highest_value, count) for each non-empty slot, ascending.
  /// [no-alloc, no-block] As far as f is.
  template <class F>
  void for_each_recorded(F&& f) const {
    const std::size_t last = last_recorded_index();
    for (std::size_t i = first_recorded_index(); i <= last; ++i) {
      if (counts_[i] != 0) {
        const std::uint64_t lo = value_from_index(i);
        f(lo, lo + (slot_width(i) - 1), counts_[i]);
      }
    }
  }

  /// Same layout, counts and statistics. [no-alloc, no-block]
  friend bool operator==(const LogHistogram& a, const LogHistogram& b) noexcept;
  /// Exchanges contents (any layouts). [no-alloc, no-block]
  friend void swap(LogHistogram& a, LogHistogram& b) noexcept;

 private:
  // Leading zeros of x != 0 (x always has the sub-bucket mask bits set). The builtin
  // saves the zero test std::countl_zero needs on targets without lzcnt.
  /// [no-alloc, no-block]
  static int clz_nonzero(std::uint64_t x) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_clzll(x);
#else
    return std::countl_zero(x);
#endif
  }
  /// [no-alloc, no-block]
  std::size_t index_unclamped(std::uint64_t v) const noexcept {
    const int b = lzc_base_ - clz_nonzero(v | sub_mask_);
    return (static_cast<std::size_t>(b) << half_mag_) + static_cast<std::size_t>(v >> b);
  }

  std::vector<std::uint64_t> counts_;
  std::uint64_t highest_ = 0;
  std::uint64_t sub_mask_ = 0;   // S - 1
  std::uint64_t total_ = 0;
  std::uint64_t saturated_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
  std::uint64_t max_ = 0;
  uint128 sum_ = 0;
  uint128 sumsq_lo_ = 0;         // sum of squares, low 128 bits
  std::uint64_t sumsq_hi_ = 0;   // sum of squares, bits 128..191
  int half_mag_ = 0;             // m - 1
  int lzc_base_ = 0;             // 64 - m
  int digits_ = 0;
  int bucket_count_ = 0;
};

static_assert(LogHistogram::sub_bucket_count_magnitude_for(3) == 11,
              "3 digits: 2048 sub-buckets, 1024 slots per half bucket, error < 1/1024 <= 0.1 %");
static_assert((1u << (LogHistogram::sub_bucket_count_magnitude_for(LogHistogram::kDefaultSignificantDigits) - 1)) >= 1000,
              "default relative error bound 1/H must be <= 0.1 %");

/// [no-alloc, no-block]
inline void LogHistogram::record(std::uint64_t v) noexcept {
  const std::uint64_t c = v < highest_ ? v : highest_;
  counts_[index_unclamped(c)] += 1;
  ++total_;
  saturated_ += static_cast<std::uint64_t>(v > highest_);
  min_ = v < min_ ? v : min_;
  max_ = v > max_ ? v : max_;
  sum_ += v;
  const uint128 sq = static_cast<uint128>(v) * v;
  sumsq_lo_ += sq;
  sumsq_hi_ += static_cast<std::uint64_t>(sumsq_lo_ < sq);
}

/// [no-alloc, no-block]
inline void LogHistogram::record_n(std::uint64_t v, std::uint64_t n) noexcept {
  if (n == 0) return;
  const std::uint64_t c = v < highest_ ? v : highest_;
  counts_[index_unclamped(c)] += n;
  total_ += n;
  saturated_ += v > highest_ ? n : 0;
  min_ = v < min_ ? v : min_;
  max_ = v > max_ ? v : max_;
  sum_ += static_cast<uint128>(v) * n;
  // v^2 * n as a 192-bit number: (sq_hi * 2^64 + sq_lo) * n
  const uint128 sq = static_cast<uint128>(v) * v;
  const uint128 lo = static_cast<uint128>(static_cast<std::uint64_t>(sq)) * n;
  const uint128 hi = static_cast<uint128>(static_cast<std::uint64_t>(sq >> 64)) * n;
  const uint128 low128 = lo + (hi << 64);
  const std::uint64_t top = static_cast<std::uint64_t>(hi >> 64) + static_cast<std::uint64_t>(low128 < lo);
  sumsq_lo_ += low128;
  sumsq_hi_ += top + static_cast<std::uint64_t>(sumsq_lo_ < low128);
}

}  // namespace chunkscope::stats
