// The CUDA backend: a chunk goes through pinned staging, H2D, the cascade kernels and D2H
// on one dedicated stream, launched step by step (eager) or replayed as a CUDA graph.
//
// Design:
//   prepare  sizes everything for spec.max_frames x channels x dtype: device samples,
//            coefficients and filter state (resident across chunks), one pinned staging
//            buffer (the H2D source and the D2H destination), a non-blocking stream and,
//            with gpu_timing, two sets of four timing events (one for eager runs, one
//            recorded by graph nodes). It runs one warm-up chunk of silence (module load,
//            first-launch costs), and in graph mode captures the chunk's H2D, kernels and
//            D2H for max_frames, instantiates and uploads the graph and replays it once.
//            The state is zeroed afterwards. Any CUDA failure fails prepare with the CUDA
//            error text (last_error()); there is no silent fallback.
//   process  copies the chunk into staging, enqueues the work (eager: one cudaMemcpyAsync,
//            one kernel per cascade step, one cudaMemcpyAsync; graph: one cudaGraphLaunch),
//            waits for the stream, copies the result back and runs the calibration steps
//            on the host. A chunk whose frame count has no graph runs eagerly or gets a
//            graph of its own (CudaOptions::recapture_on_shape_change); the backend keeps
//            the prepared graph plus one for the most recent other frame count.
//   Time     launch_ns: CPU time inside CUDA API calls that enqueue work (copies, kernel
//            launches, event records, graph launch, a recapture) and read the event
//            timers; sync_ns: time blocked in cudaStreamSynchronize; h2d/kernel/d2h_ns:
//            elapsed time between the events (0 without gpu_timing). The host memcpy into
//            and out of pinned staging is in none of them: it is process time outside the
//            CUDA calls.
#include <cuda_runtime.h>
#include <pthread.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cuda_plan.hpp"
#include "kernels/gpu.hpp"
#include "kernels/graph_runner.cuh"
#include "kernels/nvtx.hpp"
#include "kernels/sos_kernels.cuh"
#include "rt/clock.hpp"
#include "rt/cpu_backend.hpp"

namespace chunkscope {
namespace {

constexpr int kEvents = 4;  // before H2D, after H2D, after the kernels, after D2H

class CudaBackend final : public Backend {
 public:
  /// [no-alloc, no-block]
  explicit CudaBackend(const CudaOptions& opt) : opt_(opt) { err_[0] = '\0'; }
  /// Releases every CUDA resource. [no-alloc, blocks]
  ~CudaBackend() override { release(); }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  /// [no-alloc, no-block]
  const char* name() const noexcept override { return "cuda"; }
  /// [no-alloc, no-block]
  const char* mode() const noexcept override { return cuda_mode_name(opt_.mode); }
  /// Allocates device, pinned and graph resources. [allocates, blocks]
  Status prepare(const ProcessSpec& spec, const ChainLayout& layout) override;
  /// [no-alloc, blocks] On the eager and replay routes (no allocation by this code; the CUDA runtime
  /// sets up per-thread state on a thread's first call). A recapture (graph mode with
  /// recapture_on_shape_change) is [allocates, blocks]: the driver allocates the new graph.
  Status process(AudioView io, ProcessStats* stats) noexcept override;
  /// Zeroes the device state and the counters (waits for the stream). [no-alloc, blocks]
  void reset() noexcept override;
  /// [no-alloc, no-block]
  BackendCounters counters() const noexcept override { return counters_; }
  /// [no-alloc, no-block]
  std::size_t state_values() const noexcept override { return state_len_; }
  /// [no-alloc, no-block]
  const char* last_error() const noexcept override { return err_; }

 private:
  using Step = StepLayout;  // offsets into d_coef_ and d_state_

