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

const char* owner_key(Owner o) noexcept {
  switch (o) {
    case Owner::chain: return "chain";
    case Owner::platform: return "platform";
    case Owner::io: return "io";
    case Owner::consumer: return "consumer";
    case Owner::count: break;
  }
  return "?";
}

const char* cause_key(Cause c) noexcept {
  switch (c) {
    case Cause::source_wake: return "source_wake";
    case Cause::source_read: return "source_read";
    case Cause::processor_busy: return "processor_busy";
    case Cause::handoff_in: return "handoff_in";
    case Cause::process: return "process";
    case Cause::process_descheduled: return "process_descheduled";
    case Cause::sink_busy: return "sink_busy";
    case Cause::handoff_out: return "handoff_out";
    case Cause::sink_write: return "sink_write";
    case Cause::count: break;
  }
  return "?";
}

Owner cause_owner(Cause c) noexcept {
  switch (c) {
    case Cause::source_read:
    case Cause::sink_write: return Owner::io;
    case Cause::processor_busy:
    case Cause::process: return Owner::chain;
    case Cause::sink_busy: return Owner::consumer;
    default: return Owner::platform;
  }
}

namespace {
std::int64_t clampv(std::int64_t v, std::int64_t lo, std::int64_t hi) noexcept { return v < lo ? lo : (v > hi ? hi : v); }
}  // namespace

LatencySplit split_latency(const ChunkRecord& r, std::int64_t prev_proc_end, std::int64_t prev_emit,
                           double prev_off_share) noexcept {
  LatencySplit s;
  auto& c = s.ns;
  auto at = [&](Cause k) -> std::int64_t& { return c[static_cast<std::size_t>(k)]; };
  const std::int64_t woke = r.woke >= r.sched && r.woke <= r.ready ? r.woke : r.sched;
  at(Cause::source_wake) = std::max<std::int64_t>(0, woke - r.sched);
  at(Cause::source_read) = std::max<std::int64_t>(0, r.ready - woke);
  // queue_in: the processor was still busy with an earlier chunk, then woke up for this one
  const std::int64_t q_in = std::max<std::int64_t>(0, r.dequeue - r.ready);
  const std::int64_t busy_in = prev_proc_end > 0 ? clampv(prev_proc_end - r.ready, 0, q_in) : 0;
  const bool recorded = (r.flags & kChunkSwitchRecord) != 0;
  // the processor preempted while it worked on earlier chunks: the record says how long;
  // without it, the earlier chunk's share of processing off the CPU stands in
  const auto busy_off =
      recorded ? clampv(r.busy_off_ns, 0, busy_in)
               : static_cast<std::int64_t>(static_cast<double>(busy_in) *
                                           clampv(static_cast<std::int64_t>(prev_off_share * 1e6), 0, 1000000) / 1e6);
  at(Cause::processor_busy) = busy_in - busy_off;
  at(Cause::handoff_in) = q_in - busy_in;
  // processing: what ran on the CPU, plus the designed waits (spin/sleep steps, GPU sync);
  // the rest of its wall time the thread was descheduled
  const std::int64_t proc = std::max<std::int64_t>(0, r.proc_end - r.proc_start);
  std::int64_t on = proc;
  // a hosted step that waited (a lock, a sleep, I/O) chose to: its time off the CPU is the
  // chain's. With the record every wait inside processing is the chain's code's (the engine
  // waits only outside it): only the time preempted is the platform's.
  if (recorded)
    on = std::max<std::int64_t>(0, proc - r.off_preempted_ns[2]);
  else if (r.proc_cpu_ns > 0)
    on = std::min<std::int64_t>(proc, static_cast<std::int64_t>(r.proc_cpu_ns) + std::max<std::int64_t>(0, r.calib_ns) +
                                          std::max<std::int64_t>(0, r.sync_ns) + r.hosted_blocked_ns);
  at(Cause::process) = on + std::max<std::int64_t>(0, r.proc_start - r.dequeue);
  at(Cause::process_descheduled) = proc - on + busy_off;
  s.off_share = proc > 0 ? static_cast<double>(proc - on) / static_cast<double>(proc) : 0.0;
  // after processing: the sink was busy with an earlier chunk, woke up, then wrote. A device
  // output (emit == proc_end) adds nothing here.
  const std::int64_t tail = std::max<std::int64_t>(0, r.emit - r.proc_end);
  if (tail > 0) {
    const std::int64_t q_out = clampv(r.sink_start - r.proc_end, 0, tail);
    const std::int64_t busy_out = prev_emit > 0 ? clampv(prev_emit - r.proc_end, 0, q_out) : 0;
    at(Cause::sink_busy) = busy_out;
    at(Cause::handoff_out) = q_out - busy_out;
    at(Cause::sink_write) = tail - q_out;
  }
  std::int64_t most = -1;
  for (int i = 0; i < kCauseCount; ++i) {
    const auto k = static_cast<Cause>(i);
    s.owner_ns[static_cast<std::size_t>(cause_owner(k))] += c[static_cast<std::size_t>(i)];
    if (c[static_cast<std::size_t>(i)] > most) {
      most = c[static_cast<std::size_t>(i)];
      s.largest = k;
    }
  }
  return s;
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
  source_wake = stats::LogHistogram();
  source_read = stats::LogHistogram();
  const auto nsteps = static_cast<std::size_t>(std::clamp(cfg.steps, 0, kMaxTimedSteps));
  step_wall.assign(nsteps, stats::LogHistogram());
  step_cpu.assign(nsteps, stats::LogHistogram());
  step_preempted.assign(nsteps, stats::LogHistogram());
  proc_on_cpu = stats::LogHistogram();
  off_preempted.fill(stats::LogHistogram());
  off_blocked.fill(stats::LogHistogram());
  recorded_chunks = 0;
  chain_process_sum = 0;
  step_miss.assign(nsteps, 0);
  miss_owner.fill(0);
  miss_owner_ns.fill(0);
  platform_unexplained = 0;
  stalls = 0;
  live_counted.store(0, std::memory_order_relaxed);
  live_misses.store(0, std::memory_order_relaxed);
  live_warmup.store(0, std::memory_order_relaxed);
  live_stalls.store(0, std::memory_order_relaxed);
  stall_owner.fill(0);
  stall_list.clear();
  stall_list.reserve(cfg.stall_list_capacity);
  stall_open_ = false;
  prev_proc_end_ = 0;
  prev_emit_ = 0;
  prev_off_share_ = 0;
  dry_chunks = 0;
  dry_worst_ns = 0;
  dry_first_seq = 0;
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
  p.stage[1] = clamp32(r.proc_start - r.ready);  // queue_in ends where processing starts: the stages add up to L
  p.stage[2] = clamp32(r.proc_end - r.proc_start);
  p.stage[3] = clamp32(r.sink_start - r.proc_end);
  p.stage[4] = clamp32(r.emit - r.sink_start);
  p.part[0] = clamp32(r.launch_ns);
  p.part[1] = clamp32(r.h2d_ns);
  p.part[2] = clamp32(r.kernel_ns);
  p.part[3] = clamp32(r.d2h_ns);
  p.part[4] = clamp32(r.sync_ns);
  p.flags = r.flags & (kChunkShort | kChunkWarmup | kChunkMiss);
  p.wake = r.woke >= r.sched ? clamp32(r.woke - r.sched) : 0;
  series.push_back(p);  // within reserved capacity: no allocation
}

