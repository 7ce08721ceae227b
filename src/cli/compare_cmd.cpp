#include "src/cli/compare_cmd.hpp"

#include <cctype>
#include <fstream>

#include <algorithm>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "src/cli/signals.hpp"
#include "src/io/output_file.hpp"
#include "src/environment.hpp"
#include "src/errors.hpp"
#include "src/report/build.hpp"
#include "src/report/format.hpp"
#include "src/report/schema.hpp"
#include "src/report/terminal.hpp"
#include "rt/run_stats.hpp"
#include "src/io/file_stream.hpp"
#include "src/report/streams.hpp"
#include "src/session/stream_set.hpp"

namespace chunkscope {

using nlohmann::json;

namespace {

// "@FILE": the file's entries (one a line, '#' comments, blank lines skipped) joined by ';'.
std::string variants_from_file(const std::string& list) {
  if (list.empty() || list[0] != '@') return list;
  const std::string path = list.substr(1);
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("--variants: cannot read the file '{}'", path));
  std::string out, line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out += (out.empty() ? "" : ";") + line;
  }
  if (out.empty()) throw InputError(fmt::format("--variants: the file '{}' lists no variant", path));
  return out;
}

// NAME=CHAIN with NAME of letters, digits, '_', '-', '.': a chain variant.
bool chain_entry(const std::string& item, VariantSpec& v) {
  const auto eq = item.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  const std::string name = item.substr(0, item.find_last_not_of(" \t", eq - 1) + 1);
  if (!std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; }))
    return false;
  const auto b = item.find_first_not_of(" \t", eq + 1);
  if (b == std::string::npos) throw InputError(fmt::format("--variants: '{}' names no chain after '='", item));
  v.name = name;
  v.chain = item.substr(b);
  return true;
}

}  // namespace

