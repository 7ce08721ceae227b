#include "rt/cpu_backend.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>

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

}  // namespace

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
  chunk_index_ = 0;
  prepared_ = true;
  return Status::ok;
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
  ScopedFlushDenormals ftz;
  ProcessStats local{};
  for (const auto& st : steps_) {
    if (st.kind == Step::Kind::cascade) {
      if (io.dtype == DType::f32)
        run_cascade(st, static_cast<float*>(io.data), io.frames);
      else
        run_cascade(st, static_cast<double*>(io.data), io.frames);
      ++local.dispatches;
    } else if (chunk_index_ % st.every == 0) {
      pay_calibration(st.kind == Step::Kind::spin, st.time_ns, local);
    }
  }
  ++chunk_index_;
  if (stats) *stats = local;
  return Status::ok;
}

void CpuBackend::reset() noexcept {
  std::fill(state32_.begin(), state32_.end(), 0.0f);
  std::fill(state64_.begin(), state64_.end(), 0.0);
  chunk_index_ = 0;
}

}  // namespace chunkscope
