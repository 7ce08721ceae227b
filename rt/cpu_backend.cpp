#include "rt/cpu_backend.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <sys/resource.h>

#include "rt/alloc_audit.hpp"
#include "rt/clock.hpp"
#include "rt/denormals.hpp"
#include "rt/sos_math.hpp"

namespace chunkscope {
namespace {

// frame -> section -> channel. C > 0 fixes the channel count at compile time.
template <class T, int C>
void cascade_fixed(T* __restrict data, int frames, int channels_rt, const T* __restrict coef, int nsec,
                    T* __restrict state) noexcept {
  const int channels = C > 0 ? C : channels_rt;
  for (int f = 0; f < frames; ++f) {
    T* __restrict x = data + static_cast<std::ptrdiff_t>(f) * channels;
    for (int s = 0; s < nsec; ++s) {
      const T* c = coef + 5 * s;
      const T b0 = c[0], b1 = c[1], b2 = c[2], a1 = c[3], a2 = c[4];
      T* __restrict s1 = state + static_cast<std::ptrdiff_t>(2 * s) * channels;
      T* __restrict s2 = s1 + channels;
      for (int ch = 0; ch < channels; ++ch) x[ch] = biquad_step(b0, b1, b2, a1, a2, s1[ch], s2[ch], x[ch]);
    }
  }
}

// The scalar reference, with the channel counts that get their own instantiation.
template <class T>
void cascade_scalar(T* data, int frames, int channels, const T* coef, int nsec, T* state) noexcept {
  switch (channels) {
    case 1: cascade_fixed<T, 1>(data, frames, 1, coef, nsec, state); break;
    case 2: cascade_fixed<T, 2>(data, frames, 2, coef, nsec, state); break;
    case 4: cascade_fixed<T, 4>(data, frames, 4, coef, nsec, state); break;
    case 8: cascade_fixed<T, 8>(data, frames, 8, coef, nsec, state); break;
    case 16: cascade_fixed<T, 16>(data, frames, 16, coef, nsec, state); break;
    case 32: cascade_fixed<T, 32>(data, frames, 32, coef, nsec, state); break;
    default: cascade_fixed<T, 0>(data, frames, channels, coef, nsec, state); break;
  }
}

// The cascade kernel of `isa`; the scalar reference when it has none.
template <class T>
simd::CascadeFn<T> pick_kernel(CpuIsa isa) noexcept {
#if defined(CHUNKSCOPE_X86_SIMD)
  const simd::IsaKernels* k = nullptr;
  switch (isa) {
    case CpuIsa::sse4: k = &simd::kernels_sse4; break;
    case CpuIsa::avx2: k = &simd::kernels_avx2; break;
    case CpuIsa::avx512: k = &simd::kernels_avx512; break;
    case CpuIsa::scalar: break;
  }
  if (k) {
    if constexpr (sizeof(T) == 4)
      return k->f32;
    else
      return k->f64;
  }
#else
  (void)isa;
#endif
  return &cascade_scalar<T>;
}

/// Voluntary context switches and major page faults of the calling thread so far.
/// [no-alloc, no-block] A system call.
struct Waits {
  std::int64_t switches = 0, major_faults = 0;
};
Waits thread_waits() noexcept {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return {ru.ru_nvcsw, ru.ru_majflt};
}

/// [no-alloc, no-block]
std::uint32_t clamp32(std::int64_t ns) noexcept { return static_cast<std::uint32_t>(std::clamp<std::int64_t>(ns, 0, 0xffffffffLL)); }

/// Interleaved chunk -> planar floats. [no-alloc, no-block]
template <class T>
void to_planar(const T* data, int frames, int channels, float* const* out) noexcept {
  for (int c = 0; c < channels; ++c) {
    float* dst = out[c];
    for (int f = 0; f < frames; ++f) dst[f] = static_cast<float>(data[static_cast<std::ptrdiff_t>(f) * channels + c]);
  }
}

/// Planar floats -> interleaved chunk. [no-alloc, no-block]
template <class T>
void from_planar(T* data, int frames, int channels, const float* const* in) noexcept {
  for (int c = 0; c < channels; ++c) {
    const float* src = in[c];
    for (int f = 0; f < frames; ++f) data[static_cast<std::ptrdiff_t>(f) * channels + c] = static_cast<T>(src[f]);
  }
}

}  // namespace

namespace {
// one per thread, in the executable's static TLS: a fault handler runs on the faulting thread
// and reads its own thread's record, whatever other streams' processors do meanwhile
__attribute__((tls_model("initial-exec"))) thread_local HostedWhere g_hosted_where;
}  // namespace

HostedWhere& hosted_where() noexcept { return g_hosted_where; }

void spin_for_ns(std::int64_t ns) noexcept {
  const std::int64_t end = now_ns() + ns;
  while (now_ns() < end) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
}

void sleep_for_ns(std::int64_t ns) noexcept {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
  }
}

