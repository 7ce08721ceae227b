#pragma once
// The processing backend interface: prepare / process / reset.
//   prepare  [allocates, blocks] may fail; sizes everything for the largest chunk.
//   process  [no-alloc, blocks] noexcept, lock-free, returns a Status; only the CUDA
//            backend blocks (it waits for the GPU to finish the chunk).
//   reset    [no-alloc, blocks] clears filter state without reallocating.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "rt/status.hpp"

namespace chunkscope {

enum class DType : std::uint8_t { f32, f64 };

/// "f32" / "f64". [no-alloc, no-block]
constexpr const char* dtype_name(DType d) noexcept { return d == DType::f32 ? "f32" : "f64"; }
/// [no-alloc, no-block]
constexpr unsigned dtype_size(DType d) noexcept { return d == DType::f32 ? 4u : 8u; }

inline constexpr int kMaxChannels = 64;       // of a stream (a file, a device, a signal)
inline constexpr int kMaxChunkChannels = 1024; // of a chunk: a --batch chunk holds several streams' channels
inline constexpr int kMaxChunkFrames = 65536;
inline constexpr int kMaxTimedSteps = 16;     // steps timed one by one; later steps share the last slot

class HostedFactory;  // rt/hosted.hpp
struct HostedWatch;   // rt/hosted.hpp

struct ProcessSpec {
  double rate = 48000;
  int channels = 2;
  int max_frames = 1024;  // largest chunk process() will see
  DType dtype = DType::f32;
  bool flush_denormals = true;  // CPU: process with FTZ/DAZ set (--ftz); off: subnormals computed as they come
};

/// Interleaved samples of one chunk, processed in place.
struct AudioView {
  void* data = nullptr;
  int frames = 0;
  int channels = 0;
  DType dtype = DType::f32;
  std::uint64_t seq = 0;  // the chunk's sequence number, for the audit and crash notes
};

/// What one process() call did and where its time went (ns). Written by the backend.
struct ProcessStats {
  std::uint32_t dispatches = 0;    // native filter passes (CPU loops or kernels)
  std::uint32_t launches = 0;      // kernel or graph launches (0 on the CPU)
  std::uint32_t host_steps = 0;    // calibration steps paid in this chunk
  std::int64_t launch_ns = 0;      // CPU time inside CUDA API calls
  std::int64_t h2d_ns = 0;         // GPU event times
  std::int64_t kernel_ns = 0;
  std::int64_t d2h_ns = 0;
  std::int64_t sync_ns = 0;        // CPU time waiting for the GPU
  std::int64_t calib_ns = 0;       // time spent in spin/sleep steps
  // Each planned step's own time (CPU backend): wall ns from the step's start to its end
  // (a hosted step: its call alone, not the conversions around it), and for hosted steps the
  // thread's CPU time in the call (0 for the others). Clamped to 2^32-1 ns; steps from
  // kMaxTimedSteps on add into the last slot. `steps`: slots written.
  std::uint32_t steps = 0;
  std::int64_t hosted_blocked_ns = 0;  // hosted calls that waited voluntarily: their wall - CPU time
  std::uint32_t step_ns[kMaxTimedSteps] = {};
  std::uint32_t step_cpu_ns[kMaxTimedSteps] = {};
  // With the processing thread's context-switch record (rt/sched_record.hpp): every step's
  // CPU time is its wall time less its time off the CPU, and this is the part of that time
  // the thread was preempted (the platform's); the rest off the CPU it was blocked.
  std::uint32_t step_preempt_ns[kMaxTimedSteps] = {};
};

/// One planned step as a backend runs it: a cascade's place in the flat coefficient and
/// state arrays, or a calibration step.
struct StepLayout {
  enum class Kind : std::uint8_t { cascade, spin, sleep, hosted } kind = Kind::cascade;
  int sections = 0;
  std::size_t coef_offset = 0;   // values into the coefficient array (5 per section)
  std::size_t state_offset = 0;  // values into the state array (2 per section per channel)
  std::int64_t time_ns = 0;      // spin/sleep
  std::uint32_t every = 1;       // spin/sleep: paid by one chunk in `every`
  std::uint32_t hosted = 0;      // hosted: index into ChainLayout::hosted
};

/// A planned chain laid out for a backend with a given channel count: one record per step,
/// every cascade's sections in one array as {b0, b1, b2, a1, a2} (a0 = 1), and the length of
/// the state array (2 values per section per channel). The planner makes it
/// (lay_out_plan() in the non-real-time library) and hands it down to prepare(); backends
/// never see the plan itself. Plain data: copying it allocates.
struct ChainLayout {
  std::vector<StepLayout> steps;
  std::vector<double> coef;
  std::size_t state_values = 0;
  std::uint32_t cascades = 0;   // cascade steps (dispatches per chunk)
  bool fused = true;            // label for reports: the planner fused consecutive filters
  // the code of each hosted step (rt/hosted.hpp), in step order; backends that cannot host
  // refuse a layout that has any
  std::vector<std::shared_ptr<const HostedFactory>> hosted;
};

/// What a backend did since prepare()/reset(), for reports. Plain counters.
struct BackendCounters {
  bool operator==(const BackendCounters&) const = default;
  std::uint64_t chunks = 0;            // process() calls that succeeded
  std::uint64_t kernel_launches = 0;   // kernels launched one by one (eager)
  std::uint64_t graph_launches = 0;    // cudaGraphLaunch calls (graph replay)
  std::uint64_t graph_captures = 0;    // stream captures instantiated (first one included)
  std::uint64_t graph_recaptures = 0;  // captures after the first, for a new chunk shape
  std::uint64_t eager_fallbacks = 0;   // chunks run eagerly in graph mode (shape not captured)
  std::uint64_t shape_changes = 0;     // chunks whose frame count differed from the previous one
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// Short name for reports ("cpu", "cuda"). [no-alloc, no-block]
  virtual const char* name() const noexcept = 0;
  /// Execution mode for reports ("fused", "unfused", "eager", "graph"). [no-alloc, no-block]
  virtual const char* mode() const noexcept = 0;
  /// Sizes state and scratch for `spec` and the laid-out chain. [allocates, blocks]
  virtual Status prepare(const ProcessSpec& spec, const ChainLayout& layout) = 0;
  /// Runs the plan over one chunk in place, carrying state. [no-alloc, blocks]: the CPU
  /// backend never blocks; the CUDA backend waits for the GPU to finish the chunk.
  virtual Status process(AudioView io, ProcessStats* stats) noexcept = 0;
  /// Zeroes filter state and chunk counters. [no-alloc, blocks]: the CUDA backend waits for
  /// the device to clear its state.
  virtual void reset() noexcept = 0;
  /// Counters since prepare()/reset(). [no-alloc, no-block]
  virtual BackendCounters counters() const noexcept { return {}; }
  /// Filter state values carried across chunks (all sections, all channels). [no-alloc, no-block]
  virtual std::size_t state_values() const noexcept { return 0; }
  /// Text of the last failure that process() or prepare() reported as a status (e.g. the
  /// CUDA error string), or "" when there is none. [no-alloc, no-block] A stored buffer.
  virtual const char* last_error() const noexcept { return ""; }
  /// The hosted call under way on the processing thread, for a watchdog on another thread;
  /// nullptr for a backend that runs no hosted code. [no-alloc, no-block]
  virtual const HostedWatch* hosted_watch() const noexcept { return nullptr; }
};

}  // namespace chunkscope
