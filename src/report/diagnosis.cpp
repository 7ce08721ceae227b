#include "src/report/diagnosis.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <numeric>
#include <cmath>
#include <fmt/format.h>
#include <sstream>
#include <utility>
#include <vector>

#include "src/report/report_json.hpp"
#include "src/report/report.hpp"

namespace chunkscope {

using nlohmann::json;
using rj::hist;
using rj::hv;
using rj::num;
using rj::num_or;
using rj::str_or;

namespace {

// ---------------------------------------------------------------- the rerun command line

std::string shell_quote(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '/' || c == '_' || c == '-' || c == ':' ||
          c == '=' || c == '%' || c == ','))
      plain = false;
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string fmt_num(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{}", static_cast<long long>(std::llround(v)));
  return fmt::format("{:g}", v);
}

// A command line as positional words and flags in order; flags can be set or removed.
class Cmd {
 public:
  explicit Cmd(std::string head) : head_(std::move(head)) {}
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

Cmd base_command(const json& r) {
  std::string command = str_or(r, {"workload", "command"}, "replay");
  // a variant of a comparison repeats as a single run of its input
  if (command == "compare") command = str_or(r, {"workload", "input", "kind"}, "file") == "synth" ? "synth" : "replay";
  const std::string source = str_or(r, {"workload", "source"}, "");
  std::string head = "chunkscope " + command;
  Cmd c("");
  if (command == "replay") {
    std::string path = str_or(r, {"workload", "input", "path"}, "");
    if (path.empty() && source.rfind("file ", 0) == 0) path = source.substr(5);
    head += " " + shell_quote(path.empty() ? std::string("FILE") : path);
  }
  c = Cmd(head);
  if (command == "synth") {
    std::string signal = str_or(r, {"workload", "input", "signal"}, "");
    if (signal.empty() && source.rfind("synth ", 0) == 0) signal = source.substr(6);
    if (!signal.empty()) c.set("--signal", signal);
    const double secs = num_or(r, {"workload", "media_seconds"}, 0);
    if (secs > 0) c.set("--duration", fmt_num(secs) + "s");
    const double ch = num_or(r, {"workload", "channels"}, 2);
    if (ch != 2) c.set("--channels", fmt_num(ch));
    const double rate = num_or(r, {"workload", "rate"}, 48000);
    if (rate != 48000) c.set("--rate", fmt_num(rate));
  } else if (command == "monitor") {
    const std::string in = str_or(r, {"device", "input"}, "");
    if (!in.empty()) c.set("--input", in);
    const std::string out = str_or(r, {"device", "output"}, "");
    if (!out.empty()) c.set("--output", out);
    const double secs = num_or(r, {"workload", "media_seconds"}, 0);
    if (secs > 0) c.set("--duration", fmt_num(std::ceil(secs)) + "s");
    const double lk = num_or(r, {"device", "latency_chunks"}, 0);
    if (lk > 0 && lk != 2) c.set("--latency-chunks", fmt_num(lk));
  }
  const std::string chain = str_or(r, {"workload", "chain"}, "");
  if (!chain.empty()) c.set("--chain", chain);
  const double chunk = num_or(r, {"workload", "chunk_frames"}, 256);
  if (chunk != 256) c.set("--chunk", fmt_num(chunk));
  if (str_or(r, {"workload", "dtype"}, "f32") == "f64") c.set("--dtype", "f64");
  if (rj::boolean(r, {"workload", "fused"}) == std::optional<bool>(false)) c.set("--no-fuse");
  const std::string backend = str_or(r, {"workload", "backend"}, "cpu");
  if (backend != "cpu") {
    c.set("--backend", backend);
    const std::string mode = str_or(r, {"workload", "mode"}, "");
    if (!mode.empty()) c.set("--mode", mode);
  }
  const json* speed = rj::find(r, {"workload", "speed"});
  if (speed && speed->is_string()) c.set("--speed", speed->get<std::string>());
  if (speed && speed->is_number() && speed->get<double>() != 1) c.set("--speed", fmt_num(speed->get<double>()));
  const std::string margin = str_or(r, {"workload", "margin", "text"}, "20%");
  if (margin != "20%") c.set("--margin", margin);
  const double qd = num_or(r, {"workload", "queue_depth"}, 8);
  if (qd != 8) c.set("--queue-depth", fmt_num(qd));
  const double wu = num_or(r, {"workload", "warmup_chunks"}, 10);
  if (wu != 10) c.set("--warmup", fmt_num(wu));
  return c;
}

// ---------------------------------------------------------------- figures and findings

std::string ft(double ns) { return fmt_time(ns); }
std::string pct(double share) {
  const double a = std::fabs(share * 100);
  return a > 0 && a < 1 ? fmt::format("{:.2f}%", share * 100) : fmt::format("{:.0f}%", share * 100);
}

struct Finding {
  std::string rule, severity, text, confidence, next;
  json evidence;
};

struct Ctx {
  const json& r;
  std::vector<Finding> out;
  double D = 0, B = 0;
  bool paced = false;
  double counted = 0;
  std::string command, backend, mode, dtype;
  double chunk_frames = 0;

