#pragma once
// IntervalRecorder: one real-time writer thread records into a LogHistogram without
// locks while a reader thread takes interval snapshots (e.g. once per second).
//
// Design: two histograms, one active (written by the writer), one inactive, and a
// writer-reader phaser made of two atomics: `active_` (the histogram the writer
// records into) and `epoch_` (even: writer outside record, odd: inside).
//   writer record(v):  e = epoch_.fetch_add(1, seq_cst)          // enter, epoch odd
//                      active_.load(seq_cst)->record(v)
//                      epoch_.store(e + 2, release)              // exit, epoch even
//   reader sample_into(out):
//                      active_.store(other, seq_cst)             // flip
//                      e = epoch_.load(seq_cst)
//                      if e is odd: wait until epoch_.load(acquire) != e
//                      old histogram is now quiescent: move it to out, reset it
// Correctness: suppose a record's load of active_ (L) returned the old histogram.
// All four marked operations are seq_cst, so they lie in one total order consistent
// with program order and with what each load reads. L read the value from before
// the flip store (S), so L precedes S; the record's entry (E) precedes L and S
// precedes the reader's epoch load (R), hence E precedes R, and R reads E's value
// or a later one. If R reads an odd value, the writer is inside some record begun at
// or after E; the reader waits for the next change, which only the exit store of
// that record can make. If R (or the wait) reads an even value, it comes from the
// exit store of that record or of a later one. Either way the reader ends by reading
// a value written by an exit store (release) at or after the one that closes the
// record (later ones are sequenced after it in the writer), so every write the
// writer made to the old histogram happens-before the reader touches it. Records
// that read the new pointer do not matter; the reset and swap of the histogram
// that becomes active next happen before the next flip store, which the writer's
// seq_cst load synchronizes with. The writer never waits: record is wait-free
// (one atomic RMW, one load, one store, no locks, allocation or system calls).
// Only the reader can wait, and only while the writer is inside one record.
//
// Contract: exactly one writer thread at a time (switching writer threads needs
// outside synchronisation); any number of reader threads (sample_into locks a
// reader-side mutex).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

#include "rt/stats/histogram.hpp"

namespace chunkscope::stats {

class IntervalRecorder {
 public:
  /// Allocates two histograms of this layout. Throws std::invalid_argument as LogHistogram.
  explicit IntervalRecorder(std::uint64_t highest_trackable = LogHistogram::kDefaultHighestTrackable,
                            int significant_digits = LogHistogram::kDefaultSignificantDigits)
      : hist_{LogHistogram(highest_trackable, significant_digits),
              LogHistogram(highest_trackable, significant_digits)} {}

  IntervalRecorder(const IntervalRecorder&) = delete;
  IntervalRecorder& operator=(const IntervalRecorder&) = delete;

  /// Records one value into the active interval. Writer thread only.
  /// [no-alloc, no-block] Wait-free, no locks, no system calls.
  void record(std::uint64_t v) noexcept {
    const std::uint64_t e = epoch_.fetch_add(1, std::memory_order_seq_cst);
    active_.load(std::memory_order_seq_cst)->record(v);
    epoch_.store(e + 2, std::memory_order_release);
  }

  /// Records v n times into the active interval. Writer thread only. [no-alloc, no-block] as record().
  void record_n(std::uint64_t v, std::uint64_t n) noexcept {
    const std::uint64_t e = epoch_.fetch_add(1, std::memory_order_seq_cst);
    active_.load(std::memory_order_seq_cst)->record_n(v, n);
    epoch_.store(e + 2, std::memory_order_release);
  }

  /// Ends the current interval: interval_out receives exactly what was recorded since
  /// the previous sample (its old contents are discarded) and recording continues into
  /// the other histogram. Reader side; may spin/yield while the writer is inside a
  /// record. No allocation when interval_out has this recorder's layout (the storage
  /// is swapped); otherwise interval_out is assigned a copy (allocates).
  /// [no-alloc, blocks] Takes the reader mutex; allocates only as said above.
  void sample_into(LogHistogram& interval_out) {
    std::lock_guard<std::mutex> lock(reader_mutex_);
    LogHistogram* const old = active_.load(std::memory_order_relaxed);  // only readers store it
    LogHistogram* const next = (old == &hist_[0]) ? &hist_[1] : &hist_[0];
    active_.store(next, std::memory_order_seq_cst);
    const std::uint64_t e = epoch_.load(std::memory_order_seq_cst);
    if ((e & 1) != 0) {
      for (unsigned spins = 0; epoch_.load(std::memory_order_acquire) == e; ++spins) {
        if (spins >= 64) std::this_thread::yield();
      }
    }
    if (interval_out.same_layout(*old)) {
      swap(interval_out, *old);
    } else {
      interval_out = *old;
    }
    old->reset();
  }

  /// An empty histogram with this recorder's layout (allocates).
  /// [allocates, no-block]
  LogHistogram make_histogram() const {
    return LogHistogram(hist_[0].highest_trackable(), hist_[0].significant_digits());
  }
  /// Layout of the recorded histograms. [no-alloc, no-block]
  std::uint64_t highest_trackable() const noexcept { return hist_[0].highest_trackable(); }
  /// [no-alloc, no-block]
  int significant_digits() const noexcept { return hist_[0].significant_digits(); }
  /// Bytes held, both histograms included. [no-alloc, no-block]
  std::size_t memory_bytes() const noexcept {
    return sizeof(*this) + hist_[0].memory_bytes() + hist_[1].memory_bytes() - 2 * sizeof(LogHistogram);
  }

 private:
  alignas(64) std::atomic<std::uint64_t> epoch_{0};
  std::atomic<LogHistogram*> active_{&hist_[0]};
  alignas(64) LogHistogram hist_[2];
  std::mutex reader_mutex_;
};

}  // namespace chunkscope::stats
