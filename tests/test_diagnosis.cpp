#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <limits>
#include <map>
#include <thread>
#include <set>
#include <sstream>
#include <string>

#include "src/chain_spec.hpp"
#include "src/cli/entry.hpp"
#include "src/errors.hpp"
#include "src/options.hpp"
#include "src/report/diagnosis.hpp"
#include "src/report/schema.hpp"
#include "tests/report_fixture.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;

namespace {

bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

// The finding of `rule`, or null.
json find_rule(const json& findings, const std::string& rule) {
  for (const auto& f : findings)
    if (f["rule"] == rule) return f;
  return nullptr;
}

std::set<std::string> rules(const json& findings) {
  std::set<std::string> s;
  for (const auto& f : findings) s.insert(f["rule"].get<std::string>());
  return s;
}

// Every finding has the contract's shape and numbers behind it.
void check_shape(const json& findings) {
  REQUIRE(findings.is_array());
  for (const auto& f : findings) {
    CAPTURE(f.dump());
    CHECK(f["rule"].is_string());
    CHECK(f["finding"].is_string());
    CHECK(!f["finding"].get<std::string>().empty());
    CHECK(f["next"].is_string());
    CHECK(!f["next"].get<std::string>().empty());
    const std::string conf = f["confidence"];
    CHECK((conf == "high" || conf == "medium" || conf == "low"));
    const std::string sev = f["severity"];
    CHECK((sev == "warning" || sev == "info" || sev == "ok"));
    REQUIRE(f["evidence"].is_object());
    CHECK(!f["evidence"].empty());
    for (const auto& [k, v] : f["evidence"].items()) CHECK(v.is_number());
  }
}

const std::set<std::string> kProblemRules = {"negative_headroom", "tail_over_budget", "deadline_misses", "drops",
                                             "too_slow",          "xruns",            "not_fused",       "launch_bound",
                                             "copy_bound",        "f64_on_gpu",       "queue_wait",      "scheduling_noise",
                                             "drift",             "graph_fallbacks",  "few_chunks_for_p99",
                                             "few_chunks_for_p99_9", "incomplete_run", "no_counted_chunks"};

json healthy() { return fixture::make_run_report(); }

json cuda_report(const std::string& mode) {
  fixture::Options o;
  o.backend = "cuda";
  o.mode = mode;
  o.gpu_parts = true;
  return fixture::make_run_report(o);
}

void set_hist(json& h, double p50, double p95, double p99) {
  h["p50"] = p50;
  h["p90"] = p95 * 0.9;
  h["p95"] = p95;
  h["p99"] = p99;
  h["p99_9"] = p99;
  h["max"] = p99;
  h["min"] = p50 / 2;
}

}  // namespace

TEST_CASE("diagnosis: a healthy run fires no problem rule and says why it is healthy / with numbers") {
  const json r = healthy();
  const json f = fixture::diagnose(r);
  check_shape(f);
  for (const auto& rule : rules(f)) {
    CAPTURE(rule);
    CHECK(kProblemRules.count(rule) == 0);
  }
  const json h = find_rule(f, "healthy");
  REQUIRE(h.is_object());
  CHECK(h["severity"] == "ok");
  CHECK(h["evidence"]["headroom_p95_ns"] == r["headroom"]["p95"]);
  CHECK(h["evidence"]["counted"] == 1990);
}

TEST_CASE("diagnosis not_fused: dispatches per chunk equal to the filter count") {
  json r = healthy();
  r["workload"]["chain"] = "hp:80:4 | lp:12000:8 | peak:1000:q=1:gain=3";
  r["workload"]["fused"] = false;
  r["workload"]["dispatches_per_chunk_planned"] = 3;
  r["dispatches_per_chunk"] = 3.0;
  const json f = fixture::diagnose(r);
  check_shape(f);
  const json x = find_rule(f, "not_fused");
  REQUIRE(x.is_object());
  CHECK(x["evidence"]["dispatches_per_chunk"] == 3.0);
  CHECK(x["evidence"]["filter_stages"] == 3);
  CHECK(has(x["finding"], "3.00 dispatches per chunk for 3 filter stages"));
  CHECK(has(x["next"], "drop --no-fuse"));
  CHECK(!has(x["next"].get<std::string>().substr(x["next"].get<std::string>().find('`')), "--no-fuse"));
  // a calibration stage splits a fused chain: one dispatch per filter, but the advice differs
  json s = healthy();
  s["workload"]["chain"] = "lp:1000 | spin:10us | hp:50";
  s["dispatches_per_chunk"] = 2.0;
  const json y = find_rule(fixture::diagnose(s), "not_fused");
  REQUIRE(y.is_object());
  CHECK(y["evidence"]["filter_stages"] == 2);
  CHECK(has(y["next"], "spin/sleep"));
  // fused: one dispatch for two filters
  CHECK(find_rule(fixture::diagnose(healthy()), "not_fused").is_null());
}

