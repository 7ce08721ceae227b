// The CUDA backend. The host-side decisions (kernel layout, routing of a chunk in graph
// mode, launches per chunk) and the no-device answer are tested in every build; the tests
// that run kernels need a CUDA device and skip with a message naming what is missing.
// Every test name starts with "cuda:" so a GPU machine can select them with -tc='cuda*'.
#include <filesystem>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda_plan.hpp"
#include "kernels/gpu.hpp"
#include "rt/cpu_backend.hpp"
#include "src/plan.hpp"

using namespace chunkscope;
namespace cp = chunkscope::cuda_plan;

namespace {

// 2 + 4 sections: the stereo chain of the latency target.
const char* kChain6 = "hp:80:4 | lp:12000:8";
// 40 sections in one fused cascade: more than one 32-lane pass.
const char* kChain40 = "lp:8000:16 | hp:200:16 | lp:12000:16 | hp:100:16 | lp:16000:16";

// A chain of `n` one-section peaking filters at distinct frequencies.
std::string peaks(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i) s += " | ";
    s += "peak:" + std::to_string(100 + 250 * i) + ":gain=" + (i % 2 ? "-2" : "2");
  }
  return s;
}

const GpuInfo& gpu() {
  static const GpuInfo g = probe_gpu();
  return g;
}

#define CUDA_TEST_NEEDS_GPU()                                   \
  do {                                                          \
    if (!gpu().available) {                                     \
      MESSAGE("skipped: no CUDA device: " << gpu().reason);    \
      return;                                                   \
    }                                                           \
  } while (0)

template <class T>
constexpr DType dtype_of() {
  return sizeof(T) == 4 ? DType::f32 : DType::f64;
}

template <class T>
std::vector<T> noise(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-0.9, 0.9);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

std::unique_ptr<Backend> make(CudaOptions::Mode mode, const Plan& plan, const ProcessSpec& spec, bool recapture = false,
                              bool timing = true) {
  CudaOptions o;
  o.mode = mode;
  o.gpu_timing = timing;
  o.recapture_on_shape_change = recapture;
  std::string err;
  auto b = make_cuda_backend(o, lay_out_plan(plan, spec.channels), spec, &err);
  INFO("make_cuda_backend: " << err);
  REQUIRE(b != nullptr);
  return b;
}

template <class T>
double max_diff(const std::vector<T>& a, const std::vector<T>& b) {
  double w = 0;
  for (std::size_t i = 0; i < a.size(); ++i) w = std::max(w, std::fabs(double(a[i]) - double(b[i])));
  return w;
}

// Samples whose bits differ.
template <class T>
std::size_t bit_differences(const std::vector<T>& a, const std::vector<T>& b) {
  std::size_t n = a.size() == b.size() ? 0 : std::max(a.size(), b.size());
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
  return n;
}

template <class T>
std::size_t subnormals(const std::vector<T>& v) {
  return static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [](T x) { return std::fpclassify(x) == FP_SUBNORMAL; }));
}

