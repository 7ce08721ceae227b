#pragma once
// Host-side decisions of the CUDA backend, kept free of CUDA headers so that they are
// compiled and tested in every build: the kernel layout for a (frames, channels, sections)
// shape, how a chunk is routed in graph mode when its frame count changes, and how many
// launches a chunk costs. Everything here is constexpr arithmetic. [no-alloc, no-block]
#include <cstdint>

namespace chunkscope::cuda_plan {

// ---------------------------------------------------------------- kernel layout
//
// Design: the biquad recursion is sequential in time within a channel, so a chunk offers
// parallelism only across channels and across the sections of a cascade. The cascade
// kernel gives every channel its own warp (one 32-thread block per channel, so that the
// few warps of a small chunk spread over separate SMs rather than queueing on one) and
// pipelines the sections over the warp's lanes: lane l runs section l, on the samples lane
// l-1 finished one step earlier, and hands its outputs to lane l+1 by a register shuffle.
// With S sections and a chunk cut into B-sample blocks, a pass takes ceil(F/B) + S - 1
// steps instead of the F * S sequential section updates of one thread per channel, so a
// stereo chunk keeps up to 32 lanes per channel busy. A cascade longer than 32 sections
// runs in passes of up to 32 sections over the channel, in place; each section's state
// stays in its lane's registers for the pass and on the device between chunks.
//
// The shuffle that passes a value to the next lane sits on the critical path of every
// step; moving B samples per step (B in {1, 2, 4, 8}) pays that latency once per B
// samples, at the price of B - 1 extra samples of pipeline fill per lane. The block size
// is chosen by the cost model below (estimated cycles of one pass).

inline constexpr int kWarpLanes = 32;
inline constexpr int kMaxSamplesPerStep = 8;
// Cost model, in estimated issue cycles: one step pays a shuffle round trip, then B
// dependent section updates (multiply, add, multiply-subtract through the state).
inline constexpr std::int64_t kStepCycles = 32;
inline constexpr std::int64_t kSampleCycles = 12;

/// How one cascade kernel is launched for a shape.
struct SosLayout {
  int lanes = 1;             // sections in flight per channel in the first pass (<= 32)
  int passes = 1;            // ceil(sections / 32)
  int samples_per_step = 1;  // B: samples moved lane to lane per step
  int threads_per_block = kWarpLanes;
  int blocks = 1;            // one block (one warp) per channel
};

/// Estimated cycles for one channel of a cascade of `sections` over `frames` samples with
/// B = `samples_per_step`. [no-alloc, no-block]
constexpr std::int64_t pipeline_cycles(int frames, int sections, int samples_per_step) noexcept {
  if (frames <= 0 || sections <= 0 || samples_per_step <= 0) return 0;
  const std::int64_t blocks = (frames + samples_per_step - 1) / samples_per_step;
  const std::int64_t per_step = kStepCycles + kSampleCycles * samples_per_step;
  std::int64_t total = 0;
  for (int s0 = 0; s0 < sections; s0 += kWarpLanes) {
    const int lanes = sections - s0 < kWarpLanes ? sections - s0 : kWarpLanes;
    total += (blocks + lanes - 1) * per_step;
  }
  return total;
}

/// The layout for one cascade step over a chunk of `frames` x `channels` with `sections`
/// sections: the cheapest B by the cost model (ties go to the smaller B). [no-alloc, no-block]
constexpr SosLayout choose_sos_layout(int frames, int channels, int sections) noexcept {
  SosLayout l;
  l.lanes = sections < 1 ? 1 : (sections < kWarpLanes ? sections : kWarpLanes);
  l.passes = sections < 1 ? 1 : (sections + kWarpLanes - 1) / kWarpLanes;
  l.blocks = channels < 1 ? 1 : channels;
  l.threads_per_block = kWarpLanes;
  std::int64_t best = -1;
  for (int b = 1; b <= kMaxSamplesPerStep; b *= 2) {
    const std::int64_t c = pipeline_cycles(frames, sections, b);
    if (best < 0 || c < best) {
      best = c;
      l.samples_per_step = b;
    }
  }
  return l;
}

// ---------------------------------------------------------------- chunk routing

/// What process() does with one chunk.
enum class Route : std::uint8_t {
  eager,            // eager mode: the steps launched one by one
  replay,           // graph mode: replay the graph captured for this frame count
  recapture,        // graph mode: capture a graph for this new frame count, then replay it
  eager_fallback,   // graph mode: no graph for this frame count; run the steps eagerly
};

/// Short name of a route. [no-alloc, no-block]
constexpr const char* route_name(Route r) noexcept {
  switch (r) {
    case Route::eager: return "eager";
    case Route::replay: return "replay";
    case Route::recapture: return "recapture";
    case Route::eager_fallback: return "eager_fallback";
  }
  return "?";
}

/// Routes a chunk of `frames`. `graph_mode`: CudaOptions::Mode::graph. `captured_frames`:
/// the shape captured at prepare time (the prepared max_frames); `alt_frames`: the shape
/// of the one extra graph kept for another frame count (0 = none); `recapture`:
/// CudaOptions::recapture_on_shape_change. [no-alloc, no-block]
constexpr Route route_chunk(bool graph_mode, int captured_frames, int alt_frames, int frames,
                            bool recapture) noexcept {
  if (!graph_mode) return Route::eager;
  if (frames == captured_frames || (alt_frames > 0 && frames == alt_frames)) return Route::replay;
  return recapture ? Route::recapture : Route::eager_fallback;
}

/// Launches one chunk costs on a route (ProcessStats::launches): one per cascade step when
/// run eagerly, one graph launch when replayed. A chunk of 0 frames launches nothing. [no-alloc, no-block]
constexpr std::uint32_t launches_for(Route r, std::uint32_t cascade_steps, int frames) noexcept {
  if (frames <= 0) return 0;
  return (r == Route::eager || r == Route::eager_fallback) ? cascade_steps : 1u;
}

/// Whether a chunk counts as a shape change: its frame count differs from the previous
/// chunk's (the first chunk is compared with the prepared max_frames). [no-alloc, no-block]
constexpr bool is_shape_change(int previous_frames, int frames) noexcept { return frames != previous_frames; }

}  // namespace chunkscope::cuda_plan