TEST_CASE("diagnosis launch_bound: CPU launch time above the GPU time suggests graph mode") {
  json r = cuda_report("eager");
  set_hist(r["process_parts"]["launch"], 30000, 34000, 40000);
  set_hist(r["process_parts"]["kernel"], 5000, 5500, 6000);
  set_hist(r["process_parts"]["h2d"], 2000, 2200, 2500);
  set_hist(r["process_parts"]["d2h"], 2000, 2200, 2500);
  set_hist(r["stages"]["process"], 41000, 46000, 52000);
  const json f = fixture::diagnose(r);
  check_shape(f);
  const json x = find_rule(f, "launch_bound");
  REQUIRE(x.is_object());
  CHECK(x["evidence"]["launch_p50_ns"] == 30000.0);
  CHECK(x["evidence"]["gpu_p50_ns"] == 9000.0);
  CHECK(x["confidence"] == "high");
  CHECK(has(x["next"], "--mode graph"));
  // already in graph mode: larger chunks
  r["workload"]["mode"] = "graph";
  const json g = find_rule(fixture::diagnose(r), "launch_bound");
  REQUIRE(g.is_object());
  CHECK(has(g["next"], "--chunk 512"));
  // the fixture's default parts (launch 8 us < GPU 18 us) do not fire it
  CHECK(find_rule(fixture::diagnose(cuda_report("eager")), "launch_bound").is_null());
}

TEST_CASE("diagnosis copy_bound: H2D + D2H above the kernel suggests larger chunks") {
  json r = cuda_report("graph");
  set_hist(r["process_parts"]["launch"], 3000, 3500, 4000);
  set_hist(r["process_parts"]["kernel"], 5000, 5500, 6000);
  set_hist(r["process_parts"]["h2d"], 20000, 22000, 25000);
  set_hist(r["process_parts"]["d2h"], 20000, 22000, 25000);
  set_hist(r["stages"]["process"], 49000, 54000, 60000);
  const json x = find_rule(fixture::diagnose(r), "copy_bound");
  REQUIRE(x.is_object());
  CHECK(x["evidence"]["h2d_p50_ns"] == 20000.0);
  CHECK(x["evidence"]["d2h_p50_ns"] == 20000.0);
  CHECK(x["evidence"]["kernel_p50_ns"] == 5000.0);
  CHECK(x["confidence"] == "high");
  CHECK(has(x["next"], "--chunk 1024"));
  CHECK(find_rule(fixture::diagnose(cuda_report("graph")), "copy_bound").is_null());
}

TEST_CASE("diagnosis queue_wait: queue waits dominating the latency") {
  json r = healthy();
  set_hist(r["stages"]["queue_in"], 2000000, 3000000, 3200000);
  set_hist(r["latency"], 2100000, 3100000, 3300000);
  const json x = find_rule(fixture::diagnose(r), "queue_wait");
  REQUIRE(x.is_object());
  CHECK(x["evidence"]["queue_in_p95_ns"] == 3000000.0);
  CHECK(x["evidence"]["queue_share_p50"].get<double>() > 0.9);
  CHECK(has(x["finding"], "queue_in"));
  // at --speed max queue waits are the expected backpressure: silent
  r["timing"]["paced"] = false;
  CHECK(find_rule(fixture::diagnose(r), "queue_wait").is_null());
  CHECK(find_rule(fixture::diagnose(healthy()), "queue_wait").is_null());
}

TEST_CASE("diagnosis f64_on_gpu: float64 on the GPU / never on the CPU") {
  json r = cuda_report("graph");
  r["workload"]["dtype"] = "f64";
  const json x = find_rule(fixture::diagnose(r), "f64_on_gpu");
  REQUIRE(x.is_object());
  CHECK(x["evidence"]["kernel_p50_ns"] == r["process_parts"]["kernel"]["p50"].get<double>());
  CHECK(has(x["next"], "--dtype f32"));
  json c = healthy();
  c["workload"]["dtype"] = "f64";
  CHECK(find_rule(fixture::diagnose(c), "f64_on_gpu").is_null());
  CHECK(find_rule(fixture::diagnose(cuda_report("graph")), "f64_on_gpu").is_null());
}