// Runs `chunks` chunks of noise (the last `last_frames` long when > 0) through the CPU
// backend, CUDA eager and CUDA graph, with state carried, and checks every chunk bit for
// bit: the kernels round every multiply and add on its own (--fmad=false) as the CPU
// backend does (-ffp-contract=off), with the same coefficients and the same order of
// operations, so f32 output is identical. f64 is identical too except where a value is
// subnormal: the CPU backend flushes subnormals in both precisions (FTZ/DAZ), the device
// only in f32 (-ftz=true). Noise through these chains never comes near 1e-308, and the
// test checks that no output of either side is subnormal, so f64 is compared bit for bit
// as well; a subnormal would fail that check and name this exception.
template <class T>
void check_against_cpu(const Plan& plan, int frames, int channels, int chunks, int last_frames = 0,
                       bool recapture = false) {
  CAPTURE(frames);
  CAPTURE(channels);
  CAPTURE(plan.spec);
  const DType dt = dtype_of<T>();
  const ProcessSpec spec{48000, channels, frames, dt};
  CpuBackend cpu;
  REQUIRE(cpu.prepare(spec, lay_out_plan(plan, spec.channels)) == Status::ok);
  auto eager = make(CudaOptions::Mode::eager, plan, spec);
  auto graph = make(CudaOptions::Mode::graph, plan, spec, recapture);
  CHECK(eager->state_values() == cpu.state_values());
  CHECK(graph->state_values() == cpu.state_values());
  std::mt19937 rng(static_cast<unsigned>(frames * 131 + channels));
  std::vector<T> prev_out;
  double worst = 0;
  std::size_t differ_eager = 0, differ_graph = 0, differ_modes = 0, subnormal = 0;
  int same_as_prev = 0, same_as_input = 0;
  for (int c = 0; c < chunks; ++c) {
    const int n = (c == chunks - 1 && last_frames > 0) ? last_frames : frames;
    const auto in = noise<T>(static_cast<std::size_t>(n) * static_cast<std::size_t>(channels), rng);
    auto a = in, b = in, g = in;
    REQUIRE(cpu.process({a.data(), n, channels, dt}, nullptr) == Status::ok);
    ProcessStats se, sg;
    INFO("eager: " << eager->last_error() << " graph: " << graph->last_error());
    REQUIRE(eager->process({b.data(), n, channels, dt}, &se) == Status::ok);
    REQUIRE(graph->process({g.data(), n, channels, dt}, &sg) == Status::ok);
    worst = std::max({worst, max_diff(a, b), max_diff(a, g), max_diff(b, g)});
    differ_eager += bit_differences(a, b);
    differ_graph += bit_differences(a, g);
    differ_modes += bit_differences(b, g);
    subnormal += subnormals(a) + subnormals(b) + subnormals(g);
    same_as_input += g == in;
    if (!prev_out.empty() && prev_out.size() == g.size()) same_as_prev += g == prev_out;
    prev_out = g;
    CHECK(se.dispatches == plan.dispatches());
    CHECK(sg.dispatches == plan.dispatches());
  }
  INFO("largest difference " << worst);
  CHECK(subnormal == 0);  // the one case where f64 may differ (see above) did not arise
  CHECK(differ_eager == 0);  // eager == CPU, bit for bit
  CHECK(differ_graph == 0);  // graph == CPU, bit for bit
  CHECK(differ_modes == 0);
  CHECK(same_as_prev == 0);   // every replay computed a new chunk
  CHECK(same_as_input == 0);  // and really filtered it
  CHECK(eager->counters().chunks == static_cast<std::uint64_t>(chunks));
  CHECK(graph->counters().chunks == static_cast<std::uint64_t>(chunks));
}

}  // namespace

// ---------------------------------------------------------------- host logic (every build)

TEST_CASE("cuda: layout gives each channel a warp and pipelines up to 32 sections per pass") {
  const auto l6 = cp::choose_sos_layout(256, 2, 6);
  CHECK(l6.blocks == 2);
  CHECK(l6.threads_per_block == 32);
  CHECK(l6.lanes == 6);
  CHECK(l6.passes == 1);
  const auto l1 = cp::choose_sos_layout(256, 64, 1);
  CHECK(l1.blocks == 64);
  CHECK(l1.lanes == 1);
  CHECK(cp::choose_sos_layout(64, 1, 32).passes == 1);
  CHECK(cp::choose_sos_layout(64, 1, 33).passes == 2);
  CHECK(cp::choose_sos_layout(64, 1, 33).lanes == 32);
  CHECK(cp::choose_sos_layout(64, 1, 130).passes == 5);
}

TEST_CASE("cuda: sample blocks per step are the cheapest by the cost model") {
  for (int frames : {1, 32, 33, 128, 256, 1024, 8192})
    for (int sections : {1, 6, 20, 32, 40, 120}) {
      CAPTURE(frames);
      CAPTURE(sections);
      const auto l = cp::choose_sos_layout(frames, 2, sections);
      const auto chosen = cp::pipeline_cycles(frames, sections, l.samples_per_step);
      for (int b = 1; b <= cp::kMaxSamplesPerStep; b *= 2) CHECK(chosen <= cp::pipeline_cycles(frames, sections, b));
      CHECK(32 % l.samples_per_step == 0);  // a step's block never straddles a prefetch window
    }
  // Long chunks amortise the lane-to-lane shuffle over the largest block.
  CHECK(cp::choose_sos_layout(8192, 2, 6).samples_per_step == cp::kMaxSamplesPerStep);
  // Pipelining beats one thread per channel running every section in turn.
  CHECK(cp::pipeline_cycles(256, 6, 1) < 256 * 6 * (cp::kStepCycles / 2 + cp::kSampleCycles));
}

