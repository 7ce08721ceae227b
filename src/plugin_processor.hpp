#pragma once
// The processor both plugin hosts (src/hosted_lv2.cpp, src/hosted_ladspa.cpp) give the CPU
// backend: one plugin instance on the chunk's channels, or one per channel for a plugin with
// one audio input and one output, run in place on planar floats (the instances' outputs are
// their own buffers, copied back). Not part of rt/: it is the hosts' own code.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rt/hosted.hpp"
#include "src/errors.hpp"

namespace chunkscope {

/// `Stage` holds the plugin's model (its audio outputs); `Instance` runs one instance
/// (run(), output(k), restart()) and marks each of its calls into the plugin (ForeignCall),
/// so that the copies here stay chunkscope's own; `Guard` is held around a run (the LV2 host
/// marks its real-time scope; nothing for LADSPA).
template <class Stage, class Instance, class Guard>
class PluginProcessor final : public HostedProcessor {
 public:
  PluginProcessor(std::shared_ptr<const Stage> st, int max_frames, bool per_channel,
                  std::vector<std::unique_ptr<Instance>> insts, std::uint32_t latency)
      : st_(std::move(st)), max_frames_(max_frames), per_channel_(per_channel), insts_(std::move(insts)),
        latency_(latency) {}
  /// [no-alloc, no-block] as far as the plugin is.
  bool process(float* const* channels, int frames) noexcept override {
    if (frames < 0 || frames > max_frames_) {
      error_ = "called with more frames than the stream's largest block";
      return false;
    }
    if (frames == 0) return true;
    [[maybe_unused]] const Guard scope{};
    const auto n = static_cast<std::size_t>(frames) * sizeof(float);
    if (per_channel_) {
      for (std::size_t c = 0; c < insts_.size(); ++c) {
        insts_[c]->run(&channels[c], frames);
        std::memcpy(channels[c], insts_[c]->output(0), n);
      }
      return true;
    }
    insts_[0]->run(channels, frames);
    for (std::size_t k = 0; k < st_->model.audio_out.size(); ++k) std::memcpy(channels[k], insts_[0]->output(k), n);
    return true;
  }
  void reset() noexcept override {
    for (auto& i : insts_) i->restart();
  }
  const char* last_error() const noexcept override { return error_; }
  std::uint32_t latency_frames() const noexcept override { return latency_; }

 private:
  std::shared_ptr<const Stage> st_;
  int max_frames_;
  bool per_channel_;
  std::vector<std::unique_ptr<Instance>> insts_;
  const char* error_ = "";
  std::uint32_t latency_;
};

/// "1 audio input", "2 outputs". Not real-time.
inline std::string plural(std::size_t n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); }

/// How a plugin with `ins` audio inputs and `outs` outputs meets a chunk of `channels`: one
/// instance per channel (1 in, 1 out) or one instance on all of them (ins == channels); else
/// false with the refusal in `error`. Not real-time.
inline bool plugin_fits(std::size_t ins, std::size_t outs, int channels, bool& per_channel, std::string& error) {
  per_channel = ins == 1 && outs == 1;
  if (channels >= 1 && (per_channel || ins == static_cast<std::size_t>(channels))) return true;
  error = fmt::format("has {} and {}; the chunk has {}", plural(ins, "audio input"), plural(outs, "output"),
                      plural(static_cast<std::size_t>(std::max(0, channels)), "channel"));
  return false;
}

/// `make(error)`, with what it throws (no memory, no thread for a worker) as its refusal.
/// Not real-time.
template <class Make>
std::unique_ptr<HostedProcessor> create_or_explain(Make&& make, std::string& error) {
  try {
    return make(error);
  } catch (const std::exception& e) {
    error = fmt::format("could not be made ({})", one_line(e.what()));
    return nullptr;
  }
}

/// The latency a plugin's latency port reports after a few cycles of silence on `probe`, an
/// opened instance of its own (the processing instances stay untouched; a plugin may report a
/// new latency one cycle after it takes effect, as x42 nodelay does). `Guard` as for
/// PluginProcessor. Not real-time.
template <class Guard, class Instance>
std::uint32_t probe_latency(Instance& probe, std::size_t audio_ins, int max_frames, std::size_t latency_port,
                            const std::string& label) {
  constexpr int kProbeCycles = 4;
  std::vector<float> zeros(static_cast<std::size_t>(max_frames), 0.0f);
  std::vector<float*> in(audio_ins, zeros.data());
  {
    // the label for a crash handler; the instance marks each call into the plugin itself
    const HostedPhase named(nullptr, label.c_str());
    [[maybe_unused]] const Guard scope{};
    for (int i = 0; i < kProbeCycles; ++i) probe.run(in.data(), max_frames);
  }
  const float v = probe.value(latency_port);
  return std::isfinite(v) && v > 0 ? static_cast<std::uint32_t>(std::lround(v)) : 0;
}

}  // namespace chunkscope
