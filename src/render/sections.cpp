#include "src/render/sections.hpp"

#include "src/report/build.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "src/render/plot.hpp"
#include "src/report/format.hpp"

namespace chunkscope::render {

RunTiming timing_of(const RunReport& r) {
  RunTiming t;
  t.D = static_cast<double>(r.timing.chunk_ns);
  t.B = static_cast<double>(r.timing.budget_ns);
  t.m = r.workload.margin_ns > 0 ? static_cast<double>(r.workload.margin_ns) : t.D - t.B;
  t.paced = r.timing.paced;
  return t;
}

std::string verdict_box(const RunReport& r) {
  const auto& safe = r.verdict.realtime_safe;
  const char* cls = safe ? (*safe ? "ok" : "bad") : "none";
  std::string s = fmt::format("<div class=\"verdict {}\"><b>Verdict:</b> {}</div>", cls,
                              esc(r.verdict.text.empty() ? "no verdict in this report" : r.verdict.text));
  if (!r.complete())
    s += fmt::format("<p class=\"note\">Run {}: {}</p>", run_state_name(r.state), esc(r.reason.empty() ? "-" : r.reason));
  return s;
}

std::string headroom_line(const RunReport& r) {
  if (!r.headroom) return "";
  return fmt::format("<p>Headroom B − L: p95 {}, p99 {}, max {}.</p>", ft(static_cast<double>(r.headroom->p95)),
                     ft(static_cast<double>(r.headroom->p99)), ft(static_cast<double>(r.headroom->max)));
}

namespace {

std::string g(double v) { return fmt::format("{:g}", v); }

std::string mode_text(const RunReport& r) {
  if (!r.workload.run_mode) return "-";
  const RunMode& m = *r.workload.run_mode;
  return fmt::format("wait {}, {}, {}, {}", esc(m.wait),
                     m.rt ? fmt::format("SCHED_FIFO priority {} (memory locked)", m.rt_priority) : "default scheduling",
                     m.cpus.empty() ? std::string("threads not pinned") : "threads pinned to CPUs " + esc(m.cpus),
                     m.inline_process ? (r.device ? "processing inside the device callback" : "processing on the source's thread")
                                      : "processor on its own thread");
}

std::vector<std::pair<std::string, std::string>> workload_rows(const RunReport& r) {
  const ReportWorkload& w = r.workload;
  const RunTiming t = timing_of(r);
  const Counts& k = r.counts;
  return {
      {"command", esc(w.command)},
      {"source → sink", esc(w.source) + " → " + esc(w.sink)},
      {"chain", "<code>" + esc(w.chain) + "</code>"},
      {"backend", fmt::format("{} ({}{}), {}, {} dispatch(es) per chunk planned, {} sections per sample", esc(w.backend),
                              esc(w.mode), esc(cpu_kernels_text(w)), dtype_name(w.dtype), w.dispatches_per_chunk_planned, w.sections_per_sample)},
      {"stream", fmt::format("{} Hz, {} ch, chunk {} frames", g(w.rate), w.channels, w.chunk_frames)},
      {"timing", fmt::format("D {}, margin {} = {}, budget B {}, {}", ft(t.D), esc(w.margin_text.empty() ? "-" : w.margin_text),
                             ft(t.m), ft(t.B), t.paced ? "paced (absolute schedule)" : "--speed max (no schedule)")},
      {"run", fmt::format("speed {}, warm-up {} chunks, queue depth {}, media {} s", w.speed ? g(*w.speed) : "max",
                          w.warmup_chunks, w.queue_depth, g(w.media_seconds))},
      {"chunks", fmt::format("{} produced, {} emitted, {} counted, {} warm-up, {} dropped, {} missed", k.produced, k.emitted,
                             k.counted, k.warmup, k.drops, k.misses)},
      {"measured", fmt::format("{} dispatches and {} launches per chunk", g(r.dispatches_per_chunk), g(r.launches_per_chunk))},
      {"mode", mode_text(r)},
  };
}

std::vector<std::pair<std::string, std::string>> environment_rows(const RunReport& r) {
  const Environment& e = r.environment.host;
  const auto& gpu = r.environment.gpu;
  return {
      {"chunkscope", esc(e.version) + " (" + esc(e.commit) + ")"},
      {"cpu", fmt::format("{}, {} logical CPUs", esc(e.cpu), e.logical_cpus)},
      {"os", esc(e.os)},
      {"build", esc(e.compiler) + ", " + esc(e.build) + ", CUDA built: " + (e.cuda_built ? "yes" : "no")},
      {"gpu",
       gpu ? fmt::format("{}, driver {}, compute capability {}", esc(gpu->name), esc(gpu->driver), esc(gpu->compute_capability))
           : std::string("-")},
      {"method",
       fmt::format("{}; {}; latency from {}", esc(r.method.clock), esc(r.method.percentiles), esc(r.method.latency_from))},
  };
}

std::string hist_row(const std::string& name, const HistSummary& h) {
  std::string s = "<tr><td>" + esc(name) + "</td>";
  if (!h.has_data()) return s + "<td class=\"n\">0</td><td colspan=\"8\">-</td></tr>";
  s += fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td>", h.count, ft(static_cast<double>(h.min)));
  for (int i = 0; i < kPctCount; ++i) s += "<td class=\"n\">" + ft(static_cast<double>(at(h, static_cast<Pct>(i)))) + "</td>";
  return s + fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>", ft(static_cast<double>(h.max)), ft(h.mean));
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}
bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

std::string plain_number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 1000) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3g}", v);
}

}  // namespace