  // Enqueues H2D, the kernels and D2H for `frames`; with `ev`, records the timing events
  // (as graph nodes when `capturing`). [no-alloc, no-block] No host allocation.
  cudaError_t enqueue_chunk(int frames, const cudaEvent_t* ev, bool capturing, const char** what) noexcept;
  template <class T>
  cudaError_t enqueue_kernels(int frames, const char** what) noexcept;
  // CudaGraphRunner callback. [no-alloc, no-block]
  static cudaError_t enqueue_captured(void* self, cudaStream_t stream, int frames, const char** what) noexcept;
  // Reads the three stage times from `ev` into `st`. [no-alloc, blocks] Event queries after the stream was synchronised.
  cudaError_t read_timers(const cudaEvent_t* ev, ProcessStats& st) noexcept;
  // Binds device 0 to the calling thread once per thread. [no-alloc, no-block] (see process())
  cudaError_t ensure_device() noexcept;
  // Captures a graph for `frames` into `runner`, with the error text on failure. [allocates, blocks]
  Status capture_into(CudaGraphRunner& runner, int frames) noexcept;
  // Stores "what: CUDA error text" for last_error() and returns `s`. [no-alloc, no-block]
  Status fail(Status s, const char* what, cudaError_t e) noexcept;
  /// fail() for an error in the middle of a chunk: drains the stream first. [no-alloc, blocks] (error path)
  Status fail_chunk(const char* what, cudaError_t e) noexcept;
  void set_error(const char* a, const char* b = nullptr, const char* c = nullptr, const char* d = nullptr) noexcept;
  // Frees everything prepare allocated. [no-alloc, blocks]
  void release() noexcept;

  CudaOptions opt_;
  ProcessSpec spec_{};
  bool prepared_ = false;
  std::vector<Step> steps_;
  std::uint32_t cascade_steps_ = 0;
  std::size_t coef_len_ = 0;
  std::size_t state_len_ = 0;

  cudaStream_t stream_ = nullptr;
  void* d_data_ = nullptr;
  void* d_coef_ = nullptr;
  void* d_state_ = nullptr;
  void* h_stage_ = nullptr;
  cudaEvent_t ev_eager_[kEvents] = {};
  cudaEvent_t ev_graph_[kEvents] = {};
  CudaGraphRunner main_graph_;  // captured at prepare for max_frames
  CudaGraphRunner alt_graph_;   // the most recent other frame count (recapture policy)

