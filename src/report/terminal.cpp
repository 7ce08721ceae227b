#include "src/report/terminal.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <string>
#include <vector>

#include "src/report/build.hpp"
#include "src/report/diagnosis.hpp"
#include "src/report/columns.hpp"
#include "src/report/format.hpp"

namespace chunkscope {

namespace {

// A table row in 80 columns: a 10-column name and 7 figures of 9 ("3.866 ms"), a space apart.
std::string hist_row(const std::string& name, const HistSummary& h) {
  if (!h.has_data()) return fmt::format("{:<10} {:>9}", name, "-");
  std::string s = fmt::format("{:<10}", name);
  for (int p = 0; p < kPctCount; ++p) s += fmt::format(" {:>9}", fmt_time(double(at(h, static_cast<Pct>(p)))));
  s += fmt::format(" {:>9} {:>9}", fmt_time(double(h.max)), fmt_time(h.mean));
  return s;
}

std::string fmt_speed(double s) { return fmt::format("{:g}", s); }

// The lines that say what a chunk is, its deadline and how the run was paced.
void header_timing(std::vector<std::string>& out, const RunReport& r) {
  const ReportWorkload& w = r.workload;
  const double D = double(r.timing.chunk_ns), B = double(r.timing.budget_ns);
  const bool device = r.device.has_value();
  const int K = device && r.device->duplex ? r.device->latency_chunks : 1;
  std::string budget;
  if (K > 1)
    budget = fmt::format("budget B = {} x D - margin = {} (full duplex: a chunk plays {} callbacks after its input)", K,
                         fmt_time(B), K);
  else
    budget = fmt::format("budget B {}", fmt_time(B));
  if (w.speed && *w.speed != 1 && !device) {
    const double media = D * *w.speed;
    out.push_back(fmt::format("           {} Hz, {} ch, chunk {} frames = {} of media = D {} of wall time at {}x, margin {} = {}, {}",
                              w.rate, w.channels, w.chunk_frames, fmt_time(media), fmt_time(D), fmt_speed(*w.speed),
                              w.margin_text, fmt_time(double(w.margin_ns)), budget));
    out.push_back(fmt::format("           at {}x the deadline shrinks with the speed; fixed per-chunk costs (wake-ups, "
                              "hand-offs, launches) do not",
                              fmt_speed(*w.speed)));
  } else {
    out.push_back(fmt::format("           {} Hz, {} ch, chunk {} frames = D {}, margin {} = {}, {}", w.rate, w.channels,
                              w.chunk_frames, fmt_time(D), w.margin_text, fmt_time(double(w.margin_ns)), budget));
  }
  if (w.command == "probe") {  // no queue, no pool: the application's callback is the whole path
    out.push_back(fmt::format("           paced by the application's callbacks, warm-up {} chunks (reported apart)",
                              w.warmup_chunks));
    return;
  }
  std::string pacing;
  if (device)
    pacing = "paced by the device's callbacks";
  else if (!w.speed)
    pacing = "max (as fast as possible, no schedule)";
  else
    pacing = fmt::format("{}x (paced, absolute schedule)", fmt_speed(*w.speed));
  out.push_back(fmt::format("           speed {}, warm-up {} chunks (reported apart), queue depth {}, pool {} chunks", pacing,
                            w.warmup_chunks, w.queue_depth, w.pool_chunks));
}

std::string hist_brief(const HistSummary& h) {
  if (!h.has_data()) return "-";
  return fmt::format("p50 {}, p99 {}, max {}", fmt_time(double(h.p50)), fmt_time(double(h.p99)), fmt_time(double(h.max)));
}

std::string share_of(std::int64_t v, std::int64_t of) {
  if (of <= 0) return "-";
  return fmt::format("{:.0f}%", 100.0 * double(v) / double(of));
}

void mode_line(std::vector<std::string>& out, const RunReport& r) {
  if (!r.workload.run_mode) return;
  if (r.workload.command == "probe") {  // the probe sets none of the flags the line names
    out.push_back("mode       inside the application's callback: its threads, scheduling and floating-point mode are "
                  "the application's");
    return;
  }
  const RunMode& m = *r.workload.run_mode;
  out.push_back(fmt::format("mode       wait {}, {}, {}, {}", m.wait,
                            m.rt ? fmt::format("SCHED_FIFO priority {} (memory locked)", m.rt_priority) : "default scheduling",
                            m.cpus.empty() ? std::string("threads not pinned") : "threads pinned to CPUs " + m.cpus,
                            m.inline_process ? (r.device ? "processing inside the device callback"
                                                         : "processing on the source's thread")
                                             : "processor on its own thread") +
                    (m.ftz ? "" : ", denormals not flushed (--ftz off)"));
}

// The platform baseline's lines, before and after, the first headed "platform".
void baseline_lines(std::vector<std::string>& out, const PlatformSection& p, std::int64_t margin) {
  const std::size_t first = out.size();
  auto side = [&](const char* name, const std::optional<BaselineSummary>& b) {
    if (!b) return;
    out.push_back(fmt::format("{:<11}{} {:.2f} s at D: wake-up {} (p99 = {} of the margin); hand-off round trip {}",
                              out.size() == first ? "platform" : "", name, double(b->duration_ns) / 1e9,
                              hist_brief(b->wake), b->wake.has_data() ? share_of(b->wake.p99, margin) : std::string("-"),
                              hist_brief(b->handoff)));
  };
  side("baseline before", p.before);
  side("baseline after", p.after);
}

void platform_lines(std::vector<std::string>& out, const RunReport& r) {
  if (!r.platform) return;
  const PlatformSection& p = *r.platform;
  const std::size_t first = out.size();
  baseline_lines(out, p, r.workload.margin_ns);
  std::string load;
  if (p.load_before || p.load_after) {
    const int cpus = p.load_after ? p.load_after->cpus_online : p.load_before->cpus_online;
    load = fmt::format("load {} -> {} on {} CPU(s)", p.load_before ? fmt::format("{:.2f}", p.load_before->load1) : "?",
                       p.load_after ? fmt::format("{:.2f}", p.load_after->load1) : "?", cpus);
  }
  if (p.busy_share) load += fmt::format("{}machine busy {:.0f}%", load.empty() ? "" : ", ", *p.busy_share * 100);
  if (p.steal_share) load += fmt::format(", steal {:.1f}%", *p.steal_share * 100);
  if (!load.empty()) out.push_back(fmt::format("{:<11}{}", out.size() == first ? "platform" : "", load));
  if (!p.threads.empty()) {
    std::string t;
    for (const auto& th : p.threads)
      t += fmt::format("{}{} {} / {} (cpu {}{})", t.empty() ? "" : "; ", th.thread, th.voluntary, th.involuntary,
                       fmt_time(double(th.cpu_ns)),
                       th.preempted_ns ? fmt::format(", preempted {}, blocked {}", fmt_time(double(*th.preempted_ns)),
                                                     fmt_time(double(th.blocked_ns.value_or(0))))
                                       : std::string());
    out.push_back(fmt::format("{:<11}context switches voluntary / involuntary: {}", out.size() == first ? "platform" : "", t));
  }
}

void streams_head(std::vector<std::string>& out, const RunReport& r) {
  if (!r.streams) return;
  const StreamsSection& s = *r.streams;
  if (s.batched()) {
    out.push_back(fmt::format("streams    {} streams of this chain batched (--batch): every chunk holds each stream's chunk "
                              "of its period, {} x {} channels, processed in one call; every stream has the figures below",
                              s.count, s.count, r.workload.channels));
    return;
  }
  out.push_back(fmt::format("streams    {} {} streams of this chain, {}; the tables below are stream {}'s (the worst)",
                            s.count, s.mode,
                            s.schedule_words(r.timing.paced), s.worst));
}

void streams_table(std::vector<std::string>& out, const RunReport& r) {
  if (!r.streams) return;
  const StreamsSection& s = *r.streams;
  auto t = [](const HistSummary& h, std::int64_t v) { return h.has_data() ? fmt_time(double(v)) : std::string("-"); };
  auto room = [](const std::optional<std::int64_t>& v) { return v ? fmt_time(double(*v)) : std::string("-"); };

  out.push_back("");
  out.push_back(fmt::format("{:<12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>7} {:>6}  {}", "stream", "offset",
                            "e2e p50", "e2e p95", "proc p50", "headroom", "counted", "misses", "drops", "verdict"));
  auto row = [&](const std::string& name, const std::string& offset, const HistSummary& lat, const HistSummary& proc,
                 const std::optional<std::int64_t>& head, std::uint64_t counted, std::uint64_t misses, std::uint64_t stalls,
                 std::uint64_t drops, const std::string& v) {
    out.push_back(fmt::format("{:<12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>7} {:>6}  {}", name, offset,
                              t(lat, lat.p50), t(lat, lat.p95), t(proc, proc.p50), room(head), counted,
                              stalls == misses ? fmt::format("{}", misses) : fmt::format("{}/{}ev", misses, stalls), drops, v));
  };
  if (s.batched() && !s.streams.empty()) {
    // one engine: every stream's figures are the batch's
    const StreamFigures& f = s.streams.front();
    std::string v = verdict_word(f.realtime_safe, f.needed_chunks);
    if (f.owner) v += fmt::format(" ({})", owner_key(*f.owner));
    if (f.state != RunState::complete) v += fmt::format(" [{}]", run_state_name(f.state));
    row(fmt::format("all {}", s.count), "0", f.latency, f.process, f.headroom_p95_ns, f.counted, f.misses, f.stalls,
        f.drops, v + " (batched)");
    return;
  }
  for (const auto& f : s.streams) {
    std::string v = verdict_word(f.realtime_safe, f.needed_chunks);
    if (f.owner) v += fmt::format(" ({})", owner_key(*f.owner));
    if (f.state != RunState::complete) v += fmt::format(" [{}]", run_state_name(f.state));
    if (f.stream == s.worst) v += " <- worst";
    if (s.blame && f.stream == *s.blame) v += " <- blame";
    row(fmt::format("{}", f.stream), r.timing.paced ? fmt_time(double(f.offset_ns)) : "-", f.latency, f.process, f.headroom_p95_ns, f.counted,
        f.misses, f.stalls, f.drops, v);
  }
  row("pooled", "", s.latency, s.process, s.headroom_p95_ns, s.counted, s.misses, s.stalls, s.drops,
      fmt::format("{}{}", verdict_word(s.realtime_safe, s.needed_chunks),
                  s.unsafe_streams() > 0 ? fmt::format(" ({} of {} streams not safe)", s.unsafe_streams(), s.count) : ""));
  if (s.blame)
    out.push_back(fmt::format("blame      stream {}: the most stall events ({}) of the {} streams", *s.blame,
                              s.streams[static_cast<std::size_t>(*s.blame)].stalls, s.count));
}

std::string cadence_steady_line(const RunReport& r) {
  const Cadence& c = r.cadence;
  if (!c.steady) return "";
  const std::int64_t margin = c.dry_after_ns - r.timing.budget_ns;
  if (*c.steady)
    return fmt::format("           steady: a consumer holding the margin's {} of audio would never have run dry (every chunk "
                       "out within B + margin = {})",
                       fmt_time(double(margin)), fmt_time(double(c.dry_after_ns)));
  std::string s = fmt::format("           not steady: a consumer holding the margin's {} of audio would have run dry", fmt_time(double(margin)));
  if (c.dry_chunks > 0)
    s += fmt::format(" on {} chunk(s) out later than B + margin = {} (first chunk {}, worst {} beyond)", c.dry_chunks,
                     fmt_time(double(c.dry_after_ns)), c.dry_first_seq, fmt_time(double(c.dry_worst_ns)));
  if (r.counts.drops > 0) s += fmt::format("{} {} dropped chunk(s)", c.dry_chunks > 0 ? " and on" : " on", r.counts.drops);
  return s;
}

void stall_lines(std::vector<std::string>& out, const RunReport& r) {
  const Counts& k = r.counts;
  if (!k.stalls || *k.stalls == 0) return;
  std::string owners;
  for (int i = 0; i < kOwnerCount; ++i)
    if (k.stall_owner[static_cast<std::size_t>(i)] > 0)
      owners += fmt::format("{}{} {}", owners.empty() ? "" : ", ", owner_key(static_cast<Owner>(i)),
                            k.stall_owner[static_cast<std::size_t>(i)]);
  out.push_back(fmt::format("stalls     {} event(s) made the {} miss(es): {}", *k.stalls, k.misses, owners));
  const std::size_t show = std::min<std::size_t>(k.stall_list.size(), 5);
  for (std::size_t i = 0; i < show; ++i) {
    const StallRecord& e = k.stall_list[i];
    out.push_back(fmt::format("           chunks {}-{} ({} missed) at {:.3f} s, {} past the deadline, worst {} over B: {}: {}",
                              e.first_seq, e.last_seq, e.chunks, e.start_s, fmt_time(double(e.length_ns)),
                              fmt_time(double(e.worst_over_ns)), owner_key(e.owner), describe_cause(e.cause, e.cause_ns)));
  }
  if (k.stall_list.size() > show || k.stall_list_truncated)
    out.push_back(fmt::format("           ... {} more in the JSON report", *k.stalls - show));
}

}  // namespace

bool budget_broken(const RunReport& r) {
  if (r.headroom && r.headroom->p95 < 0) return true;
  if (r.counts.misses > 0 || r.counts.drops > 0) return true;
  if (r.streams) {
    const StreamsSection& s = *r.streams;
    if (s.misses > 0 || s.drops > 0) return true;
    for (const auto& f : s.streams)
      if (f.headroom_p95_ns && *f.headroom_p95_ns < 0) return true;
  }
  return r.device && (r.device->xruns > 0 || r.device->underruns > 0);
}

namespace {

std::string audit_words(const StepAudit& a) {
  const std::string allocs = a.allocations_counted ? fmt::format("{} allocation(s), {} free(s)", a.allocations, a.frees)
                                                   : std::string("allocations not counted (sanitizer build)");
  const std::string paging =
      a.paging_calls ? fmt::format(", {} call(s) waiting for pages read in", a.paging_calls) : std::string();
  return fmt::format("{}, {} blocking call(s) ({} off the CPU){}, {} NaN/Inf and {} subnormal sample(s) in {} call(s): {}",
                     allocs, a.blocking_calls, fmt_time(double(a.blocked_ns)), paging, a.nonfinite, a.subnormal,
                     a.calls, a.unsafe() ? "NOT real-time safe" : a.nonfinite ? "bad output" : "clean");
}

void step_lines(std::vector<std::string>& out, const RunReport& r) {
  if (!r.has_step_rows()) return;
  for (const auto& st : r.steps) {
    std::string l = st.wall.has_data()
                        ? fmt::format("step {:<5} {} {}: {:.0f}% of process", st.index, st.kind, st.label, st.share * 100)
                        : fmt::format("step {:<5} {} {}: no counted chunk to time", st.index, st.kind, st.label);
    if (st.misses) l += fmt::format(", largest in {} chain-owned miss(es)", st.misses);
    out.push_back(l);
    if (st.cpu && st.wall.has_data())
      out.push_back(fmt::format("           CPU p50 {} p99 {} max {} against wall p50 {} p99 {} max {}{}",
                                fmt_time(double(st.cpu->p50)), fmt_time(double(st.cpu->p99)),
                                fmt_time(double(st.cpu->max)), fmt_time(double(st.wall.p50)),
                                fmt_time(double(st.wall.p99)), fmt_time(double(st.wall.max)),
                                st.preempted && st.preempted->max > 0
                                    ? fmt::format("; preempted p99 {} max {}", fmt_time(double(st.preempted->p99)),
                                                  fmt_time(double(st.preempted->max)))
                                    : std::string()));
    if (st.hosted())
      out.push_back(fmt::format("           declared latency {} frame(s){}", st.declared_latency_frames,
                                st.converted_from_f64 ? "; f64 chunks converted to float for it" : ""));
    if (st.audit) out.push_back("           audit: " + audit_words(*st.audit));
  }
  if (r.stage(Stage::process).has_data())
    out.push_back(fmt::format("outside    {} mean of process outside every step ({})", fmt_time(double(r.steps_outside_mean_ns)),
                              r.workload.command == "probe" ? "the application's code between sections, the probe's clock reads"
                                                            : "planar conversions, audit reads"));
  if (r.declared_latency_frames > 0)
    out.push_back(fmt::format("latency    the chain's hosted steps declare {} frame(s) of delay", r.declared_latency_frames));
}

}  // namespace

namespace {

auto liner(std::vector<std::string>& out) {
  return [&out](const std::string& s) { out.push_back(s); };
}

// "2 probe sections: dsp, mix" or "no probe sections (each block timed whole)".
std::string probe_sections_text(const RunReport& r) {
  std::vector<std::string> names;
  for (const auto& st : r.steps) names.push_back(st.label);
  if (names.empty()) return "no probe sections (each block timed whole)";
  return fmt::format("{} probe section(s): {}", names.size(), fmt::join(names, ", "));
}

// What ran where: version, workload, timing, mode, machine, method, platform, streams, state.
void head_lines(std::vector<std::string>& out, const RunReport& r) {
  const ReportWorkload& w = r.workload;
  const Environment& e = r.environment.host;
  auto line = liner(out);
  line(fmt::format("chunkscope {} ({}) {}", e.version, e.commit, w.command));
  line(fmt::format("workload   {} -> sink {}", w.source, w.sink));
  if (w.command == "probe")  // its sections are the application's, timed as steps; there is no chain
    line(fmt::format("           {}", probe_sections_text(r)));
  else
    line(fmt::format("           chain '{}': {} dispatch(es) per chunk, {} sections, on {} ({}{}), {}", w.chain,
                     w.dispatches_per_chunk_planned, w.sections_per_sample, w.backend, w.mode, cpu_kernels_text(w),
                     dtype_name(w.dtype)));
  header_timing(out, r);
  mode_line(out, r);
  line(fmt::format("environment {}, {} logical CPUs, {}, {} {}", e.cpu, e.logical_cpus, e.os, e.compiler, e.build));
  if (r.environment.gpu)
    line(fmt::format("gpu        {} (compute {}), {}", r.environment.gpu->name, r.environment.gpu->compute_capability,
                     r.environment.gpu->driver));
  line(fmt::format("method     log-linear histograms (relative error <= {:.3f}%, exact min/max), {}, latency from {}{}",
                   r.method.relative_error * 100, r.method.clock, r.method.latency_from,
                   r.method.blame_from.empty() ? "" : "; blame from " + r.method.blame_from));
  platform_lines(out, r);
  streams_head(out, r);
  if (!r.complete())
    line(fmt::format("RUN {}: {}", r.state == RunState::interrupted ? "INTERRUPTED" : "INCOMPLETE",
                     r.reason.empty() ? "-" : r.reason));
}

// Each stage's time off the CPU, from the record of the thread that lived it: p99 and max
// preempted (the platform's) and blocked, per chunk. "" without the record.
std::string off_cpu_line(const RunReport& r) {
  std::string s;
  for (int i = 0; i < kStageCount; ++i) {
    const auto& o = r.off_cpu[static_cast<std::size_t>(i)];
    if (!o) continue;
    s += fmt::format("{}{} preempted {} / {}, blocked {} / {}", s.empty() ? "" : "; ", stage_key(static_cast<Stage>(i)),
                     fmt_time(double(o->preempted.p99)), fmt_time(double(o->preempted.max)),
                     fmt_time(double(o->blocked.p99)), fmt_time(double(o->blocked.max)));
  }
  return s.empty() ? "" : "off-cpu    per chunk, p99 / max, from the scheduler's record: " + s;
}

// The percentile table: stages (source wake-up and read, steps and parts under theirs),
// end-to-end, overhead and period; rows 0 for every chunk named once under it.
void stage_table(std::vector<std::string>& out, const RunReport& r) {
  auto line = liner(out);
  line("");
  std::string head = fmt::format("{:<10}", "stage");
  for (int p = 0; p < kPctCount; ++p) head += fmt::format(" {:>9}", pct_label(static_cast<Pct>(p)));
  line(head + fmt::format(" {:>9} {:>9}", "max", "mean"));
  // a row that was 0 for every chunk is not on this run's path (a device run's source
  // wake-up, a probe's queues): named once under the table instead of a row of zeros
  std::vector<std::string> zero;
  auto row = [&](const std::string& name, const HistSummary& h) {
    if (h.has_data() && h.max == 0)
      zero.push_back(name.substr(name.find_first_not_of(' ')));
    else
      line(hist_row(name, h));
  };
  for (int s = 0; s < kStageCount; ++s) {
    const auto stage = static_cast<Stage>(s);
    row(std::string(stage_key(stage)) + (r.stage_after_latency(stage) ? "*" : ""), r.stages[static_cast<std::size_t>(s)]);
    if (s == static_cast<int>(Stage::source) && r.source_wake && r.source_read) {
      row("  wake", *r.source_wake);
      row("  read", *r.source_read);
    }
    if (s != static_cast<int>(Stage::process)) continue;
    if (r.has_step_rows())
      for (const auto& st : r.steps) line(hist_row(fmt::format("  step {}", st.index), st.wall));
    if (r.process_on_cpu && r.process_preempted && r.process_blocked) {  // the scheduler's record's split
      row("  on-cpu", *r.process_on_cpu);
      row("  preempt", *r.process_preempted);
      row("  blocked", *r.process_blocked);
    }
    for (int p = 0; p < kPartCount; ++p)  // parts of the processing, under it
      if (r.process_parts[static_cast<std::size_t>(p)])
        line(hist_row(std::string("  ") + part_key(static_cast<Part>(p)), *r.process_parts[static_cast<std::size_t>(p)]));
  }
  line(hist_row("end-to-end", r.latency));
  row("overhead", r.engine_overhead);
  line(hist_row("period", r.cadence.period));
  if (!zero.empty()) line(fmt::format("(0 for every chunk, not on this run's path: {})", fmt::join(zero, ", ")));
  if (const auto note = r.after_latency_note(); !note.empty()) line(note);
  if (const auto off = off_cpu_line(r); !off.empty()) line(off);
  line("");
}

// Under a not-safe headline, how the command ends when no --fail-on-* flag makes it fail: a
// first-time user reading "not real-time" in CI expects a failing status. "" when the report
// does not know (a saved one) or nothing applies.
std::string exit_note(const RunReport& r) {
  if (!r.exit_policy) return "";
  const bool miss = budget_broken(r) && !r.exit_policy->fail_on_miss;
  const bool unsafe = r.unsafe_code() && !r.exit_policy->fail_on_unsafe;
  if (!miss && !unsafe) return "";
  std::vector<std::string> flags;
  if (miss) flags.push_back("--fail-on-miss (a broken budget)");
  if (unsafe) flags.push_back("--fail-on-unsafe (unsafe hosted code)");
  return fmt::format("exit       0: this command fails only when asked; {} makes it exit 1", fmt::join(flags, " or "));
}

// The steps, the headline, headroom and cadence, and the streams table.
void verdict_lines(std::vector<std::string>& out, const RunReport& r) {
  auto line = liner(out);
  step_lines(out, r);
  if (r.has_step_rows()) line("");
  line(fmt::format("headline   {}", r.verdict.text));
  if (const std::string note = exit_note(r); !note.empty()) line(note);
  if (r.headroom)
    line(fmt::format("headroom   p95 {}, p99 {}, max {}", fmt_time(double(r.headroom->p95)), fmt_time(double(r.headroom->p99)),
                     fmt_time(double(r.headroom->max))));
  const Cadence& c = r.cadence;
  if (!c.period.has_data())
    line("cadence    - (fewer than two counted chunks)");
  else
    line(fmt::format("cadence    jitter p95 {}, drift {}, longest gap {} (chunk {} at {:.3f} s), period p95 / D {:.3f}",
                     c.jitter_p95_ns ? fmt_time(double(*c.jitter_p95_ns)) : std::string("- (no schedule)"),
                     c.drift_ppm ? fmt::format("{:+.1f} ppm", *c.drift_ppm) : std::string("- (no schedule)"),
                     fmt_time(double(c.longest_gap.ns)), c.longest_gap.seq, c.longest_gap.at_s, c.period_ratio_p95));
  if (const std::string st = cadence_steady_line(r); !st.empty()) line(st);
  streams_table(out, r);
  if (r.streams)
    line(r.streams->batched() ? std::string("every stream (batched):")
                              : fmt::format("stream {} (the worst):", r.streams->worst));
}

// Misses, stalls, drops, chunk counts, throughput, GPU work, the device, a note on few chunks.
void count_lines(std::vector<std::string>& out, const RunReport& r) {
  const ReportWorkload& w = r.workload;
  auto line = liner(out);
  const Counts& k = r.counts;
  std::string blame;
  for (int i = 0; i < kStageCount; ++i)
    if (k.miss_blame[static_cast<std::size_t>(i)] > 0)
      blame += fmt::format("{}{} {}", blame.empty() ? "" : ", ", stage_key(static_cast<Stage>(i)),
                           k.miss_blame[static_cast<std::size_t>(i)]);
  std::string owners;
  if (k.miss_owner)
    for (int i = 0; i < kOwnerCount; ++i)
      if ((*k.miss_owner)[static_cast<std::size_t>(i)] > 0)
        owners += fmt::format("{}{} {}", owners.empty() ? "" : ", ", owner_key(static_cast<Owner>(i)),
                              (*k.miss_owner)[static_cast<std::size_t>(i)]);
  if (k.platform_unexplained.value_or(0) > 0)
    owners += fmt::format(" ({} whose platform wait the baseline does not explain)", *k.platform_unexplained);
  line(fmt::format("misses     {} of {} counted chunks ({:.2f}%){}{}", k.misses, k.counted,
                   k.counted ? 100.0 * double(k.misses) / double(k.counted) : 0.0, blame.empty() ? "" : ", blamed on " + blame,
                   owners.empty() ? "" : "; owners " + owners));
  stall_lines(out, r);
  std::string seqs;
  for (std::size_t i = 0; i < k.drop_seqs.size() && i < 10; ++i) seqs += fmt::format(" {}", k.drop_seqs[i]);
  const bool probe = w.command == "probe";  // no pool, no queues, no chain: nothing to drop or dispatch
  if (!probe)
    line(fmt::format("drops      {} (pool empty {}, queue full {}){}", k.drops, k.drops_pool_empty, k.drops_queue_full,
                     seqs.empty() ? "" : ", chunks" + seqs + (k.drop_seqs.size() > 10 ? " ..." : "")));
  if (r.output && r.output->over_full_scale > 0)
    line(fmt::format("output     {} of {} samples beyond full scale (peak {:+.1f} dBFS), {} '{}'", r.output->over_full_scale,
                     r.output->samples, r.output->peak_dbfs(),
                     r.output->integer ? "CLIPPED in the integer samples of" : "kept in the float samples of",
                     r.output->path));
  line(fmt::format("chunks     {} produced, {} emitted, {} warm-up, {} short (passed through){}", k.produced, k.emitted,
                   k.warmup, k.short_chunks,
                   probe ? "" : fmt::format("; queue high water in {} / out {}", r.queues.in_high_water, r.queues.out_high_water)));
  const Throughput& tp = r.throughput;
  line(fmt::format("throughput {:.3f} s of media in {:.3f} s wall (real-time factor {:.2f}), {:.0f} chunks/s{}", tp.media_seconds,
                   tp.wall_seconds, tp.speed_factor, tp.chunks_per_second,
                   probe ? "" : fmt::format(", {:.2f} dispatches per chunk", r.dispatches_per_chunk)));
  if (w.backend == "cuda") {
    const BackendCounters& bc = r.backend_counters;
    line(fmt::format("gpu work   {:.2f} launches per chunk ({} kernel launches, {} graph launches); graph captures {}, "
                     "re-captures {}, eager fallbacks {}, shape changes {}",
                     r.launches_per_chunk, bc.kernel_launches, bc.graph_launches, bc.graph_captures, bc.graph_recaptures,
                     bc.eager_fallbacks, bc.shape_changes));
  }
  if (r.device) {
    const DeviceSection& d = *r.device;
    // a probe whose application never reported a latency has none to show
    const bool reported = !probe || d.reported_input_latency_s > 0 || d.reported_output_latency_s > 0;
    line(fmt::format("device     {} -> {}: {}measured end-to-end p95 {}; callback period p50 {}; xruns {}, underruns {}, "
                     "late {}",
                     d.input, d.output,
                     reported ? fmt::format("host API reports input {} / output {}; ", fmt_time(d.reported_input_latency_s * 1e9),
                                            d.duplex || d.reported_output_latency_s > 0
                                                ? fmt_time(d.reported_output_latency_s * 1e9)
                                                : std::string("-"))
                              : std::string(),
                     r.latency.has_data() ? fmt_time(double(r.latency.p95)) : std::string("-"),
                     d.callback_period.has_data() ? fmt_time(double(d.callback_period.p50)) : std::string("-"), d.xruns,
                     d.underruns, d.late_chunks));
  }
  if (k.counted < 100)
    line(fmt::format("note       only {} counted chunks: p99 and p99.9 rest on fewer than 100 samples", k.counted));
}

}  // namespace

void print_report(std::ostream& os, const RunReport& r) {
  std::vector<std::string> out;
  head_lines(out, r);
  stage_table(out, r);
  verdict_lines(out, r);
  count_lines(out, r);
  std::string text;
  for (const auto& l : out) text += l + "\n";
  os << fit_width(text, report_width(os)) << "\n";
  print_diagnosis(os, r.diagnosis);
}

namespace {


// Why, in a few words: which rule decided, with its numbers.
std::string compare_call_why(const CompareCall& c) {
  switch (c.call) {
    case CompareCall::Call::difference:
      if (!c.ranges_overlap) return "ranges apart";
      return fmt::format("ranges overlap; ratio {:.2f}..{:.2f} excludes 1", c.interval_low.value_or(0),
                         c.interval_high.value_or(0));
    case CompareCall::Call::no_clear_difference:
      if (c.interval_low) return fmt::format("ranges overlap; ratio {:.2f}..{:.2f} holds 1", *c.interval_low, *c.interval_high);
      return "ranges overlap";
    case CompareCall::Call::cannot_judge:
      return fmt::format("{} vs {} round(s)", c.rounds, c.baseline_rounds);
  }
  return "";
}

// Each figure's spread across rounds, variant by variant, with the call against the baseline.
// A table's lines, folded to the width, one call of `line` each.
void table_lines(const TextTable& t, std::size_t width, const std::function<void(const std::string&)>& line) {
  const std::string text = t.render(width);
  std::size_t from = 0;
  for (std::size_t nl = text.find('\n'); nl != std::string::npos; from = nl + 1, nl = text.find('\n', from))
    line(text.substr(from, nl - from));
}

void print_compare_rounds(const CompareReport& r, std::size_t width, const std::function<void(const std::string&)>& line) {
  line("");
  if (r.per_round.empty()) {
    line("rounds     no per-round figures in this report (written before they were kept): pooled figures only");
    return;
  }
  int fewest = -1;
  for (const auto& v : r.per_round) {
    int n = 0;
    for (const auto& rd : v.rounds) n += rd.complete ? 1 : 0;
    fewest = fewest < 0 ? n : std::min(fewest, n);
  }
  line(fmt::format("rounds     each round's own figure, min / median / max over the complete rounds; against {}",
                   r.baseline.empty() ? "the baseline" : r.baseline));
  if (fewest < r.rule.min_rounds)
    line(fmt::format("           {} complete round(s): the spread across rounds cannot be judged below {} (--rounds {} "
                     "or more)",
                     std::max(fewest, 0), r.rule.min_rounds, r.rule.min_rounds));
  else
    line(fmt::format("           a difference holds across rounds: the ranges do not overlap, or the {:.0f}% bootstrap "
                     "interval of the ratio of medians excludes 1",
                     r.rule.confidence * 100));
  TextTable t({{"figure", 12, true, 0}, {"variant", 20, true}, {"min", 10}, {"median", 10}, {"max", 10}, {"x median", 8},
               {"across rounds", 0, true, 2}},
              2);
  for (int f = 0; f < kCompareFigureCount; ++f) {
    const auto fig = static_cast<CompareFigure>(f);
    const CompareSpread* base = nullptr;
    for (const auto& v : r.per_round)
      if (v.variant == r.baseline) base = v.find(fig);
    bool first = true;
    for (const auto& v : r.per_round) {
      const CompareSpread* sp = v.find(fig);
      if (!sp) continue;
      auto val = [&](double x) {
        return CompareRound::figure_is_time(fig) ? fmt_time(x) : fmt::format("{:g}", x);
      };
      std::string ratio = "-", call;
      if (base && base->median > 0) ratio = fmt::format("{:.2f}", sp->median / base->median);
      if (v.variant == r.baseline)
        call = "(baseline)";
      else if (const CompareCall* c = r.call_of(v.variant, fig))
        call = c->word() + " (" + compare_call_why(*c) + ")";
      t.row({first ? compare_figure_label(fig) : "", v.variant, val(sp->min), val(sp->median), val(sp->max), ratio, call});
      first = false;
    }
  }
  table_lines(t, width, line);
}

using CompareLine = std::function<void(const std::string&)>;

std::string ratio_cell(const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("-"); }

// What was compared and how: version, workload, pacing, GPU, streams, state, unavailable variants.
void compare_head_lines(const CompareReport& r, const CompareLine& line) {
  const Environment& e = r.environment.host;
  const ReportWorkload& w = r.workload;
  line(fmt::format("chunkscope {} ({}) compare: {} round(s) of {} variant(s), interleaved (the order rotates each round)",
                   e.version, e.commit, r.rounds_completed, r.variants.size()));
  line(fmt::format("workload   {}, chain '{}', {} Hz, {} ch, {}, chunk {} frames = D {}, margin {}, budget B {}", w.source,
                   w.chain, w.rate, w.channels, dtype_name(w.dtype), w.chunk_frames, fmt_time(double(r.timing.chunk_ns)),
                   w.margin_text.empty() ? "?" : w.margin_text, fmt_time(double(r.timing.budget_ns))));
  line(fmt::format("           speed {}, warm-up {} chunks per round, baseline {}",
                   !w.speed ? std::string("max (no schedule)") : fmt::format("{}x", fmt_speed(*w.speed)), w.warmup_chunks,
                   r.baseline.empty() ? "?" : r.baseline));
  if (r.environment.gpu) line(fmt::format("gpu        {} ({})", r.environment.gpu->name, r.environment.gpu->driver));
  // the platform baseline, measured once before the first round and once after the last
  for (const auto& v : r.variants)
    if (v.report && v.report->platform && v.report->platform->has_baseline()) {
      std::vector<std::string> lines;
      baseline_lines(lines, *v.report->platform, v.report->workload.margin_ns);
      for (const auto& l : lines) line(l);
      break;
    }
  for (const auto& v : r.variants)
    if (v.report && v.report->streams) {
      const StreamsSection& ss = *v.report->streams;
      if (ss.batched())
        line(fmt::format("streams    {} streams per variant batched (--batch) into one chunk per period, processed in one "
                         "call; misses and drops count each stream's chunks",
                         ss.count));
      else
        line(fmt::format("streams    {} independent streams per variant at once, {}; stages and percentiles are each "
                         "variant's worst stream's, misses, drops, verdicts and the rounds cover all its streams",
                         ss.count,
                         ss.schedule_words(v.report->timing.paced)));
      break;
    }
  if (r.state != RunState::complete)
    line("RUN INTERRUPTED: figures cover the rounds completed and the variants that ran in the interrupted one");
  for (const auto& v : r.variants)
    if (!v.available) line(fmt::format("unavailable {}: {}", v.name, v.reason.empty() ? "?" : v.reason));
}

// The pooled percentiles of each stage, variant by variant, with their ratios to the baseline.
void compare_stage_rows(const CompareReport& r, std::size_t width, const CompareLine& line) {
  line("");
  TextTable t({{"stage", 12, true, 0}, {"variant", 20, true}, {"p50", 10}, {"p95", 10}, {"p99", 10}, {"x p50", 7},
               {"x p95", 7}, {"x p99", 7}},
              2);
  // rows grouped by stage in the order of the first variant's rows
  std::vector<std::string> order;
  for (const auto& row : r.table)
    if (std::find(order.begin(), order.end(), row.stage) == order.end()) order.push_back(row.stage);
  std::string last;
  for (const auto& st : order)
    for (const auto& row : r.table) {
      if (row.stage != st) continue;
      t.row({st == last ? "" : st, row.variant, fmt_time(double(row.p50)), fmt_time(double(row.p95)),
             fmt_time(double(row.p99)), ratio_cell(row.ratio_p50), ratio_cell(row.ratio_p95), ratio_cell(row.ratio_p99)});
      last = st;
    }
  table_lines(t, width, line);
}

// One line per variant: end to end, headroom, GPU work, the call across rounds, the verdict.
void compare_summary_rows(const CompareReport& r, std::size_t width, const CompareLine& line) {
  line("");
  TextTable t({{"variant", 20, true, 0}, {"e2e p95", 11}, {"headroom p95", 12}, {"launch/ch", 9}, {"disp/ch", 9},
               {"launch p50", 10}, {"gpu p50", 10}, {"x e2e", 7}, {"e2e p95 over rounds", 20, true}, {"misses", 6},
               {"drops", 6}, {"verdict", 0, true, 2}},
              1);
  auto tm = [](const std::optional<std::int64_t>& v) { return v ? fmt_time(double(*v)) : std::string("-"); };
  for (const auto& s : r.summary) {
    std::string across = "-";
    if (s.variant == r.baseline)
      across = "(baseline)";
    else if (const CompareCall* c = r.call_of(s.variant, CompareFigure::latency_p95))
      across = c->word();
    t.row({s.variant, tm(s.latency_p95_ns), tm(s.headroom_p95_ns), fmt::format("{:.2f}", s.launches_per_chunk),
           fmt::format("{:.2f}", s.dispatches_per_chunk), tm(s.launch_p50_ns), tm(s.gpu_p50_ns),
           ratio_cell(s.ratio_latency_p95), across, std::to_string(s.misses), std::to_string(s.drops), s.verdict_words()});
  }
  table_lines(t, width, line);
  line("x: ratio of pooled percentiles to the baseline (the first available variant); a ratio alone is no difference:");
  line("   'over rounds' says whether it holds across rounds (below); gpu p50 adds the p50s of H2D, kernel and D2H");
}

// each variant's warnings from its own diagnosis (the full findings are in its report)
void compare_findings(const CompareReport& r, const CompareLine& line) {
  bool header = false;
  for (const auto& v : r.variants) {
    if (!v.report) continue;
    for (const auto& f : v.report->diagnosis) {
      if (f.severity != Finding::Severity::warning) continue;
      if (!header) {
        line("");
        line("findings   warnings from each variant's diagnosis (chunkscope report FILE shows them all)");
        header = true;
      }
      line(fmt::format("  {:<20} [{}] {}: {}", v.name, confidence_name(f.confidence), f.rule, f.text));
    }
  }
}

}  // namespace

void print_compare(std::ostream& os, const CompareReport& r) {
  std::string out;
  const CompareLine line = [&](const std::string& s) { out += s + "\n"; };
  const std::size_t width = report_width(os);
  compare_head_lines(r, line);
  compare_stage_rows(r, width, line);
  compare_summary_rows(r, width, line);
  print_compare_rounds(r, width, line);
  compare_findings(r, line);
  os << fit_width(out, width);
}

}  // namespace chunkscope