std::string workload_section(const RunReport& r) {
  return "<h2>Workload</h2>" + kv_table(workload_rows(r)) + "<h2>Environment and method</h2>" + kv_table(environment_rows(r));
}

std::string stage_table(const RunReport& r) {
  std::string s = "<table><tr><th>stage</th><th class=\"n\">count</th><th class=\"n\">min</th>";
  for (int i = 0; i < kPctCount; ++i) s += fmt::format("<th class=\"n\">{}</th>", pct_label(static_cast<Pct>(i)));
  s += "<th class=\"n\">max</th><th class=\"n\">mean</th></tr>";
  // as the terminal's table: a stage's sub-rows under it (the source's wake-up and read, the
  // process stage's steps and parts), and a row that was 0 for every chunk named once below
  std::vector<std::string> zero;
  auto row = [&](const std::string& name, const HistSummary& h) {
    if (h.has_data() && h.max == 0)
      zero.push_back(name.substr(name.find_first_not_of(' ')));
    else
      s += hist_row(name, h);
  };
  for (int i = 0; i < kStageCount; ++i) {
    const auto stage = static_cast<Stage>(i);
    row(std::string(stage_key(stage)) + (r.stage_after_latency(stage) ? "*" : ""), r.stage(stage));
    if (i == static_cast<int>(Stage::source) && r.source_wake && r.source_read) {
      row("  wake", *r.source_wake);
      row("  read", *r.source_read);
    }
    if (i != static_cast<int>(Stage::process)) continue;
    if (r.has_step_rows())
      for (const auto& st : r.steps) s += hist_row(fmt::format("  step {} {}", st.index, st.label), st.wall);
    if (r.process_on_cpu && r.process_preempted && r.process_blocked) {  // the scheduler's record's split
      row("  on-cpu", *r.process_on_cpu);
      row("  preempt", *r.process_preempted);
      row("  blocked", *r.process_blocked);
    }
    for (int p = 0; p < kPartCount; ++p)
      if (const auto& h = r.part(static_cast<Part>(p))) s += hist_row(std::string("  ") + part_key(static_cast<Part>(p)), *h);
  }
  s += hist_row("end-to-end", r.latency);
  s += hist_row("overhead", r.engine_overhead);
  s += hist_row("period", r.cadence.period);
  s += "</table>";
  if (!zero.empty())
    s += fmt::format("<p class=\"note\">0 for every chunk, not on this run's path: {}.</p>", esc(fmt::format("{}", fmt::join(zero, ", "))));
  if (const auto note = r.after_latency_note(); !note.empty()) s += "<p class=\"note\">" + esc(note) + ".</p>";
  const std::uint64_t counted = r.counts.counted;
  if (counted > 0 && counted < 100)
    s += fmt::format("<p class=\"note\">Only {} counted chunks: p99 and p99.9 rest on fewer than 100 samples.</p>", counted);
  return s;
}