  BackendCounters counters_{};
  std::uint64_t chunk_index_ = 0;
  int prev_frames_ = 0;
  pthread_t device_thread_{};
  bool device_thread_set_ = false;
  char err_[320];
};

// ---------------------------------------------------------------- errors

void CudaBackend::set_error(const char* a, const char* b, const char* c, const char* d) noexcept {
  std::size_t n = 0;
  const std::size_t cap = sizeof(err_) - 1;
  for (const char* p : {a, b, c, d}) {
    if (!p) continue;
    if (n > 0 && n + 2 <= cap) {
      err_[n++] = ':';
      err_[n++] = ' ';
    }
    const std::size_t len = std::min(std::strlen(p), cap - n);
    std::memcpy(err_ + n, p, len);
    n += len;
  }
  err_[n] = '\0';
}

Status CudaBackend::fail(Status s, const char* what, cudaError_t e) noexcept {
  set_error(what, cudaGetErrorName(e), cudaGetErrorString(e));
  // Clear the runtime's sticky per-thread error so that a later, unrelated launch check
  // (cudaGetLastError after a kernel) does not report this failure again.
  (void)cudaGetLastError();
  return s;
}

Status CudaBackend::fail_chunk(const char* what, cudaError_t e) noexcept {
  // Work already queued for this chunk may still use the pinned staging and the events:
  // let it finish before the next chunk reuses them.
  if (stream_) (void)cudaStreamSynchronize(stream_);
  return fail(Status::device_error, what, e);
}

// ---------------------------------------------------------------- prepare / release

void CudaBackend::release() noexcept {
  if (stream_) cudaStreamSynchronize(stream_);
  main_graph_.destroy();
  alt_graph_.destroy();
  for (auto& e : ev_eager_)
    if (e) cudaEventDestroy(e), e = nullptr;
  for (auto& e : ev_graph_)
    if (e) cudaEventDestroy(e), e = nullptr;
  if (d_data_) cudaFree(d_data_), d_data_ = nullptr;
  if (d_coef_) cudaFree(d_coef_), d_coef_ = nullptr;
  if (d_state_) cudaFree(d_state_), d_state_ = nullptr;
  if (h_stage_) cudaFreeHost(h_stage_), h_stage_ = nullptr;
  if (stream_) cudaStreamDestroy(stream_), stream_ = nullptr;
  prepared_ = false;
}

Status CudaBackend::prepare(const ProcessSpec& spec, const ChainLayout& layout) {
  release();
  err_[0] = '\0';
  if (spec.channels < 1 || spec.channels > kMaxChunkChannels || spec.max_frames < 1 ||
      spec.max_frames > kMaxChunkFrames || !(spec.rate > 0)) {
    set_error("invalid spec: channels must be 1..1024, max_frames 1..65536 and the rate above 0");
    return Status::invalid_argument;
  }
  spec_ = spec;
  const unsigned ts = dtype_size(spec.dtype);

  // Steps, coefficients and state: the layout the CPU backend runs too.
  ChainLayout lay = layout;
  steps_ = std::move(lay.steps);
  cascade_steps_ = lay.cascades;
  const std::vector<double>& coef64 = lay.coef;
  coef_len_ = coef64.size();
  state_len_ = lay.state_values;

  cudaError_t e = cudaSetDevice(0);
  if (e != cudaSuccess) return fail(Status::no_device, "cudaSetDevice(0)", e);
  device_thread_ = pthread_self();
  device_thread_set_ = true;

  const std::size_t data_bytes = static_cast<std::size_t>(spec.max_frames) * spec.channels * ts;
  if ((e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)) != cudaSuccess)
    return fail(Status::device_error, "cudaStreamCreateWithFlags", e);
  if ((e = cudaMalloc(&d_data_, data_bytes)) != cudaSuccess) return fail(Status::device_error, "cudaMalloc (samples)", e);
  if ((e = cudaMalloc(&d_coef_, std::max<std::size_t>(1, coef_len_) * ts)) != cudaSuccess)
    return fail(Status::device_error, "cudaMalloc (coefficients)", e);
  if ((e = cudaMalloc(&d_state_, std::max<std::size_t>(1, state_len_) * ts)) != cudaSuccess)
    return fail(Status::device_error, "cudaMalloc (filter state)", e);
  if ((e = cudaHostAlloc(&h_stage_, data_bytes, cudaHostAllocDefault)) != cudaSuccess)
    return fail(Status::device_error, "cudaHostAlloc (pinned staging)", e);
  std::memset(h_stage_, 0, data_bytes);

  if (coef_len_ > 0) {
    if (spec.dtype == DType::f64) {
      e = cudaMemcpyAsync(d_coef_, coef64.data(), coef_len_ * ts, cudaMemcpyHostToDevice, stream_);
    } else {
      std::vector<float> coef32(coef64.begin(), coef64.end());
      e = cudaMemcpyAsync(d_coef_, coef32.data(), coef_len_ * ts, cudaMemcpyHostToDevice, stream_);
      if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);  // coef32 goes out of scope
    }
    if (e != cudaSuccess) return fail(Status::device_error, "cudaMemcpyAsync (coefficients)", e);
  }
  if ((e = cudaMemsetAsync(d_state_, 0, std::max<std::size_t>(1, state_len_) * ts, stream_)) != cudaSuccess)
    return fail(Status::device_error, "cudaMemsetAsync (filter state)", e);

  if (opt_.gpu_timing) {
    for (auto& ev : ev_eager_)
      if ((e = cudaEventCreateWithFlags(&ev, cudaEventDefault)) != cudaSuccess)
        return fail(Status::device_error, "cudaEventCreate", e);
    if (opt_.mode == CudaOptions::Mode::graph)
      for (auto& ev : ev_graph_)
        if ((e = cudaEventCreateWithFlags(&ev, cudaEventDefault)) != cudaSuccess)
          return fail(Status::device_error, "cudaEventCreate", e);
  }

  // Warm-up: one eager chunk of silence (zero input and zero state leave the state zero).
  const char* what = "warm-up";
  if ((e = enqueue_chunk(spec.max_frames, opt_.gpu_timing ? ev_eager_ : nullptr, false, &what)) != cudaSuccess)
    return fail(Status::device_error, what, e);
  if ((e = cudaStreamSynchronize(stream_)) != cudaSuccess)
    return fail(Status::device_error, "warm-up chunk (cudaStreamSynchronize)", e);
  if (opt_.gpu_timing) {
    ProcessStats probe{};
    if ((e = read_timers(ev_eager_, probe)) != cudaSuccess)
      return fail(Status::device_error, "cudaEventElapsedTime (eager timing)", e);
  }

