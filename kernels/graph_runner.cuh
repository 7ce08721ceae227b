#pragma once
// CudaGraphRunner: captures the work of one chunk shape into a CUDA graph by stream
// capture, instantiates it once, and replays it with one graph launch per chunk.
//
// Design: the runner knows nothing about audio; the caller hands it a function that
// enqueues one chunk's work (H2D copy, kernels, D2H copy, optional event records) on a
// stream, for a given frame count. Every pointer that work touches (pinned staging, device
// samples, coefficients, filter state) is fixed at prepare time, so the instantiated graph
// stays valid for as long as those buffers live, and the filter state it updates carries
// from one replay to the next. A graph is bound to one frame count; a different count
// needs another capture (or an eager run), which the backend decides.
#include <cuda_runtime.h>

namespace chunkscope {

class CudaGraphRunner {
 public:
  /// Enqueues one chunk of `frames` on `stream`; returns the first error. On failure sets
  /// *what to a literal naming the call that failed.
  using EnqueueFn = cudaError_t (*)(void* ctx, cudaStream_t stream, int frames, const char** what) noexcept;

  CudaGraphRunner() = default;
  /// Destroys the graph. [no-alloc, blocks]
  ~CudaGraphRunner() { destroy(); }
  CudaGraphRunner(const CudaGraphRunner&) = delete;
  CudaGraphRunner& operator=(const CudaGraphRunner&) = delete;

  /// Captures what `enqueue` puts on `stream` (thread-local capture mode) for `frames`,
  /// instantiates it and uploads it, replacing any previous graph. On failure the runner is
  /// empty, the stream has left capture mode, and *what names the step that failed
  /// ("cudaStreamBeginCapture", the enqueued call, "cudaStreamEndCapture",
  /// "cudaGraphInstantiate", "cudaGraphUpload"). [allocates, blocks] The driver allocates.
  cudaError_t capture(cudaStream_t stream, int frames, EnqueueFn enqueue, void* ctx, const char** what) noexcept;

  /// One graph launch on `stream`. [no-alloc, no-block] No host allocation by this code.
  cudaError_t launch(cudaStream_t stream) noexcept;

  /// Releases the graph and its executable. [no-alloc, blocks]
  void destroy() noexcept;

  /// True when a graph is instantiated. [no-alloc, no-block]
  bool ready() const noexcept { return exec_ != nullptr; }
  /// Frame count the graph was captured for (0 when empty). [no-alloc, no-block]
  int frames() const noexcept { return exec_ ? frames_ : 0; }
  /// Nodes in the captured graph (0 when empty). [no-alloc, blocks] Asks the driver.
  std::size_t nodes() const noexcept;

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  int frames_ = 0;
};

}  // namespace chunkscope
