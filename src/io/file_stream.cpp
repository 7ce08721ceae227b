#include "src/io/file_stream.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <numbers>

#include "src/chain_spec.hpp"
#include "src/errors.hpp"

namespace chunkscope {

// A stream's input is opened more than once (for its format, then per run or round) and may
// be rewound, so it must be a regular file; `process` reads FIFOs and devices.
FileSource::FileSource(const std::string& path, DType dtype, std::int64_t limit_frames)
    : reader_(path, true, "this command opens its input more than once; `process` reads a FIFO"),
      dtype_(dtype),
      desc_(fmt::format("file {}", path)),
      limit_(limit_frames) {}

Status FileSource::fill(void* dst, int max_frames, int* frames) noexcept {
  if (limit_ >= 0) {
    const std::int64_t left = limit_ - reader_.position();
    if (left <= 0) {
      *frames = 0;
      return Status::end_of_stream;
    }
    if (left < max_frames) max_frames = static_cast<int>(left);
  }
  std::int64_t got = 0;
  const int rc = reader_.try_read(dst, dtype_ == DType::f64, max_frames, &got);
  *frames = static_cast<int>(got);
  if (rc != 0) {
    truncated_ = true;
    return Status::io_error;
  }
  return got == 0 ? Status::end_of_stream : Status::ok;
}

FileSink::FileSink(const std::string& path, int format, double rate, int channels, DType dtype)
    : writer_(path, format, rate, channels), dtype_(dtype), desc_(fmt::format("file {}", path)) {}

Status FileSink::consume(const void* src, int frames) noexcept {
  try {  // AudioWriter reports failures by exception; the sink thread wants a status
    if (dtype_ == DType::f32)
      writer_.write(static_cast<const float*>(src), frames);
    else
      writer_.write(static_cast<const double*>(src), frames);
  } catch (...) {
    return Status::io_error;
  }
  return Status::ok;
}

SynthSpec parse_synth(const std::string& s, double rate) {
  SynthSpec sp;
  sp.text = s;
  sp.rate = rate;
  const auto c1 = s.find(':');
  const std::string kind = s.substr(0, c1);
  const std::string rest = c1 == std::string::npos ? "" : s.substr(c1 + 1);
  const std::string where = fmt::format("--signal '{}'", s);
  auto freq = [&](const std::string& v) {
    const double f = parse_frequency(v, where);
    if (!(f > 0 && f < rate / 2)) throw InputError(fmt::format("{}: {} Hz is not between 0 and Nyquist ({} Hz)", where, f, rate / 2));
    return f;
  };
  if (kind == "sine") {
    if (rest.empty()) throw InputError(fmt::format("{}: missing frequency (usage: sine:<hz>)", where));
    sp.kind = SynthSpec::Kind::sine;
    sp.f0 = freq(rest);
  } else if (kind == "sweep") {
    const auto c2 = rest.find(':');
    if (rest.empty() || c2 == std::string::npos) throw InputError(fmt::format("{}: usage: sweep:<f0>:<f1>", where));
    sp.kind = SynthSpec::Kind::sweep;
    sp.f0 = freq(rest.substr(0, c2));
    sp.f1 = freq(rest.substr(c2 + 1));
  } else if (kind == "burst") {
    if (rest.empty()) throw InputError(fmt::format("{}: missing time (usage: burst:<time>, e.g. burst:0.5s)", where));
    sp.kind = SynthSpec::Kind::burst;
    sp.f0 = static_cast<double>(parse_duration_ns(rest, where)) / 1e9;
    if (!(sp.f0 > 0)) throw InputError(fmt::format("{}: the burst must last more than 0 s", where));
  } else if (kind == "noise" || kind == "impulse" || kind == "silence") {
    if (!rest.empty()) throw InputError(fmt::format("{}: '{}' takes no argument", where, kind));
    sp.kind = kind == "noise" ? SynthSpec::Kind::noise
              : kind == "impulse" ? SynthSpec::Kind::impulse
                                  : SynthSpec::Kind::silence;
  } else {
    throw InputError(fmt::format("{}: unknown signal '{}' (sine:<hz>, noise, sweep:<f0>:<f1>, impulse, silence, burst:<time>)",
                                 where, kind));
  }
  return sp;
}

SynthSource::SynthSource(const SynthSpec& spec, DType dtype)
    : spec_(spec), dtype_(dtype), desc_(fmt::format("synth {}", spec.text)) {}

double SynthSource::next() noexcept {
  const double t = static_cast<double>(pos_) / spec_.rate;
  double v = 0;
  switch (spec_.kind) {
    case SynthSpec::Kind::sine: v = spec_.amplitude * std::sin(2 * std::numbers::pi * spec_.f0 * t); break;
    case SynthSpec::Kind::sweep: {
      // logarithmic sweep over the whole duration; the phase is integrated sample by sample
      const double dur = static_cast<double>(spec_.frames) / spec_.rate;
      const double f = spec_.f0 * std::pow(spec_.f1 / spec_.f0, dur > 0 ? t / dur : 0);
      v = spec_.amplitude * std::sin(phase_);
      phase_ += 2 * std::numbers::pi * f / spec_.rate;
      if (phase_ > 2 * std::numbers::pi) phase_ -= 2 * std::numbers::pi;
      break;
    }
    case SynthSpec::Kind::burst:
      if (t >= spec_.f0) break;  // the silent tail
      [[fallthrough]];
    case SynthSpec::Kind::noise: {
      // xorshift64*: deterministic, allocation-free
      rng_ ^= rng_ >> 12;
      rng_ ^= rng_ << 25;
      rng_ ^= rng_ >> 27;
      const std::uint64_t r = rng_ * 0x2545F4914F6CDD1Dull;
      const double a = spec_.kind == SynthSpec::Kind::burst ? spec_.burst_amplitude : spec_.amplitude;
      v = a * (static_cast<double>(r >> 11) * (2.0 / 9007199254740992.0) - 1.0);
      break;
    }
    case SynthSpec::Kind::impulse: v = pos_ == 0 ? spec_.amplitude : 0.0; break;
    case SynthSpec::Kind::silence: v = 0; break;
  }
  ++pos_;
  return v;
}

Status SynthSource::fill(void* dst, int max_frames, int* frames) noexcept {
  const std::int64_t left = spec_.frames - pos_;
  const int n = static_cast<int>(std::min<std::int64_t>(left, max_frames));
  *frames = n;
  if (n <= 0) return Status::end_of_stream;
  const int ch = spec_.channels;
  for (int f = 0; f < n; ++f) {
    const double v = next();
    for (int c = 0; c < ch; ++c) {
      const std::size_t i = static_cast<std::size_t>(f) * static_cast<std::size_t>(ch) + static_cast<std::size_t>(c);
      if (dtype_ == DType::f32)
        static_cast<float*>(dst)[i] = static_cast<float>(v);
      else
        static_cast<double*>(dst)[i] = v;
    }
  }
  return Status::ok;
}

// ---------------------------------------------------------------- BatchSource

BatchSource::BatchSource(std::vector<std::unique_ptr<ChunkSource>> parts, int channels, int max_frames, DType dtype)
    : parts_(std::move(parts)),
      ended_(parts_.size(), 0),
      channels_(channels),
      max_frames_(max_frames),
      sample_bytes_(dtype_size(dtype)) {
  if (parts_.empty() || channels < 1 || max_frames < 1) throw InputError("batch: needs at least one stream");
  scratch_.assign(static_cast<std::size_t>(max_frames) * static_cast<std::size_t>(channels) * sample_bytes_, 0);
  for (const auto& p : parts_) {
    const std::int64_t t = p->total_frames();
    total_ = t < 0 || total_ < 0 ? -1 : std::max(total_, t);
  }
  desc_ = fmt::format("batch of {} streams, each {}", parts_.size(), parts_.front()->describe());
}

Status BatchSource::fill(void* dst, int max_frames, int* frames) noexcept {
  const int want = std::min(max_frames, max_frames_);
  const std::size_t part_bytes = static_cast<std::size_t>(channels_) * sample_bytes_;  // one frame of one part
  const std::size_t frame_bytes = part_bytes * parts_.size();
  auto* out = static_cast<unsigned char*>(dst);
  int most = 0;
  bool any = false;
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    int n = 0;
    if (!ended_[k]) {
      const Status st = parts_[k]->fill(scratch_.data(), want, &n);
      if (st == Status::end_of_stream) {
        ended_[k] = 1;
        n = 0;
      } else if (!ok(st)) {
        *frames = 0;
        return st;
      } else {
        any = true;
      }
    }
    n = std::clamp(n, 0, want);
    unsigned char* slot = out + k * part_bytes;
    for (int f = 0; f < n; ++f)
      std::memcpy(slot + static_cast<std::size_t>(f) * frame_bytes, scratch_.data() + static_cast<std::size_t>(f) * part_bytes,
                  part_bytes);
    for (int f = n; f < want; ++f) std::memset(slot + static_cast<std::size_t>(f) * frame_bytes, 0, part_bytes);
    most = std::max(most, n);
  }
  *frames = most;
  return any ? Status::ok : Status::end_of_stream;
}

}  // namespace chunkscope
