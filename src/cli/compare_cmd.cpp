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

// ---------------------------------------------------------------- across rounds

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t n = v.size(), h = n / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
  const double hi = v[h];
  if (n % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h));
  return lo + (hi - lo) / 2;
}

std::vector<double> round_values(const CompareRounds& r, CompareFigure figure) {
  std::vector<double> out;
  for (const auto& rd : r.rounds)
    if (rd.complete)
      if (const auto v = rd.figure(figure)) out.push_back(*v);
  return out;
}

std::vector<CompareSpread> spreads_of(const std::vector<CompareRound>& rounds) {
  CompareRounds r;
  r.rounds = rounds;
  std::vector<CompareSpread> out;
  for (int f = 0; f < kCompareFigureCount; ++f) {
    const auto fig = static_cast<CompareFigure>(f);
    const std::vector<double> v = round_values(r, fig);
    if (v.empty()) continue;
    CompareSpread s;
    s.figure = fig;
    s.rounds = static_cast<int>(v.size());
    s.min = *std::min_element(v.begin(), v.end());
    s.max = *std::max_element(v.begin(), v.end());
    s.median = median_of(v);
    out.push_back(s);
  }
  return out;
}

namespace {

// splitmix64: a small generator whose sequence is the same on every platform and library
// (std:: distributions are not), so a seeded bootstrap gives the same interval everywhere.
struct SplitMix64 {
  std::uint64_t s;
  std::uint64_t next() noexcept {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) noexcept {  // 0..n-1 (the bias of % is below 2^-57 for n <= 100)
    return static_cast<std::size_t>(next() % n);
  }
};

// The median of a resample (with replacement) of `v`, using `buf` as scratch.
double resampled_median(const std::vector<double>& v, SplitMix64& rng, std::vector<double>& buf) {
  buf.resize(v.size());
  for (auto& x : buf) x = v[rng.below(v.size())];
  return median_of(buf);
}

std::string fig_value(CompareFigure f, double v) {
  return CompareRound::figure_is_time(f) ? fmt_time(v) : fmt::format("{:g}", v);
}

}  // namespace