std::vector<VariantSpec> parse_variants(const std::string& given, const BackendChoice& run_backend) {
  const std::string list = variants_from_file(given);
  std::vector<VariantSpec> out;
  std::set<std::string> seen;
  std::stringstream ss(list);
  std::string item;
  const char sep = list.find(';') != std::string::npos ? ';' : ',';
  while (std::getline(ss, item, sep)) {
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    if (b == std::string::npos) throw InputError(fmt::format("--variants: empty entry in '{}'", list));
    item = item.substr(b, e - b + 1);
    if (VariantSpec cv; chain_entry(item, cv)) {
      cv.choice = run_backend;
      if (!seen.insert(cv.name).second) throw InputError(fmt::format("--variants: '{}' is listed twice", cv.name));
      out.push_back(std::move(cv));
      continue;
    }
    std::vector<std::string> parts;
    std::stringstream is(item);
    for (std::string p; std::getline(is, p, ':');) parts.push_back(p);
    VariantSpec v;
    v.name = item;
    v.choice.backend = parts[0] == "cuda" ? BackendKind::cuda : BackendKind::cpu;
    auto bad = [&](const std::string& why) {
      return InputError(fmt::format("--variants: '{}' {} (cpu, cpu:fused, cpu:unfused, cuda:eager, cuda:graph, "
                                    "cuda:eager:unfused, cuda:graph:unfused, or NAME=CHAIN)",
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

// One stream of a variant (--streams N gives each variant N of them): its own backend and
// filter state, and its statistics pooled over the rounds.
struct Lane {
  std::unique_ptr<Backend> backend;
  RunStats stats;
  EngineResult merged;
  std::int64_t wall_ns = 0;
};

struct Variant {
  VariantSpec spec;
  bool available = false;
  std::string reason;
  Plan plan;
  std::vector<std::unique_ptr<Lane>> lanes;  // one per stream
  bool failed = false;
  std::string failure;
  std::vector<CompareRound> rounds;  // each round's own figures (all streams' chunks pooled)
};

// The values recorded into `after` since it looked like `before` (same layout, `after`
// holds everything `before` did), each at its slot's highest equivalent value: the
// histogram of one round out of the pooled one.
// A variant as a run of its own: the run's options with the variant's chain, fusion and
// backend (its rerun hints start from these).
StreamOptions variant_options(const StreamOptions& opt, const VariantSpec& v) {
  StreamOptions o = opt;
  if (v.chain_variant()) o.chain = v.chain;
  if (v.fuse_given) o.fuse = v.fuse;
  o.backend = v.choice;
  return o;
}

stats::LogHistogram since(const stats::LogHistogram& after, const stats::LogHistogram& before) {
  stats::LogHistogram d(after.highest_trackable(), after.significant_digits());
  if (after.count() <= before.count() || !after.same_layout(before)) return d;
  const std::size_t last = after.last_recorded_index();
  for (std::size_t i = after.first_recorded_index(); i <= last; ++i) {
    const std::uint64_t a = after.count_at_index(i), b = before.count_at_index(i);
    if (a > b) d.record_n(after.value_from_index(i) + (after.slot_width(i) - 1), a - b);
  }
  return d;
}

// The figures of one round of `v`, from its pooled statistics before and after the round.
struct RoundMark {
  stats::LogHistogram latency, process;
  std::uint64_t chunks = 0, misses = 0;
  explicit RoundMark(const RunStats& st)
      : latency(st.latency), process(st.stage[static_cast<std::size_t>(Stage::process)]), chunks(st.chunks),
        misses(st.misses) {}
};

// The figures of one round over every stream of a variant: their chunks pooled.
CompareRound round_figures(const std::vector<std::unique_ptr<Lane>>& lanes, const std::vector<RoundMark>& before,
                           const std::vector<EngineResult>& results) {
  CompareRound r;
  stats::LogHistogram lat, proc;
  for (std::size_t k = 0; k < lanes.size(); ++k) {
    const RunStats& st = lanes[k]->stats;
    r.counted += st.chunks - before[k].chunks;
    r.misses += st.misses - before[k].misses;
    r.drops += results[k].drops;
    const auto l = since(st.latency, before[k].latency);
    const auto p = since(st.stage[static_cast<std::size_t>(Stage::process)], before[k].process);
    if (k == 0) {
      lat = l;
      proc = p;
    } else {
      lat.add(l);
      proc.add(p);
    }
  }
  const auto pcts = [](const stats::LogHistogram& h, std::optional<std::int64_t>& p50, std::optional<std::int64_t>& p95) {
    if (h.empty()) return;
    p50 = static_cast<std::int64_t>(h.value_at_percentile(50));
    p95 = static_cast<std::int64_t>(h.value_at_percentile(95));
  };
  pcts(lat, r.latency_p50_ns, r.latency_p95_ns);
  pcts(proc, r.process_p50_ns, r.process_p95_ns);
  return r;
}

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
  into.not_processed += r.not_processed;
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


// The platform baseline measured before the first round and after the last, as the stream
// commands measure it around a run; every variant's report holds it.
struct Baselines {
  std::optional<BaselineResult> before, after;
};

CompareReport build_compare(std::vector<Variant>& vars, const StreamSetup& su, const StreamOptions& opt, int rounds,
                            int rounds_done, bool interrupted, const Baselines& baselines) {
  const Environment env = probe_environment();
  const auto described_source = open_source(su, opt);  // what every variant read, for the workload
  const NullSink described_sink;
  CompareReport out;
  out.rounds = rounds;
  out.rounds_completed = rounds_done;
  out.order = "interleaved: each round runs every variant once, starting one later each round";
  out.state = interrupted ? RunState::interrupted : RunState::complete;
  for (auto& v : vars) {
    CompareVariant e;
    e.name = v.spec.name;
    e.available = v.available;
    if (!v.available) {
      e.reason = v.reason;
      out.variants.push_back(std::move(e));
      continue;
    }
    RunOutcome outcome;
    if (v.failed) {
      outcome.state = RunState::incomplete;
      outcome.reason = v.failure;
    } else if (interrupted) {
      outcome.state = RunState::interrupted;
      std::uint64_t not_processed = 0;
      for (const auto& lane : v.lanes) not_processed += lane->merged.not_processed;
      outcome.reason = interrupted_reason(not_processed);
    }
    std::vector<RunReport> lane_reports;
    for (auto& lane : v.lanes) {
      Workload w = make_workload(su, opt, *lane->backend, *described_source, described_sink);
      w.baseline_before = baselines.before;
      w.baseline_after = baselines.after;
      w.command = "compare";
      w.args = experiment_args(su.command, variant_options(opt, v.spec));
      w.variant = v.spec.name;
      w.rounds = rounds_done;
      lane_reports.push_back(build_run_report(w, v.plan, env, lane->stats, lane->merged, outcome));
    }
    if (su.batch > 1) {
      e.report = combine_batched(lane_reports.front(), v.lanes.front()->stats, su.batch);
    } else if (lane_reports.size() == 1) {
      e.report = std::move(lane_reports.front());
    } else {
      std::vector<StreamRun> runs;
      for (std::size_t k = 0; k < lane_reports.size(); ++k)
        runs.push_back({&lane_reports[k], &v.lanes[k]->stats, stream_offset_ns(su, opt, static_cast<int>(k))});
      e.report = combine_streams(runs, opt.stagger, stream_offset_ns(su, opt, 1));
    }
    out.variants.push_back(std::move(e));
  }
  std::vector<CompareRounds> per_round;
  for (const auto& v : vars)
    if (v.available) per_round.push_back({v.spec.name, v.rounds, {}});
  summarize_compare(out, std::move(per_round));
  return out;
}

}  // namespace

int run_compare(const CompareOptions& co, const std::atomic<bool>* stop_flag) {
  if (co.rounds < 1 || co.rounds > 100) throw InputError(fmt::format("--rounds: {} is out of range 1..100", co.rounds));
  const std::string command = co.input.empty() ? "synth" : "replay";
  if (!co.input.empty() && co.synth_given)
    throw InputError(fmt::format("compare: give an input file ('{}') or --synth, not both", co.input));
  const StreamOptions& opt = co.stream;
  auto specs = parse_variants(co.variants, opt.backend);
  // --batch: one lane per variant whose chunks carry every stream's
  const StreamSetup one = setup_stream(command, co.input, opt);
  const StreamSetup su = opt.batch ? batched_setup(one, opt.streams) : one;
  check_distinct_paths(stream_inputs(co.input, opt), {{"--json", co.json_path}});
  cli::guard_outputs({{"--json", co.json_path}});
  if (!co.json_path.empty()) {
    StreamOptions probe;
    probe.json_path = co.json_path;
    (void)resolve_report_paths(probe);  // fails now, before anything streams, when not writable
  }

  // ---- variants: plan and backend once each (a CUDA graph is captured once)
  std::vector<Variant> vars(specs.size());
  ProcessSpec spec{su.rate, su.channels, opt.chunk, opt.dtype};
  spec.flush_denormals = opt.ftz;
  const RunStatsConfig sc = stats_config(su, opt, co.rounds);
  std::size_t available = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    auto& v = vars[i];
    v.spec = specs[i];
    const bool fuse = v.spec.fuse_given ? v.spec.fuse : opt.fuse;
    v.plan = v.spec.chain_variant() ? plan_chain(v.spec.chain, su.rate, fuse) : plan_for(su, opt, fuse);
    BackendChoice ch = v.spec.choice;
    ch.cuda.gpu_timing = opt.backend.cuda.gpu_timing;
    ch.cuda.recapture_on_shape_change = opt.backend.cuda.recapture_on_shape_change;
    v.spec.choice = ch;
    try {
      for (int lane_index = 0; lane_index < opt.streams / su.batch; ++lane_index) {
        auto lane = std::make_unique<Lane>();
        lane->backend = make_backend(ch, v.plan, spec);
        RunStatsConfig vsc = sc;  // the variant's own steps (a chain variant has its own plan)
        vsc.steps = static_cast<int>(std::min<std::size_t>(v.plan.steps.size(), kMaxTimedSteps));
        lane->stats.prepare(vsc);
        v.lanes.push_back(std::move(lane));
      }
      v.available = true;
      ++available;
    } catch (const RuntimeFailure& e) {
      v.lanes.clear();
      v.reason = e.what();
    }
  }
  if (available == 0) {
    std::string why;
    for (const auto& v : vars) why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", v.spec.name, v.reason);
    throw RuntimeFailure(fmt::format("compare: no variant can run ({})", why));
  }

  // ---- the platform baseline before the rounds; every variant's late chunks are judged by it
  Baselines baselines;
  baselines.before = measure_baseline(su, opt);
  for (auto& v : vars)
    for (auto& lane : v.lanes) judge_against(lane->stats, baselines.before);

  // ---- rounds: every available variant streams the same input; the order rotates
  const EngineConfig ec = engine_config(su, opt, 0);
  bool interrupted = false;
  int rounds_done = 0;
  for (int round = 0; round < co.rounds && !interrupted; ++round) {
    int position = 0;
    for (std::size_t k = 0; k < vars.size() && !interrupted; ++k) {
      auto& v = vars[(k + static_cast<std::size_t>(round)) % vars.size()];
      if (!v.available || v.failed) continue;
      // every stream of the variant at once, on one start (offset by --stagger)
      const std::size_t n = v.lanes.size();
      std::vector<std::unique_ptr<ChunkSource>> sources;
      std::vector<NullSink> sinks(n);
      std::vector<std::unique_ptr<Engine>> engines;
      std::vector<RoundMark> marks;
      for (std::size_t i = 0; i < n; ++i) {
        Lane& lane = *v.lanes[i];
        sources.push_back(open_source(su, opt));
        lane.backend->reset();
        lane.stats.begin_segment();
        engines.push_back(std::make_unique<Engine>());
        if (!ok(engines.back()->prepare(ec, *lane.backend, *sources.back(), sinks[i], lane.stats)))
          throw RuntimeFailure("engine: prepare failed (invalid configuration)");
        engines.back()->watch_stop_flag(stop_flag);
        marks.emplace_back(lane.stats);
      }
      std::vector<EngineResult> results(n);
      std::vector<Engine*> running;
      for (auto& e : engines) running.push_back(e.get());
      run_engines_together(running, su, opt,
                           [&](int i) { results[static_cast<std::size_t>(i)] = engines[static_cast<std::size_t>(i)]->run(); });
      for (std::size_t i = 0; i < n; ++i) {
        const EngineResult& er = results[i];
        if (er.stuck.stuck)  // its thread is still in the call: no backend may be destroyed now
          cli::end_after_stuck_call(fmt::format("variant '{}', round {}: {}", v.spec.name, round + 1, stuck_reason(er.stuck)),
                                    false);
        Lane& lane = *v.lanes[i];
        merge_result(lane.merged, er, lane.wall_ns == 0);
        lane.wall_ns += er.end_ns - er.start_ns;
        if (er.status == Status::interrupted) interrupted = true;
        if (v.failed) continue;
        const std::string who = n > 1 ? fmt::format(" (stream {})", i) : std::string();
        if (!ok(er.source_status) && er.source_status != Status::end_of_stream && er.status != Status::interrupted) {
          v.failed = true;
          v.failure = fmt::format("source failed in round {}{}: {}", round + 1, who, describe(er.source_status));
        } else if (!ok(er.process_status)) {
          v.failed = true;
          const std::string extra = lane.backend->last_error();
          v.failure = fmt::format("processing failed in round {}{}: {}{}", round + 1, who, describe(er.process_status),
                                  extra.empty() ? "" : " (" + extra + ")");
        }
      }
      CompareRound rd = round_figures(v.lanes, marks, results);
      rd.round = round + 1;
      rd.position = ++position;
      bool stopped = false;
      for (const auto& er : results) stopped = stopped || er.status == Status::interrupted;
      rd.complete = !stopped && !v.failed;
      v.rounds.push_back(rd);
    }
    if (!interrupted) ++rounds_done;
  }

  if (!interrupted) baselines.after = measure_baseline(su, opt);  // a stopped comparison ends at once

  // ---- reports: one run report per variant, then the table against the baseline
  const CompareReport out = build_compare(vars, su, opt, co.rounds, rounds_done, interrupted, baselines);
  if (!co.quiet) print_compare(std::cout, out);
  if (!co.json_path.empty()) write_report_file(co.json_path, out, fmt::format("--json '{}'", co.json_path));
  for (const auto& v : vars)
    if (v.failed) {
      std::cerr << "chunkscope: " << one_line(v.spec.name + ": " + v.failure) << "\n";
      return kExitRuntime;
    }
  if (opt.fail_on_miss)
    for (const auto& v : out.variants)
      if (v.report && budget_broken(*v.report)) return kExitMiss;
  if (opt.fail_on_unsafe)
    for (const auto& v : out.variants)
      if (v.report && v.report->unsafe_code()) return kExitMiss;
  return kExitOk;
}

}  // namespace chunkscope