void pay_calibration(bool spin, std::int64_t ns, ProcessStats& st) noexcept {
  const std::int64_t t0 = now_ns();
  if (spin)
    spin_for_ns(ns);
  else
    sleep_for_ns(ns);
  st.calib_ns += now_ns() - t0;
  ++st.host_steps;
}

Status CpuBackend::prepare(const ProcessSpec& spec, const ChainLayout& layout) {
  if (spec.channels < 1 || spec.channels > kMaxChunkChannels || spec.max_frames < 1 ||
      spec.max_frames > kMaxChunkFrames || !(spec.rate > 0))
    return Status::invalid_argument;
  const int sample_bytes = spec.dtype == DType::f32 ? 4 : 8;
  int longest = 0;
  for (const auto& st : layout.steps)
    if (st.kind == Step::Kind::cascade && st.sections > longest) longest = st.sections;
  if (forced_isa_) {
    if (!cpu_isa_supported(*forced_isa_)) return Status::invalid_argument;
    isa_ = *forced_isa_;
  } else {
    isa_ = cpu_isa_auto(sample_bytes, spec.channels, longest);
  }
  layout_ = cascade_layout(isa_, sample_bytes, spec.channels, longest);
  kernel32_ = pick_kernel<float>(isa_);
  kernel64_ = pick_kernel<double>(isa_);
  spec_ = spec;
  ChainLayout lay = layout;
  steps_ = std::move(lay.steps);
  coef64_ = std::move(lay.coef);
  coef32_.assign(coef64_.begin(), coef64_.end());
  const std::size_t state_len = lay.state_values;
  state32_.assign(spec.dtype == DType::f32 ? state_len : 0, 0.0f);
  state64_.assign(spec.dtype == DType::f64 ? state_len : 0, 0.0);
  if (!prepare_hosted(spec, lay)) return Status::invalid_argument;
  chunk_index_ = 0;
  prepared_ = true;
  return Status::ok;
}

CpuBackend::~CpuBackend() = default;

bool CpuBackend::prepare_hosted(const ProcessSpec& spec, const ChainLayout& lay) {
  error_.clear();
  failure_[0] = '\0';
  factories_ = lay.hosted;
  hosted_.clear();
  audit_.assign(factories_.size(), HostedAudit{});
  for (auto& a : audit_) a.allocations_counted = alloc_audit::interposer_active();
  const HostedShape shape{spec.rate, spec.max_frames, spec.channels};
  for (const auto& f : factories_) {
    std::string why;
    auto p = f ? f->create(shape, why) : nullptr;
    if (!p) {
      error_ = f ? f->label() + ": " + (why.empty() ? "could not be made" : why) : "a hosted step has no code";
      hosted_.clear();
      return false;
    }
    hosted_.push_back(std::move(p));
  }
  // what two back-to-back reads of the thread's CPU clock measure: the clock's own cost,
  // taken off every hosted call's CPU time (the smallest of a few tries)
  cpu_clock_cost_ns_ = 0;
  if (!factories_.empty()) {
    std::int64_t best = INT64_MAX;
    for (int i = 0; i < 32; ++i) {
      const std::int64_t a = thread_cpu_ns();
      best = std::min(best, thread_cpu_ns() - a);
    }
    cpu_clock_cost_ns_ = best;
  }
  const std::size_t per = factories_.empty() ? 0 : static_cast<std::size_t>(spec.max_frames);
  planar_.assign(per * static_cast<std::size_t>(spec.channels), 0.0f);
  planar_ptrs_.assign(factories_.empty() ? 0 : static_cast<std::size_t>(spec.channels), nullptr);
  for (std::size_t c = 0; c < planar_ptrs_.size(); ++c) planar_ptrs_[c] = planar_.data() + c * per;
  return true;
}