TEST_CASE("cuda: routing of a chunk in eager and graph mode") {
  using cp::Route;
  CHECK(cp::route_chunk(false, 0, 0, 256, false) == Route::eager);
  CHECK(cp::route_chunk(false, 0, 0, 100, true) == Route::eager);
  CHECK(cp::route_chunk(true, 256, 0, 256, false) == Route::replay);
  CHECK(cp::route_chunk(true, 256, 0, 100, false) == Route::eager_fallback);
  CHECK(cp::route_chunk(true, 256, 0, 100, true) == Route::recapture);
  CHECK(cp::route_chunk(true, 256, 100, 100, true) == Route::replay);  // the other shape is kept
  CHECK(cp::route_chunk(true, 256, 100, 50, true) == Route::recapture);
  CHECK(cp::is_shape_change(256, 100));
  CHECK_FALSE(cp::is_shape_change(256, 256));
  CHECK(std::string(cp::route_name(Route::eager_fallback)) == "eager_fallback");
}

TEST_CASE("cuda: planned launches per chunk - fused chains are one launch, unfused one per filter") {
  for (int n : {2, 5, 10, 20}) {
    CAPTURE(n);
    const Plan fused = plan_chain(peaks(n), 48000, true);
    const Plan unfused = plan_chain(peaks(n), 48000, false);
    const auto fs = static_cast<std::uint32_t>(fused.dispatches());
    const auto us = static_cast<std::uint32_t>(unfused.dispatches());
    CHECK(cp::launches_for(cp::Route::eager, fs, 128) == 1);
    CHECK(cp::launches_for(cp::Route::replay, fs, 128) == 1);
    CHECK(cp::launches_for(cp::Route::eager, us, 128) == static_cast<std::uint32_t>(n));
    CHECK(cp::launches_for(cp::Route::replay, us, 128) == 1);
    CHECK(cp::launches_for(cp::Route::eager_fallback, us, 100) == static_cast<std::uint32_t>(n));
    CHECK(cp::launches_for(cp::Route::recapture, us, 100) == 1);
  }
  CHECK(cp::launches_for(cp::Route::eager, 3, 0) == 0);
}

TEST_CASE("cuda: make_cuda_backend without a usable device returns nullptr and says why") {
  if (gpu().available) {
    MESSAGE("skipped: this machine has a CUDA device (" << gpu().name << "), so 'no device' cannot be shown");
    return;
  }
  const Plan plan = plan_chain(kChain6, 48000);
  for (auto mode : {CudaOptions::Mode::eager, CudaOptions::Mode::graph}) {
    CudaOptions o;
    o.mode = mode;
    std::string err;
    auto b = make_cuda_backend(o, lay_out_plan(plan, 2), {48000, 2, 256, DType::f32}, &err);
    CHECK(b == nullptr);
    CHECK_FALSE(err.empty());
    CHECK(err.find("CUDA") != std::string::npos);
    if (!cuda_built()) CHECK(err.find("without CUDA") != std::string::npos);
  }
  CHECK_FALSE(gpu().reason.empty());
  // no NVIDIA driver at all: the reason says so, not only the runtime's "driver version is insufficient"
  if (cuda_built() && !std::filesystem::exists("/dev/nvidiactl"))
    CHECK(gpu().reason.find("no NVIDIA GPU with a driver this CUDA runtime can use") != std::string::npos);
}

TEST_CASE("cuda: mode names") {
  CHECK(std::string(cuda_mode_name(CudaOptions::Mode::eager)) == "eager");
  CHECK(std::string(cuda_mode_name(CudaOptions::Mode::graph)) == "graph");
  const CudaOptions o;
  CHECK(o.mode == CudaOptions::Mode::eager);
  CHECK(o.gpu_timing);
  CHECK_FALSE(o.recapture_on_shape_change);
}

// ---------------------------------------------------------------- on a GPU

TEST_CASE_TEMPLATE("cuda: eager and graph equal the CPU backend bit for bit over 100 chunks with state carried", T,
                   float, double) {
  CUDA_TEST_NEEDS_GPU();
  const Plan p6 = plan_chain(kChain6, 48000);
  const Plan p40 = plan_chain(kChain40, 48000);
  const Plan p10 = plan_chain(peaks(10), 48000, false);
  check_against_cpu<T>(p6, 256, 2, 100);
  check_against_cpu<T>(p6, 32, 1, 100);
  check_against_cpu<T>(p6, 128, 64, 100);
  check_against_cpu<T>(p6, 8192, 2, 100);
  check_against_cpu<T>(p40, 64, 1, 100);
  check_against_cpu<T>(p40, 1000, 3, 100);
  check_against_cpu<T>(p10, 128, 2, 100);
  // shapes where blocks and pipeline windows do not divide the chunk, a second pass of a
  // single lane (33 sections), and chunks of one frame
  check_against_cpu<T>(p40, 257, 2, 20);
  check_against_cpu<T>(plan_chain(peaks(33), 48000), 100, 64, 10);
  check_against_cpu<T>(p6, 1, 1, 50);
}

