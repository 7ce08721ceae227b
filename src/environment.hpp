#pragma once
// The workload's environment for report headers: version, commit, CPU, OS, compiler.
#include <string>

namespace chunkscope {

struct Environment {
  std::string version, commit, cpu, os, compiler, build;
  int logical_cpus = 0;
  bool cuda_built = false;
};

/// Reads the environment once (e.g. /proc/cpuinfo, uname). Not real-time.
Environment probe_environment();

}  // namespace chunkscope
