#pragma once
// Checksums of chunk samples, so a run can record what its processor produced and a later
// isolated replay can prove it computed the same thing. FNV-1a over the raw bytes:
// bit-exact, order-sensitive, cheap. [no-alloc, no-block]
#include <cstddef>
#include <cstdint>

namespace chunkscope {

inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull;
inline constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;

/// FNV-1a 64 of `bytes` bytes at `p`, continuing from `h`. [no-alloc, no-block]
inline std::uint64_t fnv1a64(const void* p, std::size_t bytes, std::uint64_t h = kFnvOffset) noexcept {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= b[i];
    h *= kFnvPrime;
  }
  return h;
}

}  // namespace chunkscope
