#include "src/report/build.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "kernels/gpu.hpp"
#include "src/chain_spec.hpp"
#include "src/report/diagnosis.hpp"
#include "src/report/format.hpp"

namespace chunkscope {

HistSummary summarize(const stats::LogHistogram& h) {
  HistSummary s;
  s.count = h.count();
  if (s.count == 0) return s;
  auto p = [&](double q) { return static_cast<std::int64_t>(h.value_at_percentile(q)); };
  s.min = static_cast<std::int64_t>(h.min());
  s.p50 = p(50);
  s.p90 = p(90);
  s.p95 = p(95);
  s.p99 = p(99);
  s.p99_9 = p(99.9);
  s.max = static_cast<std::int64_t>(h.max());
  s.mean = h.mean();
  return s;
}

namespace {

Series make_series(const RunStats& st) {
  Series s;
  const auto& pts = st.series;
  const std::int64_t origin = pts.empty() ? 0 : pts.front().sched;
  const std::size_t n = pts.size();
  s.capacity = st.series.capacity();
  s.truncated = st.series_dropped > 0;
  s.not_kept = st.series_dropped;
  for (auto* v : {&s.seq, &s.sched_ns, &s.emit_ns, &s.latency_ns, &s.period_ns}) v->reserve(n);
  s.flags.reserve(n);
  for (auto& v : s.stage_ns) v.reserve(n);
  for (auto& v : s.part_ns) v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& p = pts[i];
    s.seq.push_back(static_cast<std::int64_t>(p.seq));
    s.sched_ns.push_back(p.sched - origin);
    s.emit_ns.push_back(p.emit - origin);
    s.latency_ns.push_back(p.emit - p.sched);
    // 0 for the first point and where a new segment starts (compare rounds restart seq)
    s.period_ns.push_back(i == 0 || p.seq <= pts[i - 1].seq ? 0 : p.emit - pts[i - 1].emit);
    for (int k = 0; k < kStageCount; ++k) s.stage_ns[static_cast<std::size_t>(k)].push_back(p.stage[k]);
    for (int k = 0; k < 5; ++k) s.part_ns[static_cast<std::size_t>(k)].push_back(p.part[k]);
    s.flags.push_back(static_cast<std::int32_t>(p.flags));
  }
  return s;
}

int count_filter_stages(const Plan& plan) {
  int n = 0;
  for (const auto& st : plan.stages)
    if (st.spec.kind != StageKind::spin && st.spec.kind != StageKind::sleep) ++n;
  return n;
}

}  // namespace