template <class T>
void CpuBackend::run_cascade(const Step& st, T* data, int frames) noexcept {
  const T* coef;
  T* state;
  if constexpr (sizeof(T) == 4) {
    coef = coef32_.data() + st.coef_offset;
    state = state32_.data() + st.state_offset;
  } else {
    coef = coef64_.data() + st.coef_offset;
    state = state64_.data() + st.state_offset;
  }
  if constexpr (sizeof(T) == 4)
    kernel32_(data, frames, spec_.channels, coef, st.sections, state);
  else
    kernel64_(data, frames, spec_.channels, coef, st.sections, state);
}

Status CpuBackend::process(AudioView io, ProcessStats* stats) noexcept {
  if (!prepared_) return Status::not_prepared;
  if (io.channels != spec_.channels || io.dtype != spec_.dtype || io.frames < 0 || io.frames > spec_.max_frames ||
      (io.frames > 0 && io.data == nullptr))
    return Status::shape_mismatch;
  ScopedFlushDenormals ftz(spec_.flush_denormals);
  ProcessStats local{};
  std::int64_t t = step_timing_ ? now_ns() : 0;
  int slot = 0;
  for (const auto& st : steps_) {
    bool timed_here = false;  // the step stamped its own time (hosted: the call alone)
    if (st.kind == Step::Kind::cascade) {
      if (io.dtype == DType::f32)
        run_cascade(st, static_cast<float*>(io.data), io.frames);
      else
        run_cascade(st, static_cast<double*>(io.data), io.frames);
      ++local.dispatches;
    } else if (st.kind == Step::Kind::hosted) {
      const bool ok_step = io.dtype == DType::f32 ? run_hosted(st, slot, static_cast<float*>(io.data), io, local)
                                                  : run_hosted(st, slot, static_cast<double*>(io.data), io, local);
      timed_here = true;
      if (!ok_step) {
        if (stats) *stats = local;
        ++chunk_index_;
        return Status::stage_failed;
      }
    } else if (chunk_index_ % st.every == 0) {
      pay_calibration(st.kind == Step::Kind::spin, st.time_ns, local);
    }
    if (step_timing_) {
      const std::int64_t t1 = now_ns();
      if (!timed_here) {
        local.step_ns[slot] += clamp32(t1 - t);
        if (SchedRecord* rec = SchedRecord::current()) {  // one load when nothing switched
          const OffCpu off = rec->off_between(t, t1);
          local.step_cpu_ns[slot] += clamp32(t1 - t - off.total());
          local.step_preempt_ns[slot] += clamp32(off.preempted_ns);
        }
      }
      t = t1;
      if (slot + 1 < kMaxTimedSteps) ++slot;
    }
  }
  local.steps = step_timing_ ? static_cast<std::uint32_t>(std::min<std::size_t>(steps_.size(), kMaxTimedSteps)) : 0;
  ++chunk_index_;
  if (stats) *stats = local;
  return Status::ok;
}

template <class T>
bool CpuBackend::run_hosted(const Step& st, int slot, T* data, const AudioView& io, ProcessStats& ps) noexcept {
  HostedProcessor& proc = *hosted_[st.hosted];
  const int channels = spec_.channels;
  to_planar(data, io.frames, channels, planar_ptrs_.data());
  // the step and chunk for a fault handler and the watchdog; the host marks the foreign call
  // itself, and the call's start is published where it is timed
  name_call(st.hosted, static_cast<int>(&st - steps_.data()) + 1, "process", io.seq);
  bool ok_call;
  if (audit_on_) {
    ok_call = audited_call(proc, audit_[st.hosted], slot, io, ps);
  } else {
    const std::int64_t t0 = now_ns();
    watch_.since.store(t0, std::memory_order_release);
    ok_call = proc.process(planar_ptrs_.data(), io.frames);
    const std::int64_t t1 = now_ns();
    watch_.since.store(0, std::memory_order_relaxed);
    ps.step_ns[slot] += clamp32(t1 - t0);
    ++audit_[st.hosted].calls;
  }
  if (!ok_call) {
    const char* why = proc.last_error();
    set_failure(factories_[st.hosted]->label().c_str(), why && *why ? why : "process() returned an error");
    end_call();
    return false;
  }
  end_call();
  if (audit_on_) scan_output(audit_[st.hosted], io.frames, io.seq);
  from_planar(data, io.frames, channels, planar_ptrs_.data());
  return true;
}

