#pragma once
// The processor both plugin hosts (src/hosted_lv2.cpp, src/hosted_ladspa.cpp) give the CPU
// backend: one plugin instance on the chunk's channels, or one per channel for a plugin with
// one audio input and one output, run in place on planar floats (the instances' outputs are
// their own buffers, copied back). Not part of rt/: it is the hosts' own code.
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "rt/hosted.hpp"

namespace chunkscope {

/// `Stage` holds the plugin's model (its audio outputs); `Instance` runs one instance
/// (run(), output(k), restart()); `Guard` is held around a run (the LV2 host marks its
/// real-time scope; nothing for LADSPA).
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

}  // namespace chunkscope
