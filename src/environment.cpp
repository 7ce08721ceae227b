#include "src/environment.hpp"

#include <fmt/format.h>
#include <fstream>
#include <sys/utsname.h>
#include <thread>

#include "chunkscope/version.hpp"

namespace chunkscope {

Environment probe_environment() {
  Environment e;
  e.version = kVersion;
  e.commit = kGitCommit;
  e.cuda_built = kBuiltWithCuda;
  e.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  std::ifstream ci("/proc/cpuinfo");
  std::string line;
  while (std::getline(ci, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) e.cpu = line.substr(line.find_first_not_of(' ', p + 1));
      break;
    }
  }
  if (e.cpu.empty()) e.cpu = "unknown CPU";
  utsname u{};
  if (uname(&u) == 0) e.os = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
#if defined(__clang__)
  e.compiler = fmt::format("clang {}.{}", __clang_major__, __clang_minor__);
#elif defined(__GNUC__)
  e.compiler = fmt::format("gcc {}.{}", __GNUC__, __GNUC_MINOR__);
#endif
#ifdef NDEBUG
  e.build = "optimised";
#else
  e.build = "debug";
#endif
  return e;
}


}  // namespace chunkscope
