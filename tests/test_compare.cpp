// `chunkscope compare`: variant parsing, identical input for every variant, pooled rounds,
// ratios to the baseline, unavailable variants listed with their reason, each round's own
// figures and the rule that calls a difference only when it holds across rounds; and the
// bench's check of its own repeats.
#include <doctest/doctest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernels/gpu.hpp"
#include "src/session/bench.hpp"
#include "src/cli/compare_cmd.hpp"
#include "src/errors.hpp"
#include "src/plan.hpp"
#include "src/render/html.hpp"
#include "src/report/schema.hpp"
#include "src/report/terminal.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;
using namespace chunkscope;

namespace {
const json* variant(const json& c, const std::string& name) {
  for (const auto& v : c["variants"])
    if (v["name"] == name) return &v;
  return nullptr;
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
std::string compare_text(const CompareReport& r) {
  std::ostringstream o;
  print_compare(o, r);
  return o.str();
}
std::string refusal(const json& j) {
  try {
    (void)compare_report_from_json(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("compare: variant lists parse into backend, mode and fusion") {
  const auto v = parse_variants("cpu, cpu:unfused,cuda:eager,cuda:graph:unfused");
  REQUIRE(v.size() == 4);
  CHECK(v[0].name == "cpu");
  CHECK(v[0].choice.backend == BackendKind::cpu);
  CHECK_FALSE(v[0].fuse_given);
  CHECK(v[1].fuse_given);
  CHECK_FALSE(v[1].fuse);
  CHECK(v[2].choice.backend == BackendKind::cuda);
  CHECK(v[2].choice.cuda.mode == CudaOptions::Mode::eager);
  CHECK(v[3].choice.cuda.mode == CudaOptions::Mode::graph);
  CHECK_FALSE(v[3].fuse);
  for (const char* bad : {"gpu", "cpu:fast", "cuda", "cuda:lazy", "cpu,cpu", "cpu,,cuda:eager", "cuda:graph:x", ""}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_variants(bad), InputError);
  }
}

TEST_CASE("compare: every variant sees the same input, rounds pool, and the baseline's ratios are 1") {
  testutil::TempDir td;
  const char* chain = "hp:80:2 | lp:9000:4 | peak:1000:q=0.7:gain=6";
  const int rounds = 2;
  const auto r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.25s", "--channels", "2", "--chunk",
                                    "128", "--speed", "max", "--warmup", "5", "--chain", chain, "--variants",
                                    "cpu:fused,cpu:unfused,cuda:graph", "--rounds", std::to_string(rounds), "--json",
                                    td.file("c.json")});
  REQUIRE(r.rc == 0);
  const json c = testutil::load_json(td.file("c.json"));
  CHECK(c["schema"] == "chunkscope.compare/1");
  CHECK(c["baseline"] == "cpu:fused");
  CHECK(c["rounds_completed"] == rounds);
  const json* fused = variant(c, "cpu:fused");
  const json* unfused = variant(c, "cpu:unfused");
  REQUIRE(fused);
  REQUIRE(unfused);
  const Plan plan = plan_chain(chain, 48000, false);
  const std::uint64_t chunks = (12000 + 127) / 128;  // 94 per round
  for (const json* v : {fused, unfused}) {
    const json& rep = (*v)["report"];
    CHECK(rep["counts"]["counted"].get<std::uint64_t>() == rounds * (chunks - 5));
    CHECK(rep["counts"]["warmup"].get<std::uint64_t>() == rounds * 5u);
    CHECK(rep["series"]["count"].get<std::uint64_t>() == rounds * chunks);
    CHECK(rep["workload"]["rounds"] == rounds);
  }
  CHECK((*fused)["report"]["dispatches_per_chunk"].get<double>() == 1.0);
  CHECK((*unfused)["report"]["dispatches_per_chunk"].get<double>() == static_cast<double>(plan.dispatches()));
  CHECK(plan.dispatches() == 3);
  // identical input: the recorded input checksums agree chunk for chunk
  CHECK((*fused)["report"]["checksums"]["input"] == (*unfused)["report"]["checksums"]["input"]);
  CHECK((*fused)["report"]["checksums"]["chunks"].get<int>() == 5);  // the warm-up chunks of round 1
  for (const auto& row : c["table"])
    if (row["variant"] == "cpu:fused") {
      CAPTURE(row["stage"]);
      CHECK(row["ratio_p50"].get<double>() == 1.0);
      CHECK(row["ratio_p95"].get<double>() == 1.0);
    }
  // the pause between rounds is not an output period: the series says 0 where a round starts
  {
    const json& cols = (*fused)["report"]["series"]["columns"];
    std::size_t restarts = 0;
    for (std::size_t i = 1; i < cols["seq"].size(); ++i)
      if (cols["seq"][i].get<std::uint64_t>() <= cols["seq"][i - 1].get<std::uint64_t>()) {
        ++restarts;
        CHECK(cols["period_ns"][i].get<std::int64_t>() == 0);
      }
    CHECK(restarts == rounds - 1);
  }
  const json* gpu = variant(c, "cuda:graph");
  REQUIRE(gpu);
  if (!probe_gpu().available) {
    CHECK_FALSE((*gpu)["available"].get<bool>());
    CHECK((*gpu)["reason"].get<std::string>().find("cuda") != std::string::npos);
    CHECK(r.out.find("unavailable cuda:graph") != std::string::npos);
  }
  // the terminal table names every available variant in the summary
  CHECK(r.out.find("cpu:unfused") != std::string::npos);
  CHECK(r.out.find("x e2e") != std::string::npos);
  // two rounds: each round's figures are kept, but their spread cannot be judged
  REQUIRE(c["per_round"].size() == 2);
  CHECK(c["per_round"][0]["rounds"].size() == rounds);
  REQUIRE_FALSE(c["differences"].empty());
  for (const auto& d : c["differences"]) {
    CAPTURE(d);
    CHECK(d["variant"] == "cpu:unfused");
    CHECK(d["call"] == "cannot judge");
    CHECK(has(d["reason"].get<std::string>(), "cannot be judged below 3"));
  }
  CHECK(has(r.out, "2 complete round(s): the spread across rounds cannot be judged below 3"));
}

TEST_CASE("compare: bad usage and no runnable variant are one-line errors") {
  auto r = testutil::run_cli({"compare", "--variants", "cpu"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--synth") != std::string::npos);
  r = testutil::run_cli({"compare", "--synth", "noise", "--variants", "cpu,tpu"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("'tpu'") != std::string::npos);
  r = testutil::run_cli({"compare", "--synth", "noise", "--rounds", "0"});
  CHECK(r.rc == 2);
  r = testutil::run_cli({"compare", testutil::source_dir() + "/audio/mix_stereo_48k.flac", "--synth", "noise"});
  CHECK(r.rc == 2);
  if (!probe_gpu().available) {
    r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.1s", "--variants", "cuda:eager,cuda:graph"});
    CHECK(r.rc == 3);
    CHECK(r.err.find("no variant can run") != std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
  }
}

TEST_CASE("backend options: unknown values are usage errors, and CUDA without a usable GPU fails at once with exit 3") {
  auto r = testutil::run_cli({"synth", "--duration", "0.1s", "--backend", "tpu", "--quiet"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--backend: 'tpu'") != std::string::npos);
  r = testutil::run_cli({"synth", "--duration", "0.1s", "--mode", "lazy", "--quiet"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--mode: 'lazy'") != std::string::npos);
  r = testutil::run_cli({"synth", "--duration", "0.1s", "--gpu-timing", "maybe", "--quiet"});
  CHECK(r.rc == 2);
  r = testutil::run_cli({"synth", "--duration", "0.1s", "--short-chunk", "drop", "--quiet"});
  CHECK(r.rc == 2);
  if (probe_gpu().available) {
    MESSAGE("a CUDA device is present: the no-GPU failure path is not exercised here");
    return;
  }
  testutil::TempDir td;
  r = testutil::run_cli({"synth", "--duration", "0.1s", "--backend", "cuda", "--mode", "graph", "--json", td.file("r.json")});
  CHECK(r.rc == 3);
  CHECK(r.err.rfind("chunkscope: --backend cuda: ", 0) == 0);
  CHECK(r.err.find('\n') == r.err.size() - 1);
  CHECK_FALSE(std::filesystem::exists(td.file("r.json")));  // failed before streaming: no report
  r = testutil::run_cli({"process", testutil::source_dir() + "/audio/mix_stereo_48k.flac", td.file("o.wav"), "--chain",
                         "lp:1000", "--backend", "cuda"});
  CHECK(r.rc == 3);
  CHECK_FALSE(std::filesystem::exists(td.file("o.wav")));
}

TEST_CASE("report: a saved report with a key removed or of the wrong type is refused in one line, exit 2") {
  testutil::TempDir td;
  auto r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.1s", "--speed", "max", "--rounds", "1",
                              "--variants", "cpu:fused,cpu:unfused", "--json", td.file("c.json"), "--quiet"});
  REQUIRE(r.rc == 0);
  json c = testutil::load_json(td.file("c.json"));
  json run = c["variants"][0]["report"];
  const auto write = [&](const std::string& name, const json& j) {
    std::ofstream(td.file(name)) << j.dump();
    return td.file(name);
  };
  c["summary"][0].erase("misses");
  run["cadence"].erase("period");
  json typed = c["variants"][0]["report"];
  typed["workload"]["rate"] = "fast";
  for (const auto& [name, doc] : {std::pair<std::string, json>{"c.json", c}, {"r.json", run}, {"t.json", typed}}) {
    CAPTURE(name);
    r = testutil::run_cli({"report", write(name, doc)});
    CHECK(r.rc == 2);
    CHECK(r.err.rfind("chunkscope: report '", 0) == 0);
    CHECK(r.err.find('\n') == r.err.size() - 1);
  }
}

// ---------------------------------------------------------------- across rounds

TEST_CASE("compare rounds: overlapping per-round ranges are no clear difference, separated ranges are a difference") {
  const CompareRule rule;
  // overlap, medians close: no clear difference, and the interval holds 1
  CompareCall c = judge_figure(CompareFigure::latency_p95, {100, 110, 120}, {105, 115, 125}, rule);
  CHECK(c.call == CompareCall::Call::no_clear_difference);
  CHECK(c.ranges_overlap);
  REQUIRE(c.interval_low);
  CHECK(*c.interval_low <= 1.0);
  CHECK(*c.interval_high >= 1.0);
  REQUIRE(c.ratio_of_medians);
  CHECK(*c.ratio_of_medians == doctest::Approx(115.0 / 110.0));
  CHECK(has(c.reason, "ranges overlap"));
  // ranges apart, above: a difference, the variant higher
  c = judge_figure(CompareFigure::process_p50, {100, 101, 102}, {150, 152, 151}, rule);
  CHECK(c.call == CompareCall::Call::difference);
  CHECK_FALSE(c.ranges_overlap);
  CHECK(c.higher);
  CHECK(*c.ratio_of_medians == doctest::Approx(151.0 / 101.0));
  CHECK(has(c.reason, "ranges apart"));
  // ... and below
  c = judge_figure(CompareFigure::process_p50, {100, 101, 102}, {50, 52, 51}, rule);
  CHECK(c.call == CompareCall::Call::difference);
  CHECK_FALSE(c.higher);
  // ranges touching count as overlapping
  c = judge_figure(CompareFigure::latency_p50, {100, 100, 100}, {100, 100, 100}, rule);
  CHECK(c.call == CompareCall::Call::no_clear_difference);
  // ranges that overlap through one outlier round each, medians clearly apart: the bootstrap
  // interval of the ratio of medians excludes 1
  const std::vector<double> base{100, 100, 101, 101, 102, 102, 103, 103, 104, 300};
  const std::vector<double> var{120, 121, 122, 123, 124, 125, 126, 127, 128, 90};
  c = judge_figure(CompareFigure::latency_p95, base, var, rule);
  CHECK(c.ranges_overlap);
  CHECK(c.call == CompareCall::Call::difference);
  CHECK(c.higher);
  REQUIRE(c.interval_low);
  CHECK(*c.interval_low > 1.0);
  CHECK(has(c.reason, "excludes 1"));
  // counts: a baseline at 0 has no ratio; the ranges decide
  c = judge_figure(CompareFigure::misses, {0, 0, 0}, {2, 3, 1}, rule);
  CHECK(c.call == CompareCall::Call::difference);
  CHECK_FALSE(c.ratio_of_medians);
  CHECK_FALSE(c.interval_low);
  c = judge_figure(CompareFigure::misses, {0, 0, 0}, {0, 3, 0}, rule);
  CHECK(c.call == CompareCall::Call::no_clear_difference);
  CHECK(has(c.reason, "a baseline round is 0"));
  // fewer than 3 rounds on either side: the spread cannot be judged, however far apart
  c = judge_figure(CompareFigure::latency_p95, {100, 101}, {500, 501, 502}, rule);
  CHECK(c.call == CompareCall::Call::cannot_judge);
  CHECK(has(c.reason, "cannot be judged below 3"));
  c = judge_figure(CompareFigure::latency_p95, {100, 101, 102}, {}, rule);
  CHECK(c.call == CompareCall::Call::cannot_judge);
}

TEST_CASE("compare rounds: the bootstrap is seeded: the same rounds give the same interval, call after call") {
  const CompareRule rule;
  const std::vector<double> base{100, 130, 90, 115, 104}, var{98, 140, 120, 101, 111};
  const auto a = bootstrap_ratio_interval(base, var, rule);
  (void)bootstrap_ratio_interval({5, 6, 7}, {8, 9, 10}, rule);  // another call in between changes nothing
  const auto b = bootstrap_ratio_interval(base, var, rule);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->first == b->first);
  CHECK(a->second == b->second);
  CHECK(a->first <= a->second);
  const double ratio = median_of(var) / median_of(base);
  CHECK(a->first <= ratio);
  CHECK(ratio <= a->second);
  // the whole call, reason text included, is the same every time
  CHECK(judge_figure(CompareFigure::latency_p50, base, var, rule).reason ==
        judge_figure(CompareFigure::latency_p50, base, var, rule).reason);
  // the seed is what makes it so: another seed resamples otherwise
  CompareRule other = rule;
  other.seed = 12345;
  const auto c = bootstrap_ratio_interval(base, var, other);
  REQUIRE(c);
  CHECK(bootstrap_ratio_interval(base, var, other)->first == c->first);
  // no interval where a ratio is not defined
  CHECK_FALSE(bootstrap_ratio_interval({0, 1, 2}, {1, 2, 3}, rule));
  CHECK_FALSE(bootstrap_ratio_interval({}, {1, 2, 3}, rule));
  CHECK(median_of({3, 1, 2}) == 2);
  CHECK(median_of({4, 1, 3, 2}) == 2.5);
}

namespace {

CompareRound round_of(int n, int pos, std::int64_t lat, std::uint64_t misses, bool complete = true) {
  CompareRound r;
  r.round = n;
  r.position = pos;
  r.complete = complete;
  r.counted = 90;
  r.latency_p50_ns = lat;
  r.latency_p95_ns = lat + 50;
  r.process_p50_ns = lat / 10;
  r.process_p95_ns = lat / 8;
  r.misses = misses;
  return r;
}

// A comparison of two variants over four rounds (the last of the second one incomplete),
// judged as compare judges it.
CompareReport rounds_report() {
  CompareReport c;
  c.baseline = "cpu:fused";
  c.rounds = c.rounds_completed = 4;
  c.per_round.push_back({"cpu:fused",
                         {round_of(1, 1, 1000, 0), round_of(2, 2, 1100, 0), round_of(3, 1, 1050, 1), round_of(4, 2, 990, 0)},
                         {}});
  c.per_round.push_back({"cpu:unfused",
                         {round_of(1, 2, 2000, 0), round_of(2, 1, 2100, 0), round_of(3, 2, 2050, 0),
                          round_of(4, 1, 9000, 4, false)},
                         {}});
  c.per_round[1].rounds[0].latency_p95_ns.reset();  // a round with nothing counted
  for (auto& v : c.per_round) v.spread = spreads_of(v.rounds);
  c.differences = judge_rounds(c.per_round, c.baseline, c.rule);
  for (const char* v : {"cpu:fused", "cpu:unfused"}) {
    CompareSummary s;
    s.variant = v;
    s.misses = s.verdict_events = 1;
    s.realtime_safe = false;
    if (std::string(v) == "cpu:unfused") s.owner = Owner::platform;
    c.summary.push_back(s);
  }
  return c;
}

}  // namespace

TEST_CASE("compare rounds: spreads cover the complete rounds with a value, calls come for every figure but the baseline's") {
  const CompareReport c = rounds_report();
  const CompareSpread* lat = c.per_round[1].find(CompareFigure::latency_p50);
  REQUIRE(lat);
  CHECK(lat->rounds == 3);  // the incomplete round 4 is not in the spread
  CHECK(lat->min == 2000);
  CHECK(lat->median == 2050);
  CHECK(lat->max == 2100);
  CHECK(c.per_round[1].find(CompareFigure::latency_p95)->rounds == 2);  // round 1 counted nothing
  CHECK(c.per_round[0].find(CompareFigure::misses)->max == 1);
  REQUIRE(c.differences.size() == static_cast<std::size_t>(kCompareFigureCount));
  for (const auto& d : c.differences) CHECK(d.variant == "cpu:unfused");
  CHECK(c.differences[0].figure == CompareFigure::latency_p50);
  CHECK(c.differences[0].call == CompareCall::Call::difference);
  CHECK(c.differences[1].call == CompareCall::Call::cannot_judge);  // two rounds with a p95
  // the terminal says which is which
  const std::string t = compare_text(c);
  CAPTURE(t);
  CHECK(has(t, "rounds     each round's own figure, min / median / max"));
  CHECK(has(t, "slower (ranges apart)"));
  CHECK(has(t, "cannot judge (2 vs 4 round(s))"));
  CHECK(has(t, "no clear difference (ranges overlap"));
  CHECK(has(t, "(baseline)"));
  // the verdict says what it counted, and whose they are where the variant's report says
  CHECK(has(t, "NOT safe (1 misses)\n"));
  CHECK(has(t, "NOT safe (1 misses, platform)\n"));
}

TEST_CASE("compare report: per-round figures, spreads, calls and the rule survive the JSON round trip") {
  CompareReport c = rounds_report();
  c.rule.resamples = 999;
  const json j = to_json(c);
  REQUIRE(j["per_round"].size() == 2);
  CHECK(j["per_round"][1]["rounds"][3]["complete"] == false);
  CHECK(j["per_round"][1]["rounds"][0]["latency_p95_ns"].is_null());
  CHECK(j["per_round"][0]["spread"]["latency_p50_ns"]["median"].get<double>() == 1025);
  CHECK(j["differences"][0]["call"] == "difference");
  CHECK(j["differences"][0]["figure"] == "latency_p50_ns");
  CHECK(j["difference_rule"]["resamples"] == 999);
  CHECK(j["summary"][0]["verdict_events"] == 1);
  CHECK(j["summary"][0]["verdict_events_of"] == "misses");
  CHECK_FALSE(j["summary"][0].contains("owner"));
  CHECK(j["summary"][1]["owner"] == "platform");
  const CompareReport back = compare_report_from_json(j);
  REQUIRE(back.summary.size() == 2);
  CHECK(back.summary[1].owner == Owner::platform);
  CHECK(has(render_html(back), "NOT safe (1 misses, platform)"));
  CHECK(to_json(back) == j);
  REQUIRE(back.per_round.size() == 2);
  CHECK(back.per_round[1].rounds[3].complete == false);
  CHECK_FALSE(back.per_round[1].rounds[0].latency_p95_ns);
  CHECK(back.differences.size() == c.differences.size());
  CHECK(back.rule.resamples == 999);
  std::ostringstream streamed;
  write_json(streamed, c);
  CHECK(streamed.str() == j.dump(2));
  // strict about what is there
  json bad = j;
  bad["per_round"][0]["rounds"][1]["misses"] = "many";
  CHECK(refusal(bad) == "field 'per_round[0].rounds[1].misses': expected a number, found string");
  bad = j;
  bad["per_round"][0]["rounds"][0].erase("counted");
  CHECK(refusal(bad) == "field 'per_round[0].rounds[0].counted': missing");
  bad = j;
  bad["differences"][2]["figure"] = "speed";
  CHECK(has(refusal(bad), "field 'differences[2].figure': 'speed' is not a figure"));
  bad = j;
  bad["differences"][0]["call"] = "maybe";
  CHECK(has(refusal(bad), "field 'differences[0].call': 'maybe' is not difference"));
  bad = j;
  bad["per_round"][1]["spread"]["misses"]["min"] = 7;
  CHECK(has(refusal(bad), "field 'per_round[1].spread.misses': min 7"));
  bad = j;
  bad["difference_rule"]["confidence"] = 2;
  CHECK(has(refusal(bad), "field 'difference_rule.confidence'"));
  bad = j;
  bad["per_round"] = json::object();
  CHECK(refusal(bad) == "field 'per_round': expected an array, found object");
  // the HTML page shows the rounds
  const std::string html = render_html(back);
  CHECK(has(html, "<h2 id=\"rounds\">Across rounds</h2>"));
  CHECK(has(html, "id=\"plot-compare-rounds\""));
  CHECK(has(html, "incomplete (not in the spread)"));
}

TEST_CASE("compare report: a file written before per-round figures is read, and says it has none") {
  // tests/data/compare_v1.json: see tests/data/README.md
  const std::string path = testutil::source_dir() + "/tests/data/compare_v1.json";
  const json j = testutil::load_json(path);
  REQUIRE_FALSE(j.contains("per_round"));
  REQUIRE_FALSE(j["summary"][0].contains("verdict_events"));
  const SavedReport saved = load_saved_report(path);
  const auto* c = std::get_if<CompareReport>(&saved);
  REQUIRE(c);
  CHECK(c->per_round.empty());
  CHECK(c->differences.empty());
  REQUIRE_FALSE(c->summary.empty());
  for (const auto& s : c->summary) {
    CHECK(s.verdict_events == s.misses);
    CHECK(s.verdict_events_of == "misses");
  }
  const std::string t = compare_text(*c);
  CHECK(has(t, "no per-round figures in this report"));
  CHECK(has(render_html(*c), "holds no per-round figures"));
  const auto r = testutil::run_cli({"report", path});
  CHECK(r.rc == 0);
  CHECK(r.out == t);
}

TEST_CASE("compare: a real run keeps every round's own figures for every variant, and judges them across rounds") {
  testutil::TempDir td;
  const int rounds = 3;
  const auto r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.25s", "--chunk", "256", "--speed", "8",
                                    "--warmup", "4", "--chain", "lp:8000:2 | peak:1000:q=0.7:gain=6", "--variants",
                                    "cpu:fused,cpu:unfused", "--rounds", std::to_string(rounds), "--json", td.file("c.json")});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json c = testutil::load_json(td.file("c.json"));
  const std::uint64_t per_round = (12000 + 255) / 256 - 4;  // chunks of one round after the warm-up
  REQUIRE(c["per_round"].size() == 2);
  for (const auto& v : c["per_round"]) {
    CAPTURE(v["variant"]);
    const json& rep = (*variant(c, v["variant"].get<std::string>()))["report"];
    REQUIRE(v["rounds"].size() == rounds);
    std::uint64_t counted = 0, misses = 0, drops = 0;
    for (int k = 0; k < rounds; ++k) {
      const json& rd = v["rounds"][static_cast<std::size_t>(k)];
      CAPTURE(rd);
      CHECK(rd["round"] == k + 1);
      CHECK(rd["complete"] == true);
      // every chunk of the round is counted or dropped (a loaded machine may drop some)
      CHECK(rd["counted"].get<std::uint64_t>() + rd["drops"].get<std::uint64_t>() == per_round);
      for (const char* f : {"latency_p50_ns", "latency_p95_ns", "process_p50_ns", "process_p95_ns"}) {
        REQUIRE(rd[f].is_number_integer());
        CHECK(rd[f].get<std::int64_t>() > 0);
      }
      CHECK(rd["latency_p50_ns"].get<std::int64_t>() <= rd["latency_p95_ns"].get<std::int64_t>());
      counted += rd["counted"].get<std::uint64_t>();
      misses += rd["misses"].get<std::uint64_t>();
      drops += rd["drops"].get<std::uint64_t>();
    }
    // the rounds add up to the pooled report
    CHECK(counted == rep["counts"]["counted"].get<std::uint64_t>());
    CHECK(misses == rep["counts"]["misses"].get<std::uint64_t>());
    CHECK(drops == rep["counts"]["drops"].get<std::uint64_t>());
    // and each round's percentiles lie within the pooled min..max
    for (const auto& rd : v["rounds"]) {
      CHECK(rd["latency_p95_ns"].get<std::int64_t>() >= rep["latency"]["min"].get<std::int64_t>());
      CHECK(rd["latency_p50_ns"].get<std::int64_t>() <= rep["latency"]["max"].get<std::int64_t>());
    }
    for (const char* f : {"latency_p50_ns", "latency_p95_ns", "process_p50_ns", "process_p95_ns", "misses", "drops"}) {
      CAPTURE(f);
      const json& sp = v["spread"][f];
      CHECK(sp["rounds"] == rounds);
      CHECK(sp["min"].get<double>() <= sp["median"].get<double>());
      CHECK(sp["median"].get<double>() <= sp["max"].get<double>());
    }
  }
  // the order rotates: each variant runs first once and second once
  CHECK(c["per_round"][0]["rounds"][0]["position"] == 1);
  CHECK(c["per_round"][0]["rounds"][1]["position"] == 2);
  CHECK(c["per_round"][1]["rounds"][0]["position"] == 2);
  // every figure of cpu:unfused is judged against cpu:fused, with a call the rule allows
  REQUIRE(c["differences"].size() == static_cast<std::size_t>(kCompareFigureCount));
  for (const auto& d : c["differences"]) {
    CAPTURE(d);
    CHECK(d["variant"] == "cpu:unfused");
    CHECK(d["rounds"] == rounds);
    CHECK(d["baseline_rounds"] == rounds);
    const std::string call = d["call"];
    CHECK((call == "difference" || call == "no clear difference"));
    if (call == "no clear difference") CHECK(d["ranges_overlap"] == true);
  }
  CHECK(c["difference_rule"]["min_rounds"] == 3);
  for (const auto& s : c["summary"]) {
    // one stall that held up several chunks is one event: never more events than misses
    CHECK(s["verdict_events"].get<std::uint64_t>() <= s["misses"].get<std::uint64_t>());
    CHECK(s["verdict_events_of"] == "stall events");
    // events belong to someone, as the variant's own verdict says
    if (s["verdict_events"].get<std::uint64_t>() > 0) CHECK(s.contains("owner"));
  }
  CHECK(has(r.out, "rounds     each round's own figure"));
  CHECK(has(r.out, "e2e p95 over rounds"));
  CHECK(has(r.out, "a difference holds across rounds"));
  CHECK_FALSE(has(r.out, "cannot be judged"));
  const CompareReport back = compare_report_from_json(c);
  CHECK(to_json(back) == c);
  CHECK(has(render_html(back), "id=\"plot-compare-rounds\""));
}

// ---------------------------------------------------------------- bench

TEST_CASE("bench: repeats that disagree by more than the bench resolves are flagged, in the rows and on stderr") {
  RepeatCheck k = check_repeats({1.00, 1.02, 0.99, 1.01}, 1e7, 20);
  CHECK(k.spread == doctest::Approx(0.03 / 1.005));
  CHECK(k.warning.empty());
  k = check_repeats({1.0, 0.5, 1.0}, 1e7, 20);
  CHECK(k.spread == doctest::Approx(0.5));
  CHECK(has(k.warning, "disagree by 50%"));
  CHECK(has(k.warning, "more than the 10%"));
  k = check_repeats({1.0, 1.0, 1.0}, 10000, 20);  // 500 clock steps: too short for the clock
  CHECK(k.spread == 0);
  CHECK(has(k.warning, "under 1000 steps of the 20 ns clock"));
  CHECK(check_repeats({}, 0, 0).warning.empty());
  CHECK(measure_clock_resolution_ns() >= 1);

  testutil::TempDir td;
  const auto r = testutil::run_cli({"bench", "--quick", "--channels", "1", "--sections", "1,2", "--chunks", "64",
                                    "--repeats", "3", "--json", td.file("b.json")});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(has(r.out, "spread"));
  const json b = testutil::load_json(td.file("b.json"));
  CHECK(b["spread_limit"].get<double>() == kBenchSpreadLimit);
  CHECK(b["clock_resolution_ns"].get<double>() >= 1);
  REQUIRE(b["rows"].size() == 4);
  std::size_t flagged = 0;
  for (const auto& row : b["rows"]) {
    CAPTURE(row);
    const double spread = row["spread"].get<double>();
    CHECK(spread >= 0);
    CHECK(spread == doctest::Approx((row["max_gbs"].get<double>() - row["min_gbs"].get<double>()) /
                                    row["median_gbs"].get<double>()));
    if (row["warning"].is_string()) {
      ++flagged;
      CHECK(has(r.err, row["warning"].get<std::string>()));
    } else {
      CHECK(row["warning"].is_null());
      CHECK(spread <= kBenchSpreadLimit);
    }
  }
  if (flagged == 0) CHECK(r.err.empty());
  else CHECK(has(r.err, fmt::format("{} of 4 row(s) flagged", flagged)));
}

TEST_CASE("compare: a paced comparison measures the platform baseline before and after its rounds, and shows it") {
  testutil::TempDir td;
  const std::vector<std::string> base = {"compare", "--synth", "noise", "--duration", "0.2s", "--chunk", "256",
                                         "--variants", "cpu:fused,cpu:unfused", "--rounds", "1", "--warmup", "2"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return testutil::run_cli(a);
  };
  const auto r = with({"--baseline", "50ms", "--json", td.file("c.json")});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  // the terminal: under the workload, before and after
  CHECK(has(r.out, "platform   baseline before 0.05 s at D: wake-up"));
  CHECK(has(r.out, "baseline after 0.05 s at D"));
  const json c = testutil::load_json(td.file("c.json"));
  // every variant's report holds the same two measurements: one baseline for all rounds
  const json* fused = variant(c, "cpu:fused");
  const json* unfused = variant(c, "cpu:unfused");
  REQUIRE(fused);
  REQUIRE(unfused);
  for (const json* v : {fused, unfused}) {
    const json& p = (*v)["report"]["platform"];
    REQUIRE(p.contains("baseline_before"));
    REQUIRE(p.contains("baseline_after"));
    CHECK(p["baseline_before"]["duration_ns"] == 50'000'000);
    CHECK(p["baseline_before"]["wake"]["count"].get<long>() > 0);
  }
  CHECK((*fused)["report"]["platform"]["baseline_before"] == (*unfused)["report"]["platform"]["baseline_before"]);
  // the page shows its table
  const std::string html = render_html(chunkscope::compare_report_from_json(c));
  CHECK(has(html, "measured once before the first round and once after the last"));
  CHECK(has(html, "hand-off round trip"));
  // --baseline 0 and --speed max measure none, and say none
  for (const auto& extra : {std::vector<std::string>{"--baseline", "0"}, std::vector<std::string>{"--speed", "max"}}) {
    auto args = extra;
    args.insert(args.end(), {"--json", td.file("n.json")});
    const auto n = with(args);
    REQUIRE_MESSAGE(n.rc == 0, n.err);
    CHECK_FALSE(has(n.out, "baseline before"));
    const json nc = testutil::load_json(td.file("n.json"));
    const json& p = (*variant(nc, "cpu:fused"))["report"];
    CHECK((!p.contains("platform") || !p["platform"].contains("baseline_before")));
  }
}
