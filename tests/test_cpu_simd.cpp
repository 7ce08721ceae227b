// The vector cascade kernels against the scalar reference, bit for bit, on every
// instruction set this CPU has; each set forced in turn. A set the CPU (or this build)
// lacks reports itself skipped.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rt/cpu_backend.hpp"
#include "rt/cpu_simd.hpp"
#include "src/session/bench.hpp"
#include "src/plan.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;

namespace {

template <class T>
constexpr DType dtype_of() {
  return sizeof(T) == 4 ? DType::f32 : DType::f64;
}

// Noise with stretches that test the edges: exact zeros, negative zeros and tiny values.
template <class T>
std::vector<T> signal(std::size_t frames, int channels, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-0.9, 0.9);
  std::vector<T> v(frames * static_cast<std::size_t>(channels));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::size_t f = i / static_cast<std::size_t>(channels);
    if (f % 997 < 20)
      v[i] = f % 2 ? T(-0.0) : T(0.0);
    else if (f % 997 < 30)
      v[i] = static_cast<T>(u(rng) * 1e-30);
    else
      v[i] = static_cast<T>(u(rng));
  }
  return v;
}

// `x` through a backend on `isa`, in chunks whose sizes `rng` draws from 1..max_chunk
// (every chunk max_chunk long without one).
template <class T>
std::vector<T> run(CpuIsa isa, const Plan& plan, std::vector<T> x, int channels, int max_chunk, std::mt19937* rng) {
  CpuBackend be(plan.fused, isa);
  REQUIRE(be.prepare({48000, channels, max_chunk, dtype_of<T>()}, lay_out_plan(plan, channels)) == Status::ok);
  REQUIRE(be.isa() == isa);
  const std::size_t frames = x.size() / static_cast<std::size_t>(channels);
  std::uniform_int_distribution<int> d(1, max_chunk);
  for (std::size_t pos = 0; pos < frames;) {
    std::size_t n = static_cast<std::size_t>(rng ? d(*rng) : max_chunk);
    if (n > frames - pos) n = frames - pos;
    REQUIRE(be.process({x.data() + pos * static_cast<std::size_t>(channels), static_cast<int>(n), channels, dtype_of<T>()},
                       nullptr) == Status::ok);
    pos += n;
  }
  return x;
}

bool same_bits(const void* a, const void* b, std::size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

template <class T>
void check_isa(CpuIsa isa) {
  for (bool fused : {true, false})
    for (int sections : {1, 2, 3, 5, 6, 8, 9, 16, 17, 33})
      for (int ch : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 24, 32, 64}) {
        if (!fused && sections > 9) continue;  // unfused: one single-section step per filter
        CAPTURE(fused);
        CAPTURE(sections);
        CAPTURE(ch);
        CAPTURE(cascade_layout_name(cascade_layout(isa, sizeof(T), ch, sections)));
        const Plan plan = plan_chain(bench_chain(sections), 48000, fused);
        const std::size_t frames = ch >= 16 ? 500 : 2100;
        const auto x = signal<T>(frames, ch, 17u + static_cast<unsigned>(sections * 64 + ch));
        // the same random chunk sizes (1..300, many shorter than the wavefront) for both
        std::mt19937 r1(5), r2(5);
        const auto ref = run<T>(CpuIsa::scalar, plan, x, ch, 300, &r1);
        const auto got = run<T>(isa, plan, x, ch, 300, &r2);
        REQUIRE(ref.size() == got.size());
        CHECK(same_bits(ref.data(), got.data(), ref.size() * sizeof(T)));
        // and the filter really ran: the output differs from the input
        CHECK_FALSE(same_bits(x.data(), got.data(), x.size() * sizeof(T)));
      }
}

template <class T>
void check_one_pass(CpuIsa isa) {
  const Plan plan = plan_chain("hp:80:4 | lp:12000:8 | peak:1000:q=0.7:gain=6 | lowshelf:200:gain=-3", 48000);
  for (int ch : {1, 2, 3, 6, 8, 64}) {
    CAPTURE(ch);
    const std::size_t frames = ch == 64 ? 3000 : 12000;
    const auto x = signal<T>(frames, ch, 11u + static_cast<unsigned>(ch));
    const auto whole = run<T>(isa, plan, x, ch, static_cast<int>(frames), nullptr);
    std::mt19937 rng(99);
    const auto chunked = run<T>(isa, plan, x, ch, 4096, &rng);
    CHECK(same_bits(whole.data(), chunked.data(), whole.size() * sizeof(T)));
  }
}