TEST_CASE("diagnosis negative_headroom: names the stage to blame and by how much") {
  json r = healthy();
  const double B = r["timing"]["budget_ns"];
  set_hist(r["stages"]["process"], 3000000, B + 400000, B + 600000);
  set_hist(r["latency"], 3100000, B + 500000, B + 700000);
  r["headroom"] = {{"p95", -500000}, {"p99", -700000}, {"max", -700000}};
  r["verdict"]["blame"] = "process";
  const json f = fixture::diagnose(r);
  check_shape(f);
  const json x = find_rule(f, "negative_headroom");
  REQUIRE(x.is_object());
  CHECK(f[0]["rule"] == "negative_headroom");  // the most important first
  CHECK(x["evidence"]["over_budget_ns"] == 500000.0);
  CHECK(x["evidence"]["budget_ns"] == B);
  CHECK(x["evidence"]["process_p95_ns"].get<double>() >= B + 400000);
  CHECK(has(x["finding"], "by 500.0 µs"));
  CHECK(has(x["finding"], "process is to blame"));
  CHECK(has(x["next"], "stage-bench"));
  CHECK(find_rule(f, "healthy").is_null());
  CHECK(find_rule(fixture::diagnose(healthy()), "negative_headroom").is_null());
}

TEST_CASE("diagnosis tail_over_budget: p95 keeps the budget / p99 does not") {
  json r = healthy();
  r["headroom"]["p99"] = -100000;
  const json x = find_rule(fixture::diagnose(r), "tail_over_budget");
  REQUIRE(x.is_object());
  CHECK(x["evidence"]["headroom_p99_ns"] == -100000.0);
  CHECK(find_rule(fixture::diagnose(healthy()), "tail_over_budget").is_null());
}

TEST_CASE("diagnosis scheduling_noise: wide p99/p50 spread while the processor is mostly idle") {
  json r = healthy();
  set_hist(r["stages"]["process"], 20000, 60000, 40000);
  set_hist(r["engine_overhead"], 40000, 200000, 1460000);
  set_hist(r["latency"], 60000, 200000, 1500000);
  const json x = find_rule(fixture::diagnose(r), "scheduling_noise");
  REQUIRE(x.is_object());
  CHECK(x["evidence"]["overhead_p99_over_p50"] == doctest::Approx(36.5));
  CHECK(x["evidence"]["latency_p99_ns"] == 1500000.0);
  CHECK(x["evidence"]["duty_cycle"].get<double>() == doctest::Approx(20000.0 / r["timing"]["chunk_ns"].get<double>()));
  // without a platform section the text says what it rests on, not an idle machine
  CHECK(has(x["finding"], "the chain is busy only a small share of each period"));
  CHECK_FALSE(has(x["finding"], "mostly idle"));
  CHECK(has(x["next"], "--rt"));
  // with one, it quotes the measured load and the machine's own wake-up tail
  json p = r;
  p["platform"] = {{"busy_share", 0.93},
                   {"load_after", {{"load1", 6.5}, {"runnable", 5}, {"cpus_online", 2}}},
                   {"baseline_before", {{"period_ns", 5333333}, {"duration_ns", 500000000},
                                        {"wake", {{"count", 90}, {"min", 50000}, {"p50", 90000}, {"p95", 900000},
                                                  {"p99", 1900000}, {"max", 14000000}, {"mean", 120000}}},
                                        {"handoff", {{"count", 90}, {"min", 5000}, {"p50", 7500}, {"p95", 30000},
                                                     {"p99", 60000}, {"max", 90000}, {"mean", 9000}}}}}};
  const json y = find_rule(fixture::diagnose(p), "scheduling_noise");
  REQUIRE(y.is_object());
  CHECK(has(y["finding"], "the machine was 93% busy over the run (load 6.50 on 2 CPU(s))"));
  CHECK(has(y["finding"], "this machine's own wake-up p99 is 1.900 ms"));
  CHECK(y["evidence"]["baseline_wake_p99_ns"] == 1900000.0);
  // calibration stages make the tail on purpose
  json k = r;
  k["process_parts"]["calibration"] = {{"count", 40}, {"min", 1000000}, {"p50", 1000000}, {"p90", 1000000}, {"p95", 1000000},
                                       {"p99", 1000000}, {"p99_9", 1000000}, {"max", 1000000}, {"mean", 1000000}};
  CHECK(find_rule(fixture::diagnose(k), "scheduling_noise").is_null());
  // a tail far below the budget is harmless
  json q = r;
  set_hist(q["engine_overhead"], 40000, 100000, 200000);
  set_hist(q["latency"], 60000, 120000, 240000);
  CHECK(find_rule(fixture::diagnose(q), "scheduling_noise").is_null());
  // a busy processor (p50 above half of D) is not "idle CPU"
  json b = r;
  set_hist(b["stages"]["process"], 3000000, 3500000, 4000000);
  CHECK(find_rule(fixture::diagnose(b), "scheduling_noise").is_null());
  CHECK(find_rule(fixture::diagnose(healthy()), "scheduling_noise").is_null());
}

