#include "src/report/build.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>

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
  s.source_wake_ns.reserve(n);
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
    s.source_wake_ns.push_back(p.wake);
  }
  return s;
}

std::optional<std::uint64_t> first_of(std::uint64_t v) {
  return v == kNoChunk ? std::nullopt : std::optional<std::uint64_t>(v);
}

StepAudit audit_of(const HostedAudit& a) {
  StepAudit s;
  s.calls = a.calls;
  s.allocations_counted = a.allocations_counted;
  s.allocations = a.allocations;
  s.frees = a.frees;
  s.blocking_calls = a.blocking_calls;
  s.voluntary_switches = a.voluntary_switches;
  s.blocked_ns = a.blocked_ns;
  s.preempted_ns = a.preempted_ns;
  s.paging_calls = a.paging_calls;
  s.major_faults = a.major_faults;
  s.paging_ns = a.paging_ns;
  s.first_paging = first_of(a.first_paging);
  s.nonfinite = a.nonfinite;
  s.subnormal = a.subnormal;
  s.first_alloc = first_of(a.first_alloc);
  s.first_block = first_of(a.first_block);
  s.first_nonfinite = first_of(a.first_nonfinite);
  return s;
}

// One row per planned step the backend timed; steps past the last timed slot share it.
void fill_steps(RunReport& r, const Workload& w, const Plan& plan, const RunStats& st) {
  const std::size_t timed = st.step_wall.size();
  // no step rows without step times, unless a hosted step's audit has calls to show
  if (timed == 0 || (st.step_wall[0].count() == 0 && w.hosted_audit.empty())) return;
  std::size_t hosted = 0;
  double sum_mean = 0;
  const double proc_mean = r.stage(Stage::process).mean;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& ps = plan.steps[i];
    const bool shared = i >= timed;  // folded into the last slot
    if (!shared) {
      StepRecord row;
      row.index = static_cast<int>(i) + 1;
      row.kind = PlanStep::kind_name(ps.kind);
      row.label = ps.label(plan.stages);
      row.wall = summarize(st.step_wall[i]);
      if (st.step_cpu[i].count() > 0) row.cpu = summarize(st.step_cpu[i]);
      if (st.step_preempted[i].count() > 0) row.preempted = summarize(st.step_preempted[i]);
      row.share = proc_mean > 0 ? row.wall.mean / proc_mean : 0;
      row.misses = st.step_miss[i];
      sum_mean += row.wall.mean;
      r.steps.push_back(std::move(row));
    } else {
      r.steps.back().label += " | " + ps.label(plan.stages);
    }
    for (auto k : ps.stages) r.steps.back().stages.push_back(static_cast<int>(k) + 1);
    if (ps.kind == PlanStep::Kind::hosted) {
      StepRecord& row = r.steps.back();
      if (hosted < w.hosted_audit.size()) row.audit = audit_of(w.hosted_audit[hosted]);
      if (hosted < w.hosted_latency.size()) row.declared_latency_frames += w.hosted_latency[hosted];
      row.converted_from_f64 = w.dtype == DType::f64;
      r.declared_latency_frames += hosted < w.hosted_latency.size() ? w.hosted_latency[hosted] : 0;
      ++hosted;
    }
  }
  r.steps_outside_mean_ns = std::max<std::int64_t>(0, static_cast<std::int64_t>(proc_mean - sum_mean));
}

int count_filter_stages(const Plan& plan) {
  int n = 0;
  for (const auto& st : plan.stages)
    if (is_iir(st.spec.kind)) ++n;
  return n;
}

}  // namespace

std::optional<Owner> owner_of_misses(const RunReport& r) {
  const Counts& k = r.counts;
  if (k.misses == 0) return std::nullopt;
  // events first (one stall is one vote), then misses
  const bool by_events = k.stalls && *k.stalls > 0;
  std::optional<Owner> best;
  std::uint64_t most = 0;
  for (int i = 0; i < kOwnerCount; ++i) {
    const std::uint64_t n = by_events ? k.stall_owner[static_cast<std::size_t>(i)]
                                      : (k.miss_owner ? (*k.miss_owner)[static_cast<std::size_t>(i)] : 0);
    if (n > most) {
      most = n;
      best = static_cast<Owner>(i);
    }
  }
  return best;
}

