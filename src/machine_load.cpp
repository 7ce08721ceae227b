#include "src/machine_load.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "rt/clock.hpp"

namespace chunkscope {

std::optional<ProcSnapshot> read_proc_snapshot() {
  ProcSnapshot s;
  s.at_ns = now_ns();
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  s.cpus_online = n > 0 ? static_cast<int>(n) : 0;
  {
    std::ifstream f("/proc/stat");
    std::string line;
    if (!f || !std::getline(f, line)) return std::nullopt;
    std::istringstream in(line);
    std::string label;
    in >> label;
    if (label != "cpu") return std::nullopt;
    // user nice system idle iowait irq softirq steal (older kernels stop earlier)
    std::uint64_t* fields[] = {&s.user, &s.nice, &s.system, &s.idle, &s.iowait, &s.irq, &s.softirq, &s.steal};
    int got = 0;
    for (auto* f_ : fields) {
      if (!(in >> *f_)) break;
      ++got;
    }
    if (got < 4) return std::nullopt;
  }
  {
    std::ifstream f("/proc/loadavg");
    std::string entities;
    if (!(f >> s.load1 >> s.load5 >> s.load15 >> entities)) return std::nullopt;
    const auto slash = entities.find('/');
    if (slash != std::string::npos) {
      try {
        s.runnable = std::stoi(entities.substr(0, slash));
      } catch (const std::exception&) {
        s.runnable = 0;
      }
    }
  }
  return s;
}

std::optional<ProcShares> proc_shares(const ProcSnapshot& a, const ProcSnapshot& b) {
  // a counter that went backwards (iowait may, on some kernels) counts as no change
  auto delta = [](std::uint64_t x, std::uint64_t y) -> double { return y > x ? static_cast<double>(y - x) : 0.0; };
  const double user = delta(a.user, b.user), nice = delta(a.nice, b.nice), system = delta(a.system, b.system),
               idle = delta(a.idle, b.idle), iowait = delta(a.iowait, b.iowait), irq = delta(a.irq, b.irq),
               softirq = delta(a.softirq, b.softirq), steal = delta(a.steal, b.steal);
  const double total = user + nice + system + idle + iowait + irq + softirq + steal;
  if (!(total > 0)) return std::nullopt;
  ProcShares p;
  p.busy = std::clamp(1.0 - (idle + iowait) / total, 0.0, 1.0);
  p.steal = std::clamp(steal / total, 0.0, 1.0);
  return p;
}

}  // namespace chunkscope