std::string steps_section(const RunReport& r) {
  if (!r.has_step_rows()) return "";
  std::string s =
      "<h2>Steps inside process</h2><table><tr><th>step</th><th>kind</th><th>runs</th><th class=\"n\">share</th>"
      "<th class=\"n\">wall p50</th><th class=\"n\">wall p99</th><th class=\"n\">CPU p50</th><th class=\"n\">CPU p99</th>"
      "<th class=\"n\">largest in misses</th><th>real-time audit</th></tr>";
  for (const auto& st : r.steps) {
    std::string audit = "-";
    if (st.audit) {
      const StepAudit& a = *st.audit;
      audit = fmt::format("{} heap call(s){}, {} blocking call(s) ({} off the CPU), {} NaN/Inf, {} subnormal in {} call(s); "
                          "declared latency {} frame(s){}",
                          a.allocations + a.frees, a.allocations_counted ? "" : " (not counted in this build)",
                          a.blocking_calls, ft(double(a.blocked_ns)), a.nonfinite, a.subnormal, a.calls,
                          st.declared_latency_frames, st.converted_from_f64 ? "; f64 converted to float" : "");
      audit = (a.unsafe() ? "<b>not real-time safe</b>: " : a.nonfinite ? "<b>bad output</b>: " : "clean: ") + esc(audit);
    }
    auto t = [](const std::optional<HistSummary>& h, std::int64_t HistSummary::*m) {
      return h && h->has_data() ? ft(double((*h).*m)) : std::string("-");
    };
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{:.0f}%</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                     "<td>{}</td></tr>",
                     st.index, esc(st.kind), esc(st.label), st.share * 100, t(st.wall, &HistSummary::p50),
                     t(st.wall, &HistSummary::p99), t(st.cpu, &HistSummary::p50), t(st.cpu, &HistSummary::p99), st.misses,
                     audit);
  }
  s += "</table>";
  s += fmt::format("<p class=\"note\">Outside every step: {} mean of process (conversions to and from planar floats "
                   "around hosted steps, the audit's clock reads). CPU time is measured for hosted steps only.{}</p>",
                   ft(double(r.steps_outside_mean_ns)),
                   r.declared_latency_frames ? fmt::format(" The hosted steps declare {} frame(s) of delay.",
                                                           r.declared_latency_frames)
                                             : std::string());
  return s;
}

std::string baseline_table(const PlatformSection& p, double margin) {
  if (!p.has_baseline()) return "";
  std::string s =
      "<table><tr><th>baseline</th><th>figure</th><th class=\"n\">count</th><th class=\"n\">p50</th><th class=\"n\">p99</th>"
      "<th class=\"n\">max</th><th class=\"n\">p99 / margin</th></tr>";
  auto rows = [&](const char* name, const std::optional<BaselineSummary>& b) {
    if (!b) return;
    for (const auto& [what, h] : {std::pair<const char*, const HistSummary*>{"wake-up lateness", &b->wake},
                                  std::pair<const char*, const HistSummary*>{"hand-off round trip", &b->handoff}}) {
      if (!h->has_data()) continue;
      s += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                       name, what, h->count, ft(static_cast<double>(h->p50)), ft(static_cast<double>(h->p99)),
                       ft(static_cast<double>(h->max)),
                       margin > 0 ? fmt::format("{:.0f}%", 100 * static_cast<double>(h->p99) / margin) : "-");
    }
  };
  rows("before", p.before);
  rows("after", p.after);
  return s + "</table>";
}

