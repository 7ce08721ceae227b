#include "src/session/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <random>
#include <stdexcept>

#include "rt/cpu_backend.hpp"
#include "src/backends.hpp"
#include "src/plan.hpp"

namespace chunkscope {

std::string bench_chain(int sections) {
  std::string s;
  for (int i = 0; i < sections; ++i) {
    const double f = 100.0 * std::pow(100.0, sections > 1 ? static_cast<double>(i) / (sections - 1) : 0.0);
    if (!s.empty()) s += " | ";
    s += fmt::format("peak:{:.0f}:gain=3:q=1", f);
  }
  return s;
}

RepeatCheck check_repeats(const std::vector<double>& gbs, double shortest_repeat_ns, double clock_resolution_ns) {
  RepeatCheck c;
  if (gbs.empty()) return c;
  std::vector<double> v = gbs;
  std::sort(v.begin(), v.end());
  const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  c.spread = median > 0 ? (v.back() - v.front()) / median : 0;
  std::string why;
  if (c.spread > kBenchSpreadLimit)
    why = fmt::format("its {} repeats disagree by {:.0f}% ((max - min) / median), more than the {:.0f}% the bench resolves",
                      v.size(), c.spread * 100, kBenchSpreadLimit * 100);
  if (clock_resolution_ns > 0 && shortest_repeat_ns < kBenchMinClockSteps * clock_resolution_ns)
    why += fmt::format("{}a repeat of {:.0f} ns is under {:.0f} steps of the {:.0f} ns clock", why.empty() ? "" : "; ",
                       shortest_repeat_ns, kBenchMinClockSteps, clock_resolution_ns);
  c.warning = why;
  return c;
}

double measure_clock_resolution_ns() {
  using clock = std::chrono::steady_clock;
  std::int64_t best = 0;
  for (int i = 0; i < 2000; ++i) {
    const auto a = clock::now();
    auto b = clock::now();
    for (int k = 0; k < 1000 && b == a; ++k) b = clock::now();
    const auto d = std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
    if (d > 0 && (best == 0 || d < best)) best = d;
  }
  return static_cast<double>(std::max<std::int64_t>(best, 1));
}

namespace {

template <class T>
BenchRow bench_one(const BenchOptions& opt, std::optional<CpuIsa> isa, bool fused, int channels, int sections, int chunk, DType dt,
                   double clock_ns) {
  using clock = std::chrono::steady_clock;
  const Plan plan = plan_chain(bench_chain(sections), opt.rate, fused);
  CpuBackend be(fused, isa);
  ProcessSpec spec{opt.rate, channels, chunk, dt};
  if (!ok(be.prepare(spec, lay_out_plan(plan, spec.channels)))) throw std::runtime_error("bench: backend prepare failed");
  std::vector<T> buf(static_cast<std::size_t>(chunk) * static_cast<std::size_t>(channels));
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (auto& x : buf) x = static_cast<T>(u(rng));
  AudioView v{buf.data(), chunk, channels, dt};
  // calibrate the number of chunks per repeat
  be.process(v, nullptr);
  auto t0 = clock::now();
  int n = 0;
  while (std::chrono::duration<double>(clock::now() - t0).count() < opt.seconds_per_repeat / 4) {
    be.process(v, nullptr);
    ++n;
  }
  const int per_repeat = std::max(1, n * 4);
  std::vector<double> gbs, ns_chunk;
  double shortest = 0;
  const double work = static_cast<double>(sections) * chunk * channels;
  for (int r = 0; r < opt.repeats; ++r) {
    // keep the signal bounded: the filters have gain, refresh the input each repeat
    for (auto& x : buf) x = static_cast<T>(u(rng));
    be.reset();
    const auto a = clock::now();
    for (int i = 0; i < per_repeat; ++i) be.process(v, nullptr);
    const double sec = std::chrono::duration<double>(clock::now() - a).count();
    gbs.push_back(work * per_repeat / sec / 1e9);
    shortest = r == 0 ? sec * 1e9 : std::min(shortest, sec * 1e9);
    ns_chunk.push_back(sec * 1e9 / per_repeat);
  }
  const RepeatCheck check = check_repeats(gbs, shortest, clock_ns);
  std::sort(gbs.begin(), gbs.end());
  std::sort(ns_chunk.begin(), ns_chunk.end());
  BenchRow row;
  row.fused = fused;
  row.isa = be.isa();
  row.isa_auto = !isa.has_value();
  row.layout = be.layout();
  row.channels = channels;
  row.sections = sections;
  row.chunk = chunk;
  row.dtype = dt;
  row.dispatches = plan.dispatches();
  row.median_gbs = gbs[gbs.size() / 2];
  row.min_gbs = gbs.front();
  row.max_gbs = gbs.back();
  row.median_ns_per_chunk = ns_chunk[ns_chunk.size() / 2];
  row.spread = check.spread;
  row.shortest_repeat_ns = shortest;
  row.clock_resolution_ns = clock_ns;
  row.warning = check.warning;
  return row;
}

}  // namespace

std::vector<BenchRow> run_filter_bench(const BenchOptions& opt, const std::function<void(const BenchRow&)>& on_row) {
  std::vector<BenchRow> rows;
  const double clock_ns = measure_clock_resolution_ns();
  for (const auto& choice : opt.isas) check_isa(choice);  // all checked before any runs
  for (DType dt : opt.dtypes)
    for (bool fused : opt.fused)
      for (int ch : opt.channels)
        for (int sec : opt.sections)
          for (int chunk : opt.chunks)
            for (const auto& isa : opt.isas) {  // innermost: the instruction sets of one shape side by side
              BenchRow r = dt == DType::f32 ? bench_one<float>(opt, isa, fused, ch, sec, chunk, dt, clock_ns)
                                            : bench_one<double>(opt, isa, fused, ch, sec, chunk, dt, clock_ns);
              if (on_row) on_row(r);
              rows.push_back(r);
            }
  return rows;
}

}  // namespace chunkscope