namespace {

// The step that took the most of a chain-owned miss's processing, in words: "step 2,
// so:libx.so, took 3.1 ms of the 4.2 ms budget" (the listed miss with the longest such step).
std::string step_sentence(const RunReport& r) {
  const MissRecord* worst = nullptr;
  for (const auto& m : r.counts.miss_list)
    if (m.step && m.owner == Owner::chain && (!worst || m.step_ns > worst->step_ns)) worst = &m;
  if (!worst || r.steps.size() < 2) return "";
  const auto i = static_cast<std::size_t>(*worst->step - 1);
  const std::string label = i < r.steps.size() ? r.steps[i].label : "?";
  return fmt::format("step {}, {}, took {} of the {} budget", *worst->step, label, fmt_time(double(worst->step_ns)),
                     fmt_time(double(r.timing.budget_ns)));
}

// What the owner's misses say, in words, with the worst figure among its listed misses.
std::string owner_sentence(const RunReport& r, Owner o) {
  std::optional<Cause> cause;
  std::int64_t worst = -1;
  auto consider = [&](Cause c, std::int64_t ns) {
    if (cause_owner(c) == o && ns > worst) {
      worst = ns;
      cause = c;
    }
  };
  for (const auto& e : r.counts.stall_list) consider(e.cause, e.cause_ns);
  if (!cause)
    for (const auto& m : r.counts.miss_list)
      if (m.cause) consider(*m.cause, m.cause_ns);
  const std::string detail = cause ? describe_cause(*cause, worst) : std::string();
  switch (o) {
    case Owner::chain: {
      const std::string step = step_sentence(r);
      return "the chain does not keep real time" +
             (detail.empty() && step.empty() ? std::string()
                                             : " (" + detail + (detail.empty() || step.empty() ? "" : "; ") + step + ")");
    }
    case Owner::platform: {
      std::string s = "this machine's scheduling does not keep this budget";
      std::string base;
      if (r.platform) {
        if (auto w = r.platform->wake_p99()) base = fmt::format("baseline wake-up p99 {}", fmt_time(double(*w)));
        if (auto h = r.platform->handoff_p99())
          base += fmt::format("{}hand-off p99 {}", base.empty() ? "baseline " : ", ", fmt_time(double(*h)));
      }
      if (!detail.empty() || !base.empty())
        s += " (" + detail + (detail.empty() || base.empty() ? "" : "; ") + base + ")";
      return s;
    }
    case Owner::io: return "I/O does not keep this budget" + (detail.empty() ? std::string() : " (" + detail + ")");
    case Owner::consumer:
      return "the sink does not keep up" + (detail.empty() ? std::string() : " (" + detail + ")");
    case Owner::count: break;
  }
  return "";
}


// What broke a run whose p95 keeps the budget, naming only what happened: "8 stall event(s)
// (8 missed chunk(s)), 13 xrun(s) on the device and 2 drop(s)".
std::string trouble_words(const RunReport& r, std::uint64_t xruns, std::uint64_t underruns) {
  std::vector<std::string> parts;
  if (r.counts.misses > 0)
    parts.push_back(r.counts.stalls ? fmt::format("{} stall event(s) ({} missed chunk(s))", r.counts.events(), r.counts.misses)
                                    : fmt::format("{} deadline miss(es)", r.counts.misses));
  if (xruns > 0 && underruns > 0)
    parts.push_back(fmt::format("{} xrun(s) and {} underrun(s) on the device", xruns, underruns));
  else if (xruns > 0)
    parts.push_back(fmt::format("{} xrun(s) on the device", xruns));
  else if (underruns > 0)
    parts.push_back(fmt::format("{} underrun(s) on the device", underruns));
  if (r.counts.drops > 0) parts.push_back(fmt::format("{} drop(s)", r.counts.drops));
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

}  // namespace

namespace {

// "; but step 2, so:libx.so is NOT real-time safe (heap calls, blocking waits)" for each hosted
// step whose audit found unsafe code or NaN/Inf output, "" when none: the headline says it in
// every mode, a throughput run's included, whatever the latencies say.
std::string unsafe_steps_words(const RunReport& r) {
  std::vector<std::string> steps;
  for (const auto& s : r.steps) {
    if (!s.audit) continue;
    const StepAudit& a = *s.audit;
    std::vector<std::string> what;
    if (a.allocations + a.frees > 0) what.push_back(fmt::format("{} heap call(s)", a.allocations + a.frees));
    if (a.blocking_calls > 0) what.push_back(fmt::format("{} blocking call(s)", a.blocking_calls));
    // NaN/Inf output is wrong output, not a real-time hazard: said as what it wrote
    const std::string wrote = a.nonfinite > 0 ? fmt::format("wrote {} NaN/Inf sample(s)", a.nonfinite) : "";
    if (!what.empty())
      steps.push_back(fmt::format("step {}, {} is NOT real-time safe ({}){}", s.index, s.label, fmt::join(what, ", "),
                                  wrote.empty() ? "" : " and " + wrote));
    else if (!wrote.empty())
      steps.push_back(fmt::format("step {}, {} {}", s.index, s.label, wrote));
  }
  return steps.empty() ? "" : "; but " + fmt::format("{}", fmt::join(steps, "; "));
}

// The verdict on the run's timing alone.
Verdict timing_verdict(const RunReport& r) {
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
  v.owner = owner_of_misses(r);
  const char* blame_s = stage_key(*v.blame);
  const std::uint64_t xruns = r.device ? r.device->xruns : 0, underruns = r.device ? r.device->underruns : 0;
  const bool device_trouble = xruns > 0 || underruns > 0;
  const bool safe = h95 >= 0 && r.counts.misses == 0 && r.counts.drops == 0 && !device_trouble;
  v.realtime_safe = safe;
  if (safe && r.counts.counted < kChunksToJudgeP95) {  // nothing missed, but too few chunks to call it safe
    v.realtime_safe.reset();
    v.needed_chunks = kChunksToJudgeP95;
    v.text = fmt::format("{}: p95 headroom {} of {} budget and nothing missed, but a p95 needs {} chunks beyond it",
                         cannot_judge_words(r.counts.counted, kChunksToJudgeP95), fmt_time(double(h95)),
                         fmt_time(double(B)), kTailChunks);
    return v;
  }
  // who is to blame, in words: the owner of the misses, else the stage (drops) or the device
  std::string who;
  if (v.owner)
    who = owner_sentence(r, *v.owner);
  else
    who = fmt::format("{} to blame", r.counts.drops > 0 || !r.device ? blame_s : "the device");
  const std::string troubles = trouble_words(r, xruns, underruns);
  if (safe)
    v.text = fmt::format("p95 headroom {} of {} budget: real-time safe", fmt_time(double(h95)), fmt_time(double(B)));
  else if (h95 >= 0)
    v.text = fmt::format("p95 headroom {} of {} budget, but {}: not safe, {}", fmt_time(double(h95)), fmt_time(double(B)),
                         troubles, who);
  else
    v.text = fmt::format("p95 latency {} exceeds the {} budget by {}: not real-time, {}", fmt_time(double(l95)),
                         fmt_time(double(B)), fmt_time(double(l95 - B)), who);
  return v;
}

}  // namespace

Verdict decide_verdict(const RunReport& r) {
  if (r.stuck) {  // the chunks after it were dropped or never made: the step is the verdict
    Verdict v;
    v.realtime_safe = false;
    v.blame = Stage::process;
    v.text = fmt::format("not real-time: step {} ({}) stopped returning from {}(){}, and the run ended there",
                         r.stuck->step, r.stuck->label, r.stuck->call,
                         r.stuck->chunk ? fmt::format(" at chunk {}", *r.stuck->chunk) : std::string());
    return v;
  }
  Verdict v = timing_verdict(r);
  v.text += unsafe_steps_words(r);
  return v;
}

namespace {

BaselineSummary summarize_baseline(const BaselineResult& b) {
  BaselineSummary s;
  s.period_ns = b.period_ns;
  s.duration_ns = b.duration_ns;
  s.wake = summarize(b.wake);
  s.handoff = summarize(b.handoff);
  return s;
}

MachineLoad load_of(const ProcSnapshot& p) { return MachineLoad{p.load1, p.runnable, p.cpus_online}; }

std::optional<PlatformSection> make_platform(const Workload& w, const EngineResult& er) {
  PlatformSection p;
  bool any = false;
  if (w.baseline_before && w.baseline_before->wake.count() > 0) p.before = summarize_baseline(*w.baseline_before);
  if (w.baseline_after && w.baseline_after->wake.count() > 0) p.after = summarize_baseline(*w.baseline_after);
  any = p.before || p.after;
  const std::pair<const char*, const ThreadUsage*> threads[3] = {
      {"source", &er.source_usage}, {"processor", &er.processor_usage}, {"sink", &er.sink_usage}};
  for (int i = 0; i < 3; ++i) {
    const auto& [name, u] = threads[i];
    if (!u->present) continue;
    ThreadRecord t{name, u->tid, u->voluntary, u->involuntary, u->cpu_ns, std::nullopt, std::nullopt};
    if (const auto& rec = er.switch_records[i]; rec.kept) {
      t.preempted_ns = rec.totals.preempted_ns;
      t.blocked_ns = rec.totals.blocked_ns;
    }
    p.threads.push_back(std::move(t));
    any = true;
  }
  if (w.proc_before) p.load_before = load_of(*w.proc_before);
  if (w.proc_after) p.load_after = load_of(*w.proc_after);
  if (w.proc_before && w.proc_after)
    if (auto sh = proc_shares(*w.proc_before, *w.proc_after)) {
      p.busy_share = sh->busy;
      p.steal_share = sh->steal;
    }
  any = any || p.load_before || p.load_after;
  if (!any) return std::nullopt;
  return p;
}

}  // namespace

namespace {

// The workload section: the setup, the stage signature stage-bench rebuilds, the run mode.
ReportWorkload report_workload(const Workload& w, const Plan& plan, const EngineResult& er) {
  ReportWorkload wl = w;
  wl.chain = plan.spec;
  wl.fused = plan.fused;
  wl.dispatches_per_chunk_planned = static_cast<int>(plan.dispatches());
  wl.sections_per_sample = static_cast<int>(plan.total_sections());
  wl.filter_stages = count_filter_stages(plan);
  wl.pool_chunks = static_cast<int>(er.pool_chunks);
  Signature sig;
  sig.frames = w.chunk_frames;
  sig.channels = w.channels * w.batch;  // what the backend processed
  sig.rate = w.rate;
  sig.dtype = w.dtype;
  sig.chain = plan.spec;
  sig.fused = plan.fused;
  sig.backend = w.backend;
  sig.mode = w.mode;
  sig.cpu_isa = w.cpu_isa;
  sig.cpu_layout = w.cpu_layout;
  sig.state_values = w.state_values;
  sig.gpu_timing = w.gpu_timing;
  sig.short_chunk = w.short_chunk;
  wl.signature = sig;
  RunMode mode;
  mode.wait = wait_mode_name(w.wait);
  mode.rt = w.rt;
  mode.rt_priority = w.rt ? w.policy.rt_priority : 0;
  mode.cpus = w.cpus_text;
  mode.inline_process = w.inline_process;
  mode.ftz = w.ftz;
  wl.run_mode = mode;
  return wl;
}

// Where and how it was measured: the machine (and GPU), the method, D and B.
// What judged the blame: the record of the thread that processed (the source's when it
// processes inline; a device callback keeps none), or the wall-clock rules and why.
std::string blame_method(const Workload& w, const EngineResult& er, const RunStats& st) {
  if (st.recorded_chunks > 0)
    return "the scheduler's record of each engine thread (perf_event context switches): time preempted is the "
           "platform's, time blocked in the chain's code the chain's";
  const auto& rec = er.switch_records[w.inline_process ? 0 : 1];
  std::string why = "--switch-record off";
  if (rec.refused_errno != 0)
    why = fmt::format("the kernel refused perf events: {}", std::strerror(rec.refused_errno));
  else if (w.command == "monitor" || w.command == "probe")
    why = "the processing runs on a thread chunkscope did not start";
  return "wall-clock rules (the thread CPU clock; " + why + ")";
}

void fill_method(RunReport& r, const Workload& w, const Environment& env, const RunStats& st) {
  const auto& cfg = st.config();
  r.environment.host = env;
  if (w.backend == "cuda") {
    const GpuInfo g = probe_gpu();
    r.environment.gpu = GpuEnvironment{g.name, g.driver, fmt::format("{}.{}", g.cc_major, g.cc_minor)};
  }
  r.method.percentiles = "log-linear histogram (HdrHistogram layout), exact min/max/count/mean";
  r.method.relative_error = st.latency.relative_error_bound();
  r.method.latency_from = w.command == "monitor" ? "the device callback's hand-over of the input (the device's clock paces the run)"
                          : w.command == "probe" ? "the application's callback entry (begin) to its end: the callback's own time"
                          : w.max_speed()        ? "hand-over by the source (no schedule at --speed max)"
                                                 : "scheduled arrival t0 + k*D (coordinated omission not hidden)";
  r.timing = {cfg.chunk_ns, cfg.budget_ns, cfg.paced};
}

// What was produced, emitted, counted, dropped and missed, with the misses' and stalls' lists.
void fill_counts(RunReport& r, const RunStats& st, const EngineResult& er) {
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
    c.miss_list.push_back({m.seq, m.latency_ns, m.blame, static_cast<double>(m.emit_ns - st.first_sched) / 1e9, m.owner,
                           m.cause, m.cause_ns, m.step >= 0 ? std::optional<int>(m.step + 1) : std::nullopt,
                           m.step >= 0 ? m.step_ns : 0,
                           m.preempted_ns >= 0 ? std::optional<std::int64_t>(m.preempted_ns) : std::nullopt});
  c.miss_owner = st.miss_owner;
  c.platform_unexplained = st.platform_unexplained;
  c.stalls = st.stalls;
  c.stall_owner = st.stall_owner;
  for (const auto& e : st.stall_list)
    c.stall_list.push_back({e.first_seq, e.last_seq, e.chunks, static_cast<double>(e.start_ns - st.first_sched) / 1e9,
                            e.end_ns - e.start_ns, e.worst_over_ns, e.owner, e.cause, e.cause_ns});
  c.stall_list_truncated = st.stalls > st.stall_list.size();
}

// The stage, part and latency percentiles, source wake-up and read, dispatches, headroom.
void fill_figures(RunReport& r, const RunStats& st) {
  const auto& cfg = st.config();
  for (int i = 0; i < kStageCount; ++i) r.stages[static_cast<std::size_t>(i)] = summarize(st.stage[static_cast<std::size_t>(i)]);
  for (int i = 0; i < kPartCount; ++i)
    if (st.part[static_cast<std::size_t>(i)].count() > 0)
      r.process_parts[static_cast<std::size_t>(i)] = summarize(st.part[static_cast<std::size_t>(i)]);
  r.latency = summarize(st.latency);
  r.engine_overhead = summarize(st.overhead);
  r.warmup = summarize(st.warmup_latency);
  if (cfg.paced && st.source_wake.count() > 0) {
    r.source_wake = summarize(st.source_wake);
    r.source_read = summarize(st.source_read);
  }
  r.dispatches_per_chunk = st.chunks ? static_cast<double>(st.dispatches) / static_cast<double>(st.chunks) : 0.0;
  r.launches_per_chunk = st.chunks ? static_cast<double>(st.launches) / static_cast<double>(st.chunks) : 0.0;
  if (cfg.paced && st.latency.count() > 0) {
    const auto B = cfg.budget_ns;
    r.headroom = Headroom{B - r.latency.p95, B - r.latency.p99, B - r.latency.max};
  }
}

// Output period, jitter, drift, gaps and the dry-run count.
void fill_cadence(RunReport& r, const RunStats& st, const EngineResult& er) {
  const auto& cfg = st.config();
  Cadence& cd = r.cadence;
  cd.period = summarize(st.period);
  if (cfg.paced) {
    cd.jitter_p95_ns = st.jitter.count() ? static_cast<std::int64_t>(st.jitter.value_at_percentile(95)) : 0;
    cd.drift_ppm = st.drift_ppm();  // without a schedule there is no clock to drift from
  }
  cd.longest_gap = {st.longest_gap_ns, st.longest_gap_seq, static_cast<double>(st.longest_gap_at - st.first_sched) / 1e9};
  const double d_ns = static_cast<double>(cfg.chunk_ns);
  cd.period_ratio_p95 = st.period.count() && d_ns > 0 ? static_cast<double>(st.period.value_at_percentile(95)) / d_ns : 0.0;
  if (cfg.paced) {
    cd.dry_after_ns = cfg.dry_after_ns > 0 ? cfg.dry_after_ns : cfg.chunk_ns;
    cd.dry_chunks = st.dry_chunks;
    cd.dry_worst_ns = st.dry_worst_ns;
    cd.dry_first_seq = st.dry_first_seq;
    cd.steady = st.dry_chunks == 0 && er.drops == 0;
  }
}

}  // namespace

RunReport build_run_report(const Workload& w, const Plan& plan, const Environment& env, const RunStats& st,
                           const EngineResult& er, const RunOutcome& outcome, std::optional<DeviceSection> device) {
  const auto& cfg = st.config();
  RunReport r;
  r.state = outcome.state;
  r.reason = outcome.reason;
  r.not_processed = er.not_processed;
  if (er.stuck.stuck) {
    const StuckCall& s = er.stuck;
    r.stuck = StuckStep{s.step, s.label ? s.label : "hosted code", s.call ? s.call : "process",
                        s.chunk == ~std::uint64_t{0} ? std::nullopt : std::optional<std::uint64_t>(s.chunk), s.for_ns,
                        s.timeout_ns};
  }

  r.workload = report_workload(w, plan, er);

  fill_method(r, w, env, st);
  r.method.blame_from = blame_method(w, er, st);
  for (int i = 0; i < kStageCount; ++i)
    if (st.off_preempted[static_cast<std::size_t>(i)].count() > 0)
      r.off_cpu[static_cast<std::size_t>(i)] = StageOffCpu{summarize(st.off_preempted[static_cast<std::size_t>(i)]),
                                                           summarize(st.off_blocked[static_cast<std::size_t>(i)])};
  if (st.recorded_chunks > 0) {
    r.process_on_cpu = summarize(st.proc_on_cpu);
    r.process_preempted = summarize(st.off_preempted[static_cast<std::size_t>(Stage::process)]);
    r.process_blocked = summarize(st.off_blocked[static_cast<std::size_t>(Stage::process)]);
  }
  fill_counts(r, st, er);
  fill_figures(r, st);
  fill_cadence(r, st, er);

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
  fill_steps(r, w, plan, st);
  r.device = std::move(device);
  if (cfg.paced) r.platform = make_platform(w, er);
  // every section is known: decide once
  r.verdict = decide_verdict(r);
  r.diagnosis = diagnose(r);
  return r;
}

}  // namespace chunkscope