TEST_CASE("diagnosis few_chunks_for_p99: too few chunks for a p99 (and for a p99.9)") {
  fixture::Options o;
  o.chunks = 50;
  const json f = fixture::diagnose(fixture::make_run_report(o));
  check_shape(f);
  const json x = find_rule(f, "few_chunks_for_p99");
  REQUIRE(x.is_object());
  CHECK(x["evidence"]["counted"] == 40.0);
  CHECK(has(x["finding"], "not trustworthy"));
  CHECK(has(x["next"], "--duration"));
  CHECK(find_rule(f, "healthy").is_null());
  o.chunks = 500;
  const json y = find_rule(fixture::diagnose(fixture::make_run_report(o)), "few_chunks_for_p99_9");
  REQUIRE(y.is_object());
  CHECK(y["evidence"]["counted"] == 490.0);
  CHECK(find_rule(fixture::diagnose(healthy()), "few_chunks_for_p99").is_null());
  CHECK(find_rule(fixture::diagnose(healthy()), "few_chunks_for_p99_9").is_null());
}

TEST_CASE("diagnosis deadline_misses: counts / blame / worst chunk and a periodic stall") {
  fixture::Options o;
  o.spikes = {100, 200, 300, 400};
  o.spike_ns = 5e6;
  const json r = fixture::make_run_report(o);
  REQUIRE(r["counts"]["misses"] == 4);
  const json x = find_rule(fixture::diagnose(r), "deadline_misses");
  REQUIRE(x.is_object());
  CHECK(x["evidence"]["misses"] == 4.0);
  CHECK(x["evidence"]["blamed_process"] == 4.0);
  CHECK(x["evidence"]["miss_interval_chunks"] == 100.0);
  CHECK(has(x["finding"], "every 100 chunks"));
  // not every stall misses, but all misses sit on the stall's grid
  json g = r;
  g["counts"]["miss_list"] = json::array();
  for (int s : {100, 150, 300, 450}) g["counts"]["miss_list"].push_back({{"seq", s}, {"latency_ns", 5000000}, {"blame", "process"}});
  const json y = find_rule(fixture::diagnose(g), "deadline_misses");
  REQUIRE(y.is_object());
  CHECK(y["evidence"]["miss_interval_chunks"] == 50.0);
  CHECK(has(y["finding"], "grid of 50 chunks"));
  // one stray miss among stalls every 100 chunks: their divisor (4) is no period, and the
  // finding says most recur every 100
  json z = r;
  z["counts"]["miss_list"] = json::array();
  for (int s : {100, 200, 300, 368, 400, 500, 600, 700})
    z["counts"]["miss_list"].push_back({{"seq", s}, {"latency_ns", 5000000}, {"blame", "process"}});
  const json w = find_rule(fixture::diagnose(z), "deadline_misses");
  REQUIRE(w.is_object());
  CHECK_FALSE(has(w["finding"], "grid of"));
  CHECK(has(w["finding"], "most recur every 100 chunks"));
  CHECK(w["evidence"]["miss_interval_chunks"] == 100.0);
  CHECK(find_rule(fixture::diagnose(healthy()), "deadline_misses").is_null());
}

