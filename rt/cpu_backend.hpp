#pragma once
// The CPU backend: each cascade step runs every section over every channel of a chunk,
// sample by sample, in transposed direct form II with state carried across chunks.
//
// Design: chunks are interleaved, so the samples of one frame are contiguous. The scalar
// reference runs frame -> section -> channel, keeping the channel loop innermost over
// contiguous data and contiguous state (state[section][s1|s2][channel]); small channel
// counts get their own instantiations so the inner loop unrolls. The vector kernels
// (rt/cpu_simd.hpp) run the same arithmetic in the same order, as a wavefront across
// (section, channel) lanes for few channels or channel-parallel for many, on the
// instruction set chosen at construction (the widest the CPU has, unless forced).
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "rt/backend.hpp"
#include "rt/cpu_simd.hpp"
#include "rt/hosted.hpp"
#include "rt/sched_record.hpp"

namespace chunkscope {

/// Allocates on cache-line boundaries: the kernels' vector loads and stores of filter state
/// then never straddle two lines, which would defeat store-to-load forwarding from one
/// frame to the next. [allocates]
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
};

class CpuBackend final : public Backend {
 public:
  /// `fused` is only a label for reports; fusion is decided by the plan. [no-alloc, no-block]
  /// `isa` forces the cascade kernels' instruction set (prepare() refuses one this CPU
  /// cannot run); without it, prepare() picks by cpu_isa_auto() for the chain's shape.
  /// `step_timing`: time each planned step (ProcessStats::step_ns); off, only the benchmark
  /// of that timing's own cost uses it.
  explicit CpuBackend(bool fused_label = true, std::optional<CpuIsa> isa = std::nullopt, bool step_timing = true)
      : fused_label_(fused_label), forced_isa_(isa), step_timing_(step_timing) {}
  ~CpuBackend() override;

  /// [no-alloc, no-block]
  const char* name() const noexcept override { return "cpu"; }
  /// [no-alloc, no-block]
  const char* mode() const noexcept override { return fused_label_ ? "fused" : "unfused"; }
  /// Allocates coefficient and state arrays for the plan and makes each hosted step's
  /// processor with its planar scratch; invalid_argument when the CPU lacks the instruction
  /// set or a hosted step cannot be made (last_error() names it). [allocates, blocks]
  Status prepare(const ProcessSpec& spec, const ChainLayout& layout) override;
  /// [no-alloc, no-block] No locks; flushes denormals for the call. A hosted step's code
  /// runs inside: what it does is audited, not promised.
  Status process(AudioView io, ProcessStats* stats) noexcept override;
  /// [no-alloc, no-block] Zeroes state and the chunk counter; resets hosted steps (their
  /// audit goes on counting since prepare(): compare rounds add up).
  void reset() noexcept override;
  /// [no-alloc, no-block]
  const char* last_error() const noexcept override { return failure_[0] ? failure_ : error_.c_str(); }
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
  /// The instruction set of the prepared cascade kernels. [no-alloc, no-block]
  CpuIsa isa() const noexcept { return isa_; }
  /// How the kernels lay the plan's longest cascade out in vectors for the prepared shape
  /// (shorter ones may differ: cascade_layout()). [no-alloc, no-block]
  CascadeLayout layout() const noexcept { return layout_; }
  /// Turns the audit of hosted calls off (or on again): only the benchmark of the audit's own
  /// cost does. [no-alloc, no-block]; not while process() runs.
  void set_audit(bool on) noexcept { audit_on_ = on; }
  /// The audit of each hosted step since prepare(), in step order. [no-alloc, no-block]
  const std::vector<HostedAudit>& hosted_audit() const noexcept { return audit_; }
  /// The frames of delay hosted step `i` declares. [no-alloc, no-block]
  std::uint32_t hosted_latency(std::size_t i) const noexcept;
  const HostedWatch* hosted_watch() const noexcept override { return &watch_; }

 private:
  using Step = StepLayout;  // offsets into coef32_/coef64_ and state32_/state64_
  /// [no-alloc, no-block]
  template <class T>
  void run_cascade(const Step& st, T* data, int frames) noexcept;

  /// Runs hosted step `st` on the chunk: planar conversion, the timed and audited call,
  /// the scan of its output, and back. Returns false when the step failed. [no-alloc, no-block]
  /// as far as the hosted code is.
  template <class T>
  bool run_hosted(const Step& st, int slot, T* data, const AudioView& io, ProcessStats& ps) noexcept;
  /// Makes the hosted steps' processors and their scratch. [allocates, blocks]
  bool prepare_hosted(const ProcessSpec& spec, const ChainLayout& lay);
  /// Names hosted call `call` of planned step `step` (1-based; `hosted`: its processor) on
  /// `chunk` for the fault handler and the watchdog; the caller stores the call's start in
  /// watch_.since where it times it, and end_call() takes both back. [no-alloc, no-block]
  void name_call(std::size_t hosted, int step, const char* call, std::uint64_t chunk) noexcept;
  void end_call() noexcept;
  /// One hosted call timed and audited: heap calls, voluntary switches, CPU time. Returns
  /// what process() returned. [no-alloc, no-block] as far as the hosted code is.
  bool audited_call(HostedProcessor& proc, HostedAudit& a, int slot, const AudioView& io, ProcessStats& ps) noexcept;
  bool recorded_call(SchedRecord& rec, HostedProcessor& proc, HostedAudit& a, int slot, const AudioView& io,
                     ProcessStats& ps) noexcept;
  /// Keeps "label: why" in failure_, truncated. [no-alloc, no-block]
  void set_failure(const char* label, const char* why) noexcept;
  /// Counts the NaN, infinite and subnormal samples the step left in the planar scratch. [no-alloc, no-block]
  void scan_output(HostedAudit& a, int frames, std::uint64_t seq) noexcept;

  bool fused_label_;
  std::optional<CpuIsa> forced_isa_;
  bool step_timing_ = true;
  bool audit_on_ = true;
  std::vector<std::shared_ptr<const HostedFactory>> factories_;
  std::vector<std::unique_ptr<HostedProcessor>> hosted_;
  std::vector<HostedAudit> audit_;
  HostedWatch watch_;  // the hosted call under way (a watchdog reads it)
  std::vector<float> planar_;        // channels x max_frames floats
  std::vector<float*> planar_ptrs_;  // one per channel
  std::int64_t majflt_seen_ = -1;  // the processing thread's major faults at the last look (the record's audit)
  std::int64_t cpu_clock_cost_ns_ = 0;  // a read of the thread CPU clock, measured at prepare
  std::string error_;        // why prepare() failed
  char failure_[512] = {};   // why process() failed (written on the processor thread)
  CpuIsa isa_ = CpuIsa::scalar;
  CascadeLayout layout_ = CascadeLayout::scalar;
  simd::CascadeFn<float> kernel32_ = nullptr;
  simd::CascadeFn<double> kernel64_ = nullptr;
  bool prepared_ = false;
  ProcessSpec spec_{};
  std::vector<Step> steps_;
  std::vector<float> coef32_;
  std::vector<double> coef64_;
  std::vector<float, CacheLineAllocator<float>> state32_;
  std::vector<double, CacheLineAllocator<double>> state64_;
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