std::string platform_section(const RunReport& r) {
  if (!r.platform) return "";
  const PlatformSection& p = *r.platform;
  std::string s = "<h2>Platform</h2><p>The machine's own floor, measured with the engine's scheduling and wait mode: a "
                  "thread woken every D, and a hand-off through the engine's kind of queue and back.</p>";
  s += baseline_table(p, static_cast<double>(r.workload.margin_ns));
  std::vector<std::pair<std::string, std::string>> kv;
  if (p.load_before || p.load_after)
    kv.emplace_back("load (1 min)", fmt::format("{} before, {} after, on {} CPU(s)",
                                               p.load_before ? fmt::format("{:.2f}", p.load_before->load1) : "?",
                                               p.load_after ? fmt::format("{:.2f}", p.load_after->load1) : "?",
                                               p.load_after ? p.load_after->cpus_online : p.load_before->cpus_online));
  if (p.busy_share) kv.emplace_back("machine busy over the run", fmt::format("{:.1f}%", *p.busy_share * 100));
  if (p.steal_share) kv.emplace_back("steal over the run", fmt::format("{:.2f}%", *p.steal_share * 100));
  for (const auto& t : p.threads)
    kv.emplace_back(esc(t.thread) + " thread",
                    fmt::format("tid {}: {} voluntary, {} involuntary context switches, CPU {}", t.tid, t.voluntary,
                                t.involuntary, ft(static_cast<double>(t.cpu_ns))));
  if (!kv.empty()) s += kv_table(kv);
  return s;
}

std::string streams_section(const RunReport& r) {
  if (!r.streams) return "";
  const StreamsSection& ss = *r.streams;
  if (ss.batched()) {
    const StreamFigures* f = ss.streams.empty() ? nullptr : &ss.streams.front();
    return fmt::format(
        "<h2>Streams</h2><p>{} streams of this chain ran batched (<code>--batch</code>): every chunk held each stream's "
        "chunk of its period, {} x {} channels, processed in one call{}. Their chunks travelled together, so every "
        "stream has the figures on this page{}.</p>",
        ss.count, ss.count, r.workload.channels, r.workload.backend == "cuda" ? " (one set of launches per period)" : "",
        f && f->headroom_p95_ns ? fmt::format(": p95 headroom {}", ft(static_cast<double>(*f->headroom_p95_ns)))
                                : std::string());
  }
  std::string s = fmt::format(
      "<h2>Streams</h2><p>{} {} streams of this chain ran at once, {}. The rest of this page is stream {}'s, the worst "
      "(an incomplete stream first, then one not safe, then the least p95 headroom).{}</p>",
      ss.count, esc(ss.mode),
      esc(ss.schedule_words(r.timing.paced)),
      ss.worst,
      ss.blame ? fmt::format(" Stream {} has the most stall events: it is the one to blame.", *ss.blame) : std::string());
  s += "<table><tr><th>stream</th><th class=\"n\">offset</th><th class=\"n\">end-to-end p50</th><th class=\"n\">p95</th>"
       "<th class=\"n\">p99</th><th class=\"n\">process p50</th><th class=\"n\">p95 headroom</th><th class=\"n\">counted</th>"
       "<th class=\"n\">misses</th><th class=\"n\">stall events</th><th class=\"n\">drops</th><th>verdict</th></tr>";
  auto t = [](const HistSummary& h, std::int64_t v) { return h.has_data() ? ft(static_cast<double>(v)) : std::string("-"); };
  auto row = [&](const std::string& name, const std::string& offset, const HistSummary& lat, const HistSummary& proc,
                 const std::optional<std::int64_t>& head, std::uint64_t counted, std::uint64_t misses,
                 std::uint64_t stalls, std::uint64_t drops, const std::optional<bool>& safe, std::uint64_t needed,
                 const std::string& extra) {
    const std::string cls = safe == false ? " class=\"bad\"" : "";
    s += fmt::format("<tr{}><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}{}</td></tr>",
                     cls, name, offset, t(lat, lat.p50), t(lat, lat.p95), t(lat, lat.p99), t(proc, proc.p50),
                     head ? ft(static_cast<double>(*head)) : std::string("-"), counted, misses, stalls, drops,
                     verdict_word(safe, needed), esc(extra));
  };
  for (const auto& f : ss.streams) {
    std::string extra;
    if (f.owner) extra += fmt::format(" ({})", owner_key(*f.owner));
    if (f.state != RunState::complete) extra += fmt::format(" [{}]", run_state_name(f.state));
    if (f.stream == ss.worst) extra += ", worst";
    if (ss.blame && f.stream == *ss.blame) extra += ", to blame";
    const std::string offset = r.timing.paced ? ft(static_cast<double>(f.offset_ns)) : std::string("-");
    row(std::to_string(f.stream), offset, f.latency, f.process, f.headroom_p95_ns, f.counted, f.misses, f.stalls,
        f.drops, f.realtime_safe, f.needed_chunks, extra);
  }
  row("<b>pooled</b>", "", ss.latency, ss.process, ss.headroom_p95_ns, ss.counted, ss.misses, ss.stalls, ss.drops,
      ss.realtime_safe, ss.needed_chunks,
      ss.unsafe_streams() > 0 ? fmt::format(" ({} of {} streams not safe)", ss.unsafe_streams(), ss.count) : "");
  return s + "</table><p class=\"caption\">Pooled: every stream's counted chunks in one histogram; its headroom is B "
             "minus their p95.</p>";
}

