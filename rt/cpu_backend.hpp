#pragma once
// The CPU backend: each cascade step runs every section over every channel of a chunk,
// sample by sample, in transposed direct form II with state carried across chunks.
//
// Design: chunks are interleaved, so the samples of one frame are contiguous; the loop
// runs frame -> section -> channel, keeping the channel loop innermost over contiguous
// data and contiguous state (state[section][channel]), which the compiler vectorises for
// many channels and the out-of-order core pipelines across sections for few. Small
// channel counts get their own instantiations so the inner loop unrolls.
#include <cstdint>
#include <vector>

#include "rt/backend.hpp"

namespace chunkscope {

class CpuBackend final : public Backend {
 public:
  /// `fused` is only a label for reports; fusion is decided by the plan. [no-alloc, no-block]
  explicit CpuBackend(bool fused_label = true) : fused_label_(fused_label) {}

  /// [no-alloc, no-block]
  const char* name() const noexcept override { return "cpu"; }
  /// [no-alloc, no-block]
  const char* mode() const noexcept override { return fused_label_ ? "fused" : "unfused"; }
  /// Allocates coefficient and state arrays for the plan. [allocates, no-block]
  Status prepare(const ProcessSpec& spec, const ChainLayout& layout) override;
  /// [no-alloc, no-block] No locks; flushes denormals for the call.
  Status process(AudioView io, ProcessStats* stats) noexcept override;
  /// [no-alloc, no-block] Zeroes state and the chunk counter.
  void reset() noexcept override;
  /// [no-alloc, no-block]
  BackendCounters counters() const noexcept override {
    BackendCounters c;
    c.chunks = chunk_index_;
    return c;
  }
  /// [no-alloc, no-block]
  std::size_t state_values() const noexcept override { return state32_.size() + state64_.size(); }

  /// Chunks processed since prepare/reset. [no-alloc, no-block]
  std::uint64_t chunks() const noexcept { return chunk_index_; }

 private:
  using Step = StepLayout;  // offsets into coef32_/coef64_ and state32_/state64_
  /// [no-alloc, no-block]
  template <class T>
  void run_cascade(const Step& st, T* data, int frames) noexcept;

  bool fused_label_;
  bool prepared_ = false;
  ProcessSpec spec_{};
  std::vector<Step> steps_;
  std::vector<float> coef32_, state32_;
  std::vector<double> coef64_, state64_;
  std::uint64_t chunk_index_ = 0;
};

/// Busy-waits for `ns` on the monotonic clock. [no-alloc, no-block] (burns CPU by design)
void spin_for_ns(std::int64_t ns) noexcept;
/// Sleeps for `ns` (clock_nanosleep, relative). [no-alloc, blocks] Calibration only.
void sleep_for_ns(std::int64_t ns) noexcept;
/// Pays one calibration step (a spin when `spin`, else a sleep) of `ns` and accounts it in
/// `st` (calib_ns, host_steps). Shared by every backend. [no-alloc, no-block] when spinning, [no-alloc, blocks] when sleeping.
void pay_calibration(bool spin, std::int64_t ns, ProcessStats& st) noexcept;

}  // namespace chunkscope