bool CpuBackend::audited_call(HostedProcessor& proc, HostedAudit& a, int slot, const AudioView& io,
                              ProcessStats& ps) noexcept {
  if (SchedRecord* rec = SchedRecord::current()) return recorded_call(*rec, proc, a, slot, io, ps);
  const Waits w0 = thread_waits();
  const std::int64_t cpu0 = thread_cpu_ns();
  alloc_audit::arm();
  const std::int64_t t0 = now_ns();
  watch_.since.store(t0, std::memory_order_release);
  const bool ok_call = proc.process(planar_ptrs_.data(), io.frames);
  const std::int64_t t1 = now_ns();
  watch_.since.store(0, std::memory_order_relaxed);
  const alloc_audit::Counts heap = alloc_audit::disarm();
  // CPU time read around the call, less the clock's own cost; the call cannot have used more
  // CPU than its wall time
  const std::int64_t cpu = std::clamp<std::int64_t>(thread_cpu_ns() - cpu0 - cpu_clock_cost_ns_, 0, t1 - t0);
  const Waits w1 = thread_waits();
  const std::int64_t vcs = w1.switches - w0.switches, majflt = w1.major_faults - w0.major_faults;
  ++a.calls;
  ps.step_ns[slot] += clamp32(t1 - t0);
  ps.step_cpu_ns[slot] += clamp32(cpu);
  if (heap.allocations + heap.frees > 0 && a.first_alloc == kNoChunk) a.first_alloc = io.seq;
  a.allocations += heap.allocations;
  a.frees += heap.frees;
  if (vcs > 0) {
    // a wait for pages read from disk (the first touch of code or data) is the memory's, not
    // a lock, sleep or I/O of the stage's own: counted apart
    const std::int64_t off = std::max<std::int64_t>(0, (t1 - t0) - cpu);
    a.voluntary_switches += static_cast<std::uint64_t>(vcs);
    if (majflt > 0) {
      if (a.first_paging == kNoChunk) a.first_paging = io.seq;
      ++a.paging_calls;
      a.major_faults += static_cast<std::uint64_t>(majflt);
      a.paging_ns += off;
    } else {
      if (a.first_block == kNoChunk) a.first_block = io.seq;
      ++a.blocking_calls;
      a.blocked_ns += off;
      ps.hosted_blocked_ns += off;
    }
  }
  return ok_call;
}

// The audited call judged by the thread's context-switch record: no system call around it.
// Its time off the CPU is read from the record afterwards: blocked time is the stage's (a
// lock, a sleep, I/O: a blocking call), preempted time the platform's. Only a call that
// blocked pays a system call: the thread's major faults, which when they rose since the
// last look file the wait as pages read in (counted apart), not as a wait of the stage's.
bool CpuBackend::recorded_call(SchedRecord& rec, HostedProcessor& proc, HostedAudit& a, int slot, const AudioView& io,
                               ProcessStats& ps) noexcept {
  if (majflt_seen_ < 0) majflt_seen_ = thread_waits().major_faults;  // once, in the first call
  alloc_audit::arm();
  const std::int64_t t0 = now_ns();
  watch_.since.store(t0, std::memory_order_release);
  const bool ok_call = proc.process(planar_ptrs_.data(), io.frames);
  const std::int64_t t1 = now_ns();
  watch_.since.store(0, std::memory_order_relaxed);
  const alloc_audit::Counts heap = alloc_audit::disarm();
  const OffCpu off = rec.off_between(t0, t1);
  ++a.calls;
  ps.step_ns[slot] += clamp32(t1 - t0);
  ps.step_cpu_ns[slot] += clamp32(t1 - t0 - off.total());
  ps.step_preempt_ns[slot] += clamp32(off.preempted_ns);
  if (heap.allocations + heap.frees > 0 && a.first_alloc == kNoChunk) a.first_alloc = io.seq;
  a.allocations += heap.allocations;
  a.frees += heap.frees;
  a.preempted_ns += off.preempted_ns;
  if (off.blocks > 0) {
    const std::int64_t faults = thread_waits().major_faults;
    const std::int64_t paged = faults - majflt_seen_;
    majflt_seen_ = faults;
    a.voluntary_switches += off.blocks;
    if (paged > 0) {
      if (a.first_paging == kNoChunk) a.first_paging = io.seq;
      ++a.paging_calls;
      a.major_faults += static_cast<std::uint64_t>(paged);
      a.paging_ns += off.blocked_ns;
    } else {
      if (a.first_block == kNoChunk) a.first_block = io.seq;
      ++a.blocking_calls;
      a.blocked_ns += off.blocked_ns;
      ps.hosted_blocked_ns += off.blocked_ns;
    }
  }
  return ok_call;
}