  if (opt_.mode == CudaOptions::Mode::graph) {
    const Status s = capture_into(main_graph_, spec.max_frames);
    if (!ok(s)) return s;
    if ((e = main_graph_.launch(stream_)) != cudaSuccess) return fail(Status::device_error, "cudaGraphLaunch (first replay)", e);
    if ((e = cudaStreamSynchronize(stream_)) != cudaSuccess)
      return fail(Status::device_error, "first graph replay (cudaStreamSynchronize)", e);
    if (opt_.gpu_timing) {
      ProcessStats probe{};
      if ((e = read_timers(ev_graph_, probe)) != cudaSuccess)
        return fail(Status::device_error, "cudaEventElapsedTime on events recorded by the graph (try --gpu-timing off)",
                    e);
    }
  }

  if ((e = cudaMemsetAsync(d_state_, 0, std::max<std::size_t>(1, state_len_) * ts, stream_)) != cudaSuccess)
    return fail(Status::device_error, "cudaMemsetAsync (filter state)", e);
  if ((e = cudaStreamSynchronize(stream_)) != cudaSuccess) return fail(Status::device_error, "cudaStreamSynchronize", e);

  counters_ = {};
  counters_.graph_captures = main_graph_.ready() ? 1 : 0;
  chunk_index_ = 0;
  prev_frames_ = spec.max_frames;
  prepared_ = true;
  return Status::ok;
}

Status CudaBackend::capture_into(CudaGraphRunner& runner, int frames) noexcept {
  const char* what = "capture";
  const cudaError_t e = runner.capture(stream_, frames, &CudaBackend::enqueue_captured, this, &what);
  if (e == cudaSuccess) return Status::ok;
  char n[16] = {};
  std::to_chars(n, n + sizeof(n) - 1, frames);
  set_error("CUDA graph capture failed", what, cudaGetErrorName(e), cudaGetErrorString(e));
  // Name the shape as well, when there is room.
  const std::size_t len = std::strlen(err_);
  const char* tail[] = {" (chunk of ", n, " frames)"};
  std::size_t pos = len;
  for (const char* p : tail) {
    const std::size_t l = std::strlen(p);
    if (pos + l >= sizeof(err_)) break;
    std::memcpy(err_ + pos, p, l);
    pos += l;
  }
  err_[pos] = '\0';
  return Status::device_error;
}

// ---------------------------------------------------------------- enqueue

template <class T>
cudaError_t CudaBackend::enqueue_kernels(int frames, const char** what) noexcept {
  T* d_data = static_cast<T*>(d_data_);
  const T* d_coef = static_cast<const T*>(d_coef_);
  T* d_state = static_cast<T*>(d_state_);
  for (const auto& st : steps_) {
    if (st.kind != Step::Kind::cascade) continue;
    NvtxRange r("cascade");
    const auto layout = cuda_plan::choose_sos_layout(frames, spec_.channels, st.sections);
    const cudaError_t e = launch_sos_cascade<T>(stream_, layout, d_data, frames, spec_.channels, d_coef + st.coef_offset,
                                                st.sections, d_state + st.state_offset);
    if (e != cudaSuccess) {
      *what = "SOS cascade kernel launch";
      return e;
    }
  }
  return cudaSuccess;
}

