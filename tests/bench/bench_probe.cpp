// What the probe costs an application's callback (make bench-probe): per block, the time
// of begin() + end() (no sections; with two sections; with cpu_time) measured between two
// clock reads, less the same two clock reads around nothing, in interleaved rounds. Prints
// the median over the rounds of each round's p50 and p99. Linked against the shared
// library, as an application is.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "chunkscope/probe.h"
#include "rt/clock.hpp"

namespace {

using chunkscope::now_ns;

constexpr int kRounds = 9;
constexpr int kBlocks = 20000;

std::int64_t at(std::vector<std::int64_t> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

std::int64_t median(std::vector<std::int64_t> v) { return at(std::move(v), 0.5); }

enum class Kind { clock_only, plain, sections, cpu_time };

// One round of `kind`: each block's cost between two clock reads.
std::vector<std::int64_t> round_of(Kind kind, chunkscope_probe* p) {
  std::vector<std::int64_t> d(kBlocks);
  for (int i = 0; i < kBlocks; ++i) {
    const std::int64_t t0 = now_ns();
    if (kind != Kind::clock_only) {
      chunkscope_probe_begin(p, 256);
      if (kind == Kind::sections) {
        chunkscope_probe_section_begin(p, 0);
        chunkscope_probe_section_end(p, 0);
        chunkscope_probe_section_begin(p, 1);
        chunkscope_probe_section_end(p, 1);
      }
      chunkscope_probe_end(p);
    }
    d[static_cast<std::size_t>(i)] = now_ns() - t0;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the reader drains the round
  return d;
}

chunkscope_probe* open_probe(bool cpu_time) {
  static const char* sections[] = {"a", "b"};
  chunkscope_probe_config c;
  chunkscope_probe_config_init(&c);
  c.name = "bench";
  c.rate = 48000;
  c.block_frames = 256;
  c.channels = 2;
  c.sections = sections;
  c.section_count = 2;
  c.cpu_time = cpu_time;
  c.ring_blocks = 2 * kBlocks;
  chunkscope_probe* p = nullptr;
  if (chunkscope_probe_open(&c, &p) != CHUNKSCOPE_PROBE_OK) {
    std::fprintf(stderr, "bench_probe: %s\n", chunkscope_probe_last_error());
    std::exit(3);
  }
  return p;
}

}  // namespace

int main() {
  chunkscope_probe* plain = open_probe(false);
  chunkscope_probe* cpu = open_probe(true);
  const Kind kinds[] = {Kind::clock_only, Kind::plain, Kind::sections, Kind::cpu_time};
  const char* names[] = {"two clock reads alone", "begin + end", "begin + 2 sections + end", "begin + end, cpu_time on"};
  std::vector<std::int64_t> p50[4], p99[4];
  for (int r = 0; r < kRounds; ++r)
    for (int k = 0; k < 4; ++k) {
      const auto d = round_of(kinds[k], kinds[k] == Kind::cpu_time ? cpu : plain);
      p50[k].push_back(at(d, 0.5));
      p99[k].push_back(at(d, 0.99));
    }
  chunkscope_probe_close(plain);
  chunkscope_probe_close(cpu);
  const std::int64_t clock50 = median(p50[0]);
  std::printf("bench_probe: %d interleaved rounds x %d blocks; medians of per-round percentiles\n", kRounds, kBlocks);
  for (int k = 0; k < 4; ++k)
    std::printf("  %-28s p50 %5lld ns  p99 %6lld ns\n", names[k], static_cast<long long>(median(p50[k])),
                static_cast<long long>(median(p99[k])));
  for (int k = 1; k < 4; ++k)
    std::printf("  probe cost, %-24s p50 %5lld ns per block%s\n", names[k], static_cast<long long>(median(p50[k]) - clock50),
                k == 1 ? " (target <= 150 ns)" : "");
  return 0;
}
