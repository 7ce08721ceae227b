#include "src/cli/compare_cmd.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "src/io/output_file.hpp"
#include "src/environment.hpp"
#include "src/errors.hpp"
#include "src/report/report.hpp"
#include "rt/run_stats.hpp"
#include "src/io/file_stream.hpp"

namespace chunkscope {

using nlohmann::json;

std::vector<VariantSpec> parse_variants(const std::string& list) {
  std::vector<VariantSpec> out;
  std::set<std::string> seen;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    if (b == std::string::npos) throw InputError(fmt::format("--variants: empty entry in '{}'", list));
    item = item.substr(b, e - b + 1);
    std::vector<std::string> parts;
    std::stringstream is(item);
    for (std::string p; std::getline(is, p, ':');) parts.push_back(p);
    VariantSpec v;
    v.name = item;
    v.choice.backend = parts[0];
    auto bad = [&](const std::string& why) {
      return InputError(fmt::format("--variants: '{}' {} (cpu, cpu:fused, cpu:unfused, cuda:eager, cuda:graph, "
                                    "cuda:eager:unfused, cuda:graph:unfused)",
                                    item, why));
    };
    if (parts[0] == "cpu") {
      if (parts.size() > 2) throw bad("has too many parts");
      if (parts.size() == 2) {
        if (parts[1] != "fused" && parts[1] != "unfused") throw bad("has an unknown CPU mode");
        v.fuse = parts[1] == "fused";
        v.fuse_given = true;
      }
    } else if (parts[0] == "cuda") {
      if (parts.size() < 2 || parts.size() > 3) throw bad("needs a mode");
      if (parts[1] != "eager" && parts[1] != "graph") throw bad("has an unknown CUDA mode");
      v.choice.cuda.mode = parse_cuda_mode(parts[1], "--variants");
      if (parts.size() == 3) {
        if (parts[2] != "fused" && parts[2] != "unfused") throw bad("has an unknown fusion word");
        v.fuse = parts[2] == "fused";
        v.fuse_given = true;
      }
    } else {
      throw bad("names an unknown backend");
    }
    if (!seen.insert(item).second) throw InputError(fmt::format("--variants: '{}' is listed twice", item));
    out.push_back(v);
  }
  if (out.empty()) throw InputError("--variants: no variant given");
  return out;
}

namespace {

struct Variant {
  VariantSpec spec;
  bool available = false;
  std::string reason;
  Plan plan;
  std::unique_ptr<Backend> backend;
  RunStats stats;
  EngineResult merged;
  std::int64_t wall_ns = 0;
  bool failed = false;
  std::string failure;
};

void merge_result(EngineResult& into, const EngineResult& r, bool first) {
  if (first) {
    into = r;
    into.start_ns = 0;
    into.end_ns = r.end_ns - r.start_ns;
    return;
  }
  into.produced += r.produced;
  into.drops += r.drops;
  into.drops_pool += r.drops_pool;
  into.drops_queue += r.drops_queue;
  for (auto s : r.drop_seqs)
    if (into.drop_seqs.size() < 4096) into.drop_seqs.push_back(s);
  into.q_in_high_water = std::max(into.q_in_high_water, r.q_in_high_water);
  into.q_out_high_water = std::max(into.q_out_high_water, r.q_out_high_water);
  into.end_ns += r.end_ns - r.start_ns;
  if (into.status == Status::ok || into.status == Status::end_of_stream) into.status = r.status;
  if (ok(into.process_status)) into.process_status = r.process_status;
  if (ok(into.sink_status)) into.sink_status = r.sink_status;
  if (into.source_status == Status::end_of_stream || ok(into.source_status)) into.source_status = r.source_status;
}

double num(const json& h, const char* k) { return h.contains(k) && h[k].is_number() ? h[k].get<double>() : 0.0; }

// rows of the side-by-side table: the report's stages, the process parts, end-to-end
std::vector<std::pair<std::string, const json*>> table_rows(const json& rep) {
  std::vector<std::pair<std::string, const json*>> rows;
  for (const char* s : {"source", "queue_in", "process", "queue_out", "sink"}) rows.emplace_back(s, &rep["stages"][s]);
  for (const char* p : {"launch", "h2d", "kernel", "d2h", "sync", "calibration"})
    if (rep["process_parts"].contains(p)) rows.emplace_back(p, &rep["process_parts"][p]);
  rows.emplace_back("end-to-end", &rep["latency"]);
  return rows;
}

}  // namespace