Verdict decide_verdict(const RunReport& r) {
  Verdict v;
  if (!r.timing.paced || !r.latency.has_data() || !r.headroom) {
    v.text = fmt::format("throughput {:.1f}x real time ({:.3f} s of media in {:.3f} s)", r.throughput.speed_factor,
                         r.throughput.media_seconds, r.throughput.wall_seconds);
    return v;
  }
  const auto B = r.timing.budget_ns;
  const std::int64_t h95 = r.headroom->p95;
  const std::int64_t l95 = r.latency.p95;
  // the stage to blame: most misses, else the largest p95 under the charging rule (a queue
  // wait counts for the stage the chunk waited for)
  int blame_i = 0;
  std::uint64_t most = 0;
  for (int i = 0; i < kStageCount; ++i)
    if (r.counts.miss_blame[static_cast<std::size_t>(i)] > most) {
      most = r.counts.miss_blame[static_cast<std::size_t>(i)];
      blame_i = i;
    }
  if (most == 0) {
    auto p95 = [&](Stage s) { return r.stage(s).has_data() ? r.stage(s).p95 : 0; };
    const std::int64_t charged[3] = {p95(Stage::source), p95(Stage::wait_in) + p95(Stage::process),
                                     p95(Stage::wait_out) + p95(Stage::sink)};
    const Stage who[3] = {Stage::source, Stage::process, Stage::sink};
    std::int64_t big = -1;
    for (int i = 0; i < 3; ++i)
      if (charged[i] >= big) {
        big = charged[i];
        blame_i = static_cast<int>(who[i]);
      }
  }
  v.blame = static_cast<Stage>(blame_i);
  const char* blame_s = stage_key(*v.blame);
  const std::uint64_t xruns = r.device ? r.device->xruns : 0, underruns = r.device ? r.device->underruns : 0;
  const bool device_trouble = xruns > 0 || underruns > 0;
  const bool safe = h95 >= 0 && r.counts.misses == 0 && r.counts.drops == 0 && !device_trouble;
  v.realtime_safe = safe;
  std::string device_part;
  if (r.device) device_part = fmt::format(", {} xrun(s) and {} underrun(s) on the device", xruns, underruns);
  if (safe)
    v.text = fmt::format("p95 headroom {} of {} budget: real-time safe", fmt_time(double(h95)), fmt_time(double(B)));
  else if (h95 >= 0)
    v.text = fmt::format("p95 headroom {} of {} budget, but {} deadline miss(es){} and {} drop(s): not safe, {} to blame",
                         fmt_time(double(h95)), fmt_time(double(B)), r.counts.misses, device_part, r.counts.drops,
                         r.counts.misses > 0 || r.counts.drops > 0 || !r.device ? blame_s : "the device");
  else
    v.text = fmt::format("p95 latency {} exceeds the {} budget by {}: not real-time, {} to blame", fmt_time(double(l95)),
                         fmt_time(double(B)), fmt_time(double(l95 - B)), blame_s);
  return v;
}