// A --batch chunk holds several streams' channels side by side: the device filters each
// channel on its own, so a wide chunk equal to the CPU's proves every stream batched gets
// what it gets alone (tests/test_batch.cpp shows the CPU's batched output is each stream's).
TEST_CASE_TEMPLATE("cuda: a --batch chunk of 256 channels (128 stereo streams) and of the widest 1024 equals the CPU backend bit for bit", T, float,
                   double) {
  CUDA_TEST_NEEDS_GPU();
  const Plan p6 = plan_chain(kChain6, 48000);
  check_against_cpu<T>(p6, 256, 256, 20);
  check_against_cpu<T>(p6, 128, kMaxChunkChannels, 10);
}

TEST_CASE("cuda: launches per chunk - fused chains of 2, 5, 10, 20 filters launch once, unfused once per filter") {
  CUDA_TEST_NEEDS_GPU();
  for (int n : {2, 5, 10, 20})
    for (bool fuse : {true, false}) {
      CAPTURE(n);
      CAPTURE(fuse);
      const Plan plan = plan_chain(peaks(n), 48000, fuse);
      const ProcessSpec spec{48000, 2, 128, DType::f32};
      auto eager = make(CudaOptions::Mode::eager, plan, spec);
      auto graph = make(CudaOptions::Mode::graph, plan, spec);
      std::vector<float> buf(256, 0.25f);
      for (int c = 0; c < 10; ++c) {
        ProcessStats se, sg;
        REQUIRE(eager->process({buf.data(), 128, 2, DType::f32}, &se) == Status::ok);
        REQUIRE(graph->process({buf.data(), 128, 2, DType::f32}, &sg) == Status::ok);
        CHECK(se.launches == (fuse ? 1u : static_cast<std::uint32_t>(n)));
        CHECK(se.dispatches == (fuse ? 1u : static_cast<std::uint32_t>(n)));
        CHECK(sg.launches == 1u);
        CHECK(sg.dispatches == se.dispatches);
      }
      CHECK(eager->counters().kernel_launches == 10u * (fuse ? 1u : static_cast<unsigned>(n)));
      CHECK(eager->counters().graph_launches == 0);
      CHECK(graph->counters().graph_launches == 10);
      CHECK(graph->counters().kernel_launches == 0);
      CHECK(graph->counters().graph_captures == 1);
      CHECK(graph->counters().shape_changes == 0);
    }
}

TEST_CASE("cuda: a short last chunk in graph mode runs eagerly by default, and is counted") {
  CUDA_TEST_NEEDS_GPU();
  const Plan plan = plan_chain(kChain6, 48000);
  check_against_cpu<float>(plan, 256, 2, 20, 100, false);
  auto g = make(CudaOptions::Mode::graph, plan, {48000, 2, 256, DType::f32});
  std::vector<float> buf(512, 0.1f);
  ProcessStats st;
  for (int c = 0; c < 5; ++c) REQUIRE(g->process({buf.data(), 256, 2, DType::f32}, &st) == Status::ok);
  REQUIRE(g->process({buf.data(), 100, 2, DType::f32}, &st) == Status::ok);
  CHECK(st.launches == 1);  // one cascade step, launched eagerly
  const auto c = g->counters();
  CHECK(c.eager_fallbacks == 1);
  CHECK(c.kernel_launches == 1);
  CHECK(c.graph_launches == 5);
  CHECK(c.shape_changes == 1);
  CHECK(c.graph_recaptures == 0);
  CHECK(c.graph_captures == 1);
}

TEST_CASE("cuda: a short last chunk in graph mode is recaptured when asked, and is counted") {
  CUDA_TEST_NEEDS_GPU();
  const Plan plan = plan_chain(peaks(4), 48000, false);
  check_against_cpu<double>(plan, 256, 2, 20, 100, true);
  auto g = make(CudaOptions::Mode::graph, plan, {48000, 2, 256, DType::f32}, true);
  std::vector<float> buf(512, 0.1f);
  ProcessStats st;
  for (int c = 0; c < 3; ++c) REQUIRE(g->process({buf.data(), 256, 2, DType::f32}, &st) == Status::ok);
  REQUIRE(g->process({buf.data(), 100, 2, DType::f32}, &st) == Status::ok);
  CHECK(st.launches == 1);  // one graph launch, not four kernels
  REQUIRE(g->process({buf.data(), 100, 2, DType::f32}, &st) == Status::ok);  // graph kept: no new capture
  REQUIRE(g->process({buf.data(), 256, 2, DType::f32}, &st) == Status::ok);
  const auto c = g->counters();
  CHECK(c.graph_recaptures == 1);
  CHECK(c.graph_captures == 2);
  CHECK(c.graph_launches == 6);
  CHECK(c.eager_fallbacks == 0);
  CHECK(c.kernel_launches == 0);
  CHECK(c.shape_changes == 2);
}