int run_compare(const CompareOptions& co, const std::atomic<bool>* stop_flag) {
  if (co.rounds < 1 || co.rounds > 100) throw InputError(fmt::format("--rounds: {} is out of range 1..100", co.rounds));
  const std::string command = co.input.empty() ? "synth" : "replay";
  if (!co.input.empty() && co.synth_given)
    throw InputError(fmt::format("compare: give an input file ('{}') or --synth, not both", co.input));
  auto specs = parse_variants(co.variants);
  const StreamOptions& opt = co.stream;
  const StreamSetup su = setup_stream(command, co.input, opt);
  check_distinct_paths(stream_inputs(co.input, opt), {{"--json", co.json_path}});
  if (!co.json_path.empty()) {
    StreamOptions probe;
    probe.json_path = co.json_path;
    (void)resolve_report_paths(probe);  // fails now, before anything streams, when not writable
  }

  // ---- variants: plan and backend once each (a CUDA graph is captured once)
  std::vector<Variant> vars(specs.size());
  const ProcessSpec spec{su.rate, su.channels, opt.chunk, opt.dtype};
  const RunStatsConfig sc = stats_config(su, opt, co.rounds);
  std::size_t available = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    auto& v = vars[i];
    v.spec = specs[i];
    const bool fuse = v.spec.fuse_given ? v.spec.fuse : opt.fuse;
    v.plan = plan_for(su, opt, fuse);
    BackendChoice ch = v.spec.choice;
    ch.cuda.gpu_timing = opt.backend.cuda.gpu_timing;
    ch.cuda.recapture_on_shape_change = opt.backend.cuda.recapture_on_shape_change;
    v.spec.choice = ch;
    try {
      v.backend = make_backend(ch, v.plan, spec);
      v.available = true;
      ++available;
      v.stats.prepare(sc);
    } catch (const RuntimeFailure& e) {
      v.reason = e.what();
    }
  }
  if (available == 0) {
    std::string why;
    for (const auto& v : vars) why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", v.spec.name, v.reason);
    throw RuntimeFailure(fmt::format("compare: no variant can run ({})", why));
  }

  // ---- rounds: every available variant streams the same input; the order rotates
  const EngineConfig ec = engine_config(su, opt, 0);
  bool interrupted = false;
  int rounds_done = 0;
  for (int round = 0; round < co.rounds && !interrupted; ++round) {
    for (std::size_t k = 0; k < vars.size() && !interrupted; ++k) {
      auto& v = vars[(k + static_cast<std::size_t>(round)) % vars.size()];
      if (!v.available || v.failed) continue;
      auto source = open_source(su, opt);
      NullSink sink;
      v.backend->reset();
      v.stats.begin_segment();
      Engine engine;
      if (!ok(engine.prepare(ec, *v.backend, *source, sink, v.stats)))
        throw RuntimeFailure("engine: prepare failed (invalid configuration)");
      engine.watch_stop_flag(stop_flag);
      const EngineResult er = engine.run();
      merge_result(v.merged, er, v.wall_ns == 0);
      v.wall_ns += er.end_ns - er.start_ns;
      if (er.status == Status::interrupted) interrupted = true;
      if (!ok(er.source_status) && er.source_status != Status::end_of_stream && er.status != Status::interrupted) {
        v.failed = true;
        v.failure = fmt::format("source failed in round {}: {}", round + 1, describe(er.source_status));
      } else if (!ok(er.process_status)) {
        v.failed = true;
        const std::string extra = v.backend->last_error();
        v.failure = fmt::format("processing failed in round {}: {}{}", round + 1, describe(er.process_status),
                                extra.empty() ? "" : " (" + extra + ")");
      }
    }
    if (!interrupted) ++rounds_done;
  }

  // ---- reports
  const Environment env = probe_environment();
  const auto described_source = open_source(su, opt);  // what every variant read, for the workload
  const NullSink described_sink;
  json out;
  out["schema"] = kCompareSchema;
  out["rounds"] = co.rounds;
  out["rounds_completed"] = rounds_done;
  out["order"] = "interleaved: each round runs every variant once, starting one later each round";
  out["state"] = interrupted ? "interrupted" : "complete";
  json variants = json::array();
  const json* base = nullptr;
  std::string base_name;
  for (auto& v : vars) {
    json e{{"name", v.spec.name}, {"available", v.available}};
    if (!v.available) {
      e["reason"] = v.reason;
      variants.push_back(e);
      continue;
    }
    RunOutcome outcome;
    if (v.failed) {
      outcome.state = "incomplete";
      outcome.reason = v.failure;
    } else if (interrupted) {
      outcome.state = "interrupted";
      outcome.reason = "stopped by a signal";
    }
    Workload w = make_workload(su, opt, *v.backend, *described_source, described_sink);
    w.command = "compare";
    json rep = build_report(w, v.plan, env, v.stats, v.merged, outcome);
    rep["workload"]["variant"] = v.spec.name;
    rep["workload"]["rounds"] = rounds_done;
    e["report"] = std::move(rep);
    variants.push_back(std::move(e));
  }
  out["variants"] = std::move(variants);
  for (const auto& e : out["variants"])
    if (e["available"].get<bool>()) {
      base = &e["report"];
      base_name = e["name"];
      break;
    }
  out["baseline"] = base_name;
  out["environment"] = (*base)["environment"];
  json wl = (*base)["workload"];
  for (const char* k : {"backend", "mode", "variant", "signature", "fused", "dispatches_per_chunk_planned"}) wl.erase(k);
  out["workload"] = wl;
  out["timing"] = (*base)["timing"];

  json table = json::array(), summary = json::array();
  auto ratio = [](double a, double b) { return b > 0 ? json(a / b) : json(nullptr); };
  for (const auto& e : out["variants"]) {
    if (!e["available"].get<bool>()) continue;
    const json& rep = e["report"];
    for (const auto& [name, h] : table_rows(rep)) {
      if ((*h)["count"].get<std::uint64_t>() == 0) continue;
      json row{{"variant", e["name"]}, {"stage", name}};
      const json* bh = nullptr;
      for (const auto& [bn, bhh] : table_rows(*base))
        if (bn == name) bh = bhh;
      for (const char* p : {"p50", "p95", "p99"}) {
        row[p] = num(*h, p);
        row[std::string("ratio_") + p] = bh && (*bh)["count"].get<std::uint64_t>() ? ratio(num(*h, p), num(*bh, p)) : json(nullptr);
      }
      table.push_back(row);
    }
    const json& parts = rep["process_parts"];
    double gpu = 0;
    for (const char* p : {"h2d", "kernel", "d2h"})
      if (parts.contains(p)) gpu += num(parts[p], "p50");
    json s{{"variant", e["name"]},
           {"state", rep["state"]},
           {"latency_p95_ns", num(rep["latency"], "p95")},
           {"process_p50_ns", num(rep["stages"]["process"], "p50")},
           {"process_p95_ns", num(rep["stages"]["process"], "p95")},
           {"headroom_p95_ns", rep.contains("headroom") ? rep["headroom"]["p95"] : json(nullptr)},
           {"launches_per_chunk", rep["launches_per_chunk"]},
           {"dispatches_per_chunk", rep["dispatches_per_chunk"]},
           {"launch_p50_ns", parts.contains("launch") ? json(num(parts["launch"], "p50")) : json(nullptr)},
           {"gpu_p50_ns", gpu > 0 ? json(gpu) : json(nullptr)},
           {"misses", rep["counts"]["misses"]},
           {"drops", rep["counts"]["drops"]},
           {"realtime_safe", rep["verdict"]["realtime_safe"]},
           {"ratio_latency_p95", ratio(num(rep["latency"], "p95"), num((*base)["latency"], "p95"))},
           {"ratio_process_p50", ratio(num(rep["stages"]["process"], "p50"), num((*base)["stages"]["process"], "p50"))}};
    summary.push_back(s);
  }
  out["table"] = table;
  out["summary"] = summary;

  if (!co.quiet) print_compare(std::cout, out);
  if (!co.json_path.empty()) write_json_file(co.json_path, out, fmt::format("--json '{}'", co.json_path));
  for (const auto& v : vars)
    if (v.failed) {
      std::cerr << "chunkscope: " << v.spec.name << ": " << v.failure << "\n";
      return kExitRuntime;
    }
  if (opt.fail_on_miss)
    for (const auto& e : out["variants"])
      if (e["available"].get<bool>() && budget_broken(e["report"])) return kExitMiss;
  return kExitOk;
}

