#include "kernels/gpu.hpp"

namespace chunkscope {

GpuInfo probe_gpu() {
  GpuInfo g;
  g.reason = "this chunkscope was built without CUDA (configure found no nvcc or CHUNKSCOPE_CUDA=OFF)";
  return g;
}

}  // namespace chunkscope