namespace {
// A counted chunk's stage times and processing parts, its latency and, paced, the source's
// wake-up and read, each into its histogram.
void record_stage_times(RunStats& s, const ChunkRecord& r, const std::int64_t (&st)[kStageCount],
                        std::int64_t L) noexcept {
  for (int i = 0; i < kStageCount; ++i) s.stage[static_cast<std::size_t>(i)].record(nn(st[i]));
  const std::int64_t pt[kPartCount] = {r.launch_ns, r.h2d_ns, r.kernel_ns, r.d2h_ns, r.sync_ns, r.calib_ns};
  for (int i = 0; i < kPartCount; ++i)
    if (pt[i] > 0) s.part[static_cast<std::size_t>(i)].record(nn(pt[i]));
  s.latency.record(nn(L));
  if (s.config().paced && r.woke >= r.sched && r.woke <= r.ready) {
    s.source_wake.record(nn(r.woke - r.sched));
    s.source_read.record(nn(r.ready - r.woke));
  }
}

// The planned step that took the most wall time in a chunk's processing (-1: none timed).
struct TopStep {
  int step = -1;
  std::int64_t ns = -1;
};

// Each timed step's wall and CPU time: a miss owned by the chain is charged to the longest,
// by its own time (with the record: its wall time less the time it was preempted, which was
// the platform's; without it, its wall time).
TopStep record_steps(RunStats& s, const RunStats::MetricRecorders& metrics, const ChunkRecord& r) noexcept {
  const std::size_t timed = std::min<std::size_t>(r.steps, s.step_wall.size());
  const bool recorded = (r.flags & kChunkSwitchRecord) != 0;
  TopStep top;
  for (std::size_t i = 0; i < timed; ++i) {
    s.step_wall[i].record(r.step_ns[i]);
    if (auto* rec = metrics.step[i]) rec->record(r.step_ns[i]);
    if (r.step_cpu_ns[i] > 0 || recorded) s.step_cpu[i].record(r.step_cpu_ns[i]);
    if (recorded) s.step_preempted[i].record(r.step_preempt_ns[i]);
    const std::int64_t own = static_cast<std::int64_t>(r.step_ns[i]) - (recorded ? r.step_preempt_ns[i] : 0);
    if (own > top.ns) {
      top.ns = own;
      top.step = static_cast<int>(i);
    }
  }
  return top;
}

// The stage a miss is blamed on.
int miss_stage(const std::int64_t (&st)[kStageCount], std::int64_t budget_ns) noexcept {
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
  if (st[2] > budget_ns) worst = static_cast<int>(Stage::process);
  return worst;
}

// The owner of a miss: the chain when processing on the CPU alone took more than the budget;
// otherwise whoever holds the largest share of the latency.
Owner miss_owner_of(const LatencySplit& split, std::int64_t budget_ns) noexcept {
  Owner owner = Owner::chain;
  if (split.ns[static_cast<std::size_t>(Cause::process)] <= budget_ns) {
    std::int64_t big = -1;
    for (int i = 0; i < kOwnerCount; ++i)
      if (split.owner_ns[static_cast<std::size_t>(i)] > big) {
        big = split.owner_ns[static_cast<std::size_t>(i)];
        owner = static_cast<Owner>(i);
      }
  }
  return owner;
}

// Whether a late chunk's platform waits are what the machine does on its own: each wake-up
// no later than the baseline's latest, each hand-off no longer than its longest round trip,
// and the chunk's processing not above the run's p99 so far. Without a baseline the waits
// are taken as the platform's, as they come. [no-alloc, no-block]
enum class PlatformJudgement { explained, processing_abnormal, wait_beyond_tail };

PlatformJudgement judge_platform(const LatencySplit& split, const RunStatsConfig& cfg, std::int64_t process_ns,
                                 const stats::LogHistogram& process_hist) noexcept {
  auto ns = [&](Cause c) { return split.ns[static_cast<std::size_t>(c)]; };
  const std::int64_t wake = cfg.baseline_wake_max_ns, handoff = cfg.baseline_handoff_max_ns;
  if (wake <= 0 && handoff <= 0) return PlatformJudgement::explained;  // nothing to judge by
  if (process_hist.count() > 0 && process_ns > static_cast<std::int64_t>(process_hist.value_at_percentile(99.0)))
    return PlatformJudgement::processing_abnormal;
  if (wake > 0 && ns(Cause::source_wake) > wake) return PlatformJudgement::wait_beyond_tail;
  if (handoff > 0 && (ns(Cause::handoff_in) > handoff || ns(Cause::handoff_out) > handoff))
    return PlatformJudgement::wait_beyond_tail;
  return PlatformJudgement::explained;
}

// The run loads the machine when its streams' processing, at its mean so far, holds at
// least half of the CPUs its threads may use.
bool run_loads_machine(const RunStats& s, const stats::LogHistogram& process_hist, bool recorded) noexcept {
  const RunStatsConfig& cfg = s.config();
  // with the record, processing's own time (preempted time left out): a preempted processor
  // does not hold its CPU
  const double mean = recorded && s.recorded_chunks > 0
                          ? static_cast<double>(s.chain_process_sum) / static_cast<double>(s.recorded_chunks)
                          : process_hist.mean();
  const double held = mean * std::max(1, cfg.load_streams);
  return 2.0 * held >= static_cast<double>(cfg.chunk_ns) * std::max(1, cfg.cpus);
}

// A miss's owner, the platform's share judged against the baseline. What the baseline does
// not explain is the chain's when the chunk's processing was abnormal too, or when the run
// loads the machine (its processing holds the CPUs the other threads wait for); otherwise
// the machine was worse during the run than when measured, and the miss stays the
// platform's. Both count as unexplained. [no-alloc, no-block]
//
// With the scheduler's record (`recorded`) the platform's time is known, not guessed: long
// processing does not make a wait the chain's, and only the chain's own load (its processing
// less the time it was preempted) can.
Owner judged_owner(RunStats& s, const LatencySplit& split, std::int64_t process_ns, bool recorded) noexcept {
  const Owner owner = miss_owner_of(split, s.config().budget_ns);
  if (owner != Owner::platform) return owner;
  const auto& process_hist = s.stage[static_cast<std::size_t>(Stage::process)];
  const PlatformJudgement j = judge_platform(split, s.config(), process_ns, process_hist);
  if (j == PlatformJudgement::explained) return owner;
  ++s.platform_unexplained;
  if (j == PlatformJudgement::processing_abnormal && !recorded) return Owner::chain;
  if (run_loads_machine(s, process_hist, recorded)) return Owner::chain;
  return Owner::platform;
}

// The scheduler's record of a counted chunk's processing: its split, and the chain's own
// processing time for "the run loads the machine". [no-alloc, no-block]
void record_switches(RunStats& s, const ChunkRecord& r, const LatencySplit& split) noexcept {
  s.chain_process_sum += split.ns[static_cast<std::size_t>(Cause::process)];
  ++s.recorded_chunks;
  s.proc_on_cpu.record(r.proc_cpu_ns);
}

// A chunk's time preempted over the stages whose thread kept its record; -1 when none did.
// [no-alloc, no-block]
std::int64_t preempted_in(const ChunkRecord& r) noexcept {
  const std::uint32_t by[kStageCount] = {kChunkSourceRecord, kChunkSwitchRecord, kChunkSwitchRecord, kChunkSinkRecord,
                                         kChunkSinkRecord};
  std::int64_t sum = -1;
  for (int i = 0; i < kStageCount; ++i)
    if (r.flags & by[i]) sum = std::max<std::int64_t>(sum, 0) + r.off_preempted_ns[i];
  return sum;
}

// Each stage's time off the CPU, where the thread that lived it kept its record. [no-alloc, no-block]
void record_off_cpu(RunStats& s, const ChunkRecord& r) noexcept {
  const std::uint32_t by[kStageCount] = {kChunkSourceRecord, kChunkSwitchRecord, kChunkSwitchRecord, kChunkSinkRecord,
                                         kChunkSinkRecord};
  for (int i = 0; i < kStageCount; ++i)
    if (r.flags & by[i]) {
      s.off_preempted[static_cast<std::size_t>(i)].record(r.off_preempted_ns[i]);
      s.off_blocked[static_cast<std::size_t>(i)].record(r.off_blocked_ns[i]);
    }
}

// Cadence: a chunk a consumer holding the margin's worth of audio would have run dry on.
void note_dry(RunStats& s, const ChunkRecord& r, std::int64_t L) noexcept {
  const RunStatsConfig& cfg = s.config();
  const std::int64_t dry_after = cfg.dry_after_ns > 0 ? cfg.dry_after_ns : cfg.chunk_ns;
  if (cfg.paced && L > dry_after) {
    if (s.dry_chunks == 0) s.dry_first_seq = r.seq;
    ++s.dry_chunks;
    s.dry_worst_ns = std::max(s.dry_worst_ns, L - dry_after);
  }
}

// The output period `P` since the previous chunk's emit, its distance from D, the longest gap.
void record_period(RunStats& s, const ChunkRecord& r, std::int64_t P, stats::IntervalRecorder* live_jitter,
                   stats::IntervalRecorder* metric_period) noexcept {
  s.period.record(nn(P));
  const std::int64_t dev = P - s.config().chunk_ns;
  s.jitter.record(nn(dev < 0 ? -dev : dev));
  if (live_jitter) live_jitter->record(nn(dev < 0 ? -dev : dev));
  if (metric_period) metric_period->record(nn(P));
  if (P > s.longest_gap_ns) {
    s.longest_gap_ns = P;
    s.longest_gap_seq = r.seq;
    s.longest_gap_at = r.emit;
  }
}
}  // namespace

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
    live_warmup.store(warmup_chunks, std::memory_order_relaxed);
    r.flags |= kChunkWarmup;
    warmup_latency.record(nn(L));
    record_point(r);
    prev_proc_end_ = r.proc_end;
    prev_emit_ = r.emit;
    return;
  }
  ++chunks;
  // the stages tile [sched, emit]: queue_in runs to proc_start, so it holds the processor's
  // own preparation between dequeue and the call (its CPU clock read); each chunk's stages sum to L
  const std::int64_t st[kStageCount] = {r.ready - r.sched, r.proc_start - r.ready, r.proc_end - r.proc_start,
                                         r.sink_start - r.proc_end, r.emit - r.sink_start};
  record_stage_times(*this, r, st, L);
  const LatencySplit split = split_latency(r, prev_proc_end_, prev_emit_, prev_off_share_);
  const bool recorded = (r.flags & kChunkSwitchRecord) != 0;
  if (recorded) record_switches(*this, r, split);
  record_off_cpu(*this, r);
  prev_proc_end_ = r.proc_end;
  prev_off_share_ = split.off_share;
  if (live_latency_) live_latency_->record(nn(L));
  if (metrics_.latency) metrics_.latency->record(nn(L));
  for (int i = 0; i < kStageCount; ++i)
    if (auto* rec = metrics_.stage[static_cast<std::size_t>(i)]) rec->record(nn(st[i]));
  live_counted.store(chunks, std::memory_order_relaxed);
  overhead.record(nn(L - st[static_cast<int>(Stage::process)]));
  dispatches += r.dispatches;
  launches += r.launches;
  const TopStep top = record_steps(*this, metrics_, r);

  if (stall_open_ && r.sched > open_stall_end_) stall_open_ = false;  // the hold-up is over
  if (cfg_.paced && L > cfg_.budget_ns) note_miss(r, L, st, split, top.step, top.ns);
  note_dry(*this, r, L);

  if (have_prev_) record_period(*this, r, r.emit - prev_emit_, live_jitter_, metrics_.period);
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

