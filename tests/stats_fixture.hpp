#pragma once
// Crafted chunk records and reports for the statistics tests: a 256-frame chunk at 48 kHz (D), a 20 %
// margin (B), and a chunk that arrives on time and takes a given processing time.
#include <cstdint>

#include "rt/run_stats.hpp"
#include "src/report/build.hpp"

namespace stats_fixture {

inline constexpr std::int64_t kD = 5'333'333;   // 256 frames at 48 kHz
inline constexpr std::int64_t kB = kD - kD / 5;  // margin 20 %
inline constexpr std::int64_t kT0 = 1'000'000'000;

inline chunkscope::RunStatsConfig config() {
  chunkscope::RunStatsConfig sc;
  sc.chunk_ns = kD;
  sc.budget_ns = kB;
  sc.dry_after_ns = kD;
  sc.warmup = 0;
  sc.media_ns_per_frame = 1e9 / 48000;
  sc.series_capacity = 4096;
  return sc;
}

// A chunk on time: the source wakes 30 us late, reads for 10 us, the processor wakes after
// 8 us, processes `proc` ns on the CPU, the sink writes for 2 us.
inline chunkscope::ChunkRecord on_time(std::uint64_t k, std::int64_t proc = 5'000) {
  chunkscope::ChunkRecord r{};
  r.seq = k;
  r.frames = 256;
  r.media_frame = static_cast<std::int64_t>(k) * 256;
  r.sched = kT0 + static_cast<std::int64_t>(k) * kD;
  r.woke = r.sched + 30'000;
  r.ready = r.woke + 10'000;
  r.dequeue = r.ready + 8'000;
  r.proc_start = r.dequeue;
  r.proc_end = r.proc_start + proc;
  r.proc_cpu_ns = static_cast<std::uint32_t>(proc);
  r.sink_start = r.proc_end + 6'000;
  r.emit = r.sink_start + 2'000;
  return r;
}

// The report of a synth run of `produced` chunks of 256 frames at 48 kHz (stereo, margin
// 20 %) whose statistics are `st`.
inline chunkscope::RunReport report_of(const chunkscope::RunStats& st, std::uint64_t produced) {
  chunkscope::Workload w;
  w.command = "synth";
  w.rate = 48000;
  w.channels = 2;
  w.chunk_frames = 256;
  w.margin_text = "20%";
  w.margin_ns = kD / 5;
  chunkscope::EngineResult er;
  er.produced = produced;
  er.start_ns = kT0;
  er.end_ns = kT0 + static_cast<std::int64_t>(produced) * kD;
  return chunkscope::build_run_report(w, chunkscope::Plan{}, chunkscope::Environment{}, st, er, {});
}

}  // namespace stats_fixture
