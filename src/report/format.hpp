#pragma once
// Number formatting shared by every text writer. Not real-time.
#include <cstdint>
#include <string>

namespace chunkscope {

/// Formats ns as "4.710 ms" / "812.0 µs" / "95 ns" / "1.250 s".
std::string fmt_time(double ns);

/// Hex text of a 64-bit checksum (16 lower-case digits).
std::string hex64(std::uint64_t v);

}  // namespace chunkscope