// State carries across chunks and reset() clears it: after a reset the backend gives what
// a new one gives.
template <class T>
void check_reset(CpuIsa isa) {
  const Plan plan = plan_chain(bench_chain(6), 48000);
  const int ch = 2, n = 256;
  CpuBackend be(true, isa);
  REQUIRE(be.prepare({48000, ch, n, dtype_of<T>()}, lay_out_plan(plan, ch)) == Status::ok);
  const auto x = signal<T>(n, ch, 3);
  auto a = x, b = x, c = x;
  REQUIRE(be.process({a.data(), n, ch, dtype_of<T>()}, nullptr) == Status::ok);
  REQUIRE(be.process({b.data(), n, ch, dtype_of<T>()}, nullptr) == Status::ok);
  CHECK_FALSE(same_bits(a.data(), b.data(), a.size() * sizeof(T)));  // the second chunk starts from state
  be.reset();
  REQUIRE(be.process({c.data(), n, ch, dtype_of<T>()}, nullptr) == Status::ok);
  CHECK(same_bits(a.data(), c.data(), a.size() * sizeof(T)));
}

void check_all(CpuIsa isa) {
  if (!cpu_isa_supported(isa)) {
    MESSAGE("skipped: this CPU or build has no " << cpu_isa_name(isa) << " (needs " << cpu_isa_requires(isa) << ")");
    CpuBackend be(true, isa);
    CHECK(be.prepare({48000, 2, 256, DType::f32}, lay_out_plan(plan_chain("lp:1000", 48000), 2)) ==
          Status::invalid_argument);
    return;
  }
  SUBCASE("f32 bit-identical to the scalar reference") { check_isa<float>(isa); }
  SUBCASE("f64 bit-identical to the scalar reference") { check_isa<double>(isa); }
  SUBCASE("f32 chunked equals one pass") { check_one_pass<float>(isa); }
  SUBCASE("f64 chunked equals one pass") { check_one_pass<double>(isa); }
  SUBCASE("f32 reset") { check_reset<float>(isa); }
  SUBCASE("f64 reset") { check_reset<double>(isa); }
}

}  // namespace

TEST_CASE("cpu kernels on sse4: bit-identical to the scalar reference, any chunk sizes") { check_all(CpuIsa::sse4); }
TEST_CASE("cpu kernels on avx2: bit-identical to the scalar reference, any chunk sizes") { check_all(CpuIsa::avx2); }
TEST_CASE("cpu kernels on avx512: bit-identical to the scalar reference, any chunk sizes") {
  check_all(CpuIsa::avx512);
}

TEST_CASE("cpu instruction sets: names parse back, the best one is supported, layouts follow the lanes") {
  for (int i = 0; i < kCpuIsaCount; ++i) {
    const auto isa = static_cast<CpuIsa>(i);
    CpuIsa back = CpuIsa::scalar;
    CHECK(parse_cpu_isa(cpu_isa_name(isa), &back));
    CHECK(back == isa);
  }
  CHECK_FALSE(parse_cpu_isa("avx1024", nullptr));
  CHECK_FALSE(parse_cpu_isa("", nullptr));
  CHECK(cpu_isa_supported(CpuIsa::scalar));
  CHECK(cpu_isa_supported(cpu_isa_best()));
  for (int ch : {1, 2, 3, 8, 64})
    for (int sec : {1, 6, 40}) {
      CHECK(cpu_isa_supported(cpu_isa_auto(4, ch, sec)));
      CHECK(cpu_isa_supported(cpu_isa_auto(8, ch, sec)));
    }
  // a backend without a forced set prepares on the one auto picks for its longest cascade
  {
    CpuBackend be;
    const Plan plan = plan_chain(bench_chain(6), 48000);
    REQUIRE(be.prepare({48000, 2, 256, DType::f32}, lay_out_plan(plan, 2)) == Status::ok);
    CHECK(be.isa() == cpu_isa_auto(4, 2, 6));
    CHECK(be.layout() == cascade_layout(be.isa(), 4, 2, 6));
  }
  // the layout rule: one wavefront for 1, 2, 3, 4, 6 or 8 channels fewer than the lanes,
  // blocks of 8, 4 or 2 channels fewer than the lanes for other counts they divide
  CHECK(cascade_layout(CpuIsa::scalar, 4, 2, 6) == CascadeLayout::scalar);
  CHECK(simd::wave_block(8, 2) == 2);  // AVX2 f32: 8 lanes
  CHECK(simd::wave_block(8, 6) == 6);
  CHECK(simd::wave_block(8, 8) == 4);
  CHECK(simd::wave_block(8, 32) == 4);
  CHECK(simd::wave_block(8, 10) == 2);
  CHECK(simd::wave_block(8, 5) == 0);
  CHECK(simd::wave_block(16, 8) == 8);  // AVX-512 f32: 16 lanes
  CHECK(simd::wave_block(16, 12) == 4);
  CHECK(simd::wave_block(16, 64) == 8);
  CHECK(simd::wave_block(4, 4) == 2);   // AVX2 f64 or SSE4 f32: 4 lanes
  CHECK(simd::wave_block(4, 3) == 3);
  CHECK(simd::wave_block(2, 1) == 1);   // SSE4 f64: 2 lanes
  CHECK(simd::wave_block(2, 2) == 0);
  CHECK(cascade_layout(CpuIsa::avx2, 4, 8, 6) == CascadeLayout::wavefront);
  CHECK(cascade_layout(CpuIsa::avx2, 4, 7, 6) == CascadeLayout::channel_parallel);
  // blocks only where a block's cascade fills two vectors: 32 channels in blocks of 8 on
  // AVX-512 f32 (2 sections a vector) for 3 sections, not for 2
  CHECK(cascade_layout(CpuIsa::avx512, 4, 32, 3) == CascadeLayout::wavefront);
  CHECK(cascade_layout(CpuIsa::avx512, 4, 32, 2) == CascadeLayout::channel_parallel);
  CHECK(cascade_layout(CpuIsa::avx512, 4, 8, 1) == CascadeLayout::wavefront);  // one pass: no blocks
  CHECK(cascade_layout(CpuIsa::avx512, 4, 5, 6) == CascadeLayout::channel_parallel);
  CHECK(cascade_layout(CpuIsa::sse4, 8, 1, 6) == CascadeLayout::wavefront);
  CHECK(cascade_layout(CpuIsa::sse4, 8, 2, 6) == CascadeLayout::channel_parallel);
}

