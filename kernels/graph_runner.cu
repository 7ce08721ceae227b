// CudaGraphRunner: stream capture, instantiate once, replay. See kernels/graph_runner.cuh.
#include <cstddef>

#include "kernels/graph_runner.cuh"

namespace chunkscope {

cudaError_t CudaGraphRunner::capture(cudaStream_t stream, int frames, EnqueueFn enqueue, void* ctx,
                                     const char** what) noexcept {
  destroy();
  const char* step = "cudaStreamBeginCapture";
  cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    if (what) *what = step;
    return e;
  }
  const char* enqueue_what = "enqueue";
  const cudaError_t enq = enqueue(ctx, stream, frames, &enqueue_what);
  // Always end the capture, so the stream leaves capture mode even after a failed call.
  cudaGraph_t g = nullptr;
  e = cudaStreamEndCapture(stream, &g);
  if (enq != cudaSuccess) {
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();  // the capture was invalidated; report the call that caused it
    if (what) *what = enqueue_what;
    return enq;
  }
  if (e != cudaSuccess || g == nullptr) {
    if (g) cudaGraphDestroy(g);
    if (what) *what = "cudaStreamEndCapture";
    return e != cudaSuccess ? e : cudaErrorStreamCaptureInvalidated;
  }
  cudaGraphExec_t x = nullptr;
  e = cudaGraphInstantiateWithFlags(&x, g, 0);  // available from CUDA 11.4 to 13
  if (e != cudaSuccess) {
    cudaGraphDestroy(g);
    if (what) *what = "cudaGraphInstantiateWithFlags";
    return e;
  }
  // Uploading now moves the graph's one-time setup out of the first replay.
  e = cudaGraphUpload(x, stream);
  if (e != cudaSuccess) {
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
    if (what) *what = "cudaGraphUpload";
    return e;
  }
  graph_ = g;
  exec_ = x;
  frames_ = frames;
  return cudaSuccess;
}

cudaError_t CudaGraphRunner::launch(cudaStream_t stream) noexcept {
  if (!exec_) return cudaErrorInvalidValue;
  return cudaGraphLaunch(exec_, stream);
}

void CudaGraphRunner::destroy() noexcept {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
  frames_ = 0;
}

std::size_t CudaGraphRunner::nodes() const noexcept {
  if (!graph_) return 0;
  std::size_t n = 0;
  if (cudaGraphGetNodes(graph_, nullptr, &n) != cudaSuccess) return 0;
  return n;
}

}  // namespace chunkscope
