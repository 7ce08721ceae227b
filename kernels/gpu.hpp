#pragma once
// GPU probing. The same interface exists in builds without CUDA, where it answers
// "built without CUDA" at run time. Not real-time.
#include <string>

namespace chunkscope {

struct GpuInfo {
  bool available = false;
  std::string name;     // device 0
  std::string driver;   // driver / runtime versions
  std::string reason;   // why not available
  int cc_major = 0, cc_minor = 0;
};

/// Looks for a usable CUDA device. Never throws.
GpuInfo probe_gpu();

}  // namespace chunkscope