void RunStats::note_miss(ChunkRecord& r, std::int64_t L, const std::int64_t (&st)[kStageCount], const LatencySplit& split,
                         int top_step, std::int64_t top_ns) noexcept {
  ++misses;
  r.flags |= kChunkMiss;
  live_misses.store(misses, std::memory_order_relaxed);
  // the stage charged: with the record, processing counts by its own time (not preempted)
  const bool recorded = (r.flags & kChunkSwitchRecord) != 0;
  std::int64_t charged[kStageCount];
  std::copy(std::begin(st), std::end(st), std::begin(charged));
  if (recorded) charged[static_cast<int>(Stage::process)] = std::max<std::int64_t>(0, st[2] - r.off_preempted_ns[2]);
  const int worst = miss_stage(charged, cfg_.budget_ns);
  ++miss_blame[static_cast<std::size_t>(worst)];
  const Owner owner = judged_owner(*this, split, charged[static_cast<int>(Stage::process)], recorded);
  ++miss_owner[static_cast<std::size_t>(owner)];
  for (int i = 0; i < kOwnerCount; ++i) miss_owner_ns[static_cast<std::size_t>(i)] += split.owner_ns[static_cast<std::size_t>(i)];
  const Cause cause = split.largest;
  const std::int64_t cause_ns = split.ns[static_cast<std::size_t>(cause)];
  if (top_step >= 0 && owner == Owner::chain) ++step_miss[static_cast<std::size_t>(top_step)];
  if (miss_list.size() < miss_list.capacity())  // within reserved capacity
    miss_list.push_back(
        {r.seq, L, r.emit, static_cast<Stage>(worst), owner, cause, cause_ns, top_step, top_ns, preempted_in(r)});
  note_stall(r, L, owner, cause, cause_ns);
}

void RunStats::note_stall(const ChunkRecord& r, std::int64_t L, Owner owner, Cause cause, std::int64_t cause_ns) noexcept {
  const std::int64_t over = L - cfg_.budget_ns;
  if (stall_open_) {  // it was already waiting behind the open event's hold-up
    open_stall_end_ = std::max(open_stall_end_, r.emit);
    if (open_stall_listed_) {
      StallEvent& e = stall_list.back();
      e.last_seq = r.seq;
      ++e.chunks;
      e.end_ns = open_stall_end_;
      e.worst_over_ns = std::max(e.worst_over_ns, over);
    }
    return;
  }
  stall_open_ = true;
  open_stall_end_ = r.emit;
  ++stalls;
  live_stalls.store(stalls, std::memory_order_relaxed);
  ++stall_owner[static_cast<std::size_t>(owner)];
  open_stall_listed_ = stall_list.size() < stall_list.capacity();
  if (open_stall_listed_)  // within reserved capacity
    stall_list.push_back({r.seq, r.seq, 1, r.sched + cfg_.budget_ns, r.emit, over, owner, cause, cause_ns});
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
