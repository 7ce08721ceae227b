#include "rt/run_stats.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

namespace chunkscope {

const char* stage_key(Stage s) noexcept {
  switch (s) {
    case Stage::source: return "source";
    case Stage::wait_in: return "queue_in";
    case Stage::process: return "process";
    case Stage::wait_out: return "queue_out";
    case Stage::sink: return "sink";
    case Stage::count: break;
  }
  return "?";
}

const char* part_key(Part p) noexcept {
  switch (p) {
    case Part::launch: return "launch";
    case Part::h2d: return "h2d";
    case Part::kernel: return "kernel";
    case Part::d2h: return "d2h";
    case Part::sync: return "sync";
    case Part::calib: return "calibration";
    case Part::count: break;
  }
  return "?";
}

void RunStats::prepare(const RunStatsConfig& cfg) {
  cfg_ = cfg;
  stage.assign(kStageCount, stats::LogHistogram());
  part.assign(kPartCount, stats::LogHistogram());
  latency = stats::LogHistogram();
  period = stats::LogHistogram();
  jitter = stats::LogHistogram();
  overhead = stats::LogHistogram();
  warmup_latency = stats::LogHistogram();
  miss_list.clear();
  miss_list.reserve(cfg.miss_list_capacity);
  series.clear();
  series.reserve(cfg.series_capacity);
  series_dropped = 0;
  chunks = warmup_chunks = frames = short_chunks = misses = 0;
  miss_blame.fill(0);
  dispatches = launches = 0;
  first_emit = last_emit = first_sched = 0;
  longest_gap_ns = 0;
  longest_gap_seq = 0;
  longest_gap_at = 0;
  have_prev_ = have_origin_ = false;
  seg_warmup_ = 0;
  n_ = 0;
  sx_ = sy_ = sxx_ = sxy_ = 0;
}

namespace {
std::uint64_t nn(std::int64_t v) noexcept { return v > 0 ? static_cast<std::uint64_t>(v) : 0; }
std::int32_t clamp32(std::int64_t v) noexcept {
  return static_cast<std::int32_t>(std::clamp<std::int64_t>(v, 0, INT32_MAX));
}
}  // namespace

void RunStats::record_point(const ChunkRecord& r) noexcept {
  if (series.size() >= series.capacity()) {
    ++series_dropped;
    return;
  }
  SeriesPoint p{};
  p.seq = r.seq;
  p.sched = r.sched;
  p.emit = r.emit;
  p.stage[0] = clamp32(r.ready - r.sched);
  p.stage[1] = clamp32(r.dequeue - r.ready);
  p.stage[2] = clamp32(r.proc_end - r.proc_start);
  p.stage[3] = clamp32(r.sink_start - r.proc_end);
  p.stage[4] = clamp32(r.emit - r.sink_start);
  p.part[0] = clamp32(r.launch_ns);
  p.part[1] = clamp32(r.h2d_ns);
  p.part[2] = clamp32(r.kernel_ns);
  p.part[3] = clamp32(r.d2h_ns);
  p.part[4] = clamp32(r.sync_ns);
  p.flags = r.flags & (kChunkShort | kChunkWarmup | kChunkMiss);
  series.push_back(p);  // within reserved capacity: no allocation
}

void RunStats::add(ChunkRecord& r) noexcept {
  const std::int64_t L = r.emit - r.sched;
  if (frames == 0) {
    first_emit = r.emit;
    first_sched = r.sched;
  }
  last_emit = r.emit;
  frames += r.frames;
  if (r.flags & kChunkShort) ++short_chunks;
  if (seg_warmup_ < cfg_.warmup) {
    ++seg_warmup_;
    ++warmup_chunks;
    r.flags |= kChunkWarmup;
    warmup_latency.record(nn(L));
    record_point(r);
    return;
  }
  ++chunks;
  const std::int64_t st[kStageCount] = {r.ready - r.sched, r.dequeue - r.ready, r.proc_end - r.proc_start,
                                         r.sink_start - r.proc_end, r.emit - r.sink_start};
  for (int i = 0; i < kStageCount; ++i) stage[static_cast<std::size_t>(i)].record(nn(st[i]));
  const std::int64_t pt[kPartCount] = {r.launch_ns, r.h2d_ns, r.kernel_ns, r.d2h_ns, r.sync_ns, r.calib_ns};
  for (int i = 0; i < kPartCount; ++i)
    if (pt[i] > 0) part[static_cast<std::size_t>(i)].record(nn(pt[i]));
  latency.record(nn(L));
  if (live_latency_) {
    live_latency_->record(nn(L));
    live_counted.store(chunks, std::memory_order_relaxed);
  }
  overhead.record(nn(L - st[static_cast<int>(Stage::process)]));
  dispatches += r.dispatches;
  launches += r.launches;

  if (cfg_.paced && L > cfg_.budget_ns) {
    ++misses;
    r.flags |= kChunkMiss;
    live_misses.store(misses, std::memory_order_relaxed);
    // A queue wait is charged to the stage the chunk waited for: the processor was busy
    // (or waking) for queue_in, the sink for queue_out.
    const std::int64_t charge[3] = {st[0], st[1] + st[2], st[3] + st[4]};
    const int who[3] = {static_cast<int>(Stage::source), static_cast<int>(Stage::process), static_cast<int>(Stage::sink)};
    int worst = who[0];
    std::int64_t most = charge[0];
    for (int i = 1; i < 3; ++i)
      if (charge[i] > most) {
        most = charge[i];
        worst = who[i];
      }
    // A chunk whose own processing alone took more than the budget misses because of the
    // chain, whatever else was late in it.
    if (st[2] > cfg_.budget_ns) worst = static_cast<int>(Stage::process);
    ++miss_blame[static_cast<std::size_t>(worst)];
    if (miss_list.size() < miss_list.capacity())
      miss_list.push_back({r.seq, L, r.emit, static_cast<Stage>(worst)});  // within reserved capacity
  }

  if (have_prev_) {
    const std::int64_t P = r.emit - prev_emit_;
    period.record(nn(P));
    const std::int64_t dev = P - cfg_.chunk_ns;
    jitter.record(nn(dev < 0 ? -dev : dev));
    if (live_jitter_) live_jitter_->record(nn(dev < 0 ? -dev : dev));
    if (P > longest_gap_ns) {
      longest_gap_ns = P;
      longest_gap_seq = r.seq;
      longest_gap_at = r.emit;
    }
  }
  have_prev_ = true;
  prev_emit_ = r.emit;

  const auto media_ns = static_cast<std::int64_t>(static_cast<double>(r.media_frame) * cfg_.media_ns_per_frame);
  if (!have_origin_) {
    x0_ = media_ns;
    y0_ = r.emit;
    have_origin_ = true;
  }
  const long double x = static_cast<long double>(media_ns - x0_) * 1e-9L;
  const long double y = static_cast<long double>(r.emit - y0_) * 1e-9L;
  ++n_;
  sx_ += x;
  sy_ += y;
  sxx_ += x * x;
  sxy_ += x * y;
  record_point(r);
}

double RunStats::drift_ppm() const noexcept {
  if (n_ < 3) return 0;
  const long double n = static_cast<long double>(n_);
  const long double den = n * sxx_ - sx_ * sx_;
  if (den <= 0) return 0;
  const long double slope = (n * sxy_ - sx_ * sy_) / den;
  return static_cast<double>((slope - 1.0L) * 1e6L);
}

}  // namespace chunkscope