// ---- the command line ---------------------------------------------------------------------

TEST_CASE("--isa: a bad name is one usage error, a forced set is what the report and the bench name") {
  testutil::TempDir td;
  auto r = testutil::run_cli({"synth", "--signal", "noise", "--duration", "0.1s", "--speed", "max", "--isa", "avx1024"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--isa: 'avx1024' is not auto, scalar, sse4, avx2 or avx512") != std::string::npos);

  // every instruction set this machine has, forced: the report's signature names it
  for (int i = 0; i < kCpuIsaCount; ++i) {
    const auto isa = static_cast<CpuIsa>(i);
    if (!cpu_isa_supported(isa)) continue;
    CAPTURE(cpu_isa_name(isa));
    const std::string json = td.file(std::string("r_") + cpu_isa_name(isa) + ".json");
    r = testutil::run_cli({"synth", "--signal", "noise", "--duration", "0.1s", "--speed", "max", "--chain",
                           "hp:80:4 | peak:1000:gain=6", "--isa", cpu_isa_name(isa), "--json", json, "--quiet"});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    const auto j = nlohmann::json::parse(testutil::slurp(json));
    const auto& sig = j["workload"]["signature"];
    CHECK(sig["cpu_isa"] == cpu_isa_name(isa));
    CHECK(sig["cpu_layout"] == cascade_layout_name(cascade_layout(isa, 4, 2, 3)));  // hp:80:4 and a peak: 3 sections
  }

  const std::string bj = td.file("bench.json");
  r = testutil::run_cli({"bench", "--channels", "2", "--sections", "2", "--chunks", "64", "--repeats", "1", "--quick",
                         "--isa", "scalar,auto", "--json", bj});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto b = nlohmann::json::parse(testutil::slurp(bj));
  REQUIRE(b["rows"].size() == 4);  // fused and unfused, scalar and auto
  CHECK(b["rows"][0]["isa"] == "scalar");
  CHECK(b["rows"][0]["isa_auto"] == false);
  CHECK(b["rows"][0]["layout"] == "scalar");
  CHECK(b["rows"][1]["isa_auto"] == true);
  CHECK(b["rows"][1]["isa"] == cpu_isa_name(cpu_isa_auto(4, 2, 2)));
  CHECK(b["rows"][0]["chain_spec"] == bench_chain(2));
  CHECK(b["isa_best"] == cpu_isa_name(cpu_isa_best()));
}

TEST_CASE("--isa: a set this CPU lacks fails at once with exit 3, naming what it needs") {
  CpuIsa missing = CpuIsa::scalar;
  for (int i = kCpuIsaCount - 1; i > 0; --i)
    if (!cpu_isa_supported(static_cast<CpuIsa>(i))) missing = static_cast<CpuIsa>(i);
  if (missing == CpuIsa::scalar) {
    MESSAGE("skipped: this CPU and build run every instruction set");
    return;
  }
  auto r = testutil::run_cli({"bench", "--channels", "2", "--sections", "2", "--chunks", "64", "--isa", cpu_isa_name(missing)});
  CHECK(r.rc == 3);
  CHECK(r.err.find(std::string("--isa ") + cpu_isa_name(missing) + ": this CPU or build cannot run it") != std::string::npos);
  CHECK(r.out.find("Gbq-s/s:") == std::string::npos);  // nothing was timed
}
