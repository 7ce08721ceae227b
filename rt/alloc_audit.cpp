#include "rt/alloc_audit.hpp"

#include <atomic>
#include <cstddef>
#include <unistd.h>

// Defined by rt/alloc_interpose.cpp where a binary links the interposer (the chunkscope
// executable and the test programs; not the probe library, which must leave an
// application's allocator alone).
extern "C" {
extern const bool chunkscope_alloc_interposer_linked __attribute__((weak));
}

namespace chunkscope::alloc_audit {
namespace {
// Static TLS of the executable: reading it never allocates.
__attribute__((tls_model("initial-exec"))) thread_local bool tl_armed = false;
__attribute__((tls_model("initial-exec"))) thread_local Counts tl_counts{};
std::atomic<bool> g_count_all{false};
std::atomic<std::uint64_t> g_all{0};
}  // namespace

void count_all(bool on) noexcept { g_count_all.store(on, std::memory_order_relaxed); }

std::uint64_t all_allocations() noexcept { return g_all.load(std::memory_order_relaxed); }

bool interposer_active() noexcept { return &chunkscope_alloc_interposer_linked != nullptr; }

void arm() noexcept {
  tl_counts = Counts{};
  tl_armed = true;
}

Counts disarm() noexcept {
  tl_armed = false;
  return tl_counts;
}

void note_alloc() noexcept {
  if (tl_armed) ++tl_counts.allocations;
  if (g_count_all.load(std::memory_order_relaxed)) g_all.fetch_add(1, std::memory_order_relaxed);
}

void note_free() noexcept {
  if (tl_armed) ++tl_counts.frees;
}

}  // namespace chunkscope::alloc_audit