void print_compare(std::ostream& os, const json& r) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  const auto& e = r.at("environment");
  const auto& w = r.at("workload");
  const auto& t = r.at("timing");
  line(fmt::format("chunkscope {} ({}) compare: {} round(s) of {} variant(s), interleaved (the order rotates each round)",
                   e.value("version", std::string("?")), e.value("commit", std::string("?")),
                   r.value("rounds_completed", r.value("rounds", 0)), r.at("variants").size()));
  line(fmt::format("workload   {}, chain '{}', {} Hz, {} ch, {}, chunk {} frames = D {}, margin {}, budget B {}",
                   w.value("source", std::string("?")), w.value("chain", std::string("")), w.value("rate", 0.0),
                   w.value("channels", 0), w.value("dtype", std::string("?")), w.value("chunk_frames", 0),
                   fmt_time(t.value("chunk_ns", 0.0)), w.contains("margin") ? w.at("margin").value("text", std::string("?")) : "?",
                   fmt_time(t.value("budget_ns", 0.0))));
  line(fmt::format("           speed {}, warm-up {} chunks per round, baseline {}",
                   w.contains("speed") && w.at("speed").is_string() ? std::string("max (no schedule)")
                                                                  : fmt::format("{}x", w.value("speed", 1.0)),
                   w.value("warmup_chunks", 0), r.value("baseline", std::string("?"))));
  if (e.contains("gpu") && e.at("gpu").is_object())
    line(fmt::format("gpu        {} ({})", e.at("gpu").value("name", std::string("?")), e.at("gpu").value("driver", std::string("?"))));
  if (r.value("state", std::string("complete")) != "complete") line("RUN INTERRUPTED: figures cover the rounds completed and the variants that ran in the interrupted one");
  for (const auto& v : r.at("variants"))
    if (!v.at("available").get<bool>())
      line(fmt::format("unavailable {}: {}", v.at("name").get<std::string>(), v.value("reason", std::string("?"))));
  line("");
  line(fmt::format("{:<12} {:<20} {:>10} {:>10} {:>10} {:>7} {:>7} {:>7}", "stage", "variant", "p50", "p95", "p99",
                   "x p50", "x p95", "x p99"));
  auto rt = [](const json& v) { return v.is_number() ? fmt::format("{:.2f}", v.get<double>()) : std::string("-"); };
  std::string last;
  // rows grouped by stage in the order of the first variant's rows
  std::vector<std::string> order;
  for (const auto& row : r.at("table")) {
    const auto st = row.at("stage").get<std::string>();
    if (std::find(order.begin(), order.end(), st) == order.end()) order.push_back(st);
  }
  for (const auto& st : order)
    for (const auto& row : r.at("table")) {
      if (row.at("stage") != st) continue;
      line(fmt::format("{:<12} {:<20} {:>10} {:>10} {:>10} {:>7} {:>7} {:>7}", st == last ? "" : st,
                       row.at("variant").get<std::string>(), fmt_time(row.at("p50").get<double>()),
                       fmt_time(row.at("p95").get<double>()), fmt_time(row.at("p99").get<double>()), rt(row.at("ratio_p50")),
                       rt(row.at("ratio_p95")), rt(row.at("ratio_p99"))));
      last = st;
    }
  line("");
  line(fmt::format("{:<20} {:>11} {:>12} {:>9} {:>9} {:>10} {:>10} {:>7} {:>6} {:>6}  {}", "variant", "e2e p95",
                   "headroom p95", "launch/ch", "disp/ch", "launch p50", "gpu p50", "x e2e", "misses", "drops", "verdict"));
  for (const auto& s : r.at("summary")) {
    auto tm = [](const json& v) { return v.is_number() ? fmt_time(v.get<double>()) : std::string("-"); };
    const auto& safe = s.at("realtime_safe");
    line(fmt::format("{:<20} {:>11} {:>12} {:>9.2f} {:>9.2f} {:>10} {:>10} {:>7} {:>6} {:>6}  {}",
                     s.at("variant").get<std::string>(), tm(s.at("latency_p95_ns")), tm(s.at("headroom_p95_ns")),
                     s.at("launches_per_chunk").get<double>(), s.at("dispatches_per_chunk").get<double>(),
                     tm(s.at("launch_p50_ns")), tm(s.at("gpu_p50_ns")), rt(s.at("ratio_latency_p95")),
                     s.at("misses").get<std::uint64_t>(), s.at("drops").get<std::uint64_t>(),
                     safe.is_null() ? std::string("throughput only") : safe.get<bool>() ? "real-time safe" : "NOT safe"));
  }
  line("x: ratio to the baseline (the first available variant); gpu p50 adds the p50s of H2D, kernel and D2H");
  // each variant's warnings from its own diagnosis (the full findings are in its report)
  bool header = false;
  for (const auto& v : r.at("variants")) {
    if (!v.value("available", false) || !v.contains("report") || !v.at("report").contains("diagnosis")) continue;
    for (const auto& f : v.at("report").at("diagnosis")) {
      if (!f.is_object() || f.value("severity", std::string()) != "warning") continue;
      if (!header) {
        line("");
        line("findings   warnings from each variant's diagnosis (chunkscope report FILE shows them all)");
        header = true;
      }
      line(fmt::format("  {:<20} [{}] {}: {}", v.value("name", std::string("?")), f.value("confidence", std::string("?")),
                       f.value("rule", std::string("?")), f.value("finding", std::string())));
    }
  }
  os << out;
}

}  // namespace chunkscope