std::string stalls_section(const RunReport& r) {
  const Counts& k = r.counts;
  if (!k.stalls || *k.stalls == 0) return "";
  std::string s = fmt::format("<h2>Stall events</h2><p>{} stall event(s) made the {} missed chunk(s); a miss joins an event "
                              "when it was scheduled before the event's last missed chunk was out.</p>",
                              *k.stalls, k.misses);
  s += "<table><tr><th>chunks</th><th class=\"n\">missed</th><th class=\"n\">at</th><th class=\"n\">past the deadline</th>"
       "<th class=\"n\">worst over B</th><th>owner</th><th>cause</th></tr>";
  for (std::size_t i = 0; i < k.stall_list.size() && i < 100; ++i) {
    const StallRecord& e = k.stall_list[i];
    s += fmt::format("<tr><td>{}–{}</td><td class=\"n\">{}</td><td class=\"n\">{:.3f} s</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
                     e.first_seq, e.last_seq, e.chunks, e.start_s, ft(static_cast<double>(e.length_ns)),
                     ft(static_cast<double>(e.worst_over_ns)), owner_key(e.owner), esc(describe_cause(e.cause, e.cause_ns)));
  }
  s += "</table>";
  if (k.stall_list.size() > 100 || k.stall_list_truncated)
    s += fmt::format("<p class=\"note\">The first {} events are shown; the JSON report lists up to its capacity.</p>",
                     std::min<std::size_t>(k.stall_list.size(), 100));
  return s;
}

std::string evidence_value(const std::string& name, double v) {
  if (ends_with(name, "_ns")) return fmt_time(v);
  if (contains(name, "share") || name == "duty_cycle") {
    const double pct = v * 100;
    return std::fabs(pct) >= 10 || pct == 0 ? fmt::format("{:.1f}%", pct) : fmt::format("{:.3g}%", pct);
  }
  if (ends_with(name, "_ppm")) return fmt::format("{:+.1f} ppm", v);
  if (contains(name, "seconds")) return fmt::format("{:.3f} s", v);
  if (contains(name, "_over_") || contains(name, "factor") || contains(name, "ratio")) return fmt::format("{:.2f}×", v);
  return plain_number(v);
}

std::string with_code_spans(const std::string& text) {
  std::string out;
  std::size_t at = 0;
  while (true) {
    const std::size_t open = text.find('`', at);
    const std::size_t close = open == std::string::npos ? open : text.find('`', open + 1);
    if (close == std::string::npos) return out + esc(text.substr(at));
    out += esc(text.substr(at, open - at)) + "<code>" + esc(text.substr(open + 1, close - open - 1)) + "</code>";
    at = close + 1;
  }
}

std::string diagnosis_section(const std::vector<Finding>& findings) {
  std::string s = "<h2>Diagnosis</h2>";
  if (findings.empty()) return s + "<p>No rule fired: nothing in the measured figures points at a limit.</p>";
  for (const auto& f : findings) {
    const char* sev = severity_name(f.severity);
    s += fmt::format("<div class=\"finding {}\"><b>{}</b><span class=\"conf\">{} · confidence {}</span><p>{}</p>", sev,
                     esc(f.rule), sev, confidence_name(f.confidence), with_code_spans(f.text));
    if (!f.evidence.empty()) {
      s += "<table class=\"evidence\">";
      for (const auto& [k, v] : f.evidence)
        s += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td></tr>", esc(k), esc(evidence_value(k, v)));
      s += "</table>";
    }
    s += fmt::format("<p>Next: {}</p></div>", with_code_spans(f.next.empty() ? "-" : f.next));
  }
  return s;
}

}  // namespace chunkscope::render
