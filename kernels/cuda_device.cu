// Device probing for the CUDA build: is there a usable GPU, and which.
#include <cuda_runtime.h>

#include <string>

#include "kernels/gpu.hpp"

namespace chunkscope {

// [no-alloc, no-block]
bool cuda_built() noexcept { return true; }

// [allocates, blocks] Initialises the CUDA runtime and allocates strings.
GpuInfo probe_gpu() {
  GpuInfo g;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    // without an NVIDIA driver (or with one older than this CUDA runtime) the runtime says
    // "driver version is insufficient": say what that means on a machine without a GPU
    g.reason = e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice
                   ? std::string("no usable CUDA device: no NVIDIA GPU with a driver this CUDA runtime can use was found (") +
                         cudaGetErrorString(e) + ")"
                   : std::string("no usable CUDA device: ") + cudaGetErrorString(e);
    cudaGetLastError();
    return g;
  }
  if (n == 0) {
    g.reason = "no CUDA device found (cudaGetDeviceCount reports 0 devices)";
    return g;
  }
  cudaDeviceProp p{};
  e = cudaGetDeviceProperties(&p, 0);
  if (e != cudaSuccess) {
    g.reason = std::string("cannot read CUDA device 0: ") + cudaGetErrorString(e);
    cudaGetLastError();
    return g;
  }
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  g.available = true;
  g.name = p.name;
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.driver = "driver " + std::to_string(drv / 1000) + "." + std::to_string((drv % 1000) / 10) + ", runtime " +
             std::to_string(rt / 1000) + "." + std::to_string((rt % 1000) / 10);
  return g;
}

}  // namespace chunkscope
