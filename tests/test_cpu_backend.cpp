#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "rt/cpu_backend.hpp"
#include "src/plan.hpp"

using namespace chunkscope;

namespace {

const char* kChain = "hp:80:4 | lp:12000:8 | peak:1000:q=0.7:gain=6 | lowshelf:200:gain=-3";

// The project's scalar reference: one channel, one section after the other, plain double
// arithmetic in transposed direct form II, written independently of the backend.
std::vector<double> reference(const Plan& plan, const std::vector<double>& x, int channels) {
  std::vector<double> y = x;
  const std::size_t frames = x.size() / static_cast<std::size_t>(channels);
  for (const auto& step : plan.steps)
    for (const auto& s : step.sections)
      for (int c = 0; c < channels; ++c) {
        double z1 = 0, z2 = 0;
        for (std::size_t n = 0; n < frames; ++n) {
          double& v = y[n * static_cast<std::size_t>(channels) + static_cast<std::size_t>(c)];
          const double in = v;
          const double out = s[0] * in + z1;
          z1 = s[1] * in - s[4] * out + z2;
          z2 = s[2] * in - s[5] * out;
          v = out;
        }
      }
  return y;
}

template <class T>
std::vector<T> noise(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-0.9, 0.9);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

template <class T>
std::vector<T> run_chunked(const Plan& plan, std::vector<T> x, int channels, std::mt19937* sizes) {
  const DType dt = sizeof(T) == 4 ? DType::f32 : DType::f64;
  CpuBackend be(plan.fused);
  REQUIRE(be.prepare({48000, channels, 4096, dt}, lay_out_plan(plan, channels)) == Status::ok);
  const std::size_t frames = x.size() / static_cast<std::size_t>(channels);
  std::size_t pos = 0;
  std::uniform_int_distribution<int> d(1, 4096);
  while (pos < frames) {
    std::size_t n = sizes ? static_cast<std::size_t>(d(*sizes)) : 4096;
    n = std::min(n, frames - pos);
    REQUIRE(be.process({x.data() + pos * static_cast<std::size_t>(channels), static_cast<int>(n), channels, dt},
                       nullptr) == Status::ok);
    pos += n;
  }
  return x;
}

}  // namespace

TEST_CASE_TEMPLATE("chunked processing is bit-identical to one pass, any chunk sizes", T, float, double) {
  const Plan plan = plan_chain(kChain, 48000);
  for (int ch : {1, 2, 3, 8, 64}) {
    CAPTURE(ch);
    const std::size_t frames = ch == 64 ? 9000 : 30000;
    const auto x = noise<T>(frames * static_cast<std::size_t>(ch), 11u + static_cast<unsigned>(ch));
    std::mt19937 one_rng(1);
    // "one pass": a single chunk holding everything, through a backend sized for it
    std::vector<T> whole = x;
    {
      CpuBackend be;
      const DType dt = sizeof(T) == 4 ? DType::f32 : DType::f64;
      REQUIRE(be.prepare({48000, ch, static_cast<int>(frames), dt}, lay_out_plan(plan, ch)) == Status::ok);
      REQUIRE(be.process({whole.data(), static_cast<int>(frames), ch, dt}, nullptr) == Status::ok);
    }
    std::mt19937 rng(99);
    const auto chunked = run_chunked<T>(plan, x, ch, &rng);
    CHECK(std::memcmp(whole.data(), chunked.data(), whole.size() * sizeof(T)) == 0);
  }
}

TEST_CASE("f64 output equals the scalar reference within 1e-12 - f32 within 1e-4") {
  const Plan plan = plan_chain(kChain, 48000);
  for (int ch : {1, 2, 5}) {
    const auto x = noise<double>(20000u * static_cast<std::size_t>(ch), 5);
    const auto ref = reference(plan, x, ch);
    std::mt19937 rng(3);
    const auto y = run_chunked<double>(plan, x, ch, &rng);
    double worst = 0;
    for (std::size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(y[i] - ref[i]));
    CAPTURE(ch);
    CHECK(worst <= 1e-12);
    std::vector<float> xf(x.begin(), x.end());
    const auto yf = run_chunked<float>(plan, xf, ch, &rng);
    double worst32 = 0;
    for (std::size_t i = 0; i < yf.size(); ++i) worst32 = std::max(worst32, std::fabs(double(yf[i]) - ref[i]));
    CHECK(worst32 <= 1e-4);
    CHECK(worst32 > 0);  // f32 really ran in single precision
  }
}

