// Filter a buffer with the library API: plan a chain, prepare a CPU backend, process chunks.
//   example_filter_buffer ["hp:80:4 | lp:2000:6"]
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

#include "rt/cpu_backend.hpp"
#include "src/plan.hpp"

int main(int argc, char** argv) {
  using namespace chunkscope;
  const double rate = 48000;
  const Plan plan = plan_chain(argc > 1 ? argv[1] : "hp:80:4 | lp:2000:6", rate);
  CpuBackend backend;
  if (backend.prepare({rate, 1, 256, DType::f32}, lay_out_plan(plan, 1)) != Status::ok) return 1;

  for (double f : {50.0, 440.0, 1000.0, 4000.0, 12000.0}) {
    backend.reset();
    std::vector<float> chunk(256);
    double in_sq = 0, out_sq = 0;
    for (int c = 0; c < 200; ++c) {  // 200 chunks of 256 frames, about 1.07 s
      for (int i = 0; i < 256; ++i)
        chunk[i] = static_cast<float>(0.5 * std::sin(2 * std::numbers::pi * f * (c * 256 + i) / rate));
      for (float v : chunk) in_sq += c >= 100 ? double(v) * v : 0.0;
      backend.process({chunk.data(), 256, 1, DType::f32}, nullptr);
      for (float v : chunk) out_sq += c >= 100 ? double(v) * v : 0.0;  // skip the settling half
    }
    std::printf("%7.0f Hz: %+7.2f dB\n", f, 10 * std::log10(out_sq / in_sq));
  }
  std::printf("%zu dispatch(es) per chunk, %zu sections\n", plan.dispatches(), plan.total_sections());
}
