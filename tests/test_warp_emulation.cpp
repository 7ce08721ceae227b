// The fused SOS kernel's lane logic (kernels/sos_lanes.hpp), run on the CPU over 32 lanes
// in lockstep (sos_lanes::EmulatedWarp) and compared bit for bit with a plain sequential
// cascade of biquad_step (rt/sos_math.hpp, the CPU reference). The kernel runs the same
// header with the device's shuffles, so this covers which lane holds which section at which
// step, the shuffle of outputs to the next lane, the prefetch windows, the tail guards and
// the passes beyond 32 sections, in every build (CUDA or not). Both sides run on this CPU
// with the same rounding mode, so any difference is a difference of logic, not arithmetic;
// the file is compiled without FMA contraction (tests/CMakeLists.txt) so that neither side
// fuses what the other does not.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda_plan.hpp"
#include "kernels/sos_lanes.hpp"
#include "rt/sos_math.hpp"

using namespace chunkscope;
namespace sl = chunkscope::sos_lanes;

namespace {

// The reference: every frame through every section in turn (the CPU backend's order),
// with the state layout of launch_sos_cascade (row 2s: s1, row 2s+1: s2, `channels` wide).
template <class T>
void reference_cascade(T* data, int frames, int channels, const T* coef, int sections, T* state) {
  for (int f = 0; f < frames; ++f)
    for (int ch = 0; ch < channels; ++ch) {
      T x = data[static_cast<std::size_t>(f) * channels + ch];
      for (int s = 0; s < sections; ++s) {
        const T* c = coef + 5 * s;
        x = biquad_step(c[0], c[1], c[2], c[3], c[4], state[static_cast<std::size_t>(2 * s) * channels + ch],
                        state[static_cast<std::size_t>(2 * s + 1) * channels + ch], x);
      }
      data[static_cast<std::size_t>(f) * channels + ch] = x;
    }
}

// Runs the emulated kernel for a block size chosen at run time, with the tail guards the
// launcher (kernels/sos_kernels.cu) would choose.
template <class T>
void emulate(int b, T* data, int frames, int channels, const T* coef, int sections, T* state) {
  const bool tail = sl::needs_tail_guards(frames, b);
  switch (b) {
    case 1: sl::emulate_cascade<T, 1>(data, frames, channels, coef, sections, state, tail); break;
    case 2: sl::emulate_cascade<T, 2>(data, frames, channels, coef, sections, state, tail); break;
    case 4: sl::emulate_cascade<T, 4>(data, frames, channels, coef, sections, state, tail); break;
    case 8: sl::emulate_cascade<T, 8>(data, frames, channels, coef, sections, state, tail); break;
    default: FAIL("no emulation for B = " << b);
  }
}

// Near-allpass sections (b0 = a2, b1 = a1, b2 = 1, each perturbed by up to 5 %) with poles
// of radius 0.3..0.95: the signal keeps its size through 70 sections, so the comparison is
// between normal numbers, not between values that decayed to zero or grew to infinity.
template <class T>
std::vector<T> make_coefs(int sections, std::mt19937& rng) {
  std::uniform_real_distribution<double> radius(0.3, 0.95), angle(0.05, 3.1), jitter(-0.05, 0.05);
  std::vector<T> c(static_cast<std::size_t>(5 * sections));
  for (int s = 0; s < sections; ++s) {
    const double r = radius(rng), th = angle(rng);
    const double a1 = -2 * r * std::cos(th), a2 = r * r;
    c[5 * s + 0] = static_cast<T>(a2 * (1 + jitter(rng)));
    c[5 * s + 1] = static_cast<T>(a1 * (1 + jitter(rng)));
    c[5 * s + 2] = static_cast<T>(1 + jitter(rng));
    c[5 * s + 3] = static_cast<T>(a1);
    c[5 * s + 4] = static_cast<T>(a2);
  }
  return c;
}

template <class T>
std::vector<T> noise(std::size_t n, double amp, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-amp, amp);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// First index where two buffers differ bitwise (or -1).
template <class T>
long first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<long>(i);
  return a.size() == b.size() ? -1 : static_cast<long>(std::min(a.size(), b.size()));
}

constexpr int kChunks = 4;  // state carried over 4 chunks, the last one short

// The last chunk: shorter than the others (when they are longer than one frame), mixing
// full and partial blocks.
int last_chunk_frames(int frames) { return std::max(1, frames - 1 - frames / 3); }

struct Tally {
  int runs = 0;
  int changed = 0;  // runs whose output differs from their input (the cascade did filter)
};

