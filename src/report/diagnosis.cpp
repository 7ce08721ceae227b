#include "src/report/diagnosis.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <cstdlib>
#include <utility>
#include <vector>

#include "src/options.hpp"
#include "src/report/columns.hpp"
#include "src/report/format.hpp"

namespace chunkscope {

namespace {

// ---------------------------------------------------------------- the rerun command line

std::string fmt_num(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{}", static_cast<long long>(std::llround(v)));
  return fmt::format("{:g}", v);
}

// A command line as positional words and flags in order; flags can be set or removed.
class Cmd {
 public:
  explicit Cmd(std::string head) : head_(std::move(head)) {}
  void set_head(std::string head) { head_ = std::move(head); }
  Cmd& set(const std::string& flag, const std::string& value = "") {
    for (auto& a : args_)
      if (a.first == flag) {
        a.second = value;
        return *this;
      }
    args_.emplace_back(flag, value);
    return *this;
  }
  Cmd& remove(const std::string& flag) {
    args_.erase(std::remove_if(args_.begin(), args_.end(), [&](const auto& a) { return a.first == flag; }), args_.end());
    return *this;
  }
  std::string str() const {
    std::string s = head_;
    for (const auto& [f, v] : args_) {
      s += " " + f;
      if (!v.empty()) s += " " + shell_quote(v);
    }
    return s;
  }

 private:
  std::string head_;
  std::vector<std::pair<std::string, std::string>> args_;
};

// The command a rerun runs: a variant of a comparison repeats as a single run of its input.
std::string rerun_subcommand(const ReportWorkload& w) {
  const std::string command = w.command.empty() ? "replay" : w.command;
  if (command == "compare") return w.input.kind == InputDesc::Kind::synth ? "synth" : "replay";
  return command;
}

// The program and subcommand, and a replay's input.
std::string rerun_head(const ReportWorkload& w, const std::string& command) {
  std::string head = program_name() + " " + command;
  if (command == "replay") {
    std::string path = w.input.path;
    if (path.empty() && w.source.rfind("file ", 0) == 0) path = w.source.substr(5);
    head += " " + shell_quote(path.empty() ? std::string("FILE") : path);
  }
  return head;
}

// A monitor run's device flags, which are not stream options.
void device_flags(Cmd& c, const RunReport& r) {
  const MonitorOptions mdef;
  const ReportWorkload& w = r.workload;
  if (!r.device->input.empty()) c.set("--input", r.device->input);
  if (!r.device->output.empty()) c.set("--output", r.device->output);
  if (w.media_seconds > 0) c.set("--duration", fmt_num(std::ceil(w.media_seconds)) + "s");
  const int lk = r.device->latency_chunks;
  if (lk > 0 && lk != mdef.latency_chunks) c.set("--latency-chunks", fmt_num(lk));
}

// A report without `workload.args` (older ones): its experiment flags rebuilt from what
// the workload records.
void recorded_flags(Cmd& c, const RunReport& r, const std::string& command) {
  const ReportWorkload& w = r.workload;
  const StreamOptions def;
  if (command == "synth") {
    std::string signal = w.input.signal;
    if (signal.empty() && w.source.rfind("synth ", 0) == 0) signal = w.source.substr(6);
    if (!signal.empty() && signal != def.signal) c.set("--signal", signal);
    if (w.media_seconds > 0) c.set("--duration", fmt_num(w.media_seconds) + "s");
    if (w.channels > 0 && w.channels != def.channels) c.set("--channels", fmt_num(w.channels));
    if (w.rate > 0 && w.rate != def.rate) c.set("--rate", fmt_num(w.rate));
  }
  if (!w.chain.empty()) c.set("--chain", w.chain);
  if (w.chunk_frames > 0 && w.chunk_frames != def.chunk) c.set("--chunk", fmt_num(w.chunk_frames));
  if (w.dtype != def.dtype) c.set("--dtype", dtype_name(w.dtype));
  if (!w.fused) c.set("--no-fuse");
  if (w.backend != "cpu") {
    c.set("--backend", w.backend);
    if (!w.mode.empty()) c.set("--mode", w.mode);
  }
  if (!w.speed)
    c.set("--speed", "max");
  else if (fmt_num(*w.speed) != def.speed)
    c.set("--speed", fmt_num(*w.speed));
  if (!w.margin_text.empty() && w.margin_text != def.margin) c.set("--margin", w.margin_text);
  if (w.queue_depth > 0 && w.queue_depth != def.queue_depth) c.set("--queue-depth", fmt_num(w.queue_depth));
  if (static_cast<long long>(w.warmup_chunks) != def.warmup) c.set("--warmup", fmt_num(static_cast<double>(w.warmup_chunks)));
  if (w.run_mode) {  // how the engine ran is part of the experiment
    const RunMode& m = *w.run_mode;
    if (!m.wait.empty() && m.wait != wait_mode_name(def.wait)) c.set("--wait", m.wait);
    if (m.inline_process) c.set("--inline");
    if (!m.ftz) c.set("--ftz", "off");
    if (m.rt) c.set("--rt");
    if (m.rt && m.rt_priority > 0 && m.rt_priority != def.rt_priority) c.set("--rt-priority", fmt_num(m.rt_priority));
    if (!m.cpus.empty()) c.set("--cpus", m.cpus);
  }
  if (r.streams && r.streams->count > 1) {
    c.set("--streams", fmt_num(r.streams->count));
    if (r.streams->batched())
      c.set("--batch");
    else if (!r.streams->staggered)
      c.set("--stagger", "off");
  }
}

// The run's command line: the experiment flags the run recorded (`workload.args`, built by
// the options module, so every flag that shaped the run is there and nothing that equals
// its default), a replay's input and a monitor's devices; for older reports, the flags the
// workload records. Where outputs went is not repeated: a rerun does not overwrite them.
Cmd base_command(const RunReport& r) {
  const ReportWorkload& w = r.workload;
  const std::string command = rerun_subcommand(w);
  Cmd c(rerun_head(w, command));
  if (command == "monitor" && r.device) device_flags(c, r);
  if (w.args.empty()) {
    recorded_flags(c, r, command);
    return c;
  }
  for (const auto& a : w.args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos)
      c.set(a);
    else
      c.set(a.substr(0, eq), a.substr(eq + 1));
  }
  return c;
}

// ---------------------------------------------------------------- figures and findings

std::string ft(double ns) { return fmt_time(ns); }
std::string pct(double share) {
  const double a = std::fabs(share * 100);
  return a > 0 && a < 1 ? fmt::format("{:.2f}%", share * 100) : fmt::format("{:.0f}%", share * 100);
}

using Evidence = std::map<std::string, double>;
using Sev = Finding::Severity;
using Conf = Finding::Confidence;

// A percentile of a histogram that holds data, or nothing.
std::optional<double> hv(const HistSummary& h, Pct p) {
  if (!h.has_data()) return std::nullopt;
  return static_cast<double>(at(h, p));
}
std::optional<double> hv(const std::optional<HistSummary>& h, Pct p) {
  if (!h) return std::nullopt;
  return hv(*h, p);
}
std::optional<double> hmax(const HistSummary& h) {
  if (!h.has_data()) return std::nullopt;
  return static_cast<double>(h.max);
}

struct Ctx {
  const RunReport& r;
  std::vector<Finding> out;
  double D = 0, B = 0;
  bool paced = false;
  double counted = 0;
  std::string command, backend, mode;
  double chunk_frames = 0;