std::optional<std::pair<double, double>> bootstrap_ratio_interval(const std::vector<double>& baseline,
                                                                  const std::vector<double>& variant,
                                                                  const CompareRule& rule) {
  if (baseline.empty() || variant.empty() || rule.resamples < 1) return std::nullopt;
  for (double b : baseline)
    if (!(b > 0)) return std::nullopt;
  SplitMix64 rng{rule.seed};
  std::vector<double> ratios, buf;
  ratios.reserve(static_cast<std::size_t>(rule.resamples));
  for (int i = 0; i < rule.resamples; ++i) {
    const double mb = resampled_median(baseline, rng, buf);
    const double mv = resampled_median(variant, rng, buf);
    ratios.push_back(mv / mb);
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = std::clamp((1 - rule.confidence) / 2, 0.0, 0.5);
  const auto k = std::min(static_cast<std::size_t>(tail * static_cast<double>(ratios.size())), ratios.size() - 1);
  return std::pair{ratios[k], ratios[ratios.size() - 1 - k]};
}

CompareCall judge_figure(CompareFigure figure, const std::vector<double>& baseline, const std::vector<double>& variant,
                         const CompareRule& rule) {
  CompareCall c;
  c.figure = figure;
  c.rounds = static_cast<int>(variant.size());
  c.baseline_rounds = static_cast<int>(baseline.size());
  if (baseline.empty() || variant.empty()) {
    c.call = CompareCall::Call::cannot_judge;
    c.reason = "no per-round values on one side";
    return c;
  }
  const double mb = median_of(baseline), mv = median_of(variant);
  if (mb > 0) c.ratio_of_medians = mv / mb;
  const auto [bmin, bmax] = std::minmax_element(baseline.begin(), baseline.end());
  const auto [vmin, vmax] = std::minmax_element(variant.begin(), variant.end());
  c.ranges_overlap = !(*vmax < *bmin || *vmin > *bmax);
  c.higher = mv > mb || (mv == mb && *vmin > *bmax);
  const auto range = [&](double lo, double hi) { return fmt::format("{}..{}", fig_value(figure, lo), fig_value(figure, hi)); };
  if (c.rounds < rule.min_rounds || c.baseline_rounds < rule.min_rounds) {
    c.call = CompareCall::Call::cannot_judge;
    c.reason = fmt::format("{} round(s) against the baseline's {}: the spread across rounds cannot be judged below {}",
                           c.rounds, c.baseline_rounds, rule.min_rounds);
    return c;
  }
  if (const auto iv = bootstrap_ratio_interval(baseline, variant, rule)) {
    c.interval_low = iv->first;
    c.interval_high = iv->second;
  }
  const int pct = static_cast<int>(std::lround(rule.confidence * 100));
  if (!c.ranges_overlap) {
    c.call = CompareCall::Call::difference;
    c.reason = fmt::format("ranges apart: every round {} the baseline's (range {} against {})",
                           c.higher ? "above" : "below", range(*vmin, *vmax), range(*bmin, *bmax));
    return c;
  }
  if (c.interval_low && (*c.interval_low > 1 || *c.interval_high < 1)) {
    c.call = CompareCall::Call::difference;
    c.higher = *c.interval_low > 1;
    c.reason = fmt::format("ranges overlap, but the {}% bootstrap interval of the ratio of medians, {:.3f}..{:.3f}, "
                           "excludes 1",
                           pct, *c.interval_low, *c.interval_high);
    return c;
  }
  c.call = CompareCall::Call::no_clear_difference;
  c.higher = false;
  if (c.interval_low)
    c.reason = fmt::format("ranges overlap ({} against {}) and the {}% bootstrap interval of the ratio of medians, "
                           "{:.3f}..{:.3f}, holds 1",
                           range(*vmin, *vmax), range(*bmin, *bmax), pct, *c.interval_low, *c.interval_high);
  else
    c.reason = fmt::format("ranges overlap ({} against {}); no ratio interval (a baseline round is 0)",
                           range(*vmin, *vmax), range(*bmin, *bmax));
  return c;
}

std::vector<CompareCall> judge_rounds(const std::vector<CompareRounds>& per_round, const std::string& baseline,
                                      const CompareRule& rule) {
  std::vector<CompareCall> out;
  const CompareRounds* base = nullptr;
  for (const auto& r : per_round)
    if (r.variant == baseline) base = &r;
  if (!base) return out;
  for (const auto& r : per_round) {
    if (&r == base) continue;
    for (int f = 0; f < kCompareFigureCount; ++f) {
      const auto fig = static_cast<CompareFigure>(f);
      const auto bv = round_values(*base, fig), vv = round_values(r, fig);
      if (bv.empty() && vv.empty()) continue;  // a figure neither side has (nothing counted)
      CompareCall c = judge_figure(fig, bv, vv, rule);
      c.variant = r.variant;
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::uint64_t verdict_events(const RunReport& rep) {
  // one stall that held up several chunks is one event
  return rep.counts.events();
}

const char* verdict_events_of() { return "stall events"; }

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

// rows of the side-by-side table: the report's stages, the process parts, end-to-end
std::vector<std::pair<std::string, const HistSummary*>> table_rows(const RunReport& rep) {
  std::vector<std::pair<std::string, const HistSummary*>> rows;
  for (int s = 0; s < kStageCount; ++s) rows.emplace_back(stage_key(static_cast<Stage>(s)), &rep.stages[static_cast<std::size_t>(s)]);
  for (int p = 0; p < kPartCount; ++p)
    if (rep.process_parts[static_cast<std::size_t>(p)])
      rows.emplace_back(part_key(static_cast<Part>(p)), &*rep.process_parts[static_cast<std::size_t>(p)]);
  rows.emplace_back("end-to-end", &rep.latency);
  return rows;
}

std::optional<double> ratio(double a, double b) {
  if (!(b > 0)) return std::nullopt;
  return a / b;
}

std::optional<std::int64_t> p_of(const HistSummary& h, Pct p) {
  if (!h.has_data()) return std::nullopt;
  return at(h, p);
}

CompareSummary summarize_variant(const std::string& name, const RunReport& rep, const RunReport& base) {
  CompareSummary s;
  s.variant = name;
  s.state = rep.state;
  s.latency_p95_ns = p_of(rep.latency, Pct::p95);
  s.process_p50_ns = p_of(rep.stage(Stage::process), Pct::p50);
  s.process_p95_ns = p_of(rep.stage(Stage::process), Pct::p95);
  if (rep.headroom) s.headroom_p95_ns = rep.headroom->p95;
  s.launches_per_chunk = rep.launches_per_chunk;
  s.dispatches_per_chunk = rep.dispatches_per_chunk;
  if (rep.part(Part::launch)) s.launch_p50_ns = rep.part(Part::launch)->p50;
  std::int64_t gpu = 0;
  for (Part p : {Part::h2d, Part::kernel, Part::d2h})
    if (rep.part(p)) gpu += rep.part(p)->p50;
  if (gpu > 0) s.gpu_p50_ns = gpu;
  s.misses = rep.streams ? rep.streams->misses : rep.counts.misses;
  s.drops = rep.streams ? rep.streams->drops : rep.counts.drops;
  s.verdict_events = rep.streams ? rep.streams->stalls : verdict_events(rep);
  s.verdict_events_of = verdict_events_of();
  s.owner = rep.verdict.owner;
  // the run's own verdict, with the events above counted instead of the raw misses
  if (rep.verdict.realtime_safe)
    s.realtime_safe = (!rep.headroom || rep.headroom->p95 >= 0) && s.verdict_events == 0 && s.drops == 0;
  s.ratio_latency_p95 = ratio(double(rep.latency.p95), double(base.latency.p95));
  s.ratio_process_p50 = ratio(double(rep.stage(Stage::process).p50), double(base.stage(Stage::process).p50));
  return s;
}

CompareReport build_compare(std::vector<Variant>& vars, const StreamSetup& su, const StreamOptions& opt, int rounds,
                            int rounds_done, bool interrupted) {
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
      w.command = "compare";
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
  const CompareVariant* base = nullptr;
  for (const auto& e : out.variants)
    if (e.report) {
      base = &e;
      break;
    }
  out.baseline = base->name;
  out.environment = base->report->environment;
  out.workload = base->report->workload;  // the schema writes only the fields common to every variant
  out.timing = base->report->timing;
  const RunReport& b = *base->report;
  const auto base_rows = table_rows(b);
  for (const auto& e : out.variants) {
    if (!e.report) continue;
    for (const auto& [name, h] : table_rows(*e.report)) {
      if (!h->has_data()) continue;
      CompareRow row;
      row.variant = e.name;
      row.stage = name;
      row.p50 = h->p50;
      row.p95 = h->p95;
      row.p99 = h->p99;
      const HistSummary* bh = nullptr;
      for (const auto& [bn, bhh] : base_rows)
        if (bn == name) bh = bhh;
      if (bh && bh->has_data()) {
        row.ratio_p50 = ratio(double(h->p50), double(bh->p50));
        row.ratio_p95 = ratio(double(h->p95), double(bh->p95));
        row.ratio_p99 = ratio(double(h->p99), double(bh->p99));
      }
      out.table.push_back(row);
    }
    out.summary.push_back(summarize_variant(e.name, *e.report, b));
  }
  for (const auto& v : vars)
    if (v.available) out.per_round.push_back({v.spec.name, v.rounds, spreads_of(v.rounds)});
  out.differences = judge_rounds(out.per_round, out.baseline, out.rule);
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

  // ---- reports: one run report per variant, then the table against the baseline
  const CompareReport out = build_compare(vars, su, opt, co.rounds, rounds_done, interrupted);
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
