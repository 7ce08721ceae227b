#include "src/report/format.hpp"

#include <cmath>
#include <fmt/format.h>

namespace chunkscope {

std::string fmt_time(double ns) {
  const double a = std::fabs(ns);
  if (a >= 1e9) return fmt::format("{:.3f} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (a >= 1e3) return fmt::format("{:.1f} µs", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string hex64(std::uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace chunkscope