TEST_CASE("diagnosis drops: the count / the cause and the first dropped chunk") {
  fixture::Options o;
  o.drop_seqs = {500, 501, 502};
  const json r = fixture::make_run_report(o);
  const json x = find_rule(fixture::diagnose(r), "drops");
  REQUIRE(x.is_object());
  CHECK(x["evidence"]["drops"] == 3.0);
  CHECK(x["evidence"]["first_drop_seq"] == 500.0);
  CHECK(has(x["next"], "--queue-depth 32"));
  CHECK(find_rule(fixture::diagnose(healthy()), "drops").is_null());
}

TEST_CASE("diagnosis drift / too_slow / graph_fallbacks / xruns / incomplete_run fire on crafted figures only") {
  json d = healthy();
  d["cadence"]["drift_ppm"] = 2500.0;
  const json x = find_rule(fixture::diagnose(d), "drift");
  REQUIRE(x.is_object());
  CHECK(x["evidence"]["drift_ppm"] == 2500.0);
  CHECK(x["evidence"]["seconds_per_hour"] == doctest::Approx(9.0));

  fixture::Options o;
  o.paced = false;
  json s = fixture::make_run_report(o);
  CHECK(find_rule(fixture::diagnose(s), "too_slow").is_null());
  s["throughput"]["speed_factor"] = 0.5;
  const json t = find_rule(fixture::diagnose(s), "too_slow");
  REQUIRE(t.is_object());
  CHECK(t["evidence"]["speed_factor"] == 0.5);

  json g = cuda_report("graph");
  CHECK(find_rule(fixture::diagnose(g), "graph_fallbacks").is_null());
  g["backend_counters"]["eager_fallbacks"] = 12;
  g["backend_counters"]["shape_changes"] = 12;
  const json gf = find_rule(fixture::diagnose(g), "graph_fallbacks");
  REQUIRE(gf.is_object());
  CHECK(gf["evidence"]["eager_fallbacks"] == 12.0);

  json m = healthy();
  m["workload"]["command"] = "monitor";
  m["device"] = {{"input", "system"}, {"output", "system"}, {"duplex", true}, {"latency_chunks", 2}, {"callbacks", 1000},
                 {"xruns", 0}, {"underruns", 0}, {"input_overflows", 0}, {"output_underflows", 0}};
  CHECK(find_rule(fixture::diagnose(m), "xruns").is_null());
  m["device"]["xruns"] = 3;
  m["device"]["output_underflows"] = 3;
  const json xr = find_rule(fixture::diagnose(m), "xruns");
  REQUIRE(xr.is_object());
  CHECK(xr["evidence"]["xruns"] == 3.0);
  CHECK(has(xr["next"], "--latency-chunks 3"));

  json i = healthy();
  i["state"] = "interrupted";
  i["reason"] = "stopped by a signal";
  const json ir = find_rule(fixture::diagnose(i), "incomplete_run");
  REQUIRE(ir.is_object());
  CHECK(has(ir["finding"], "interrupted"));
}