TEST_CASE("fused and unfused plans compute the same filter") {
  const Plan fused = plan_chain(kChain, 48000, true);
  const Plan unfused = plan_chain(kChain, 48000, false);
  CHECK(fused.dispatches() == 1);
  CHECK(unfused.dispatches() == 4);
  const auto x = noise<double>(2u * 10000u, 8);
  const auto a = run_chunked<double>(fused, x, 2, nullptr);
  const auto b = run_chunked<double>(unfused, x, 2, nullptr);
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  CHECK(worst <= 1e-12);
}

TEST_CASE("process reports dispatches and calibration steps - every=N pays one chunk in N") {
  const Plan plan = plan_chain("lp:1000 | spin:20us:every=4 | hp:100", 48000, true);
  CpuBackend be;
  REQUIRE(be.prepare({48000, 2, 64, DType::f32}, lay_out_plan(plan, 2)) == Status::ok);
  std::vector<float> buf(128, 0.1f);
  int paid = 0;
  std::int64_t calib = 0;
  for (int i = 0; i < 40; ++i) {
    ProcessStats st;
    REQUIRE(be.process({buf.data(), 64, 2, DType::f32}, &st) == Status::ok);
    CHECK(st.dispatches == 2);
    CHECK(st.launches == 0);
    paid += static_cast<int>(st.host_steps);
    calib += st.calib_ns;
  }
  CHECK(paid == 10);
  CHECK(calib >= 10 * 20'000);  // a spin never returns early
}

TEST_CASE("denormals are flushed: a decaying tail never yields subnormal samples") {
  const Plan plan = plan_chain("lp:200:4 | hp:20:2", 48000);
  CpuBackend be;
  REQUIRE(be.prepare({48000, 1, 4096, DType::f32}, lay_out_plan(plan, 1)) == Status::ok);
  std::vector<float> buf(4096, 0.0f);
  buf[0] = 1e-30f;  // a tiny impulse decays through the subnormal range quickly
  int subnormal = 0, nonzero_late = 0;
  for (int c = 0; c < 50; ++c) {
    REQUIRE(be.process({buf.data(), 4096, 1, DType::f32}, nullptr) == Status::ok);
    for (float v : buf) {
      subnormal += std::fpclassify(v) == FP_SUBNORMAL;
      nonzero_late += (c > 40 && v != 0.0f);
    }
    std::fill(buf.begin(), buf.end(), 0.0f);
  }
  CHECK(subnormal == 0);
  CHECK(nonzero_late == 0);
}

TEST_CASE("reset clears state - wrong shapes are refused with a status") {
  const Plan plan = plan_chain("lp:1000:4", 48000);
  CpuBackend be;
  std::vector<float> a(256, 0.5f), b(256, 0.5f);
  CHECK(be.process({a.data(), 128, 2, DType::f32}, nullptr) == Status::not_prepared);
  REQUIRE(be.prepare({48000, 2, 128, DType::f32}, lay_out_plan(plan, 2)) == Status::ok);
  REQUIRE(be.process({a.data(), 128, 2, DType::f32}, nullptr) == Status::ok);
  be.reset();
  REQUIRE(be.process({b.data(), 128, 2, DType::f32}, nullptr) == Status::ok);
  CHECK(a == b);
  CHECK(be.process({a.data(), 129, 2, DType::f32}, nullptr) == Status::shape_mismatch);
  CHECK(be.process({a.data(), 64, 1, DType::f32}, nullptr) == Status::shape_mismatch);
  CHECK(be.process({a.data(), 64, 2, DType::f64}, nullptr) == Status::shape_mismatch);
  // a chunk holds up to kMaxChunkChannels channels (a --batch chunk of several streams)
  CHECK(be.prepare({48000, kMaxChunkChannels + 1, 128, DType::f32}, lay_out_plan(plan, kMaxChunkChannels + 1)) ==
        Status::invalid_argument);
  CHECK(be.prepare({48000, 0, 128, DType::f32}, lay_out_plan(plan, 1)) == Status::invalid_argument);
  CHECK(be.prepare({48000, 2, 0, DType::f32}, lay_out_plan(plan, 2)) == Status::invalid_argument);
}