void CpuBackend::set_failure(const char* label, const char* why) noexcept {
  std::size_t n = 0;
  for (const char* part : {label, ": ", why})
    for (const char* c = part; *c && n + 1 < sizeof failure_; ++c) failure_[n++] = *c;
  failure_[n] = '\0';
}

void CpuBackend::scan_output(HostedAudit& a, int frames, std::uint64_t seq) noexcept {
  std::uint64_t bad = 0, sub = 0;
  for (float* ch : planar_ptrs_) {
    for (int f = 0; f < frames; ++f) {
      std::uint32_t bits;
      std::memcpy(&bits, ch + f, sizeof bits);
      const std::uint32_t e = bits & 0x7f800000u;
      bad += e == 0x7f800000u;
      sub += e == 0 && (bits & 0x007fffffu) != 0;
    }
  }
  if (bad > 0 && a.first_nonfinite == kNoChunk) a.first_nonfinite = seq;
  a.nonfinite += bad;
  a.subnormal += sub;
}

void CpuBackend::reset() noexcept {
  majflt_seen_ = -1;  // the next run's processing thread is another: look afresh
  std::fill(state32_.begin(), state32_.end(), 0.0f);
  std::fill(state64_.begin(), state64_.end(), 0.0);
  // the audit goes on: it counts since prepare(); each reset is watched and marked as a call
  // of its step's code, as process() is
  std::size_t h = 0;
  for (std::size_t i = 0; i < steps_.size() && h < hosted_.size(); ++i) {
    if (steps_[i].kind != Step::Kind::hosted) continue;
    const std::size_t k = steps_[i].hosted;
    name_call(k, static_cast<int>(i) + 1, "reset", kNoChunk);
    watch_.since.store(now_ns(), std::memory_order_release);
    hosted_[k]->reset();
    end_call();
    ++h;
  }
  chunk_index_ = 0;
}

void CpuBackend::name_call(std::size_t hosted, int step, const char* call, std::uint64_t chunk) noexcept {
  const char* label = factories_[hosted]->label().c_str();
  HostedWhere& where = hosted_where();
  where.chunk.store(chunk, std::memory_order_relaxed);
  where.label.store(label, std::memory_order_relaxed);
  where.step.store(step, std::memory_order_relaxed);
  watch_.step.store(step, std::memory_order_relaxed);
  watch_.label.store(label, std::memory_order_relaxed);
  watch_.call.store(call, std::memory_order_relaxed);
  watch_.chunk.store(chunk, std::memory_order_relaxed);
}

void CpuBackend::end_call() noexcept {
  watch_.since.store(0, std::memory_order_relaxed);
  HostedWhere& where = hosted_where();
  where.step.store(0, std::memory_order_relaxed);
  where.chunk.store(kNoChunk, std::memory_order_relaxed);
}

std::uint32_t CpuBackend::hosted_latency(std::size_t i) const noexcept {
  return i < hosted_.size() ? hosted_[i]->latency_frames() : 0;
}

}  // namespace chunkscope