TEST_CASE("diagnosis: older and partial reports diagnose, mistyped ones are refused naming the field") {
  auto refused = [](const json& r) {
    try {
      (void)chunkscope::run_report_from_json(r);
    } catch (const chunkscope::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(has(refused(json::object()), "no \"schema\" key"));
  CHECK(!refused(json::array()).empty());
  CHECK(has(refused(json{{"schema", "chunkscope.report/1"}}), "field 'workload': missing"));
  // --speed max: no headroom, null drift and jitter
  fixture::Options o;
  o.paced = false;
  json s = fixture::make_run_report(o);
  REQUIRE(!s.contains("headroom"));
  const json fs = fixture::diagnose(s);
  check_shape(fs);
  CHECK(find_rule(fs, "negative_headroom").is_null());
  CHECK(find_rule(fs, "healthy").is_null());
  // an older report: no series, no backend counters, no process_parts, no diagnosis, null drift
  json old = healthy();
  old.erase("series");
  old.erase("backend_counters");
  old.erase("process_parts");
  old.erase("diagnosis");
  old["stages"]["process"] = {{"count", 0}};
  old["cadence"]["drift_ppm"] = nullptr;
  check_shape(fixture::diagnose(old));
  // mistyped values are refused with the field's path, not read as something else
  json bad = healthy();
  bad["counts"]["miss_list"] = "garbage";
  CHECK(has(refused(bad), "field 'counts.miss_list': expected an array, found string"));
  bad = healthy();
  bad["latency"]["p95"] = std::numeric_limits<double>::infinity();
  CHECK(has(refused(bad), "field 'latency.p95'"));
  bad = healthy();
  bad["stages"].erase("source");
  CHECK(has(refused(bad), "field 'stages.source': missing"));
  // no counted chunks at all
  json none = healthy();
  none["counts"]["counted"] = 0;
  CHECK(find_rule(fixture::diagnose(none), "no_counted_chunks").is_object());
}

TEST_CASE("diagnosis: the rerun command repeats the workload with the change asked for") {
  json r = healthy();
  r["workload"]["chain"] = "lp:8000:4 | peak:1000:q=1:gain=3";
  r["workload"]["media_seconds"] = 10.24;
  CHECK(fixture::rerun_command(r) ==
        "chunkscope synth --signal noise --duration 10.24s --chain 'lp:8000:4 | peak:1000:q=1:gain=3'");
  json f = healthy();
  f["workload"]["command"] = "replay";
  f["workload"]["source"] = "file it's here.wav";
  f["workload"]["dtype"] = "f64";
  f["workload"]["chunk_frames"] = 64;
  CHECK(fixture::rerun_command(f) == "chunkscope replay 'it'\\''s here.wav' --chain 'hp:80:4 | lp:12000:8' --chunk 64 --dtype f64");
}

TEST_CASE("print_diagnosis: a header line / each finding with its evidence and next experiment") {
  json r = healthy();
  r["headroom"]["p99"] = -100000;
  std::ostringstream os;
  chunkscope::print_diagnosis(os, chunkscope::diagnose(chunkscope::run_report_from_json(r)));
  const std::string s = os.str();
  CHECK(s.rfind("diagnosis\n", 0) == 0);
  CHECK(has(s, "tail_over_budget"));
  CHECK(has(s, "evidence: "));
  CHECK(has(s, "headroom_p99_ns -100.0 µs"));
  CHECK(has(s, "next: "));
  std::ostringstream e;
  chunkscope::print_diagnosis(e, {});
  CHECK(has(e.str(), "no rule fired"));
}

TEST_CASE("diagnosis: spinning threads that outnumber the CPUs are named, and every rerun keeps the run mode") {
  testutil::TempDir td;
  // two spinning engine threads (--inline) pinned to one CPU
  const auto r = testutil::run_cli({"synth", "--duration", "0.5s", "--inline", "--wait", "spin", "--cpus", "0",
                                    "--baseline", "0", "--json", td.file("r.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = testutil::load_json(td.file("r.json"));
  bool found = false;
  for (const auto& f : j["diagnosis"]) {
    const std::string next = f["next"].get<std::string>();
    // every rerun hint of a command keeps how the engine ran
    if (next.find("chunkscope synth") != std::string::npos) {
      CAPTURE(next);
      CHECK(next.find("--inline") != std::string::npos);
      CHECK(next.find("--cpus 0") != std::string::npos);
    }
    if (f["rule"] != "spin_oversubscribed") continue;
    found = true;
    CHECK(f["evidence"]["spinning_threads"] == 2);
    CHECK(f["evidence"]["cpus"] == 1);
    CHECK(next.find("--wait hybrid") != std::string::npos);
  }
  CHECK(found);
}

// ---------------------------------------------------------------- rerun hints parse back

namespace {

// The shell words of a command as chunkscope prints it (plain words and '...' quoting,
// with '\'' for a quote inside).
std::vector<std::string> shell_words(const std::string& s) {
  std::vector<std::string> words;
  std::string w;
  bool in_word = false, quoted = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (quoted) {
      if (ch == '\'') quoted = false;
      else w += ch;
    } else if (ch == '\'') {
      quoted = in_word = true;
    } else if (ch == '\\' && i + 1 < s.size()) {
      w += s[++i];
      in_word = true;
    } else if (ch == ' ') {
      if (in_word) words.push_back(w);
      w.clear();
      in_word = false;
    } else {
      w += ch;
      in_word = true;
    }
  }
  if (in_word) words.push_back(w);
  return words;
}

// The commands a finding's next step gives in backticks that run chunkscope (the program
// as printed: a bare name or a path ending in chunkscope), as words after the program.
std::vector<std::vector<std::string>> hinted_commands(const std::string& next) {
  std::vector<std::vector<std::string>> out;
  for (std::size_t a = next.find('`'); a != std::string::npos; a = next.find('`', a + 1)) {
    const std::size_t b = next.find('`', a + 1);
    if (b == std::string::npos) break;
    auto words = shell_words(next.substr(a + 1, b - a - 1));
    a = b;
    if (words.size() < 2) continue;
    const std::string& prog = words.front();
    if (prog.size() < 10 || prog.compare(prog.size() - 10, 10, "chunkscope") != 0) continue;
    words.erase(words.begin());
    out.push_back(words);
  }
  return out;
}

// What a stream run's options make it measure, field by field (not where its outputs go).
std::map<std::string, std::string> experiment(const chunkscope::StreamOptions& o) {
  using namespace chunkscope;
  return {{"input", o.input},
          {"chain", o.chain},
          {"chunk", std::to_string(o.chunk)},
          {"dtype", dtype_name(o.dtype)},
          {"fuse", std::to_string(o.fuse)},
          {"backend", backend_name(o.backend.backend)},
          {"mode", cuda_mode_name(o.backend.cuda.mode)},
          {"isa", isa_choice_name(o.backend.cpu_isa)},
          {"gpu_timing", std::to_string(o.backend.cuda.gpu_timing)},
          {"short_chunk", std::to_string(o.backend.cuda.recapture_on_shape_change)},
          {"speed", o.speed == "max" ? o.speed : std::to_string(parse_number(o.speed, "--speed"))},
          {"margin", o.margin},
          {"queue_depth", std::to_string(o.queue_depth)},
          {"warmup", std::to_string(o.warmup)},
          {"baseline", std::to_string(baseline_ns(o))},
          {"rt", o.rt ? "SCHED_FIFO " + std::to_string(o.rt_priority) : std::string("off")},
          {"cpus", o.cpus},
          {"wait", wait_mode_name(o.wait)},
          {"inline", std::to_string(o.inline_process)},
          {"ftz", std::to_string(o.ftz)},
          {"streams", std::to_string(o.streams)},
          {"stagger", std::to_string(o.stagger)},
          {"batch", std::to_string(o.batch)},
          {"signal", o.signal},
          {"duration", std::to_string(parse_duration_ns(o.duration, "--duration"))},
          {"channels", std::to_string(o.channels)},
          {"rate", std::to_string(o.rate)}};
}

// Every rerun hint among `findings` parses back (by the command line's own parser) into
// the run's options but for at most one experiment field; returns the fields changed.
std::multiset<std::string> check_hints(const json& findings, const chunkscope::StreamOptions& run,
                                       const std::string& subcommand, int* hints) {
  std::multiset<std::string> changed;
  const auto want = experiment(run);
  for (const auto& f : findings) {
    for (const auto& words : hinted_commands(f["next"].get<std::string>())) {
      if (words.front() != subcommand) continue;  // sweep and stage-bench are other commands
      CAPTURE(f["next"].get<std::string>());
      chunkscope::StreamOptions back;
      try {
        back = chunkscope::cli::parse_stream_command(words);
      } catch (const chunkscope::InputError& e) {
        FAIL("the hint does not parse: " << e.what());
      }
      const auto got = experiment(back);
      std::vector<std::string> diff;
      for (const auto& [k, v] : want)
        if (got.at(k) != v) diff.push_back(k);
      std::string said;
      for (const auto& d : diff) said += d + " ";
      CAPTURE(said);
      // one change: one flag, or the run mode (--rt, --cpus, --wait, --inline), which a
      // hint may set together (a real-time thread that spins needs CPUs of its own)
      const std::set<std::string> run_mode = {"rt", "cpus", "wait", "inline"};
      const bool one_mode = std::all_of(diff.begin(), diff.end(), [&](const auto& d) { return run_mode.count(d) > 0; });
      CHECK((diff.size() <= 1 || one_mode));
      for (const auto& d : diff) changed.insert(d);
      ++*hints;
    }
  }
  return changed;
}

}  // namespace

TEST_CASE("diagnosis: every rerun hint parses back into the run's options but for the one change it asks for") {
  // runs with most experiment flags away from their defaults; the report's run mode says the same
  const std::vector<std::string> common = {
      "synth",       "--signal",  "noise", "--duration", "2s",  "--channels", "1",     "--rate", "44100", "--chain",
      "hp:80:4 | lp:12k:8", "--chunk", "128", "--dtype",   "f64", "--no-fuse",  "--isa", "scalar", "--speed", "2",
      "--margin",    "25%",       "--queue-depth", "4",      "--warmup", "5",   "--baseline", "0", "--ftz", "off",
      "--inline",    "--cpus",    "0",     "--json",     "r.json"};
  struct Run {
    std::vector<std::string> flags;
    json mode;
  };
  const std::vector<Run> runs = {
      {{"--wait", "spin", "--streams", "2", "--stagger", "off"},
       {{"wait", "spin"}, {"rt", false}, {"cpus", "0"}, {"inline_process", true}, {"ftz", false}}},
      {{"--wait", "hybrid", "--rt", "--rt-priority", "50"},
       {{"wait", "hybrid"}, {"rt", true}, {"rt_priority", 50}, {"cpus", "0"}, {"inline_process", true}, {"ftz", false}}},
  };
  fixture::Options healthy_run, missing, short_run, unfused;
  missing.spikes = {100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200};
  missing.spike_ns = 2e7;
  short_run.chunks = 150;
  unfused.fused = false;
  // the hints' CPU lists are for the machine that ran it; the parser checks them against this one
  std::set<int> cpu_counts = {1, 2, static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
  int hints = 0;
  std::multiset<std::string> changed;
  for (const auto& run_words : runs) {
    auto words = common;
    words.insert(words.end(), run_words.flags.begin(), run_words.flags.end());
    const auto run = chunkscope::cli::parse_stream_command(words);
    const auto args = chunkscope::experiment_args("synth", run);
    CHECK(std::find(args.begin(), args.end(), "--json=r.json") == args.end());  // outputs are not the experiment
    for (const auto& o : {healthy_run, missing, short_run, unfused}) {
      for (const int cpus : cpu_counts) {
        json r = fixture::make_run_report(o);
        r["workload"]["args"] = args;
        r["workload"]["run_mode"] = run_words.mode;
        r["environment"]["logical_cpus"] = cpus;
        // the report's own JSON, read back: the hints come from what a saved report holds
        const auto back = chunkscope::run_report_from_json(json::parse(r.dump()));
        json findings = json::array();
        for (const auto& f : chunkscope::diagnose(back)) findings.push_back({{"next", f.next}, {"rule", f.rule}});
        for (const auto& c : check_hints(findings, run, "synth", &hints)) changed.insert(c);
      }
    }
  }
  CHECK(hints >= 20);
  // the hints asked for different changes, and each changed only that
  CHECK(changed.count("duration") > 0);
  CHECK(changed.count("wait") > 0);
  CHECK(changed.count("fuse") > 0);
  CHECK(changed.count("rt") > 0);
}

TEST_CASE("diagnosis: a real run's hints name the program as it was invoked and keep every flag of the run") {
  testutil::TempDir td;
  const std::vector<std::string> words = {"synth", "--duration", "0.5s", "--inline", "--wait", "spin", "--cpus", "0",
                                          "--chunk", "64", "--baseline", "0", "--margin", "30%", "--queue-depth", "3"};
  auto argv = words;
  argv.insert(argv.end(), {"--json", td.file("r.json"), "-q"});
  const auto r = testutil::run_cli(argv);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = testutil::load_json(td.file("r.json"));
  const auto run = chunkscope::cli::parse_stream_command(words);
  int hints = 0;
  check_hints(j["diagnosis"], run, "synth", &hints);
  CHECK(hints >= 1);
  // the binary was run by its path: the hints name that path, which a shell can run
  bool named = false;
  for (const auto& f : j["diagnosis"])
    named = named || has(f["next"].get<std::string>(), "`" + testutil::bin_path() + " synth");
  CHECK(named);
}

TEST_CASE("options: the program's printed name is its path when invoked by one, else chunkscope") {
  const std::string before = chunkscope::program_name();
  chunkscope::set_program_name("chunkscope");
  CHECK(chunkscope::program_name() == "chunkscope");
  chunkscope::set_program_name("./build/chunkscope");
  CHECK(chunkscope::program_name() == "./build/chunkscope");
  chunkscope::set_program_name("/opt/my tools/chunkscope");
  CHECK(chunkscope::program_name() == "'/opt/my tools/chunkscope'");
  CHECK(chunkscope::stream_command_line("synth", {}) == "'/opt/my tools/chunkscope' synth");
  chunkscope::set_program_name(before);
}
