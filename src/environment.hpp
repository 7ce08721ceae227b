#pragma once
// The machine's description for report headers: version, commit, CPU, OS, compiler. (Its
// load over a run is src/machine_load.hpp; its wake-up and hand-off floor is
// rt/baseline_probe.hpp.)
#include <string>

namespace chunkscope {

struct Environment {
  bool operator==(const Environment&) const = default;
  std::string version, commit, cpu, os, compiler, build;
  int logical_cpus = 0;
  bool cuda_built = false;
};

/// Reads the environment once (e.g. /proc/cpuinfo, uname). Not real-time.
Environment probe_environment();

}  // namespace chunkscope