// One shape, one block size (b > 0) or the cost model's block per chunk (b == 0, as the
// backend launches): kChunks chunks through the emulation and the reference, from the same
// random initial state, compared bit for bit after every chunk (samples and state).
template <class T>
void check_shape(int frames, int sections, int channels, int b, Tally& tally) {
  CAPTURE(frames);
  CAPTURE(sections);
  CAPTURE(channels);
  CAPTURE(b);
  std::mt19937 rng(static_cast<unsigned>(frames * 7919 + sections * 104729 + channels * 31 + b));
  const auto coef = make_coefs<T>(sections, rng);
  const std::size_t state_len = static_cast<std::size_t>(2 * sections) * static_cast<std::size_t>(channels);
  auto st_ref = noise<T>(state_len, 0.1, rng);
  auto st_emu = st_ref;
  for (int c = 0; c < kChunks; ++c) {
    const int n = c == kChunks - 1 ? last_chunk_frames(frames) : frames;
    const int block = b > 0 ? b : cuda_plan::choose_sos_layout(n, channels, sections).samples_per_step;
    CAPTURE(c);
    CAPTURE(n);
    CAPTURE(block);
    const auto in = noise<T>(static_cast<std::size_t>(n) * static_cast<std::size_t>(channels), 1.0, rng);
    auto ref = in, emu = in;
    reference_cascade(ref.data(), n, channels, coef.data(), sections, st_ref.data());
    emulate(block, emu.data(), n, channels, coef.data(), sections, st_emu.data());
    const long d = first_difference(ref, emu);
    CAPTURE(d);
    REQUIRE(same_bits(ref, emu));
    REQUIRE(same_bits(st_ref, st_emu));
    ++tally.runs;
    tally.changed += !same_bits(in, emu);
  }
}

const int kFrames[] = {1, 2, 7, 31, 32, 33, 63, 64, 100, 255, 256, 257, 1000};
const int kSections[] = {1, 2, 5, 31, 32, 33, 64, 65, 70};

}  // namespace

TEST_CASE_TEMPLATE("warp emulation: the kernel's lane logic equals the sequential cascade bit for bit", T, float,
                   double) {
  Tally tally;
  int shapes = 0;
  for (int frames : kFrames)
    for (int sections : kSections)
      for (int channels = 1; channels <= 3; ++channels) {
        for (int b = 1; b <= cuda_plan::kMaxSamplesPerStep; b *= 2) check_shape<T>(frames, sections, channels, b, tally);
        check_shape<T>(frames, sections, channels, 0, tally);  // the backend's own choice per chunk
        ++shapes;
      }
  MESSAGE(shapes << " shapes, " << tally.runs << " chunks compared bit for bit");
  CHECK(shapes == static_cast<int>(std::size(kFrames) * std::size(kSections) * 3));
  CHECK(tally.changed == tally.runs);  // every chunk was really filtered
}

TEST_CASE("warp emulation: every supported block size and both tail variants are covered") {
  // The launcher supports B = 1, 2, 4, 8 (cuda_plan::kMaxSamplesPerStep); all of them fit a
  // prefetch window, and the grid above has both full and short last blocks for each.
  for (int b = 1; b <= cuda_plan::kMaxSamplesPerStep; b *= 2) {
    CAPTURE(b);
    CHECK(sl::supported_block(b));
    int full = 0, partial = 0;
    for (int f : kFrames) {
      for (int n : {f, last_chunk_frames(f)}) (sl::needs_tail_guards(n, b) ? partial : full)++;
    }
    CHECK(full > 0);
    if (b > 1) CHECK(partial > 0);
  }
  CHECK_FALSE(sl::supported_block(3));
  CHECK_FALSE(sl::supported_block(64));
  CHECK_FALSE(sl::needs_tail_guards(256, 8));
  CHECK(sl::needs_tail_guards(257, 8));
}

TEST_CASE("warp emulation: the emulated shuffles behave as __shfl_up_sync and __shfl_sync") {
  sl::EmulatedWarp<int, 1> w;
  w.each([](sl::LaneRegs<int, 1>& r) { r.y[0] = 100 + r.lane; });
  w.shfl_up([](const sl::LaneRegs<int, 1>& r) { return r.y[0]; }, [](sl::LaneRegs<int, 1>& r, int v) { r.x[0] = v; });
  int up_ok = 0;
  w.each([&](sl::LaneRegs<int, 1>& r) { up_ok += r.x[0] == 100 + (r.lane > 0 ? r.lane - 1 : 0); });
  CHECK(up_ok == 32);  // lane 0 keeps its own value, as __shfl_up_sync does
  w.each([](sl::LaneRegs<int, 1>& r) { r.win_cur = 7 * r.lane; });
  w.shfl([](const sl::LaneRegs<int, 1>& r) { return r.win_cur; }, 35, [](sl::LaneRegs<int, 1>& r, int v) { r.x[0] = v; });
  int bc_ok = 0;
  w.each([&](sl::LaneRegs<int, 1>& r) { bc_ok += r.x[0] == 21; });
  CHECK(bc_ok == 32);  // source lane taken modulo the warp width
}