cudaError_t CudaBackend::enqueue_chunk(int frames, const cudaEvent_t* ev, bool capturing, const char** what) noexcept {
  const std::size_t bytes = static_cast<std::size_t>(frames) * spec_.channels * dtype_size(spec_.dtype);
  // During capture an event record must become a graph node (cudaEventRecordExternal);
  // a plain record would only mark a dependency inside the capture.
  auto record = [&](int i) noexcept {
    return capturing ? cudaEventRecordWithFlags(ev[i], stream_, cudaEventRecordExternal) : cudaEventRecord(ev[i], stream_);
  };
  auto failed = [what](const char* call, cudaError_t err) noexcept {
    *what = call;
    return err;
  };
  cudaError_t e = cudaSuccess;
  if (ev && (e = record(0)) != cudaSuccess) return failed("cudaEventRecord", e);
  {
    NvtxRange r("h2d");
    if ((e = cudaMemcpyAsync(d_data_, h_stage_, bytes, cudaMemcpyHostToDevice, stream_)) != cudaSuccess)
      return failed("cudaMemcpyAsync (H2D)", e);
  }
  if (ev && (e = record(1)) != cudaSuccess) return failed("cudaEventRecord", e);
  e = spec_.dtype == DType::f32 ? enqueue_kernels<float>(frames, what) : enqueue_kernels<double>(frames, what);
  if (e != cudaSuccess) return e;
  if (ev && (e = record(2)) != cudaSuccess) return failed("cudaEventRecord", e);
  {
    NvtxRange r("d2h");
    if ((e = cudaMemcpyAsync(h_stage_, d_data_, bytes, cudaMemcpyDeviceToHost, stream_)) != cudaSuccess)
      return failed("cudaMemcpyAsync (D2H)", e);
  }
  if (ev && (e = record(3)) != cudaSuccess) return failed("cudaEventRecord", e);
  return cudaSuccess;
}

cudaError_t CudaBackend::enqueue_captured(void* self, cudaStream_t, int frames, const char** what) noexcept {
  auto* b = static_cast<CudaBackend*>(self);
  return b->enqueue_chunk(frames, b->opt_.gpu_timing ? b->ev_graph_ : nullptr, true, what);
}

cudaError_t CudaBackend::read_timers(const cudaEvent_t* ev, ProcessStats& st) noexcept {
  float ms[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    const cudaError_t e = cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]);
    if (e != cudaSuccess) return e;
  }
  st.h2d_ns = std::llround(static_cast<double>(ms[0]) * 1e6);
  st.kernel_ns = std::llround(static_cast<double>(ms[1]) * 1e6);
  st.d2h_ns = std::llround(static_cast<double>(ms[2]) * 1e6);
  return cudaSuccess;
}

cudaError_t CudaBackend::ensure_device() noexcept {
  // The engine calls process() from its processor thread, not the one that prepared.
  // Binding the device is a no-op for the runtime's current-device default (0), but makes
  // the choice explicit; on a thread's first CUDA call the runtime sets up its per-thread
  // state once (a host allocation outside our control), never again on later chunks.
  const pthread_t self = pthread_self();
  if (device_thread_set_ && pthread_equal(self, device_thread_)) return cudaSuccess;
  const cudaError_t e = cudaSetDevice(0);
  if (e == cudaSuccess) {
    device_thread_ = self;
    device_thread_set_ = true;
  }
  return e;
}

// ---------------------------------------------------------------- process / reset