  explicit Ctx(const RunReport& report) : r(report) {
    D = static_cast<double>(r.timing.chunk_ns);
    B = static_cast<double>(r.timing.budget_ns);
    paced = r.timing.paced;
    counted = static_cast<double>(r.counts.counted);
    command = r.workload.command;
    backend = r.workload.backend;
    mode = r.workload.mode;
    chunk_frames = r.workload.chunk_frames;
  }
  void add(std::string rule, Sev severity, Conf confidence, std::string text, const Evidence& evidence, std::string next) {
    Finding f;
    f.rule = std::move(rule);
    f.severity = severity;
    f.confidence = confidence;
    f.text = std::move(text);
    f.evidence.assign(evidence.begin(), evidence.end());
    f.next = std::move(next);
    out.push_back(std::move(f));
  }
  const HistSummary& stage(Stage s) const { return r.stage(s); }
  const std::optional<HistSummary>& part(Part p) const { return r.part(p); }
  std::string rerun(const std::function<void(Cmd&)>& change) const {
    Cmd c = base_command(r);
    change(c);
    return c.str();
  }
  // the run's flags under another subcommand (a replay's chain on a synthetic input)
  std::string rerun_as(const std::string& sub, const std::function<void(Cmd&)>& change) const {
    Cmd c = base_command(r);
    c.set_head(rerun_head(r.workload, sub));
    change(c);
    return c.str();
  }
};

// stage-bench on the run's saved report: the rerun that saves it (the report does not record
// whether this run wrote one), then stage-bench on it with `what` ("--stage process").
std::string stage_bench_hint(const Ctx& c, const std::string& what = "--stage process") {
  return fmt::format("`{}`, then `{} stage-bench run.json{}`", c.rerun([](Cmd& x) { x.set("--json", "run.json"); }),
                     program_name(), what.empty() ? "" : " " + what);
}

// How many chunks of D a run needs to reach `chunks` counted ones, as seconds of media.
double seconds_for(const Ctx& c, double chunks) {
  const double warm = static_cast<double>(c.r.workload.warmup_chunks);
  const double s = c.r.workload.speed.value_or(1.0);
  return std::ceil((chunks + warm) * c.D * s / 1e9);
}

std::string longer_run(const Ctx& c, double chunks) {
  const double secs = seconds_for(c, chunks);
  if (c.command == "replay")
    return fmt::format("replay a file of at least {} s (this one has {:.1f} s), or run the same chain on a synthetic "
                       "signal: `{}`",
                       secs, c.r.workload.media_seconds,
                       c.rerun_as("synth", [&](Cmd& x) { x.set("--duration", fmt_num(secs) + "s"); }));
  return fmt::format("run for at least {} s: `{}`", secs,
                     c.rerun([&](Cmd& x) { x.set("--duration", fmt_num(secs) + "s"); }));
}

// ---------------------------------------------------------------- the rules

void rule_incomplete(Ctx& c) {
  if (c.r.complete()) return;
  const double emitted = static_cast<double>(c.r.counts.emitted);
  const double streamed = c.r.throughput.media_seconds;
  const double total = c.r.workload.media_seconds;
  c.add("incomplete_run", Sev::info, Conf::high,
        fmt::format("the run is {} after {:.0f} chunks ({:.3f} s of {:.3f} s of media): every figure covers only what "
                    "streamed ({})",
                    run_state_name(c.r.state), emitted, streamed, total, c.r.reason.empty() ? "no reason given" : c.r.reason),
        {{"chunks_emitted", emitted}, {"media_seconds_streamed", streamed}, {"media_seconds_total", total}},
        "repeat the run to its end before acting on the tail percentiles");
}

// A hosted call that never returned: the run stopped there, and the step is the cause.
void rule_stuck_step(Ctx& c) {
  if (!c.r.stuck) return;
  const StuckStep& t = *c.r.stuck;
  const double secs = static_cast<double>(t.stuck_ns) / 1e9;
  Evidence ev{{"step", static_cast<double>(t.step)},
              {"stuck_ms", static_cast<double>(t.stuck_ns) / 1e6},
              {"timeout_ms", static_cast<double>(t.timeout_ns) / 1e6}};
  if (t.chunk) ev["chunk"] = static_cast<double>(*t.chunk);
  c.add("stuck_step", Sev::warning, Conf::high,
        fmt::format("step {} ({}) had not returned from {}() after {:.1f} s{}: the run was stopped there, and the "
                    "figures cover the chunks before it",
                    t.step, t.label, t.call, secs, t.chunk ? fmt::format(" while processing chunk {}", *t.chunk) : ""),
        ev,
        fmt::format("run the step alone to find what it waits for (a lock, a read, an endless loop: a debugger's "
                    "backtrace of the processing thread shows it); raise --step-timeout only when a call "
                    "legitimately takes over {:.1f} s",
                    static_cast<double>(t.timeout_ns) / 1e9));
}

void rule_no_data(Ctx& c) {
  if (c.counted > 0) return;
  const double emitted = static_cast<double>(c.r.counts.emitted);
  const double warm = static_cast<double>(c.r.counts.warmup);
  c.add("no_counted_chunks", Sev::info, Conf::high,
        fmt::format("no chunk was counted ({:.0f} emitted, {:.0f} of them warm-up): there are no statistics to judge",
                    emitted, warm),
        {{"counted", 0}, {"emitted", emitted}, {"warmup", warm}},
        c.D > 0 ? longer_run(c, 1000) : std::string("run longer than the warm-up"));
}

// The stage a chunk's time is charged to: a queue wait counts for the stage it waited for.
struct Charge {
  Stage stage;
  double ns = 0;
};
Charge charged_p95(const Ctx& c, Stage blame) {
  auto p = [&](Stage s) { return hv(c.stage(s), Pct::p95).value_or(0); };
  if (blame == Stage::source) return {Stage::source, p(Stage::source)};
  if (blame == Stage::sink || blame == Stage::wait_out) return {Stage::sink, p(Stage::wait_out) + p(Stage::sink)};
  return {Stage::process, p(Stage::wait_in) + p(Stage::process)};
}

// Taking the platform out of the engine's way, as this machine allows: SCHED_FIFO, and
// the engine's threads pinned to the two highest-numbered CPUs where there are four or more.
std::string pin_threads(const Ctx& c) {
  const int n = c.r.environment.host.logical_cpus;
  const auto& m = c.r.workload.run_mode;
  const bool already_rt = m && m->rt;
  const bool spins = m && m->wait == "spin";
  const bool in_source = m && m->inline_process;
  const int streams = c.r.streams ? c.r.streams->count : 1;
  // a SCHED_FIFO thread that spins needs a CPU of its own, one per engine thread of one
  // stream (the run refuses it otherwise): with fewer, the rerun waits hybrid
  const int engine_threads = in_source ? 2 : 3;
  if (n >= 4) {
    const int k = spins && streams == 1 ? engine_threads : 2;
    std::string cpus;
    for (int i = n - k; i < n; ++i) cpus += (cpus.empty() ? "" : ",") + fmt_num(i);
    return fmt::format("run the engine's threads SCHED_FIFO on quiet cores of their own, then compare: `{}`",
                       c.rerun([&](Cmd& x) {
                         x.set("--rt").set("--cpus", cpus);
                         if (spins && streams > 1) x.set("--wait", "hybrid");
                       }));
  }
  if (already_rt && n >= 2 && streams == 1)
    return fmt::format("this machine has {} logical CPU(s), too few to give the engine quiet cores; process inside the "
                       "source's thread and spin instead of sleeping, source and sink on a CPU each (costs both CPUs "
                       "while it runs): `{}`",
                       n, c.rerun([&](Cmd& x) { x.set("--inline").set("--wait", "spin").set("--cpus", fmt::format("{},{}", n - 2, n - 1)); }));
  if (already_rt)
    return fmt::format("this machine has {} logical CPU(s), too few to give the engine quiet cores of its own; the threads "
                       "already run SCHED_FIFO: run it on a machine with more cores, or with fewer other processes",
                       n > 0 ? n : 1);
  return fmt::format("raise the threads' priority and compare (this machine has {} logical CPU(s), too few to give the "
                     "engine quiet cores of its own{}): `{}`",
                     n > 0 ? n : 1, spins ? "; a real-time thread that spins needs one, so it waits hybrid" : "",
                     c.rerun([&](Cmd& x) {
                       x.set("--rt");
                       if (spins) x.set("--wait", "hybrid");
                     }));
}

// The baseline's figures as evidence, when the report has them.
void baseline_evidence(const Ctx& c, Evidence& ev) {
  if (!c.r.platform) return;
  if (auto w = c.r.platform->wake_p99()) ev["baseline_wake_p99_ns"] = static_cast<double>(*w);
  if (auto h = c.r.platform->handoff_p99()) ev["baseline_handoff_p99_ns"] = static_cast<double>(*h);
  if (c.r.platform->busy_share) ev["machine_busy_share"] = *c.r.platform->busy_share;
  if (c.r.platform->load_after) ev["load_after"] = c.r.platform->load_after->load1;
}

// With the scheduler's record: how long the machine took the processing thread off the CPU
// inside processing (the platform's part of it), else "".
std::string preempted_words(const Ctx& c, Evidence& ev) {
  const auto& p = c.r.process_preempted;
  if (!p || !p->has_data()) return "";
  ev["process_preempted_p99_ns"] = static_cast<double>(p->p99);
  ev["process_preempted_max_ns"] = static_cast<double>(p->max);
  return fmt::format("; the scheduler's record: processing was preempted up to {} (p99 {}), the platform's time",
                     ft(static_cast<double>(p->max)), ft(static_cast<double>(p->p99)));
}

std::string next_for_stage(const Ctx& c, Stage stage) {
  if (stage == Stage::process || stage == Stage::wait_in)
    return fmt::format("time the process stage alone with the run's I/O: {}; then trace one run: `{}`", stage_bench_hint(c),
                       c.rerun([](Cmd& x) { x.set("--report-dir", "out"); }));
  if (stage == Stage::source) {
    if (c.command == "replay")
      return fmt::format("check the read: replay the same file from a RAM disk (/dev/shm), and look at the source track of "
                         "the trace: `{}`",
                         c.rerun([](Cmd& x) { x.set("--report-dir", "out"); }));
    return "the source only generates or hands over the chunk, so its time is mostly the thread waking up late: " +
           pin_threads(c);
  }
  if (c.r.device && c.r.device->duplex)
    return fmt::format("the output side waits for the device's callbacks: give it one more chunk of slack: `{}`",
                       c.rerun([&](Cmd& x) { x.set("--latency-chunks", fmt_num(c.r.device->latency_chunks + 1)); }));
  if (c.r.workload.sink == "null")
    return "the sink discards the chunk, so its time (queue_out included) is the sink thread waking up late: " + pin_threads(c);
  return fmt::format("measure without the file sink (drop --output): `{}`", c.rerun([](Cmd& x) { x.remove("--output"); }));
}

void rule_negative_headroom(Ctx& c) {
  if (!c.r.headroom || c.r.headroom->p95 >= 0) return;
  const double h95 = static_cast<double>(c.r.headroom->p95);
  const double l95 = hv(c.r.latency, Pct::p95).value_or(c.B - h95);
  const Charge ch = charged_p95(c, c.r.verdict.blame.value_or(Stage::process));
  const double over = -h95;
  Evidence ev = {{"latency_p95_ns", l95}, {"budget_ns", c.B}, {"over_budget_ns", over}, {"headroom_p95_ns", h95}};
  ev[fmt::format("{}_p95_ns", stage_key(ch.stage))] = ch.ns;
  std::string text = fmt::format("p95 latency {} exceeds the budget B {} by {} ({} over);", ft(l95), ft(c.B), ft(over),
                                 pct(c.B > 0 ? over / c.B : 0));
  if (ch.ns > 0)
    text += fmt::format(" {} is to blame: its p95 (queue wait included) is {}, {} of the p95 latency", stage_key(ch.stage),
                        ft(ch.ns), pct(l95 > 0 ? ch.ns / l95 : 0));
  else
    text += fmt::format(" the verdict blames {}", stage_key(ch.stage));
  if (ch.ns > over) text += fmt::format(", so cutting it by {} would meet the budget", ft(over));
  c.add("negative_headroom", Sev::warning, Conf::high, text, ev, next_for_stage(c, ch.stage));
}

void rule_tail_over_budget(Ctx& c) {
  if (!c.r.headroom || c.r.headroom->p95 < 0 || c.r.headroom->p99 >= 0) return;
  const double h95 = static_cast<double>(c.r.headroom->p95), h99 = static_cast<double>(c.r.headroom->p99);
  const double l99 = c.B - h99;
  c.add("tail_over_budget", Sev::warning, c.counted >= 1000 ? Conf::high : c.counted >= 100 ? Conf::medium : Conf::low,
        fmt::format("p95 keeps the budget (headroom {}) but p99 latency {} is {} over B {}: about 1 chunk in 100 is late",
                    ft(h95), ft(l99), ft(-h99), ft(c.B)),
        {{"headroom_p95_ns", h95}, {"headroom_p99_ns", h99}, {"latency_p99_ns", l99}, {"budget_ns", c.B},
         {"counted", c.counted}},
        next_for_stage(c, c.r.verdict.blame.value_or(Stage::process)));
}

// Whether the misses (chunk numbers in order) recur at a fixed interval: the words to add
// to the finding ("" when they do not) and the interval into the evidence.
std::string miss_recurrence(const std::vector<double>& seqs, double D, Evidence& ev) {
  if (seqs.size() < 3) return "";
  // the most common interval between consecutive misses, when it makes most of them
  std::map<double, int> steps;
  for (std::size_t i = 1; i < seqs.size(); ++i) ++steps[seqs[i] - seqs[i - 1]];
  auto best = std::max_element(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  const auto n = static_cast<double>(seqs.size() - 1);
  // all of them on a grid: the intervals share a divisor, and the misses fill at least
  // half its points between the first and the last (one stray miss among stalls every
  // 100 chunks makes a divisor of 4, which is no period)
  long long g = 0;
  for (std::size_t i = 1; i < seqs.size(); ++i) g = std::gcd(g, static_cast<long long>(seqs[i] - seqs[i - 1]));
  const double grid_points = g > 0 ? (seqs.back() - seqs.front()) / static_cast<double>(g) + 1 : 0;
  if (seqs.size() >= 4 && g >= 4 && best->second < static_cast<int>(n) &&
      2 * static_cast<double>(seqs.size()) >= grid_points) {
    ev["miss_interval_chunks"] = static_cast<double>(g);
    return fmt::format("; they all fall on a grid of {} chunks ({}), a periodic stall", g, ft(static_cast<double>(g) * D));
  }
  if (best->first > 1 && best->second >= 2 && best->second >= 0.5 * n) {
    ev["miss_interval_chunks"] = best->first;
    return fmt::format("; {} recur every {:.0f} chunks ({}), a periodic stall",
                       best->second == static_cast<int>(n) ? "they" : "most", best->first, ft(best->first * D));
  }
  return "";
}

void rule_misses(Ctx& c) {
  const double misses = static_cast<double>(c.r.counts.misses);
  if (misses <= 0) return;
  Evidence ev = {{"misses", misses}, {"counted", c.counted}, {"miss_share", c.counted > 0 ? misses / c.counted : 0}};
  std::string blamed;
  Stage top = Stage::process;
  double top_n = -1;
  for (int i = 0; i < kStageCount; ++i) {
    const double n = static_cast<double>(c.r.counts.miss_blame[static_cast<std::size_t>(i)]);
    if (n <= 0) continue;
    const char* key = stage_key(static_cast<Stage>(i));
    blamed += fmt::format("{}{} {:.0f}", blamed.empty() ? "" : ", ", key, n);
    ev[std::string("blamed_") + key] = n;
    if (n > top_n) {
      top_n = n;
      top = static_cast<Stage>(i);
    }
  }
  std::string text = fmt::format("{:.0f} of {:.0f} counted chunks missed the budget B {} ({:.2f}%)", misses, c.counted,
                                 ft(c.B), c.counted > 0 ? 100 * misses / c.counted : 0);
  const Counts& k = c.r.counts;
  if (k.stalls) {
    ev["stall_events"] = static_cast<double>(*k.stalls);
    std::string owners;
    for (int i = 0; i < kOwnerCount; ++i) {
      const double n = static_cast<double>(k.stall_owner[static_cast<std::size_t>(i)]);
      if (n <= 0) continue;
      owners += fmt::format("{}{} {:.0f}", owners.empty() ? "" : ", ", owner_key(static_cast<Owner>(i)), n);
      ev[std::string("events_") + owner_key(static_cast<Owner>(i))] = n;
    }
    text += fmt::format(" in {} stall event(s) ({})", *k.stalls, owners);
    if (!k.stall_list.empty()) {
      const StallRecord& e = k.stall_list.front();
      text += fmt::format("; the first, chunks {}-{}, {}", e.first_seq, e.last_seq, describe_cause(e.cause, e.cause_ns));
    }
  }
  if (!blamed.empty()) text += "; by stage " + blamed;
  // the worst miss and whether the misses recur at a fixed interval
  std::vector<double> seqs;
  double worst = 0, worst_seq = -1;
  for (const auto& m : c.r.counts.miss_list) {
    seqs.push_back(static_cast<double>(m.seq));
    if (static_cast<double>(m.latency_ns) > worst) {
      worst = static_cast<double>(m.latency_ns);
      worst_seq = static_cast<double>(m.seq);
    }
  }
  if (worst_seq >= 0) {
    text += fmt::format("; the worst took {} (chunk {:.0f})", ft(worst), worst_seq);
    ev["worst_latency_ns"] = worst;
    ev["worst_seq"] = worst_seq;
  }
  text += miss_recurrence(seqs, c.D, ev);
  text += preempted_words(c, ev);
  const std::optional<Owner> owner = c.r.verdict.owner;
  std::string next = next_for_stage(c, top);
  if (owner == Owner::platform) {
    baseline_evidence(c, ev);
    next = pin_threads(c);
  }
  c.add("deadline_misses", Sev::warning, Conf::high, text, ev, next);
}

// The audio file the run wrote: samples beyond full scale, clipped in an integer file.
void rule_output_clipped(Ctx& c) {
  if (!c.r.output || c.r.output->over_full_scale == 0 || c.r.output->samples == 0) return;
  const OutputLevels& o = *c.r.output;
  const double over = static_cast<double>(o.over_full_scale), all = static_cast<double>(o.samples);
  const Evidence ev = {{"over_full_scale", over}, {"samples", all}, {"peak_dbfs", o.peak_dbfs()}};
  const std::string share = pct(over / all);
  if (o.integer)
    c.add("output_clipped", Sev::warning, Conf::high,
          fmt::format("{:.0f} of {:.0f} samples ({}) written to '{}' were beyond full scale (peak {:+.1f} dBFS) and were "
                      "clipped to it: the file's integer samples cannot hold them",
                      over, all, share, o.path, o.peak_dbfs()),
          ev,
          fmt::format("keep them: add `--output-format float` to the command; or lower the chain's gain by {:.1f} dB",
                      o.peak_dbfs()));
  else
    c.add("output_over_full_scale", Sev::info, Conf::high,
          fmt::format("{:.0f} of {:.0f} samples ({}) written to '{}' are beyond full scale (peak {:+.1f} dBFS), kept as "
                      "written in its float samples; a player or an integer file will clip them",
                      over, all, share, o.path, o.peak_dbfs()),
          ev, fmt::format("lower the chain's gain by {:.1f} dB before the audio leaves the float domain", o.peak_dbfs()));
}

void rule_drops(Ctx& c) {
  const Counts& k = c.r.counts;
  const double drops = static_cast<double>(k.drops);
  if (drops <= 0) return;
  const double pool = static_cast<double>(k.drops_pool_empty), full = static_cast<double>(k.drops_queue_full);
  const double produced = static_cast<double>(k.produced);
  const double depth = c.r.workload.queue_depth > 0 ? c.r.workload.queue_depth : StreamOptions{}.queue_depth;
  Evidence ev = {{"drops", drops}, {"drops_queue_full", full}, {"drops_pool_empty", pool}, {"produced", produced},
                 {"queue_depth", depth}};
  std::string text = fmt::format("{:.0f} of {:.0f} chunks were dropped (queue full {:.0f}, pool empty {:.0f})", drops,
                                 produced, full, pool);
  if (!k.drop_seqs.empty()) {
    text += fmt::format(", the first at chunk {}", k.drop_seqs.front());
    ev["first_drop_seq"] = static_cast<double>(k.drop_seqs.front());
  }
  // A source that woke up more than the queue's depth of chunks late catches up with a
  // burst of back-to-back chunks: those drops are the source's, not slow processing.
  const double wake_max = c.r.source_wake && c.r.source_wake->has_data() ? static_cast<double>(c.r.source_wake->max) : 0;
  const double proc_p99 = hv(c.stage(Stage::process), Pct::p99).value_or(0);
  const bool burst = full >= pool && c.D > 0 && wake_max >= depth * c.D && proc_p99 < 0.5 * c.D;
  if (burst) {
    text += fmt::format(": the source woke up as much as {} late ({:.1f} chunks of D) and caught up with a burst of "
                        "back-to-back chunks, more than the queue's {:.0f} could hold; processing kept up (p99 {}), so the "
                        "source's catch-up burst is to blame",
                        ft(wake_max), wake_max / c.D, depth, ft(proc_p99));
    ev["source_wake_max_ns"] = wake_max;
    ev["process_p99_ns"] = proc_p99;
  } else {
    text += full >= pool ? ": the processor fell behind the paced source for longer than the queue could hold"
                         : ": every pooled chunk was still in flight (the processor or the sink held them too long)";
  }
  const double max_proc = hmax(c.stage(Stage::process)).value_or(0);
  if (!burst && max_proc > 0 && c.D > 0) {
    text += fmt::format(" (the slowest process call took {} = {:.1f} chunks of D)", ft(max_proc), max_proc / c.D);
    ev["process_max_ns"] = max_proc;
  }
  c.add("drops", Sev::warning, Conf::high, text, ev,
        burst ? pin_threads(c)
              : fmt::format("find the stall: {}; a deeper queue only hides stalls shorter than depth x D ({} now): "
                            "`--queue-depth {}`",
                            stage_bench_hint(c), ft(depth * c.D), fmt_num(depth * 4)));
}

void rule_too_slow(Ctx& c) {
  if (c.paced) return;
  const double factor = c.r.throughput.speed_factor;
  if (factor <= 0 || factor >= 1 || c.counted <= 0) return;
  c.add("too_slow", Sev::warning, c.counted >= 100 ? Conf::high : Conf::medium,
        fmt::format("as fast as possible the pipeline streams only {:.2f}x real time: it cannot keep up with a paced "
                    "source at all",
                    factor),
        {{"speed_factor", factor},
         {"wall_seconds", c.r.throughput.wall_seconds},
         {"media_seconds", c.r.throughput.media_seconds},
         {"process_p50_ns", hv(c.stage(Stage::process), Pct::p50).value_or(0)},
         {"chunk_ns", c.D}},
        fmt::format("time the process stage alone: {}", stage_bench_hint(c)));
}

void rule_xruns(Ctx& c) {
  if (!c.r.device) return;
  const DeviceSection& d = *c.r.device;
  const double xruns = static_cast<double>(d.xruns), under = static_cast<double>(d.underruns);
  if (xruns <= 0 && under <= 0) return;
  const double k = d.latency_chunks > 0 ? d.latency_chunks : MonitorOptions{}.latency_chunks;
  c.add("xruns", Sev::warning, Conf::high,
        fmt::format("the device reported {:.0f} xrun(s) (input overflows {}, output underflows {}) and the "
                    "engine {:.0f} underrun(s) in {} callbacks",
                    xruns, d.input_overflows, d.output_underflows, under, d.callbacks),
        {{"xruns", xruns}, {"underruns", under}, {"callbacks", static_cast<double>(d.callbacks)}},
        d.duplex ? fmt::format("give the output one more chunk of slack: `{}`",
                               c.rerun([&](Cmd& x) { x.set("--latency-chunks", fmt_num(k + 1)); }))
                 : fmt::format("try a larger device buffer: `{}`",
                               c.rerun([&](Cmd& x) { x.set("--chunk", fmt_num(c.chunk_frames * 2)); })));
}

// A spin or sleep step with a cascade before it and another after it.
bool calibration_between_cascades(const std::vector<StepRecord>& steps) {
  bool cascade_before = false, calib_since = false;
  for (const auto& st : steps) {
    if (st.kind == "cascade") {
      if (cascade_before && calib_since) return true;
      cascade_before = true;
      calib_since = false;
    } else if (st.kind == "spin" || st.kind == "sleep") {
      calib_since = cascade_before;
    }
  }
  return false;
}

void rule_not_fused(Ctx& c) {
  const double disp = c.r.dispatches_per_chunk > 0 ? c.r.dispatches_per_chunk
                                                   : static_cast<double>(c.r.workload.dispatches_per_chunk_planned);
  const int filters = c.r.workload.filter_stages;
  if (filters < 2 || disp < 2 || disp + 1e-9 < filters) return;
  // fused, with the step rows at hand: only a calibration step between two cascades is
  // worth moving; a hosted step splits cascades by design
  if (c.r.workload.fused && !c.r.steps.empty() && !calibration_between_cascades(c.r.steps)) return;
  Evidence ev = {{"dispatches_per_chunk", disp}, {"filter_stages", filters}};
  if (c.r.launches_per_chunk > 0) ev["launches_per_chunk"] = c.r.launches_per_chunk;
  const double p50 = hv(c.stage(Stage::process), Pct::p50).value_or(0);
  if (p50 > 0) ev["process_p50_ns"] = p50;
  std::string text = fmt::format("{:.2f} dispatches per chunk for {} filter stages: the chain did not fuse, every filter "
                                 "makes its own pass over the chunk",
                                 disp, filters);
  std::string next;
  if (!c.r.workload.fused) {
    text += " (--no-fuse)";
    next = fmt::format("run it fused (drop --no-fuse) and compare: `{}`", c.rerun([](Cmd& x) { x.remove("--no-fuse"); }));
  } else {
    text += " (spin/sleep stages between the filters end each cascade)";
    next = "move the spin/sleep stages after the filters so the filters fuse into one cascade";
  }
  c.add("not_fused", Sev::warning, Conf::high, text, ev, next);
}

void rule_launch_bound(Ctx& c) {
  const auto launch = hv(c.part(Part::launch), Pct::p50);
  if (!launch || *launch <= 0) return;
  const double kernel = hv(c.part(Part::kernel), Pct::p50).value_or(0);
  const double h2d = hv(c.part(Part::h2d), Pct::p50).value_or(0), d2h = hv(c.part(Part::d2h), Pct::p50).value_or(0);
  const double gpu = kernel + h2d + d2h;
  const double proc = hv(c.stage(Stage::process), Pct::p50).value_or(0);
  if (*launch <= gpu || (proc > 0 && *launch < 0.3 * proc)) return;
  const bool graph = c.mode == "graph";
  Evidence ev = {{"launch_p50_ns", *launch}, {"gpu_p50_ns", gpu},        {"kernel_p50_ns", kernel},
                 {"process_p50_ns", proc},   {"chunk_frames", c.chunk_frames}, {"launches_per_chunk", c.r.launches_per_chunk}};
  std::string text = fmt::format("CPU launch time p50 {} exceeds the GPU time p50 {} (H2D + kernel + D2H){}: with {:.0f}-frame "
                                 "chunks the run is bound by launching work, not by doing it",
                                 ft(*launch), ft(gpu), proc > 0 ? fmt::format(" and is {} of process p50", pct(*launch / proc)) : "",
                                 c.chunk_frames);
  std::string next =
      graph ? fmt::format("already in graph mode: amortise the launch over more frames: `{}`",
                          c.rerun([&](Cmd& x) { x.set("--chunk", fmt_num(c.chunk_frames * 2)); }))
            : fmt::format("replay the captured graph instead of launching kernel by kernel: `{}`",
                          c.rerun([](Cmd& x) { x.set("--backend", "cuda").set("--mode", "graph"); }));
  c.add("launch_bound", Sev::warning, *launch > 2 * gpu ? Conf::high : Conf::medium, text, ev, next);
}

void rule_copy_bound(Ctx& c) {
  const double h2d = hv(c.part(Part::h2d), Pct::p50).value_or(0), d2h = hv(c.part(Part::d2h), Pct::p50).value_or(0);
  const double copies = h2d + d2h;
  if (copies <= 0) return;
  const double kernel = hv(c.part(Part::kernel), Pct::p50).value_or(0);
  const double proc = hv(c.stage(Stage::process), Pct::p50).value_or(0);
  if (copies <= kernel || (proc > 0 && copies < 0.4 * proc)) return;
  Evidence ev = {{"h2d_p50_ns", h2d},       {"d2h_p50_ns", d2h},           {"kernel_p50_ns", kernel},
                 {"process_p50_ns", proc},  {"chunk_frames", c.chunk_frames}, {"channels", c.r.workload.channels}};
  const double bigger = std::min(65536.0, c.chunk_frames * 4);
  c.add("copy_bound", Sev::warning, copies > 2 * kernel ? Conf::high : Conf::medium,
        fmt::format("host-device copies take {} per chunk at p50 (H2D {}, D2H {}) against {} in the kernel{}: the "
                    "transfers, not the filter, set the processing time",
                    ft(copies), ft(h2d), ft(d2h), ft(kernel),
                    proc > 0 ? fmt::format(", {} of process p50", pct(copies / proc)) : ""),
        ev,
        fmt::format("move more frames per copy (larger chunks, or all channels in one batch): `{}`",
                    c.rerun([&](Cmd& x) { x.set("--chunk", fmt_num(bigger)); })));
}

void rule_f64_on_gpu(Ctx& c) {
  if (c.backend != "cuda" || c.r.workload.dtype != DType::f64) return;
  const double kernel = hv(c.part(Part::kernel), Pct::p50).value_or(0);
  const double proc = hv(c.stage(Stage::process), Pct::p50).value_or(0);
  if (kernel <= 0 && proc <= 0) return;
  const double share = proc > 0 ? kernel / proc : 0;
  c.add("f64_on_gpu", Sev::warning, kernel <= 0 ? Conf::low : share >= 0.3 ? Conf::high : Conf::medium,
        fmt::format("float64 on the GPU: the kernel takes {} of {} process time at p50 ({}); most GPUs run f64 at a small "
                    "fraction of their f32 rate",
                    ft(kernel), ft(proc), pct(share)),
        {{"kernel_p50_ns", kernel}, {"process_p50_ns", proc}, {"kernel_share", share}},
        fmt::format("run it in float32 and compare the output: `{}`", c.rerun([](Cmd& x) { x.set("--dtype", "f32"); })));
}

void rule_queue_wait(Ctx& c) {
  if (!c.paced || c.B <= 0) return;
  const auto l50 = hv(c.r.latency, Pct::p50);
  const auto qi50 = hv(c.stage(Stage::wait_in), Pct::p50), qi95 = hv(c.stage(Stage::wait_in), Pct::p95);
  auto qo50 = hv(c.stage(Stage::wait_out), Pct::p50), qo95 = hv(c.stage(Stage::wait_out), Pct::p95);
  if (!l50 || *l50 <= 0 || !qi50 || !qi95) return;
  // Full duplex on a device, a processed chunk waits for the output callback K chunks
  // later by design: that wait is the pipeline depth the user chose, not a queue problem.
  const bool designed_out_wait = c.r.device && c.r.device->duplex;
  if (designed_out_wait) {
    qo50 = 0.0;
    qo95 = 0.0;
  }
  if (!qo50 || !qo95) return;
  const double q50 = *qi50 + *qo50, q95 = *qi95 + *qo95;
  const double share = q50 / *l50;
  if (share < 0.5 || q95 < 0.1 * c.B) return;
  const bool in = *qi95 >= *qo95;
  const double p95 = hv(c.stage(Stage::process), Pct::p95).value_or(0);
  Evidence ev = {{"queue_in_p50_ns", *qi50}, {"queue_in_p95_ns", *qi95}, {"latency_p50_ns", *l50},
                 {"queue_share_p50", share}, {"budget_ns", c.B},         {"process_p95_ns", p95}};
  if (!designed_out_wait) {
    ev["queue_out_p50_ns"] = *qo50;
    ev["queue_out_p95_ns"] = *qo95;
  }
  std::string text =
      designed_out_wait
          ? fmt::format("the wait for the processor takes {} of the p50 latency ({} of {}), p95 {}: ", pct(share), ft(q50),
                        ft(*l50), ft(*qi95))
          : fmt::format("queue waits take {} of the p50 latency ({} of {}), p95 {} in queue_in and {} in queue_out: ",
                        pct(share), ft(q50), ft(*l50), ft(*qi95), ft(*qo95));
  std::string next;
  if (in && p95 > 0.5 * c.D) {
    text += fmt::format("chunks wait for a processor still busy with earlier chunks (process p95 {} = {} of D): backpressure",
                        ft(p95), pct(p95 / c.D));
    next = fmt::format("time the process stage alone: {}", stage_bench_hint(c));
  } else if (in) {
    text += fmt::format("the processor is mostly idle (process p95 {} = {} of D), so the wait is its wake-up: the stage "
                        "upstream hands over and the processor starts late",
                        ft(p95), pct(c.D > 0 ? p95 / c.D : 0));
    next = pin_threads(c);
  } else {
    text += "chunks wait for the sink: it is still busy with earlier chunks";
    next = next_for_stage(c, Stage::sink);
  }
  c.add("queue_wait", Sev::warning, Conf::medium, text, ev, next);
}

void rule_scheduling_noise(Ctx& c) {
  if (c.counted < 100 || c.D <= 0) return;
  const HistSummary& proc = c.stage(Stage::process);
  const auto p50 = hv(proc, Pct::p50), p99 = hv(proc, Pct::p99);
  if (!p50 || !p99 || *p50 <= 0) return;
  // calibration stages (spin/sleep every N) put a tail into the chunks on purpose
  const auto& calib = c.part(Part::calib);
  if (calib && static_cast<double>(calib->count) >= 0.01 * c.counted) return;
  const double duty = *p50 / c.D;
  if (duty >= 0.5) return;
  // the spread outside the chain (engine overhead = L - process), else of the latency,
  // and of the chain's own time
  const HistSummary* outside = &c.r.engine_overhead;
  const char* outside_name = "overhead";
  if (!outside->has_data()) {
    outside = &c.r.latency;
    outside_name = "latency";
  }
  const auto o50 = hv(*outside, Pct::p50), o99 = hv(*outside, Pct::p99);
  const double spread_o = o50 && o99 && *o50 > 0 ? *o99 / *o50 : 0;
  const double spread_p = *p99 / *p50;
  const bool by_outside = spread_o >= spread_p;
  const double spread = std::max(spread_o, spread_p);
  if (spread < 4) return;
  // the tail must matter: a wide spread far below the budget is harmless
  const auto l99 = hv(c.r.latency, Pct::p99);
  const double tail99 = c.paced && c.B > 0 ? l99.value_or(0) : *p99;
  const double scale = c.paced && c.B > 0 ? c.B : c.D;
  if (tail99 < 0.25 * scale) return;
  Evidence ev = {{"process_p50_ns", *p50}, {"process_p99_ns", *p99}, {"process_p99_over_p50", spread_p},
                 {"duty_cycle", duty},     {"chunk_ns", c.D},        {"counted", c.counted}};
  if (spread_o > 0) {
    ev[std::string(outside_name) + "_p50_ns"] = *o50;
    ev[std::string(outside_name) + "_p99_ns"] = *o99;
    ev[std::string(outside_name) + "_p99_over_p50"] = spread_o;
  }
  if (l99) ev["latency_p99_ns"] = *l99;
  baseline_evidence(c, ev);
  // what the machine was doing, measured (/proc and the baseline) when the report has it
  std::string machine = "the chain is busy only a small share of each period";
  if (c.r.platform && c.r.platform->busy_share) {
    const PlatformSection& p = *c.r.platform;
    machine = fmt::format("the machine was {} busy over the run", pct(*p.busy_share));
    if (p.load_after) machine += fmt::format(" (load {:.2f} on {} CPU(s))", p.load_after->load1, p.load_after->cpus_online);
  }
  std::string floor;
  if (c.r.platform)
    if (auto w = c.r.platform->wake_p99()) floor = fmt::format("; this machine's own wake-up p99 is {}", ft(static_cast<double>(*w)));
  c.add("scheduling_noise", Sev::warning, c.counted >= 1000 ? Conf::medium : Conf::low,
        fmt::format("p99 is {:.1f}x p50 ({} {} vs {}) while the processor is busy only {} of each chunk period "
                    "(process p50 {} of D {}) and {}: a tail this wide with little work points to preemption, wake-up "
                    "latency or frequency scaling rather than to the chain{}",
                    spread, by_outside ? outside_name : "process", ft(by_outside ? *o99 : *p99), ft(by_outside ? *o50 : *p50),
                    pct(duty), ft(*p50), ft(c.D), machine, floor),
        ev, pin_threads(c));
}

// The machine's floor: what the baseline measured, against the margin.
void rule_platform_baseline(Ctx& c) {
  if (!c.r.platform || !c.r.platform->has_baseline()) return;
  const PlatformSection& p = *c.r.platform;
  const BaselineSummary& b = p.before ? *p.before : *p.after;
  const double margin = static_cast<double>(c.r.workload.margin_ns);
  const double w99 = static_cast<double>(p.wake_p99().value_or(0)), h99 = static_cast<double>(p.handoff_p99().value_or(0));
  Evidence ev = {{"baseline_wake_p50_ns", static_cast<double>(b.wake.p50)},
                 {"baseline_wake_p99_ns", w99},
                 {"baseline_wake_max_ns", static_cast<double>(std::max(p.before ? p.before->wake.max : 0, p.after ? p.after->wake.max : 0))},
                 {"baseline_handoff_p50_ns", static_cast<double>(b.handoff.p50)},
                 {"baseline_handoff_p99_ns", h99}};
  if (margin > 0) ev["baseline_wake_p99_margin_share"] = w99 / margin;
  if (p.busy_share) ev["machine_busy_share"] = *p.busy_share;
  if (p.steal_share) ev["steal_share"] = *p.steal_share;
  std::string text = fmt::format("this machine wakes a thread paced at D p50 {} and p99 {} late, and a hand-off through the "
                                 "engine's queue and back takes p50 {}, p99 {}: the floor under every latency in this report",
                                 ft(static_cast<double>(b.wake.p50)), ft(w99), ft(static_cast<double>(b.handoff.p50)), ft(h99));
  if (margin > 0) text += fmt::format("; the wake-up p99 is {} of the margin", pct(w99 / margin));
  const bool tight = margin > 0 && w99 + h99 > margin;
  c.add("platform_baseline", tight ? Sev::warning : Sev::info, Conf::high, text, ev,
        tight ? "the machine's own wake-up and hand-off tail exceeds the margin: " + pin_threads(c)
              : std::string("nothing to do: the machine's floor is well within the margin"));
}

void rule_drift(Ctx& c) {
  if (!c.paced || !c.r.cadence.drift_ppm) return;
  const double drift = *c.r.cadence.drift_ppm;
  if (std::fabs(drift) < 500 || c.counted < 3) return;
  const double per_hour = drift * 1e-6 * 3600;
  c.add("drift", Sev::warning, c.counted >= 1000 ? Conf::medium : Conf::low,
        fmt::format("the output drifts {:+.0f} ppm from real time ({} it {} by {:.2f} s per hour of audio){}", drift,
                    drift > 0 ? "positive:" : "negative:", drift > 0 ? "falls behind" : "runs ahead", std::fabs(per_hour),
                    c.command == "monitor" ? "; on a device this is the audio clock against CLOCK_MONOTONIC" : ""),
        {{"drift_ppm", drift}, {"counted", c.counted}, {"seconds_per_hour", per_hour}},
        c.command == "monitor" ? longer_run(c, std::max(10000.0, c.counted * 10))
                               : fmt::format("see whether the output keeps falling behind over a longer run: {}",
                                             longer_run(c, std::max(10000.0, c.counted * 10))));
}

void rule_graph_fallbacks(Ctx& c) {
  if (c.mode != "graph") return;
  const BackendCounters& bc = c.r.backend_counters;
  const double fb = static_cast<double>(bc.eager_fallbacks), rc = static_cast<double>(bc.graph_recaptures);
  const double shorts = static_cast<double>(c.r.counts.short_chunks);
  if (fb + rc <= shorts) return;  // the short last chunk accounts for one
  const double chunks = static_cast<double>(bc.chunks);
  c.add("graph_fallbacks", Sev::warning, Conf::high,
        fmt::format("in graph mode {:.0f} chunk(s) ran eagerly and the graph was recaptured {:.0f} time(s) over {:.0f} "
                    "chunks ({} shape changes): those chunks paid the launch cost graph mode is meant to remove",
                    fb, rc, chunks, bc.shape_changes),
        {{"eager_fallbacks", fb},
         {"graph_recaptures", rc},
         {"shape_changes", static_cast<double>(bc.shape_changes)},
         {"chunks", chunks},
         {"short_chunks", shorts}},
        "keep every chunk the same size (a fixed --chunk from a source that delivers whole chunks), or compare "
        "`--short-chunk eager` with `--short-chunk recapture`");
}

void rule_few_chunks(Ctx& c) {
  if (c.counted <= 0) return;
  if (const std::uint64_t need = c.r.verdict.needed_chunks; need > 0)
    c.add("too_few_to_judge", Sev::warning, Conf::high,
          fmt::format("{}: nothing was missed, but a p95 resting on {:.0f} chunks has {:.1f} beyond it; calling a run "
                      "safe needs {} beyond it, {} counted chunks",
                      cannot_judge_words(c.r.counts.counted, need), c.counted, c.counted / 20, kTailChunks, need),
          {{"counted", c.counted}, {"needed", static_cast<double>(need)}},
          c.D > 0 ? longer_run(c, static_cast<double>(need)) : std::string("run longer"));
  if (c.counted < 100) {
    c.add("few_chunks_for_p99", Sev::info, Conf::high,
          fmt::format("only {:.0f} counted chunks: p99 rests on fewer than 100 samples (its top 1% holds {:.1f} chunks), "
                      "so p99 and p99.9 are not trustworthy; p95 rests on {:.1f} chunks above it",
                      c.counted, c.counted / 100, c.counted / 20),
          {{"counted", c.counted}, {"needed_for_p99", 100}, {"needed_for_p99_9", 1000}},
          c.D > 0 ? longer_run(c, 1000) : std::string("run longer"));
  } else if (c.counted < 1000) {
    c.add("few_chunks_for_p99_9", Sev::info, Conf::high,
          fmt::format("{:.0f} counted chunks: p99.9 rests on fewer than 1000 samples and is the maximum in all but name",
                      c.counted),
          {{"counted", c.counted}, {"needed_for_p99_9", 1000}}, c.D > 0 ? longer_run(c, 10000) : std::string("run longer"));
  }
}

// a run of several streams (--streams N): which streams broke, and the next count to try
void rule_streams(Ctx& c) {
  if (!c.r.streams || c.r.streams->count < 2) return;
  const StreamsSection& s = *c.r.streams;
  const int unsafe = s.unsafe_streams();
  const StreamFigures& w = s.streams[static_cast<std::size_t>(s.worst)];
  Evidence ev = {{"streams", static_cast<double>(s.count)},
                 {"unsafe_streams", static_cast<double>(unsafe)},
                 {"pooled_misses", static_cast<double>(s.misses)},
                 {"pooled_stall_events", static_cast<double>(s.stalls)},
                 {"pooled_drops", static_cast<double>(s.drops)}};
  if (s.headroom_p95_ns) ev["pooled_headroom_p95_ns"] = static_cast<double>(*s.headroom_p95_ns);
  if (w.headroom_p95_ns) ev["worst_headroom_p95_ns"] = static_cast<double>(*w.headroom_p95_ns);
  std::string head = program_name() + " sweep";
  if (c.command == "replay") {
    head += " " + shell_quote(c.r.workload.input.path.empty() ? std::string("FILE") : c.r.workload.input.path);
  } else if (!c.r.workload.input.signal.empty()) {
    head += " --synth " + shell_quote(c.r.workload.input.signal);
  }
  Cmd sw(head);
  if (!c.r.workload.chain.empty()) sw.set("--chain", c.r.workload.chain);
  sw.set("--chunks", fmt_num(c.chunk_frames));
  if (c.command != "replay") {
    const StreamOptions def;
    if (c.r.workload.channels > 0 && c.r.workload.channels != def.channels) sw.set("--channels", fmt_num(c.r.workload.channels));
    if (c.r.workload.rate > 0 && c.r.workload.rate != def.rate) sw.set("--rate", fmt_num(c.r.workload.rate));
  }
  const bool broke = unsafe > 0 || s.misses > 0 || s.drops > 0;
  // broken: the counts up to this one; safe: this one and up to four times as many
  std::string counts;
  if (broke) {
    counts = s.count > 3 ? fmt::format("1,{},{}", s.count / 2, s.count) : s.count == 2 ? "1,2" : "1,2,3";
  } else {
    // a batch's chunk holds at most kMaxBatchChannels channels
    const int most = s.batched() && c.r.workload.channels > 0
                         ? std::min(kMaxStreams, kMaxBatchChannels / c.r.workload.channels)
                         : kMaxStreams;
    for (int n = s.count; n <= std::min(4 * s.count, most); n *= 2) counts += (counts.empty() ? "" : ",") + fmt_num(n);
  }
  sw.set("--streams", counts);
  if (s.batched()) sw.set("--batch");
  const std::string sweep = fmt::format("find the largest count that keeps real time: `{}`", sw.str());
  if (broke) {
    const StreamFigures* b = s.blame ? &s.streams[static_cast<std::size_t>(*s.blame)] : nullptr;
    c.add("streams_not_safe", Sev::warning, Conf::high,
          fmt::format("{} of {} streams are not safe ({} misses in {} stall events and {} drops over all streams){}; with "
                      "{} streams sharing {} CPU(s), {}",
                      unsafe, s.count, s.misses, s.stalls, s.drops,
                      b ? fmt::format("; stream {} has the most stall events ({})", b->stream, b->stalls) : std::string(),
                      s.count, c.r.environment.host.logical_cpus,
                      s.batched()   ? "their chunks are processed together, batched into one chunk per period"
                      : s.staggered ? "their chunks are already staggered over the period"
                                    : "their chunks are due at the same moment (--stagger off)"),
          ev,
          s.count > 1 ? fmt::format("fewer streams: `{}`; or {}",
                                    c.rerun([&](Cmd& x) {
                                      x.set("--streams", fmt_num(std::max(1, s.count - 1)));
                                      if (s.count - 1 < 2) x.remove("--batch");
                                    }), sweep)
                      : sweep);
  } else if (w.realtime_safe == true) {
    const std::string room = w.headroom_p95_ns ? ft(double(*w.headroom_p95_ns)) : std::string("-");
    c.add("streams_safe", Sev::info, Conf::medium,
          s.batched() ? fmt::format("all {} streams are safe, batched into one chunk per period; their p95 headroom is "
                                    "{} of the budget {}",
                                    s.count, room, ft(c.B))
                      : fmt::format("all {} streams are safe; the least p95 headroom, stream {}'s, is {} of the budget {}",
                                    s.count, w.stream, room, ft(c.B)),
          ev, sweep);
  }
}

// CPUs a run could use: those --cpus named, else the machine's online ones.
int usable_cpus(const RunReport& r) {
  if (r.workload.run_mode && !r.workload.run_mode->cpus.empty()) {
    int n = 0;
    std::stringstream ss(r.workload.run_mode->cpus);
    for (std::string part; std::getline(ss, part, ',');) {
      const auto dash = part.find('-');
      n += dash == std::string::npos ? 1 : std::max(1, std::atoi(part.c_str() + dash + 1) - std::atoi(part.c_str()) + 1);
    }
    return n;
  }
  if (r.platform && r.platform->load_after && r.platform->load_after->cpus_online > 0)
    return r.platform->load_after->cpus_online;
  return r.environment.host.logical_cpus;
}

// --wait spin: every engine thread keeps a CPU busy while it waits (three, two --inline,
// per stream). As many spinning threads as CPUs or more leave the thread with work waiting
// for a CPU, and the wake-ups come late however light the chain.
void rule_spin_oversubscribed(Ctx& c) {
  const auto& m = c.r.workload.run_mode;
  if (!m || m->wait != "spin" || !c.paced) return;
  const int streams = c.r.streams && !c.r.streams->batched() ? c.r.streams->count : 1;
  const int spinning = (m->inline_process ? 2 : 3) * streams;
  const int cpus = usable_cpus(c.r);
  if (cpus <= 0 || spinning < cpus) return;
  Evidence ev = {{"spinning_threads", double(spinning)}, {"cpus", double(cpus)}, {"counted", c.counted},
                 {"misses", double(c.r.counts.misses)}};
  if (c.r.source_wake && c.r.source_wake->has_data()) ev["source_wake_p50_ns"] = double(c.r.source_wake->p50);
  const bool hurt = c.r.counts.misses > 0 || (c.r.source_wake && double(c.r.source_wake->p50) > 0.1 * c.D);
  c.add("spin_oversubscribed", hurt ? Sev::warning : Sev::info, Conf::high,
        fmt::format("{} engine thread(s) spin-wait (--wait spin{}) on {} CPU(s): each holds a CPU while it waits, so "
                    "the thread with work waits for one; late wake-ups here are the run mode's, not the machine's{}",
                    spinning, m->inline_process ? ", --inline" : "", cpus,
                    c.r.source_wake && c.r.source_wake->has_data()
                        ? fmt::format(" (source wake-up p50 {})", ft(double(c.r.source_wake->p50)))
                        : std::string()),
        ev,
        fmt::format("spin only with a free CPU per engine thread; here block or spin briefly first: `{}`",
                    c.rerun([](Cmd& x) { x.set("--wait", "hybrid"); })));
}

// The real-time audit of hosted steps: heap calls and blocking waits are not real-time safe
// whatever the latencies say; NaN/Inf output is wrong output; subnormals cost time where
// the host does not flush them.
void rule_hosted_audit(Ctx& c) {
  for (const auto& st : c.r.steps) {
    if (!st.audit) continue;
    const StepAudit& a = *st.audit;
    const std::string who = fmt::format("step {}, {}", st.index, st.label);
    const std::string bench = stage_bench_hint(c, "") + " (each step's time alone, the output proven)";
    if (a.allocations + a.frees > 0)
      c.add("hosted_allocates", Sev::warning, Conf::high,
            fmt::format("{} called the heap {} time(s) ({} allocation(s), {} free(s)) inside process(), first in chunk {}: "
                        "not real-time safe",
                        who, a.allocations + a.frees, a.allocations, a.frees, a.first_alloc.value_or(0)),
            {{"allocations", double(a.allocations)}, {"frees", double(a.frees)}, {"calls", double(a.calls)},
             {"step", double(st.index)}},
            "allocate in create() and reuse the memory in process(); rerun to check the count is 0, or isolate it with " +
                bench);
    if (a.blocking_calls > 0)
      c.add("hosted_blocks", Sev::warning, Conf::high,
            fmt::format("{} waited in {} of {} call(s) ({} voluntary context switch(es), {} off the CPU), first in "
                        "chunk {}: a lock, a sleep or I/O on the audio thread is not real-time safe",
                        who, a.blocking_calls, a.calls, a.voluntary_switches, ft(double(a.blocked_ns)),
                        a.first_block.value_or(0)),
            {{"blocking_calls", double(a.blocking_calls)}, {"blocked_ns", double(a.blocked_ns)},
             {"voluntary_switches", double(a.voluntary_switches)}, {"step", double(st.index)}},
            "hand blocking work to another thread through a lock-free queue (as LV2's worker does), then rerun");
    if (a.paging_calls > 0)
      c.add("hosted_paging", Sev::info, Conf::high,
            fmt::format("{} waited in {} call(s) for memory read in from disk ({} major page fault(s), {} off the CPU), "
                        "first in chunk {}: the first touch of its code or data, not a wait of its own",
                        who, a.paging_calls, a.major_faults, ft(double(a.paging_ns)), a.first_paging.value_or(0)),
            {{"paging_calls", double(a.paging_calls)}, {"major_faults", double(a.major_faults)},
             {"paging_ns", double(a.paging_ns)}, {"step", double(st.index)}},
            "lock the process's memory so no page is read in while it runs: `--rt` does (mlockall)");
    if (a.nonfinite > 0)
      c.add("hosted_nonfinite", Sev::warning, Conf::high,
            fmt::format("{} wrote {} NaN or infinite sample(s), first in chunk {}: its output is not audio", who,
                        a.nonfinite, a.first_nonfinite.value_or(0)),
            {{"nonfinite_samples", double(a.nonfinite)}, {"step", double(st.index)}},
            "check the stage's state and divisions for this input; " + bench + " replays it alone");
    if (a.subnormal > 0)
      c.add("hosted_subnormal", Sev::info, Conf::high,
            fmt::format("{} wrote {} subnormal sample(s); chunkscope flushes subnormals while it runs, a host that "
                        "does not may run far slower on them",
                        who, a.subnormal),
            {{"subnormal_samples", double(a.subnormal)}, {"step", double(st.index)}},
            "flush denormals in the stage (FTZ/DAZ) or add a tiny DC offset to feedback paths");
  }
}

void rule_healthy(Ctx& c) {
  for (const auto& f : c.out)
    if (f.severity == Sev::warning) return;
  if (!c.paced || c.counted < 100 || c.B <= 0) return;
  if (!c.r.headroom || c.r.headroom->p95 < 0) return;
  if (c.r.counts.misses > 0 || c.r.counts.drops > 0) return;
  const double h95 = static_cast<double>(c.r.headroom->p95);
  const double p95 = hv(c.stage(Stage::process), Pct::p95).value_or(0);
  c.add("healthy", Sev::ok, c.counted >= 1000 ? Conf::high : Conf::medium,
        fmt::format("p95 headroom {} is {} of the budget B {}, with no miss and no drop in {:.0f} counted chunks; the "
                    "chain's p95 is {} = {} of D",
                    ft(h95), pct(h95 / c.B), ft(c.B), c.counted, ft(p95), pct(c.D > 0 ? p95 / c.D : 0)),
        {{"headroom_p95_ns", h95}, {"budget_ns", c.B}, {"process_p95_ns", p95}, {"counted", c.counted}},
        fmt::format("find the limit: shrink the chunk until the headroom goes: `{}`",
                    c.rerun([&](Cmd& x) { x.set("--chunk", fmt_num(std::max(1.0, std::floor(c.chunk_frames / 2)))); })));
}

// A probe's run is the application's own: a next step that reruns chunkscope becomes the
// same change, made in the application.
std::string in_application(const std::string& next) {
  const auto cmd = next.find("`" + program_name() + " ");
  if (cmd == std::string::npos) return next;
  std::string head = next.substr(0, cmd);
  while (!head.empty() && (head.back() == ' ' || head.back() == ':' || head.back() == ',')) head.pop_back();
  if (head.empty()) return "";
  return head + " (in the application: a probe's run is its own, chunkscope cannot rerun it)";
}

}  // namespace

std::string rerun_command(const RunReport& run_report) { return base_command(run_report).str(); }

std::vector<Finding> diagnose(const RunReport& r) {
  Ctx c(r);
  rule_incomplete(c);
  rule_stuck_step(c);
  rule_no_data(c);
  rule_negative_headroom(c);
  rule_misses(c);
  rule_drops(c);
  rule_output_clipped(c);
  rule_too_slow(c);
  rule_xruns(c);
  rule_tail_over_budget(c);
  rule_launch_bound(c);
  rule_copy_bound(c);
  rule_not_fused(c);
  rule_f64_on_gpu(c);
  rule_queue_wait(c);
  rule_scheduling_noise(c);
  rule_spin_oversubscribed(c);
  rule_platform_baseline(c);
  rule_drift(c);
  rule_graph_fallbacks(c);
  rule_few_chunks(c);
  rule_streams(c);
  rule_hosted_audit(c);
  rule_healthy(c);
  if (c.command == "probe") for (auto& f : c.out) f.next = in_application(f.next);
  // warnings first, keeping the rule order inside each severity
  std::stable_sort(c.out.begin(), c.out.end(),
                   [](const Finding& a, const Finding& b) { return static_cast<int>(a.severity) < static_cast<int>(b.severity); });
  return std::move(c.out);
}

void print_diagnosis(std::ostream& os, const std::vector<Finding>& findings) {
  std::string out = "diagnosis\n";
  if (findings.empty()) {
    out += "  no rule fired: nothing in the measured figures points at a limit\n";
    os << fit_width(out, report_width(os));
    return;
  }
  for (const auto& f : findings) {
    out += fmt::format("  [{}, {}] {}: {}\n", severity_name(f.severity), confidence_name(f.confidence), f.rule, f.text);
    std::string ev;
    for (const auto& [k, v] : f.evidence) {
      std::string val = k.size() > 3 && k.compare(k.size() - 3, 3, "_ns") == 0 ? ft(v) : fmt_num(std::round(v * 1000) / 1000);
      ev += fmt::format("{}{} {}", ev.empty() ? "" : ", ", k, val);
    }
    if (!ev.empty()) out += "      evidence: " + ev + "\n";
    if (!f.next.empty()) out += "      next: " + f.next + "\n";
  }
  os << fit_width(out, report_width(os));
}

}  // namespace chunkscope