TEST_CASE("cuda: reset zeroes the device state") {
  CUDA_TEST_NEEDS_GPU();
  const Plan plan = plan_chain(kChain6, 48000);
  const ProcessSpec spec{48000, 2, 256, DType::f64};
  for (auto mode : {CudaOptions::Mode::eager, CudaOptions::Mode::graph}) {
    auto used = make(mode, plan, spec);
    auto fresh = make(mode, plan, spec);
    std::mt19937 rng(4);
    for (int c = 0; c < 7; ++c) {
      auto x = noise<double>(512, rng);
      REQUIRE(used->process({x.data(), 256, 2, DType::f64}, nullptr) == Status::ok);
    }
    used->reset();
    CHECK(used->counters().chunks == 0);
    const auto x = noise<double>(512, rng);
    auto a = x, b = x;
    REQUIRE(used->process({a.data(), 256, 2, DType::f64}, nullptr) == Status::ok);
    REQUIRE(fresh->process({b.data(), 256, 2, DType::f64}, nullptr) == Status::ok);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
  }
}

TEST_CASE("cuda: gpu_timing on reports event times, off reports none") {
  CUDA_TEST_NEEDS_GPU();
  const Plan plan = plan_chain(kChain6, 48000);
  for (auto mode : {CudaOptions::Mode::eager, CudaOptions::Mode::graph})
    for (bool timing : {true, false}) {
      CAPTURE(timing);
      auto b = make(mode, plan, {48000, 2, 1024, DType::f32}, false, timing);
      std::vector<float> buf(2048, 0.2f);
      ProcessStats st;
      REQUIRE(b->process({buf.data(), 1024, 2, DType::f32}, &st) == Status::ok);
      CHECK(st.launch_ns > 0);
      CHECK(st.sync_ns >= 0);
      if (timing) {
        CHECK(st.kernel_ns > 0);
        CHECK(st.h2d_ns + st.d2h_ns > 0);
      } else {
        CHECK(st.h2d_ns == 0);
        CHECK(st.kernel_ns == 0);
        CHECK(st.d2h_ns == 0);
      }
    }
}

TEST_CASE("cuda: calibration steps run on the host, one chunk in N, outside the graph") {
  CUDA_TEST_NEEDS_GPU();
  const Plan plan = plan_chain("lp:1000 | spin:20us:every=4 | hp:100", 48000, true);
  for (auto mode : {CudaOptions::Mode::eager, CudaOptions::Mode::graph}) {
    auto b = make(mode, plan, {48000, 2, 64, DType::f32});
    std::vector<float> buf(128, 0.1f);
    int paid = 0;
    std::int64_t calib = 0;
    for (int i = 0; i < 40; ++i) {
      ProcessStats st;
      REQUIRE(b->process({buf.data(), 64, 2, DType::f32}, &st) == Status::ok);
      CHECK(st.dispatches == 2);
      CHECK(st.launches == (mode == CudaOptions::Mode::graph ? 1u : 2u));
      paid += static_cast<int>(st.host_steps);
      calib += st.calib_ns;
    }
    CHECK(paid == 10);
    CHECK(calib >= 10 * 20'000);
  }
}

TEST_CASE("cuda: a chunk that does not fit the prepared shape is refused") {
  CUDA_TEST_NEEDS_GPU();
  const Plan plan = plan_chain(kChain6, 48000);
  auto b = make(CudaOptions::Mode::graph, plan, {48000, 2, 256, DType::f32});
  std::vector<float> buf(1024, 0.0f);
  CHECK(b->process({buf.data(), 512, 2, DType::f32}, nullptr) == Status::shape_mismatch);
  CHECK(b->process({buf.data(), 128, 1, DType::f32}, nullptr) == Status::shape_mismatch);
  CHECK(b->process({buf.data(), 128, 2, DType::f64}, nullptr) == Status::shape_mismatch);
  std::string err;
  CudaOptions o;
  CHECK(make_cuda_backend(o, lay_out_plan(plan, kMaxChunkChannels + 1), {48000, kMaxChunkChannels + 1, 256, DType::f32},
                          &err) == nullptr);
  CHECK(err.find("channels") != std::string::npos);
}