Status CudaBackend::process(AudioView io, ProcessStats* stats) noexcept {
  if (!prepared_) return Status::not_prepared;
  if (io.channels != spec_.channels || io.dtype != spec_.dtype || io.frames < 0 || io.frames > spec_.max_frames ||
      (io.frames > 0 && io.data == nullptr))
    return Status::shape_mismatch;
  NvtxRange chunk_range("chunk");
  ProcessStats local{};
  const int frames = io.frames;
  const bool graph = opt_.mode == CudaOptions::Mode::graph;

  if (cuda_plan::is_shape_change(prev_frames_, frames)) ++counters_.shape_changes;
  prev_frames_ = frames;

  if (frames > 0) {
    const std::size_t bytes = static_cast<std::size_t>(frames) * spec_.channels * dtype_size(spec_.dtype);
    const auto route =
        cuda_plan::route_chunk(graph, main_graph_.frames(), alt_graph_.frames(), frames, opt_.recapture_on_shape_change);
    {
      NvtxRange r("stage in");
      std::memcpy(h_stage_, io.data, bytes);
    }
    cudaError_t e = ensure_device();
    if (e != cudaSuccess) return fail(Status::device_error, "cudaSetDevice(0)", e);
    const std::int64_t t0 = now_ns();  // after the one-time per-thread setup above
    const cudaEvent_t* ev = nullptr;
    switch (route) {
      case cuda_plan::Route::eager:
      case cuda_plan::Route::eager_fallback: {
        ev = opt_.gpu_timing ? ev_eager_ : nullptr;
        const char* what = "enqueue";
        if ((e = enqueue_chunk(frames, ev, false, &what)) != cudaSuccess) return fail_chunk(what, e);
        counters_.kernel_launches += cascade_steps_;
        if (route == cuda_plan::Route::eager_fallback) ++counters_.eager_fallbacks;
        break;
      }
      case cuda_plan::Route::recapture: {
        NvtxRange r("recapture");
        const Status s = capture_into(alt_graph_, frames);
        if (!ok(s)) return s;
        ++counters_.graph_captures;
        ++counters_.graph_recaptures;
      }
        [[fallthrough]];
      case cuda_plan::Route::replay: {
        NvtxRange r("graph launch");
        ev = opt_.gpu_timing ? ev_graph_ : nullptr;
        CudaGraphRunner& g = frames == main_graph_.frames() ? main_graph_ : alt_graph_;
        if ((e = g.launch(stream_)) != cudaSuccess) return fail_chunk("cudaGraphLaunch", e);
        ++counters_.graph_launches;
        break;
      }
    }
    local.launches = cuda_plan::launches_for(route, cascade_steps_, frames);
    const std::int64_t t1 = now_ns();
    {
      NvtxRange r("sync");
      e = cudaStreamSynchronize(stream_);
    }
    const std::int64_t t2 = now_ns();
    if (e != cudaSuccess) return fail(Status::device_error, "cudaStreamSynchronize (chunk)", e);
    {
      NvtxRange r("stage out");
      std::memcpy(io.data, h_stage_, bytes);
    }
    std::int64_t t3 = 0, t4 = 0;
    if (ev) {
      t3 = now_ns();
      if ((e = read_timers(ev, local)) != cudaSuccess) return fail(Status::device_error, "cudaEventElapsedTime", e);
      t4 = now_ns();
    }
    local.launch_ns = (t1 - t0) + (t4 - t3);
    local.sync_ns = t2 - t1;
  }

  local.dispatches = cascade_steps_;  // as on the CPU: every call counts its cascade passes

  // Calibration steps run on the host after the chunk's GPU work, in plan order.
  for (const auto& st : steps_) {
    if (st.kind == Step::Kind::cascade || chunk_index_ % st.every != 0) continue;
    NvtxRange r("calibration");
    pay_calibration(st.kind == Step::Kind::spin, st.time_ns, local);
  }
  ++chunk_index_;
  ++counters_.chunks;
  if (stats) *stats = local;
  return Status::ok;
}

void CudaBackend::reset() noexcept {
  if (!prepared_) return;
  // The caller's thread (not the processor thread) may reset: bind the device here without
  // taking over the processor thread's binding.
  cudaError_t e = cudaSetDevice(0);
  if (e == cudaSuccess)
    e = cudaMemsetAsync(d_state_, 0, std::max<std::size_t>(1, state_len_) * dtype_size(spec_.dtype), stream_);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
  if (e != cudaSuccess) fail(Status::device_error, "reset (cudaMemsetAsync filter state)", e);
  counters_ = {};  // graphs already captured stay instantiated but are not counted again
  chunk_index_ = 0;
  prev_frames_ = spec_.max_frames;
}

}  // namespace

// [allocates, blocks] Probes the device and prepares the backend.
std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& opt, const ChainLayout& layout, const ProcessSpec& spec,
                                           std::string* error) {
  try {
    const GpuInfo gpu = probe_gpu();
    if (!gpu.available) {
      if (error) *error = gpu.reason;
      return nullptr;
    }
    auto b = std::make_unique<CudaBackend>(opt);
    const Status s = b->prepare(spec, layout);
    if (!ok(s)) {
      if (error) {
        const char* text = b->last_error();
        *error = std::string("CUDA backend prepare failed: ") + (text && *text ? text : describe(s));
      }
      return nullptr;
    }
    return b;
  } catch (const std::exception& ex) {
    if (error) *error = std::string("CUDA backend: ") + ex.what();
    return nullptr;
  }
}

}  // namespace chunkscope