  explicit Ctx(const json& report) : r(report) {
    D = num_or(r, {"timing", "chunk_ns"}, 0);
    B = num_or(r, {"timing", "budget_ns"}, 0);
    paced = rj::boolean(r, {"timing", "paced"}).value_or(false);
    counted = num_or(r, {"counts", "counted"}, 0);
    command = str_or(r, {"workload", "command"}, "");
    backend = str_or(r, {"workload", "backend"}, "cpu");
    mode = str_or(r, {"workload", "mode"}, "");
    dtype = str_or(r, {"workload", "dtype"}, "f32");
    chunk_frames = num_or(r, {"workload", "chunk_frames"}, 0);
  }
  void add(std::string rule, std::string severity, std::string confidence, std::string text, json evidence,
           std::string next) {
    out.push_back({std::move(rule), std::move(severity), std::move(text), std::move(confidence), std::move(next),
                   std::move(evidence)});
  }
  const json* stage(const char* s) const { return hist(r, {"stages", s}); }
  const json* part(const char* p) const { return hist(r, {"process_parts", p}); }
  std::string rerun(const std::function<void(Cmd&)>& change) const {
    Cmd c = base_command(r);
    change(c);
    return c.str();
  }
};

const char* kStageBench = "chunkscope stage-bench RUN.json --stage process";

// How many chunks of D a run needs to reach `chunks` counted ones, as seconds of media.
double seconds_for(const Ctx& c, double chunks) {
  const double warm = num_or(c.r, {"workload", "warmup_chunks"}, 10);
  const json* speed = rj::find(c.r, {"workload", "speed"});
  const double s = speed && speed->is_number() ? speed->get<double>() : 1.0;
  return std::ceil((chunks + warm) * c.D * s / 1e9);
}

std::string longer_run(const Ctx& c, double chunks) {
  const double secs = seconds_for(c, chunks);
  if (c.command == "replay")
    return fmt::format("replay a file of at least {} s (this one has {:.1f} s), or `chunkscope synth --duration {}s` with "
                       "the same --chain and --chunk",
                       secs, num_or(c.r, {"workload", "media_seconds"}, 0), secs);
  return fmt::format("run for at least {} s: `{}`", secs,
                     c.rerun([&](Cmd& x) { x.set("--duration", fmt_num(secs) + "s"); }));
}

// ---------------------------------------------------------------- the rules

void rule_incomplete(Ctx& c) {
  const std::string state = str_or(c.r, {"state"}, "complete");
  if (state == "complete") return;
  const double emitted = num_or(c.r, {"counts", "emitted"}, 0);
  const double streamed = num_or(c.r, {"throughput", "media_seconds"}, 0);
  const double total = num_or(c.r, {"workload", "media_seconds"}, 0);
  c.add("incomplete_run", "info", "high",
        fmt::format("the run is {} after {:.0f} chunks ({:.3f} s of {:.3f} s of media): every figure covers only what "
                    "streamed ({})",
                    state, emitted, streamed, total, str_or(c.r, {"reason"}, "no reason given")),
        {{"chunks_emitted", emitted}, {"media_seconds_streamed", streamed}, {"media_seconds_total", total}},
        "repeat the run to its end before acting on the tail percentiles");
}

void rule_no_data(Ctx& c) {
  if (c.counted > 0) return;
  const double emitted = num_or(c.r, {"counts", "emitted"}, 0);
  const double warm = num_or(c.r, {"counts", "warmup"}, 0);
  c.add("no_counted_chunks", "info", "high",
        fmt::format("no chunk was counted ({:.0f} emitted, {:.0f} of them warm-up): there are no statistics to judge",
                    emitted, warm),
        {{"counted", 0}, {"emitted", emitted}, {"warmup", warm}},
        c.D > 0 ? longer_run(c, 1000) : std::string("run longer than the warm-up"));
}

// The stage a chunk's time is charged to: a queue wait counts for the stage it waited for.
struct Charge {
  std::string stage;
  double ns = 0;
};
Charge charged_p95(const Ctx& c, const std::string& blame) {
  auto p = [&](const char* s) { return hv(c.stage(s), "p95").value_or(0); };
  if (blame == "source") return {"source", p("source")};
  if (blame == "sink") return {"sink", p("queue_out") + p("sink")};
  return {"process", p("queue_in") + p("process")};
}

std::string pin_threads(const Ctx& c) {
  return fmt::format("pin the threads to quiet cores and raise their priority, then compare: `taskset -c 2,3 chrt -f 50 {}`",
                     c.rerun([](Cmd&) {}));
}

std::string next_for_stage(const Ctx& c, const std::string& stage) {
  const std::string sink = str_or(c.r, {"workload", "sink"}, "null");
  if (stage == "process")
    return fmt::format("time the process stage alone with the run's I/O: `{}`; then trace one run: `{}`", kStageBench,
                       c.rerun([](Cmd& x) { x.set("--report-dir", "out"); }));
  if (stage == "source") {
    if (c.command == "replay")
      return fmt::format("check the read: replay the same file from a RAM disk (/dev/shm), and look at the source track of "
                         "the trace: `{}`",
                         c.rerun([](Cmd& x) { x.set("--report-dir", "out"); }));
    return "the source only generates or hands over the chunk, so its time is mostly the thread waking up late: " +
           pin_threads(c);
  }
  if (sink == "null")
    return "the sink discards the chunk, so its time (queue_out included) is the sink thread waking up late: " + pin_threads(c);
  return fmt::format("measure without the file sink (drop --output): `{}`", c.rerun([](Cmd& x) { x.remove("--output"); }));
}

void rule_negative_headroom(Ctx& c) {
  const auto h95 = num(c.r, {"headroom", "p95"});
  if (!h95 || *h95 >= 0) return;
  const json* lat = hist(c.r, {"latency"});
  const double l95 = hv(lat, "p95").value_or(c.B - *h95);
  std::string blame = str_or(c.r, {"verdict", "blame"}, "process");
  const Charge ch = charged_p95(c, blame);
  const double over = -*h95;
  json ev = {{"latency_p95_ns", l95}, {"budget_ns", c.B}, {"over_budget_ns", over}, {"headroom_p95_ns", *h95}};
  ev[fmt::format("{}_p95_ns", ch.stage)] = ch.ns;
  std::string text = fmt::format("p95 latency {} exceeds the budget B {} by {} ({} over);", ft(l95), ft(c.B), ft(over),
                                 pct(c.B > 0 ? over / c.B : 0));
  if (ch.ns > 0)
    text += fmt::format(" {} is to blame: its p95 (queue wait included) is {}, {} of the p95 latency", ch.stage, ft(ch.ns),
                        pct(l95 > 0 ? ch.ns / l95 : 0));
  else
    text += fmt::format(" the verdict blames {}", ch.stage);
  if (ch.ns > over) text += fmt::format(", so cutting it by {} would meet the budget", ft(over));
  c.add("negative_headroom", "warning", "high", text, ev, next_for_stage(c, ch.stage));
}

void rule_tail_over_budget(Ctx& c) {
  const auto h95 = num(c.r, {"headroom", "p95"});
  const auto h99 = num(c.r, {"headroom", "p99"});
  if (!h95 || !h99 || *h95 < 0 || *h99 >= 0) return;
  const double l99 = c.B - *h99;
  const std::string blame = str_or(c.r, {"verdict", "blame"}, "process");
  c.add("tail_over_budget", "warning", c.counted >= 1000 ? "high" : c.counted >= 100 ? "medium" : "low",
        fmt::format("p95 keeps the budget (headroom {}) but p99 latency {} is {} over B {}: about 1 chunk in 100 is late",
                    ft(*h95), ft(l99), ft(-*h99), ft(c.B)),
        {{"headroom_p95_ns", *h95}, {"headroom_p99_ns", *h99}, {"latency_p99_ns", l99}, {"budget_ns", c.B},
         {"counted", c.counted}},
        next_for_stage(c, blame));
}

void rule_misses(Ctx& c) {
  const double misses = num_or(c.r, {"counts", "misses"}, 0);
  if (misses <= 0) return;
  json ev = {{"misses", misses}, {"counted", c.counted}, {"miss_share", c.counted > 0 ? misses / c.counted : 0}};
  std::string blamed;
  std::string top = "process";
  double top_n = -1;
  if (const json* mb = rj::find(c.r, {"counts", "miss_blame"}); mb && mb->is_object())
    for (auto it = mb->begin(); it != mb->end(); ++it)
      if (it->is_number() && it->get<double>() > 0) {
        blamed += fmt::format("{}{} {:.0f}", blamed.empty() ? "" : ", ", it.key(), it->get<double>());
        ev["blamed_" + it.key()] = it->get<double>();
        if (it->get<double>() > top_n) {
          top_n = it->get<double>();
          top = it.key();
        }
      }
  std::string text = fmt::format("{:.0f} of {:.0f} counted chunks missed the budget B {} ({:.2f}%)", misses, c.counted,
                                 ft(c.B), c.counted > 0 ? 100 * misses / c.counted : 0);
  if (!blamed.empty()) text += ", blamed on " + blamed;
  // the worst miss and whether the misses recur at a fixed interval
  std::vector<double> seqs;
  double worst = 0, worst_seq = -1;
  if (const json* ml = rj::find(c.r, {"counts", "miss_list"}); ml && ml->is_array())
    for (const auto& m : *ml) {
      if (!m.is_object()) continue;
      const double s = rj::num_or(m, {"seq"}, -1), l = rj::num_or(m, {"latency_ns"}, 0);
      if (s >= 0) seqs.push_back(s);
      if (l > worst) {
        worst = l;
        worst_seq = s;
      }
    }
  if (worst_seq >= 0) {
    text += fmt::format("; the worst took {} (chunk {:.0f})", ft(worst), worst_seq);
    ev["worst_latency_ns"] = worst;
    ev["worst_seq"] = worst_seq;
  }
  if (seqs.size() >= 3) {
    // the most common interval between consecutive misses, when it makes most of them
    std::map<double, int> steps;
    for (std::size_t i = 1; i < seqs.size(); ++i) ++steps[seqs[i] - seqs[i - 1]];
    auto best = std::max_element(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    const auto n = static_cast<double>(seqs.size() - 1);
    // all of them on a grid: the intervals share a divisor
    long long g = 0;
    for (std::size_t i = 1; i < seqs.size(); ++i) g = std::gcd(g, static_cast<long long>(seqs[i] - seqs[i - 1]));
    if (seqs.size() >= 4 && g >= 4 && best->second < static_cast<int>(n)) {
      text += fmt::format("; they all fall on a grid of {} chunks ({}), a periodic stall", g, ft(static_cast<double>(g) * c.D));
      ev["miss_interval_chunks"] = static_cast<double>(g);
    } else if (best->first > 1 && best->second >= 2 && best->second >= 0.5 * n) {
      text += fmt::format("; {} recur every {:.0f} chunks ({}), a periodic stall",
                          best->second == static_cast<int>(n) ? "they" : "most", best->first, ft(best->first * c.D));
      ev["miss_interval_chunks"] = best->first;
    }
  }
  c.add("deadline_misses", "warning", "high", text, ev, next_for_stage(c, top));
}

void rule_drops(Ctx& c) {
  const double drops = num_or(c.r, {"counts", "drops"}, 0);
  if (drops <= 0) return;
  const double pool = num_or(c.r, {"counts", "drops_pool_empty"}, 0);
  const double full = num_or(c.r, {"counts", "drops_queue_full"}, 0);
  const double produced = num_or(c.r, {"counts", "produced"}, 0);
  const double depth = num_or(c.r, {"workload", "queue_depth"}, 8);
  json ev = {{"drops", drops}, {"drops_queue_full", full}, {"drops_pool_empty", pool}, {"produced", produced},
             {"queue_depth", depth}};
  std::string text = fmt::format("{:.0f} of {:.0f} chunks were dropped (queue full {:.0f}, pool empty {:.0f})", drops,
                                 produced, full, pool);
  if (const json* ds = rj::find(c.r, {"counts", "drop_seqs"}); ds && ds->is_array() && !ds->empty() && (*ds)[0].is_number()) {
    text += fmt::format(", the first at chunk {}", (*ds)[0].get<std::int64_t>());
    ev["first_drop_seq"] = (*ds)[0].get<double>();
  }
  text += full >= pool ? ": the processor fell behind the paced source for longer than the queue could hold"
                       : ": every pooled chunk was still in flight (the processor or the sink held them too long)";
  const double max_proc = hv(c.stage("process"), "max").value_or(0);
  if (max_proc > 0 && c.D > 0) {
    text += fmt::format(" (the slowest process call took {} = {:.1f} chunks of D)", ft(max_proc), max_proc / c.D);
    ev["process_max_ns"] = max_proc;
  }
  c.add("drops", "warning", "high", text, ev,
        fmt::format("find the stall: `{}`; a deeper queue only hides stalls shorter than depth x D ({} now): `--queue-depth {}`",
                    kStageBench, ft(depth * c.D), fmt_num(depth * 4)));
}

void rule_too_slow(Ctx& c) {
  if (c.paced) return;
  const auto factor = num(c.r, {"throughput", "speed_factor"});
  if (!factor || *factor <= 0 || *factor >= 1 || c.counted <= 0) return;
  c.add("too_slow", "warning", c.counted >= 100 ? "high" : "medium",
        fmt::format("as fast as possible the pipeline streams only {:.2f}x real time: it cannot keep up with a paced "
                    "source at all",
                    *factor),
        {{"speed_factor", *factor},
         {"wall_seconds", num_or(c.r, {"throughput", "wall_seconds"}, 0)},
         {"media_seconds", num_or(c.r, {"throughput", "media_seconds"}, 0)},
         {"process_p50_ns", hv(c.stage("process"), "p50").value_or(0)},
         {"chunk_ns", c.D}},
        fmt::format("time the process stage alone: `{}`", kStageBench));
}

void rule_xruns(Ctx& c) {
  const json* dev = rj::find(c.r, {"device"});
  if (!dev || !dev->is_object()) return;
  const double xruns = num_or(*dev, {"xruns"}, 0), under = num_or(*dev, {"underruns"}, 0);
  if (xruns <= 0 && under <= 0) return;
  const bool duplex = rj::boolean(*dev, {"duplex"}).value_or(false);
  const double k = num_or(*dev, {"latency_chunks"}, 2);
  c.add("xruns", "warning", "high",
        fmt::format("the device reported {:.0f} xrun(s) (input overflows {:.0f}, output underflows {:.0f}) and the "
                    "engine {:.0f} underrun(s) in {:.0f} callbacks",
                    xruns, num_or(*dev, {"input_overflows"}, 0), num_or(*dev, {"output_underflows"}, 0), under,
                    num_or(*dev, {"callbacks"}, 0)),
        {{"xruns", xruns}, {"underruns", under}, {"callbacks", num_or(*dev, {"callbacks"}, 0)}},
        duplex ? fmt::format("give the output one more chunk of slack: `{}`",
                             c.rerun([&](Cmd& x) { x.set("--latency-chunks", fmt_num(k + 1)); }))
               : fmt::format("try a larger device buffer: `{}`",
                             c.rerun([&](Cmd& x) { x.set("--chunk", fmt_num(c.chunk_frames * 2)); })));
}

int filter_stages(const std::string& chain) {
  int n = 0;
  std::stringstream ss(chain);
  std::string part;
  while (std::getline(ss, part, '|')) {
    const auto b = part.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    const std::string name = part.substr(b, part.find_first_of(": \t", b) - b);
    if (name != "spin" && name != "sleep") ++n;
  }
  return n;
}

void rule_not_fused(Ctx& c) {
  const double disp = num(c.r, {"dispatches_per_chunk"}).value_or(num_or(c.r, {"workload", "dispatches_per_chunk_planned"}, 0));
  const std::string chain = str_or(c.r, {"workload", "chain"}, "");
  const int filters = filter_stages(chain);
  if (filters < 2 || disp < 2 || disp + 1e-9 < filters) return;
  const bool fused = rj::boolean(c.r, {"workload", "fused"}).value_or(true);
  const double launches = num_or(c.r, {"launches_per_chunk"}, 0);
  json ev = {{"dispatches_per_chunk", disp}, {"filter_stages", filters}};
  if (launches > 0) ev["launches_per_chunk"] = launches;
  const double p50 = hv(c.stage("process"), "p50").value_or(0);
  if (p50 > 0) ev["process_p50_ns"] = p50;
  std::string text = fmt::format("{:.2f} dispatches per chunk for {} filter stages: the chain did not fuse, every filter "
                                 "makes its own pass over the chunk",
                                 disp, filters);
  std::string next;
  if (!fused) {
    text += " (--no-fuse)";
    next = fmt::format("run it fused (drop --no-fuse) and compare: `{}`", c.rerun([](Cmd& x) { x.remove("--no-fuse"); }));
  } else {
    text += " (spin/sleep stages between the filters end each cascade)";
    next = "move the spin/sleep stages after the filters so the filters fuse into one cascade";
  }
  c.add("not_fused", "warning", "high", text, ev, next);
}

void rule_launch_bound(Ctx& c) {
  const auto launch = hv(c.part("launch"), "p50");
  if (!launch || *launch <= 0) return;
  const double kernel = hv(c.part("kernel"), "p50").value_or(0);
  const double h2d = hv(c.part("h2d"), "p50").value_or(0), d2h = hv(c.part("d2h"), "p50").value_or(0);
  const double gpu = kernel + h2d + d2h;
  const double proc = hv(c.stage("process"), "p50").value_or(0);
  if (*launch <= gpu || (proc > 0 && *launch < 0.3 * proc)) return;
  const bool graph = c.mode == "graph";
  json ev = {{"launch_p50_ns", *launch}, {"gpu_p50_ns", gpu}, {"kernel_p50_ns", kernel}, {"process_p50_ns", proc},
             {"chunk_frames", c.chunk_frames}, {"launches_per_chunk", num_or(c.r, {"launches_per_chunk"}, 0)}};
  std::string text = fmt::format("CPU launch time p50 {} exceeds the GPU time p50 {} (H2D + kernel + D2H){}: with {:.0f}-frame "
                                 "chunks the run is bound by launching work, not by doing it",
                                 ft(*launch), ft(gpu), proc > 0 ? fmt::format(" and is {} of process p50", pct(*launch / proc)) : "",
                                 c.chunk_frames);
  std::string next =
      graph ? fmt::format("already in graph mode: amortise the launch over more frames: `{}`",
                          c.rerun([&](Cmd& x) { x.set("--chunk", fmt_num(c.chunk_frames * 2)); }))
            : fmt::format("replay the captured graph instead of launching kernel by kernel: `{}`",
                          c.rerun([](Cmd& x) { x.set("--backend", "cuda").set("--mode", "graph"); }));
  c.add("launch_bound", "warning", *launch > 2 * gpu ? "high" : "medium", text, ev, next);
}

void rule_copy_bound(Ctx& c) {
  const double h2d = hv(c.part("h2d"), "p50").value_or(0), d2h = hv(c.part("d2h"), "p50").value_or(0);
  const double copies = h2d + d2h;
  if (copies <= 0) return;
  const double kernel = hv(c.part("kernel"), "p50").value_or(0);
  const double proc = hv(c.stage("process"), "p50").value_or(0);
  if (copies <= kernel || (proc > 0 && copies < 0.4 * proc)) return;
  json ev = {{"h2d_p50_ns", h2d}, {"d2h_p50_ns", d2h}, {"kernel_p50_ns", kernel}, {"process_p50_ns", proc},
             {"chunk_frames", c.chunk_frames}, {"channels", num_or(c.r, {"workload", "channels"}, 0)}};
  const double bigger = std::min(65536.0, c.chunk_frames * 4);
  c.add("copy_bound", "warning", copies > 2 * kernel ? "high" : "medium",
        fmt::format("host-device copies take {} per chunk at p50 (H2D {}, D2H {}) against {} in the kernel{}: the "
                    "transfers, not the filter, set the processing time",
                    ft(copies), ft(h2d), ft(d2h), ft(kernel),
                    proc > 0 ? fmt::format(", {} of process p50", pct(copies / proc)) : ""),
        ev,
        fmt::format("move more frames per copy (larger chunks, or all channels in one batch): `{}`",
                    c.rerun([&](Cmd& x) { x.set("--chunk", fmt_num(bigger)); })));
}

void rule_f64_on_gpu(Ctx& c) {
  if (c.backend != "cuda" || c.dtype != "f64") return;
  const double kernel = hv(c.part("kernel"), "p50").value_or(0);
  const double proc = hv(c.stage("process"), "p50").value_or(0);
  if (kernel <= 0 && proc <= 0) return;
  const double share = proc > 0 ? kernel / proc : 0;
  c.add("f64_on_gpu", "warning", kernel <= 0 ? "low" : share >= 0.3 ? "high" : "medium",
        fmt::format("float64 on the GPU: the kernel takes {} of {} process time at p50 ({}); most GPUs run f64 at a small "
                    "fraction of their f32 rate",
                    ft(kernel), ft(proc), pct(share)),
        {{"kernel_p50_ns", kernel}, {"process_p50_ns", proc}, {"kernel_share", share}},
        fmt::format("run it in float32 and compare the output: `{}`", c.rerun([](Cmd& x) { x.set("--dtype", "f32"); })));
}

void rule_queue_wait(Ctx& c) {
  if (!c.paced || c.B <= 0) return;
  const json* lat = hist(c.r, {"latency"});
  const auto l50 = hv(lat, "p50");
  const auto qi50 = hv(c.stage("queue_in"), "p50"), qo50 = hv(c.stage("queue_out"), "p50");
  const auto qi95 = hv(c.stage("queue_in"), "p95"), qo95 = hv(c.stage("queue_out"), "p95");
  if (!l50 || *l50 <= 0 || !qi50 || !qo50 || !qi95 || !qo95) return;
  const double q50 = *qi50 + *qo50, q95 = *qi95 + *qo95;
  const double share = q50 / *l50;
  if (share < 0.5 || q95 < 0.1 * c.B) return;
  const bool in = *qi95 >= *qo95;
  const double p95 = hv(c.stage("process"), "p95").value_or(0);
  json ev = {{"queue_in_p50_ns", *qi50}, {"queue_out_p50_ns", *qo50}, {"queue_in_p95_ns", *qi95},
             {"queue_out_p95_ns", *qo95}, {"latency_p50_ns", *l50}, {"queue_share_p50", share}, {"budget_ns", c.B},
             {"process_p95_ns", p95}};
  std::string text = fmt::format("queue waits take {} of the p50 latency ({} of {}), p95 {} in queue_in and {} in queue_out: ",
                                 pct(share), ft(q50), ft(*l50), ft(*qi95), ft(*qo95));
  std::string next;
  if (in && p95 > 0.5 * c.D) {
    text += fmt::format("chunks wait for a processor still busy with earlier chunks (process p95 {} = {} of D): backpressure",
                        ft(p95), pct(p95 / c.D));
    next = fmt::format("time the process stage alone: `{}`", kStageBench);
  } else if (in) {
    text += fmt::format("the processor is mostly idle (process p95 {} = {} of D), so the wait is its wake-up: the stage "
                        "upstream hands over and the processor starts late",
                        ft(p95), pct(c.D > 0 ? p95 / c.D : 0));
    next = pin_threads(c);
  } else {
    text += "chunks wait for the sink: it is still busy with earlier chunks";
    next = next_for_stage(c, "sink");
  }
  c.add("queue_wait", "warning", "medium", text, ev, next);
}

void rule_scheduling_noise(Ctx& c) {
  if (c.counted < 100 || c.D <= 0) return;
  const json* proc = c.stage("process");
  const auto p50 = hv(proc, "p50"), p99 = hv(proc, "p99");
  if (!p50 || !p99 || *p50 <= 0) return;
  // calibration stages (spin/sleep every N) put a tail into the chunks on purpose
  const json* calib = c.part("calibration");
  if (calib && num_or(*calib, {"count"}, 0) >= 0.01 * c.counted) return;
  const double duty = *p50 / c.D;
  if (duty >= 0.5) return;
  // the spread outside the chain (engine overhead = L - process), else of the latency,
  // and of the chain's own time
  const json* outside = hist(c.r, {"engine_overhead"});
  const char* outside_name = "overhead";
  if (!hv(outside, "p99")) {
    outside = hist(c.r, {"latency"});
    outside_name = "latency";
  }
  const auto o50 = hv(outside, "p50"), o99 = hv(outside, "p99");
  const double spread_o = o50 && o99 && *o50 > 0 ? *o99 / *o50 : 0;
  const double spread_p = *p99 / *p50;
  const bool by_outside = spread_o >= spread_p;
  const double spread = std::max(spread_o, spread_p);
  if (spread < 4) return;
  // the tail must matter: a wide spread far below the budget is harmless
  const auto l99 = hv(hist(c.r, {"latency"}), "p99");
  const double tail99 = c.paced && c.B > 0 ? l99.value_or(0) : *p99;
  const double scale = c.paced && c.B > 0 ? c.B : c.D;
  if (tail99 < 0.25 * scale) return;
  json ev = {{"process_p50_ns", *p50}, {"process_p99_ns", *p99}, {"process_p99_over_p50", spread_p},
             {"duty_cycle", duty}, {"chunk_ns", c.D}, {"counted", c.counted}};
  if (spread_o > 0) {
    ev[std::string(outside_name) + "_p50_ns"] = *o50;
    ev[std::string(outside_name) + "_p99_ns"] = *o99;
    ev[std::string(outside_name) + "_p99_over_p50"] = spread_o;
  }
  if (l99) ev["latency_p99_ns"] = *l99;
  c.add("scheduling_noise", "warning", c.counted >= 1000 ? "medium" : "low",
        fmt::format("p99 is {:.1f}x p50 ({} {} vs {}) while the processor is busy only {} of each chunk period "
                    "(process p50 {} of D {}), so the CPU is mostly idle: a tail this wide with little work points to "
                    "preemption, wake-up latency or frequency scaling rather than to the chain (inferred from the duty "
                    "cycle, not measured CPU load)",
                    spread, by_outside ? outside_name : "process", ft(by_outside ? *o99 : *p99), ft(by_outside ? *o50 : *p50),
                    pct(duty), ft(*p50), ft(c.D)),
        ev, pin_threads(c));
}

void rule_drift(Ctx& c) {
  if (!c.paced) return;
  const auto drift = num(c.r, {"cadence", "drift_ppm"});
  if (!drift || std::fabs(*drift) < 500 || c.counted < 3) return;
  const double per_hour = *drift * 1e-6 * 3600;
  c.add("drift", "warning", c.counted >= 1000 ? "medium" : "low",
        fmt::format("the output drifts {:+.0f} ppm from real time ({} it {} by {:.2f} s per hour of audio){}", *drift,
                    *drift > 0 ? "positive:" : "negative:", *drift > 0 ? "falls behind" : "runs ahead", std::fabs(per_hour),
                    c.command == "monitor" ? "; on a device this is the audio clock against CLOCK_MONOTONIC" : ""),
        {{"drift_ppm", *drift}, {"counted", c.counted}, {"seconds_per_hour", per_hour}},
        c.command == "monitor" ? longer_run(c, std::max(10000.0, c.counted * 10))
                               : fmt::format("see whether the output keeps falling behind over a longer run: {}",
                                             longer_run(c, std::max(10000.0, c.counted * 10))));
}

void rule_graph_fallbacks(Ctx& c) {
  const json* bc = rj::find(c.r, {"backend_counters"});
  if (!bc || !bc->is_object() || c.mode != "graph") return;
  const double fb = num_or(*bc, {"eager_fallbacks"}, 0), rc = num_or(*bc, {"graph_recaptures"}, 0);
  const double shorts = num_or(c.r, {"counts", "short"}, 0);
  if (fb + rc <= shorts) return;  // the short last chunk accounts for one
  const double chunks = num_or(*bc, {"chunks"}, 0);
  c.add("graph_fallbacks", "warning", "high",
        fmt::format("in graph mode {:.0f} chunk(s) ran eagerly and the graph was recaptured {:.0f} time(s) over {:.0f} "
                    "chunks ({:.0f} shape changes): those chunks paid the launch cost graph mode is meant to remove",
                    fb, rc, chunks, num_or(*bc, {"shape_changes"}, 0)),
        {{"eager_fallbacks", fb},
         {"graph_recaptures", rc},
         {"shape_changes", num_or(*bc, {"shape_changes"}, 0)},
         {"chunks", chunks},
         {"short_chunks", shorts}},
        "keep every chunk the same size (a fixed --chunk from a source that delivers whole chunks), or compare "
        "`--short-chunk eager` with `--short-chunk recapture`");
}

void rule_few_chunks(Ctx& c) {
  if (c.counted <= 0) return;
  if (c.counted < 100) {
    c.add("few_chunks_for_p99", "info", "high",
          fmt::format("only {:.0f} counted chunks: p99 rests on fewer than 100 samples (its top 1% holds {:.1f} chunks), "
                      "so p99 and p99.9 are not trustworthy; p95 rests on {:.1f} chunks above it",
                      c.counted, c.counted / 100, c.counted / 20),
          {{"counted", c.counted}, {"needed_for_p99", 100}, {"needed_for_p99_9", 1000}},
          c.D > 0 ? longer_run(c, 1000) : std::string("run longer"));
  } else if (c.counted < 1000) {
    c.add("few_chunks_for_p99_9", "info", "high",
          fmt::format("{:.0f} counted chunks: p99.9 rests on fewer than 1000 samples and is the maximum in all but name",
                      c.counted),
          {{"counted", c.counted}, {"needed_for_p99_9", 1000}}, c.D > 0 ? longer_run(c, 10000) : std::string("run longer"));
  }
}

void rule_healthy(Ctx& c) {
  for (const auto& f : c.out)
    if (f.severity == "warning") return;
  if (!c.paced || c.counted < 100 || c.B <= 0) return;
  const auto h95 = num(c.r, {"headroom", "p95"});
  if (!h95 || *h95 < 0) return;
  if (num_or(c.r, {"counts", "misses"}, 0) > 0 || num_or(c.r, {"counts", "drops"}, 0) > 0) return;
  const double p95 = hv(c.stage("process"), "p95").value_or(0);
  c.add("healthy", "ok", c.counted >= 1000 ? "high" : "medium",
        fmt::format("p95 headroom {} is {} of the budget B {}, with no miss and no drop in {:.0f} counted chunks; the "
                    "chain's p95 is {} = {} of D",
                    ft(*h95), pct(*h95 / c.B), ft(c.B), c.counted, ft(p95), pct(c.D > 0 ? p95 / c.D : 0)),
        {{"headroom_p95_ns", *h95}, {"budget_ns", c.B}, {"process_p95_ns", p95}, {"counted", c.counted}},
        fmt::format("find the limit: shrink the chunk until the headroom goes: `{}`",
                    c.rerun([&](Cmd& x) { x.set("--chunk", fmt_num(std::max(1.0, std::floor(c.chunk_frames / 2)))); })));
}

}  // namespace

std::string rerun_command(const json& run_report) { return base_command(run_report).str(); }

json diagnose(const json& r) {
  json arr = json::array();
  if (!r.is_object()) return arr;
  Ctx c(r);
  rule_incomplete(c);
  rule_no_data(c);
  rule_negative_headroom(c);
  rule_misses(c);
  rule_drops(c);
  rule_too_slow(c);
  rule_xruns(c);
  rule_tail_over_budget(c);
  rule_launch_bound(c);
  rule_copy_bound(c);
  rule_not_fused(c);
  rule_f64_on_gpu(c);
  rule_queue_wait(c);
  rule_scheduling_noise(c);
  rule_drift(c);
  rule_graph_fallbacks(c);
  rule_few_chunks(c);
  rule_healthy(c);
  // warnings first, keeping the rule order inside each severity
  std::stable_sort(c.out.begin(), c.out.end(), [](const Finding& a, const Finding& b) {
    auto rank = [](const std::string& s) { return s == "warning" ? 0 : s == "info" ? 1 : 2; };
    return rank(a.severity) < rank(b.severity);
  });
  for (auto& f : c.out)
    arr.push_back({{"rule", f.rule},
                   {"severity", f.severity},
                   {"finding", f.text},
                   {"evidence", f.evidence},
                   {"confidence", f.confidence},
                   {"next", f.next}});
  return arr;
}

void print_diagnosis(std::ostream& os, const json& findings) {
  std::string out = "diagnosis\n";
  if (!findings.is_array() || findings.empty()) {
    out += "  no rule fired: nothing in the measured figures points at a limit\n";
    os << out;
    return;
  }
  for (const auto& f : findings) {
    if (!f.is_object()) continue;
    out += fmt::format("  [{}, {}] {}: {}\n", str_or(f, {"severity"}, "info"), str_or(f, {"confidence"}, "low"),
                       str_or(f, {"rule"}, "?"), str_or(f, {"finding"}, ""));
    std::string ev;
    if (const json* e = rj::find(f, {"evidence"}); e && e->is_object())
      for (auto it = e->begin(); it != e->end(); ++it) {
        if (!it->is_number()) continue;
        const std::string& k = it.key();
        const double v = it->get<double>();
        std::string val = k.size() > 3 && k.compare(k.size() - 3, 3, "_ns") == 0 ? ft(v) : fmt_num(std::round(v * 1000) / 1000);
        ev += fmt::format("{}{} {}", ev.empty() ? "" : ", ", k, val);
      }
    if (!ev.empty()) out += "      evidence: " + ev + "\n";
    const std::string next = str_or(f, {"next"}, "");
    if (!next.empty()) out += "      next: " + next + "\n";
  }
  os << out;
}

}  // namespace chunkscope