RunReport build_run_report(const Workload& w, const Plan& plan, const Environment& env, const RunStats& st,
                           const EngineResult& er, const RunOutcome& outcome, std::optional<DeviceSection> device) {
  const auto& cfg = st.config();
  RunReport r;
  r.state = outcome.state;
  r.reason = outcome.reason;

  ReportWorkload& wl = r.workload;
  wl.command = w.command;
  wl.source = w.source;
  wl.sink = w.sink;
  wl.chain = plan.spec;
  wl.fused = plan.fused;
  wl.dispatches_per_chunk_planned = static_cast<int>(plan.dispatches());
  wl.sections_per_sample = static_cast<int>(plan.total_sections());
  wl.filter_stages = count_filter_stages(plan);
  wl.backend = w.backend;
  wl.mode = w.mode;
  wl.rate = w.rate;
  wl.channels = w.channels;
  wl.chunk_frames = w.chunk_frames;
  wl.dtype = w.dtype;
  wl.warmup_chunks = w.warmup;
  if (!w.max_speed) wl.speed = w.speed;
  wl.margin_text = w.margin_text;
  wl.margin_ns = w.margin_ns;
  wl.queue_depth = w.queue_depth;
  wl.pool_chunks = static_cast<int>(er.pool_chunks);
  wl.media_seconds = w.media_seconds;
  wl.input = w.input;
  Signature sig;
  sig.frames = w.chunk_frames;
  sig.channels = w.channels;
  sig.rate = w.rate;
  sig.dtype = w.dtype;
  sig.chain = plan.spec;
  sig.fused = plan.fused;
  sig.backend = w.backend;
  sig.mode = w.mode;
  sig.state_values = w.state_values;
  sig.gpu_timing = w.gpu_timing;
  sig.short_chunk = w.short_chunk;
  wl.signature = sig;
  wl.variant = w.variant;
  wl.rounds = w.rounds;

  r.environment.host = env;
  if (w.backend == "cuda") {
    const GpuInfo g = probe_gpu();
    r.environment.gpu = GpuEnvironment{g.name, g.driver, fmt::format("{}.{}", g.cc_major, g.cc_minor)};
  }
  r.method.percentiles = "log-linear histogram (HdrHistogram layout), exact min/max/count/mean";
  r.method.relative_error = st.latency.relative_error_bound();
  r.method.latency_from = w.command == "monitor" ? "the device callback's hand-over of the input (the device's clock paces the run)"
                          : w.max_speed          ? "hand-over by the source (no schedule at --speed max)"
                                                 : "scheduled arrival t0 + k*D (coordinated omission not hidden)";
  r.timing = {cfg.chunk_ns, cfg.budget_ns, cfg.paced};

  Counts& c = r.counts;
  c.produced = er.produced;
  c.emitted = st.warmup_chunks + st.chunks;
  c.warmup = st.warmup_chunks;
  c.counted = st.chunks;
  c.short_chunks = st.short_chunks;
  c.frames_emitted = st.frames;
  c.drops = er.drops;
  c.drops_pool_empty = er.drops_pool;
  c.drops_queue_full = er.drops_queue;
  c.drop_seqs = er.drop_seqs;
  c.drop_seqs_truncated = er.drops > er.drop_seqs.size();
  c.misses = st.misses;
  c.miss_blame = st.miss_blame;
  for (const auto& m : st.miss_list)
    c.miss_list.push_back({m.seq, m.latency_ns, m.blame, static_cast<double>(m.emit_ns - st.first_sched) / 1e9});

  for (int i = 0; i < kStageCount; ++i) r.stages[static_cast<std::size_t>(i)] = summarize(st.stage[static_cast<std::size_t>(i)]);
  for (int i = 0; i < kPartCount; ++i)
    if (st.part[static_cast<std::size_t>(i)].count() > 0)
      r.process_parts[static_cast<std::size_t>(i)] = summarize(st.part[static_cast<std::size_t>(i)]);
  r.latency = summarize(st.latency);
  r.engine_overhead = summarize(st.overhead);
  r.warmup = summarize(st.warmup_latency);
  r.dispatches_per_chunk = st.chunks ? static_cast<double>(st.dispatches) / static_cast<double>(st.chunks) : 0.0;
  r.launches_per_chunk = st.chunks ? static_cast<double>(st.launches) / static_cast<double>(st.chunks) : 0.0;
  if (cfg.paced && st.latency.count() > 0) {
    const auto B = cfg.budget_ns;
    r.headroom = Headroom{B - r.latency.p95, B - r.latency.p99, B - r.latency.max};
  }

  Cadence& cd = r.cadence;
  cd.period = summarize(st.period);
  if (cfg.paced) {
    cd.jitter_p95_ns = st.jitter.count() ? static_cast<std::int64_t>(st.jitter.value_at_percentile(95)) : 0;
    cd.drift_ppm = st.drift_ppm();  // without a schedule there is no clock to drift from
  }
  cd.longest_gap = {st.longest_gap_ns, st.longest_gap_seq, static_cast<double>(st.longest_gap_at - st.first_sched) / 1e9};
  const double d_ns = static_cast<double>(cfg.chunk_ns);
  cd.realtime_factor = st.period.count() && d_ns > 0 ? static_cast<double>(st.period.value_at_percentile(95)) / d_ns : 0.0;

  const double wall = static_cast<double>(er.end_ns - er.start_ns) / 1e9;
  const double media = w.rate > 0 ? static_cast<double>(st.frames) / w.rate : 0;
  r.throughput = {wall, media, wall > 0 ? media / wall : 0.0,
                  wall > 0 ? static_cast<double>(st.chunks + st.warmup_chunks) / wall : 0.0};
  r.queues = {w.queue_depth, er.q_in_high_water, er.q_out_high_water};
  r.backend_counters = w.counters;
  for (std::size_t i = 0; i < er.checksummed && i < er.input_checksums.size() && i < er.output_checksums.size(); ++i) {
    r.checksums.input.push_back(hex64(er.input_checksums[i]));
    r.checksums.output.push_back(hex64(er.output_checksums[i]));
  }
  r.series = make_series(st);
  r.device = std::move(device);
  // every section is known: decide once
  r.verdict = decide_verdict(r);
  r.diagnosis = diagnose(r);
  return r;
}

}  // namespace chunkscope
