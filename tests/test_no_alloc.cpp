// Proves the real-time paths allocate nothing: global operator new is replaced by a
// counting one, and the count must not move across many process() calls.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "rt/cpu_backend.hpp"
#include "src/plan.hpp"

namespace {
std::atomic<long> g_news{0};
}

void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::aligned_alloc(static_cast<std::size_t>(a), (n + static_cast<std::size_t>(a) - 1) &
                                                                    ~(static_cast<std::size_t>(a) - 1)))
    return p;
  throw std::bad_alloc();
}
// GCC cannot see that these pair with the counting operator new above.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using namespace chunkscope;

TEST_CASE("the counter counts") {
  const long before = g_news.load();
  auto* v = new std::vector<int>(10);
  delete v;
  CHECK(g_news.load() - before == 2);
}

TEST_CASE("CpuBackend::process allocates nothing over 1000 chunks (f32 and f64, with calibration)") {
  const Plan plan = plan_chain("hp:80:4 | lp:12000:8 | spin:1us:every=3 | peak:1000:gain=2", 48000);
  for (DType dt : {DType::f32, DType::f64}) {
    CpuBackend be;
    REQUIRE(be.prepare({48000, 8, 256, dt}, plan) == Status::ok);
    std::vector<double> buf(256 * 8, 0.25);
    ProcessStats st;
    const long before = g_news.load();
    for (int i = 0; i < 1000; ++i) (void)be.process({buf.data(), 256, 8, dt}, &st);
    be.reset();
    CHECK(g_news.load() - before == 0);
  }
}
