// The typed report model: built once from a run's statistics (verdict and diagnosis see
// every section, the device section included), written and read back by the schema
// module, refused field by field when damaged, and read the same way by every command.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

#include "src/errors.hpp"
#include "src/render/html.hpp"
#include "src/report/build.hpp"
#include "src/report/columns.hpp"
#include "src/report/diagnosis.hpp"
#include "src/report/schema.hpp"
#include "src/report/terminal.hpp"
#include "src/report/trace.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;
using namespace chunkscope;

namespace {

bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

bool has_rule(const RunReport& r, const std::string& rule) {
  for (const auto& f : r.diagnosis)
    if (f.rule == rule) return true;
  return false;
}

// A run of `n` chunks of 256 frames at 48 kHz whose chunks wait `out_wait_ns` between the
// processor and the sink (full duplex on a device: the wait for the output callback).
struct SyntheticRun {
  Plan plan = plan_chain("lp:8000:4", 48000);
  RunStats stats;
  EngineResult er;
  Workload w;
  Environment env;
  std::int64_t D = 0;

  SyntheticRun(std::uint64_t n, std::int64_t out_wait_ns, int latency_chunks) {
    D = static_cast<std::int64_t>(256 * 1e9 / 48000);
    RunStatsConfig sc;
    sc.chunk_ns = D;
    sc.budget_ns = latency_chunks * D - D / 5;
    sc.warmup = 10;
    sc.media_ns_per_frame = 1e9 / 48000;
    sc.series_capacity = n;
    stats.prepare(sc);
    for (std::uint64_t k = 0; k < n; ++k) {
      ChunkRecord r{};
      r.seq = k;
      r.frames = 256;
      r.sched = 1'000'000'000 + static_cast<std::int64_t>(k) * D;
      r.ready = r.sched + 20'000;
      r.dequeue = r.ready + 10'000 + static_cast<std::int64_t>(k % 7) * 1'000;
      r.proc_start = r.dequeue;
      r.proc_end = r.proc_start + 5'000;
      r.sink_start = r.proc_end + out_wait_ns + static_cast<std::int64_t>(k % 5) * 1'000;
      r.emit = r.sink_start + 1'000;
      r.dispatches = 1;
      stats.add(r);
    }
    er.produced = n;
    er.start_ns = 1'000'000'000;
    er.end_ns = er.start_ns + static_cast<std::int64_t>(n) * D;
    er.pool_chunks = 18;
    w.command = "monitor";
    w.source = "device 0 'system' (JACK Audio Connection Kit)";
    w.sink = "device 0 'system' (JACK Audio Connection Kit)";
    w.backend = "cpu";
    w.mode = "fused";
    w.rate = 48000;
    w.channels = 2;
    w.chunk_frames = 256;
    w.warmup_chunks = 10;
    w.margin_text = "20%";
    w.margin_ns = D / 5;
    w.queue_depth = 8;
    w.input.kind = InputDesc::Kind::device;
    w.input.device_name = "system";
    env.version = "0.1.0";
    env.commit = "test";
    env.logical_cpus = 2;
  }
};

DeviceSection duplex_device(std::uint64_t xruns, int k) {
  DeviceSection d;
  d.input = d.output = "system";
  d.host_api = "JACK Audio Connection Kit";
  d.duplex = true;
  d.latency_chunks = k;
  d.callbacks = 2000;
  d.xruns = xruns;
  d.output_underflows = xruns;
  return d;
}

std::string terminal(const RunReport& r) {
  std::ostringstream os;
  print_report(os, r);
  return os.str();
}

std::string refusal(const json& j) {
  try {
    (void)run_report_from_json(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("report model: full duplex, the rows after L (queue_out, sink) say so on the row, in the terminal and the page") {
  SyntheticRun run(2000, 8'500'000, 2);
  const RunReport duplex = build_run_report(run.w, run.plan, run.env, run.stats, run.er, {}, duplex_device(0, 3));
  DeviceSection input_only = duplex_device(0, 0);
  input_only.duplex = false;
  input_only.output = "none";
  const RunReport in_only = build_run_report(run.w, run.plan, run.env, run.stats, run.er, {}, input_only);
  const std::string t = terminal(duplex), t_in = terminal(in_only);
  const std::string h = render_html(duplex), h_in = render_html(in_only);
  // the two rows carry the mark, the note under the table gives its meaning with K
  for (const char* row : {"\nqueue_out* ", "\nsink*  "}) {
    CHECK(has(t, row));
    CHECK_FALSE(has(t_in, row));
  }
  CHECK_FALSE(has(t, "\nqueue_in* "));
  CHECK(has(t, "* after L: full duplex, L ends when the chunk is ready to play; queue_out is its wait for the output callback 3 callback(s) after its input"));
  CHECK_FALSE(has(t_in, "* after L"));
  CHECK(has(h, "<td>queue_out*</td>"));
  CHECK(has(h, "<td>sink*</td>"));
  CHECK(has(h, "output callback 3 callback(s) after its input"));
  CHECK_FALSE(has(h_in, "* after L"));
}

TEST_CASE("report model: a device run's xruns reach the verdict and the diagnosis, decided after the device section") {
  SyntheticRun run(2000, 8'500'000, 2);
  const RunReport clean = build_run_report(run.w, run.plan, run.env, run.stats, run.er, {}, duplex_device(0, 2));
  REQUIRE(clean.verdict.realtime_safe.has_value());
  CHECK(*clean.verdict.realtime_safe);
  CHECK_FALSE(has_rule(clean, "xruns"));
  CHECK_FALSE(budget_broken(clean));

  const RunReport bad = build_run_report(run.w, run.plan, run.env, run.stats, run.er, {}, duplex_device(3, 2));
  REQUIRE(bad.verdict.realtime_safe.has_value());
  CHECK_FALSE(*bad.verdict.realtime_safe);
  CHECK(has(bad.verdict.text, "3 xrun(s)"));
  CHECK(has_rule(bad, "xruns"));
  CHECK(budget_broken(bad));
  CHECK_FALSE(has_rule(bad, "healthy"));
}

TEST_CASE("report model: the designed wait for the output callback is no queue_wait finding, the same wait elsewhere is") {
  // chunks wait almost K x D for their output callback: the depth the user chose
  SyntheticRun run(2000, 8'500'000, 2);
  const RunReport device = build_run_report(run.w, run.plan, run.env, run.stats, run.er, {}, duplex_device(0, 2));
  CHECK_FALSE(has_rule(device, "queue_wait"));
  // the same figures from a run without a device: a real queue problem
  run.w.command = "replay";
  const RunReport replay = build_run_report(run.w, run.plan, run.env, run.stats, run.er, {});
  CHECK(has_rule(replay, "queue_wait"));
}

TEST_CASE("report model: a device run's header says the device paces it and how K chunks enter the budget") {
  SyntheticRun run(300, 8'500'000, 2);
  const std::string t = terminal(build_run_report(run.w, run.plan, run.env, run.stats, run.er, {}, duplex_device(0, 2)));
  CHECK(has(t, "paced by the device's callbacks"));
  CHECK_FALSE(has(t, "absolute schedule"));
  CHECK(has(t, "budget B = 2 x D - margin"));
  CHECK(has(t, "device     system -> system"));
}

TEST_CASE("report model: the pin-threads hint fits the machine's CPU count") {
  SyntheticRun run(2000, 2'000'000, 1);
  run.w.command = "synth";
  run.w.input.kind = InputDesc::Kind::synth;
  run.w.input.signal = "noise";
  run.w.sink = "null";
  // a wide spread outside the chain so that a rule suggests pinning
  auto hint_for = [&](int cpus) {
    run.env.logical_cpus = cpus;
    RunReport r = build_run_report(run.w, run.plan, run.env, run.stats, run.er, {});
    // the queue_wait rule (the processor's wake-up) gives the hint
    for (const auto& f : r.diagnosis)
      if (has(f.next, "--rt")) return f.next;
    return std::string();
  };
  const std::string two = hint_for(2), eight = hint_for(8);
  REQUIRE_FALSE(two.empty());
  CHECK_FALSE(has(two, "--cpus"));
  CHECK(has(two, "2 logical CPU(s)"));
  CHECK(has(eight, "--rt --cpus 6,7"));
}

TEST_CASE("report model: JSON round trip is the identity on a real run's report") {
  testutil::TempDir td;
  const auto r = testutil::run_cli({"synth", "--signal", "noise", "--duration", "0.3s", "--chunk", "128", "--speed", "4",
                                    "--chain", "lp:8000:4 | spin:20us:every=7", "--json", td.file("r.json"), "--quiet"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json j = testutil::load_json(td.file("r.json"));
  const RunReport model = run_report_from_json(j);
  CHECK(to_json(model) == j);
  CHECK(model.workload.filter_stages == 1);
  CHECK(model.series.size() == model.counts.emitted);
}

TEST_CASE("report model: a report written by this version keeps loading and renders the same") {
  // tests/data/report_v1.json was written by `chunkscope synth` of this version (see
  // tests/data/README.md); every later version must read it.
  const std::string path = testutil::source_dir() + "/tests/data/report_v1.json";
  const SavedReport saved = load_saved_report(path);
  const RunReport* r = std::get_if<RunReport>(&saved);
  REQUIRE(r != nullptr);
  CHECK(r->workload.command == "synth");
  CHECK(r->counts.counted + r->counts.warmup == r->counts.emitted);
  CHECK(r->series.size() == r->counts.emitted);
  const std::string t = terminal(*r);
  CHECK(has(t, "headline   " + r->verdict.text));
  CHECK(has(t, "diagnosis\n"));
  const auto out = testutil::run_cli({"report", path});
  CHECK(out.rc == 0);
  CHECK(out.out == t);
}

TEST_CASE("report model: damaged reports are refused in one line naming the field, never read out of bounds") {
  const std::string path = testutil::source_dir() + "/tests/data/report_v1.json";
  const json good = testutil::load_json(path);
  REQUIRE(refusal(good).empty());
  json j = good;
  j["stages"].erase("process");
  CHECK(refusal(j) == "field 'stages.process': missing");
  j = good;
  j["counts"]["misses"] = -3;
  CHECK(refusal(j) == "field 'counts.misses': expected a count (0 or more), found -3");
  j = good;
  j["workload"]["dtype"] = "f16";
  CHECK(refusal(j) == "field 'workload.dtype': 'f16' is not f32 or f64");
  j = good;
  j["series"]["columns"]["emit_ns"].erase(0);
  CHECK(has(refusal(j), "field 'series.columns.emit_ns': has "));
  j = good;
  j["checksums"]["output"] = json::array();
  CHECK(has(refusal(j), "field 'checksums.output'"));
  j = good;
  j["latency"].erase("p50");  // a missing member is named, never read past the object
  CHECK(refusal(j) == "field 'latency.p50': missing");
  j = good;
  j["counts"]["miss_list"] = json::array({1, 2});
  CHECK(refusal(j) == "field 'counts.miss_list[0]': expected an object, found number");
  j = good;
  j["diagnosis"][0]["severity"] = "fatal";
  CHECK(refusal(j) == "field 'diagnosis[0].severity': 'fatal' is not warning, info or ok");
  j = good;
  j["verdict"]["blame"] = "gpu";
  CHECK(has(refusal(j), "field 'verdict.blame': 'gpu' is not a stage"));
  // parsed from text: 1e400 is infinity, refused as a value, not an internal error
  std::string text = good.dump();
  const auto at = text.find("\"p95\":");
  REQUIRE(at != std::string::npos);
  text.replace(at, text.find(',', at) - at, "\"p95\":1e400");
  testutil::TempDir td;
  std::ofstream(td.file("inf.json")) << text;
  const auto r = testutil::run_cli({"report", td.file("inf.json")});
  CHECK(r.rc == 2);
  CHECK(has(r.err, "out of range"));
  CHECK(r.err.find('\n') == r.err.size() - 1);
}

TEST_CASE("report model: random damage to a saved report is either read or refused with InputError") {
  const json good = testutil::load_json(testutil::source_dir() + "/tests/data/report_v1.json");
  std::mt19937 rng(12345);
  // every path to a value in the document (arrays: their first element)
  std::vector<json::json_pointer> paths;
  std::function<void(const json&, const json::json_pointer&)> walk = [&](const json& j, const json::json_pointer& p) {
    paths.push_back(p);
    if (j.is_object())
      for (auto it = j.begin(); it != j.end(); ++it) walk(it.value(), p / it.key());
    else if (j.is_array() && !j.empty())
      walk(j[0], p / 0);
  };
  walk(good, json::json_pointer());
  const json replacements[] = {nullptr, "text", -1, 1e300, json::array(), json::object(), true, 0.5, 18446744073709551615ull};
  int refused = 0, read = 0;
  for (int i = 0; i < 3000; ++i) {
    json j = good;
    for (int k = 0; k < 3; ++k) {
      const auto& p = paths[rng() % paths.size()];
      if (p.empty()) continue;
      if (rng() % 3 == 0) {
        const auto parent = p.parent_pointer();
        if (j.contains(parent) && j[parent].is_object()) j[parent].erase(p.back());
      } else if (j.contains(p)) {
        j[p] = replacements[rng() % std::size(replacements)];
      }
    }
    try {
      const RunReport r = run_report_from_json(j);
      std::ostringstream os;
      print_report(os, r);  // whatever was read renders
      ++read;
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      ++refused;
    }
  }
  CHECK(refused > 100);
  CHECK(read > 100);
}

TEST_CASE("report and cadence accept COMPARE.json#VARIANT like stage-bench") {
  testutil::TempDir td;
  auto r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.2s", "--speed", "8", "--rounds", "1",
                              "--variants", "cpu:fused,cpu:unfused", "--json", td.file("c.json"), "--quiet"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  r = testutil::run_cli({"report", td.file("c.json") + "#cpu:unfused"});
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(has(r.out, "on cpu (unfused, "));  // then the kernels: "avx2 wavefront kernels)"
  CHECK(has(r.out, " kernels), "));
  r = testutil::run_cli({"cadence", td.file("c.json") + "#cpu:fused"});
  CHECK_MESSAGE(r.rc == 0, r.err);
  r = testutil::run_cli({"cadence", td.file("c.json")});
  CHECK(r.rc == 2);
  CHECK(has(r.err, "#VARIANT"));
  r = testutil::run_cli({"report", td.file("c.json") + "#cuda:graph"});
  CHECK(r.rc == 2);
  CHECK(has(r.err, "no variant 'cuda:graph'"));
}

TEST_CASE("report model: with --speed N the header says what a chunk is in media and in wall time") {
  testutil::TempDir td;
  const auto r = testutil::run_cli({"synth", "--duration", "0.2s", "--chunk", "1024", "--speed", "4"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(has(r.out, "chunk 1024 frames = 21.333 ms of media = D 5.333 ms of wall time at 4x"));
  CHECK(has(r.out, "the deadline shrinks with the speed"));
  const auto one = testutil::run_cli({"synth", "--duration", "0.2s", "--chunk", "1024"});
  CHECK_FALSE(has(one.out, "of media = D"));
}

TEST_CASE("trace: the real process and thread ids, absolute CLOCK_MONOTONIC times, the clock named") {
  testutil::TempDir td;
  const auto r = testutil::run_cli({"synth", "--duration", "0.1s", "--chunk", "256", "--speed", "8", "--trace",
                                    td.file("t.json"), "--quiet"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json t = testutil::load_json(td.file("t.json"));
  CHECK(t["otherData"]["clock"] == "CLOCK_MONOTONIC");
  const int pid = t["otherData"]["pid"];
  CHECK(pid > 1);
  std::set<int> thread_tids;
  double min_ts = 1e300;
  for (const auto& e : t["traceEvents"]) {
    CHECK(e["pid"] == pid);
    const std::string ph = e["ph"];
    CHECK((ph == "X" || ph == "C" || ph == "M"));
    if (ph == "X") {
      min_ts = std::min(min_ts, e["ts"].get<double>());
      const std::string cat = e["cat"];
      if (cat == "source" || cat == "process" || cat == "sink") thread_tids.insert(e["tid"].get<int>());
    }
  }
  // three distinct Linux thread ids, none of them the process itself (the main thread only waits)
  CHECK(thread_tids.size() == 3);
  for (int tid : thread_tids) {
    CHECK(tid > 0);
    CHECK(tid < kTraceQueueInTrack);
    CHECK(tid != pid);
  }
  // absolute monotonic time: the first slice started after boot, in µs, not at 0
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const double now_us = static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) / 1e3;
  CHECK(min_ts > 0);
  CHECK(min_ts < now_us);
  CHECK(min_ts > now_us - 600e6);  // within the last ten minutes
}

TEST_CASE("miss attribution: processing alone over the budget is the chain's miss, whatever else was late") {
  RunStatsConfig sc;
  sc.chunk_ns = 5'000'000;
  sc.budget_ns = 4'000'000;
  sc.media_ns_per_frame = 1e9 / 48000;
  RunStats st;
  st.prepare(sc);
  auto chunk = [&](std::uint64_t seq, std::int64_t source_ns, std::int64_t process_ns) {
    ChunkRecord r{};
    r.seq = seq;
    r.frames = 240;
    r.sched = 1'000'000'000 + static_cast<std::int64_t>(seq) * sc.chunk_ns;
    r.ready = r.sched + source_ns;
    r.dequeue = r.proc_start = r.ready + 1'000;
    r.proc_end = r.proc_start + process_ns;
    r.sink_start = r.proc_end + 1'000;
    r.emit = r.sink_start + 1'000;
    st.add(r);
  };
  chunk(0, 9'000'000, 5'000'000);  // the source was later than the chain was slow: still the chain's
  chunk(1, 9'000'000, 1'000'000);  // the chain kept within B: the late source is to blame
  chunk(2, 10'000, 4'500'000);     // the chain alone
  REQUIRE(st.miss_list.size() == 3);
  CHECK(st.miss_list[0].blame == Stage::process);
  CHECK(st.miss_list[1].blame == Stage::source);
  CHECK(st.miss_list[2].blame == Stage::process);
  CHECK(st.miss_blame[static_cast<std::size_t>(Stage::process)] == 2);
  CHECK(st.miss_blame[static_cast<std::size_t>(Stage::source)] == 1);
}

TEST_CASE("one name, one meaning: the period ratio is written as cadence.period_ratio_p95 only, and read from an older report's cadence.realtime_factor") {
  testutil::TempDir tmp;
  const std::string path = tmp.file("r.json");
  const auto r = testutil::run_cli({"synth", "--duration", "0.3s", "--quiet", "--json", path});
  REQUIRE(r.rc == 0);
  json j = testutil::load_json(path);
  REQUIRE(j["cadence"].contains("period_ratio_p95"));
  CHECK_FALSE(j["cadence"].contains("realtime_factor"));
  CHECK(j["throughput"]["realtime_factor"] == j["throughput"]["speed_factor"]);  // the real-time factor: media / wall
  j["cadence"].erase("period_ratio_p95");
  j["cadence"]["realtime_factor"] = 1.25;  // as an older version wrote it
  CHECK(run_report_from_json(j).cadence.period_ratio_p95 == 1.25);
}

TEST_CASE("report model: a run that missed nothing is called safe only over 200 counted chunks, a miss is not safe at any count") {
  // a warm-up of 10: 209 chunks count 199, 210 count 200
  for (const std::uint64_t n : {std::uint64_t{209}, std::uint64_t{210}}) {
    SyntheticRun run(n, 8'500'000, 2);
    const RunReport r = build_run_report(run.w, run.plan, run.env, run.stats, run.er, {}, duplex_device(0, 2));
    REQUIRE(r.counts.counted == n - 10);
    REQUIRE(r.counts.misses == 0);
    REQUIRE(r.headroom);
    CHECK(r.headroom->p95 > 0);
    if (n == 209) {
      CHECK_FALSE(r.verdict.realtime_safe.has_value());
      CHECK(r.verdict.needed_chunks == kChunksToJudgeP95);
      CHECK(r.verdict.text.find("cannot judge (199 chunks, need 200)") == 0);
      CHECK(has_rule(r, "too_few_to_judge"));
      CHECK_FALSE(has_rule(r, "healthy"));
      CHECK(has(terminal(r), "headline   cannot judge (199 chunks, need 200)"));
    } else {
      CHECK(r.verdict.realtime_safe == true);
      CHECK(r.verdict.needed_chunks == 0);
      CHECK_FALSE(has_rule(r, "too_few_to_judge"));
    }
    const RunReport back = run_report_from_json(to_json(r));
    CHECK(back.verdict == r.verdict);
    CHECK(to_json(r)["verdict"].contains("needed_chunks") == (n == 209));
  }
  // every chunk late, few of them: not safe, whatever the count
  SyntheticRun late(40, 8'500'000, 1);
  const RunReport r = build_run_report(late.w, late.plan, late.env, late.stats, late.er, {}, duplex_device(0, 1));
  REQUIRE(r.counts.counted == 30);
  REQUIRE(r.counts.misses > 0);
  CHECK(r.verdict.realtime_safe == false);
  CHECK(r.verdict.needed_chunks == 0);
  CHECK_FALSE(has_rule(r, "too_few_to_judge"));
  // an xrun too
  SyntheticRun few(40, 8'500'000, 2);
  const RunReport x = build_run_report(few.w, few.plan, few.env, few.stats, few.er, {}, duplex_device(1, 2));
  CHECK(x.verdict.realtime_safe == false);
  CHECK(x.verdict.needed_chunks == 0);
}

TEST_CASE("report model: a verdict that cannot be judged has its own words, with the count and the need") {
  CHECK(std::string(verdict_word(std::nullopt, kChunksToJudgeP95)) == "cannot judge");
  CHECK(std::string(verdict_word(std::nullopt, 0)) == "-");
  CHECK(std::string(verdict_word(true, 0)) == "safe");
  CHECK(std::string(verdict_word(false, 0)) == "NOT safe");
  CompareSummary s;
  s.counted = 84;
  s.needed_chunks = kChunksToJudgeP95;
  CHECK(s.verdict_words() == "cannot judge (84 chunks, need 200)");
  s.needed_chunks = 0;
  CHECK(s.verdict_words() == "throughput only");
}

// ---------------------------------------------------------------- 80 columns

namespace {

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> w;
  std::istringstream is(s);
  for (std::string x; is >> x;) w.push_back(x);
  return w;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> l;
  std::istringstream is(s);
  for (std::string x; std::getline(is, x);) l.push_back(x);
  return l;
}

// A line over `width` is allowed only when it is one command to paste that is wider alone.
void check_fits(const std::string& text, std::size_t width) {
  for (const auto& l : lines_of(text)) {
    if (chunkscope::display_width(l) <= width) continue;
    CAPTURE(l);
    const auto at = l.find_first_not_of(' ');
    const auto close = l.find('`', at + 1);
    CHECK(l[at] == '`');
    CHECK(close != std::string::npos);
    CHECK(l.size() - close <= 3);  // the span, and at most its punctuation
    CHECK(l.find('`', close + 1) == std::string::npos);
  }
}

}  // namespace

TEST_CASE("columns: long lines wrap under their text, words and commands intact, width 0 leaves them") {
  using chunkscope::fit_width;
  const std::string text =
      "headline   NOT safe: 13 stall event(s) (13 missed chunk(s)) of 1490 counted chunks, blamed on process 13, the "
      "worst took 1.177 ms (chunk 1050)\n"
      "  [warning, high] deadline_misses: 13 of 1490 counted chunks missed the budget B 1.067 ms (0.87%)\n"
      "      next: time it alone: `chunkscope stage-bench RUN.json --stage process --iterations 100000 --warmup 1000 "
      "--chunk 256`\n"
      "stage            p50       p90\n";
  CHECK(fit_width(text, 0) == text);
  const std::string fitted = fit_width(text, 80);
  check_fits(fitted, 80);
  CHECK(split_words(fitted) == split_words(text));  // nothing lost, nothing added
  const auto l = lines_of(fitted);
  REQUIRE(l.size() >= 7);
  CHECK(l[1].rfind("           ", 0) == 0);  // under the headline's text (column 11)
  CHECK(l[1][11] != ' ');
  CHECK(l[3].rfind("      ", 0) == 0);  // 4 deeper than the finding's 2
  // the command is one piece, on a line of its own, wider than 80 but whole
  bool whole = false;
  for (const auto& x : l) whole = whole || x.find("`chunkscope stage-bench RUN.json --stage process --iterations") != std::string::npos;
  CHECK(whole);
  CHECK(fitted.find("1.177\n") == std::string::npos);  // a number keeps its unit
  CHECK(l.back() == "stage            p50       p90");   // short lines as they were
  CHECK(chunkscope::display_width("µs") == 2);
}

TEST_CASE("columns: a wide table folds into blocks that repeat its key, free text wraps, width 0 keeps rows whole") {
  using chunkscope::TextColumn;
  using chunkscope::TextTable;
  // the sweep's cells table: 3 key columns, 8 figures, free text at the end
  TextTable t({{"variant", 12, true, 0}, {"chunk", 6}, {"streams", 7}, {"headroom", 10}, {"e2e p95", 10}, {"proc p50", 10},
               {"misses", 7}, {"events", 6}, {"drops", 6}, {"cpu", 7}, {"busy", 7}, {"cell", 0, true, 2}},
              3);
  const std::vector<std::vector<std::string>> rows = {
      {"cpu", "256", "1", "3.967 ms", "299.8 µs", "68.3 µs", "0", "0", "0", "2.3%", "3%", "safe"},
      {"cpu", "256", "16", "3.806 ms", "246.1 µs", "49.8 µs", "14", "14", "0", "25.9%", "37%",
       "NOT safe (events: chain 2, platform 12), blame stream 0"}};
  for (const auto& r : rows) t.row(r);
  t.span({"cpu", "256", "32"}, "skipped: a smaller stream count at this chunk size was not safe");
  // width 0: the lines the fixed format gives, whole
  std::string expect = fmt::format("{:<12} {:>6} {:>7} {:>10} {:>10} {:>10} {:>7} {:>6} {:>6} {:>7} {:>7}  {}\n", "variant",
                                   "chunk", "streams", "headroom", "e2e p95", "proc p50", "misses", "events", "drops", "cpu",
                                   "busy", "cell");
  for (const auto& r : rows)
    expect += fmt::format("{:<12} {:>6} {:>7} {:>10} {:>10} {:>10} {:>7} {:>6} {:>6} {:>7} {:>7}  {}\n", r[0], r[1], r[2],
                          r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]);
  expect += fmt::format("{:<12} {:>6} {:>7}  {}\n", "cpu", "256", "32",
                        "skipped: a smaller stream count at this chunk size was not safe");
  CHECK(t.render(0) == expect);
  for (std::size_t width : {80u, 60u}) {
    CAPTURE(width);
    const std::string folded = t.render(width);
    std::size_t blocks = 1;
    const auto l = lines_of(folded);
    for (const auto& x : l) {
      CAPTURE(x);
      CHECK(chunkscope::display_width(x) <= width);
      blocks += x.empty();
    }
    CHECK(blocks >= 2);
    // every block starts with the key's header; the key cells lead every row of every block
    std::size_t headers = 0, keyed16 = 0;
    for (const auto& x : l) {
      headers += x.rfind("variant       chunk streams", 0) == 0;
      keyed16 += x.rfind("cpu             256      16", 0) == 0;
    }
    CHECK(headers == blocks);
    CHECK(keyed16 == blocks);
    // nothing lost, nothing added but the repeated key
    std::vector<std::string> want = split_words(expect), got = split_words(folded);
    std::multiset<std::string> w(want.begin(), want.end()), g(got.begin(), got.end());
    for (const auto& k : {"variant", "chunk", "streams"})
      for (std::size_t b = 1; b < blocks; ++b) w.insert(k);
    for (std::size_t b = 1; b < blocks; ++b)
      for (const auto& k : {"cpu", "256", "1", "cpu", "256", "16"}) w.insert(k);
    CHECK(g == w);
  }
  // a cell wider than its column widens the blocks it is in, so they still fit
  TextTable named({{"variant", 6, true, 0}, {"p50", 10}, {"p95", 10}, {"verdict", 0, true, 2}}, 1);
  named.row({"a-variant-name-of-30-letters-x", "1.0 ms", "2.0 ms", "safe"});
  for (const auto& x : lines_of(named.render(44))) {
    CAPTURE(x);
    CHECK(chunkscope::display_width(x) <= 44);
  }
}

TEST_CASE("columns: on a terminal the report and diagnosis fit its width, into a file or pipe the lines stay whole") {
  // a terminal of 80 and one of 100 columns (script(1) gives the command a pseudo-terminal)
  const std::string bin = testutil::bin_path();
  const std::string run = bin + " synth --duration 0.5s --chain 'hp:80:4 | lp:12k:8 | peak:1000:q=0.7:gain=6' --chunk 128";
  auto on_terminal = [&](int cols) {
    testutil::TempDir td;
    const std::string inner = "stty cols " + std::to_string(cols) + "; " + run;
    const std::string cmd = "script -qec \"" + inner + "\" /dev/null > " + td.file("out") + " 2>&1 < /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::string out = testutil::slurp(td.file("out"));
    out.erase(std::remove(out.begin(), out.end(), '\r'), out.end());
    return out;
  };
  const std::string narrow = on_terminal(80), wide = on_terminal(100);
  REQUIRE(lines_of(narrow).size() > 40);
  check_fits(narrow, 80);
  check_fits(wide, 100);
  std::size_t over80 = 0;
  for (const auto& l : lines_of(wide)) over80 += chunkscope::display_width(l) > 80;
  CHECK(over80 > 0);  // the wider terminal's width is used, not 80
  // into a pipe: whole lines
  const auto piped = testutil::run_cli({"synth", "--duration", "0.5s", "--chain", "hp:80:4 | lp:12k:8 | peak:1000:q=0.7:gain=6",
                                        "--chunk", "128"});
  REQUIRE(piped.rc == 0);
  std::size_t long_lines = 0;
  for (const auto& l : lines_of(piped.out)) long_lines += chunkscope::display_width(l) > 100;
  CHECK(long_lines > 0);
  // the stage table fits 80 columns either way
  for (const auto& l : lines_of(piped.out))
    if (l.rfind("stage ", 0) == 0 || l.rfind("end-to-end", 0) == 0 || l.rfind("process ", 0) == 0) {
      CAPTURE(l);
      CHECK(chunkscope::display_width(l) <= 80);
    }
}

TEST_CASE("columns: on a terminal compare's and sweep's tables fold to its width, into a pipe they stay whole") {
  const std::string bin = testutil::bin_path();
  auto on_terminal = [&](const std::string& run, int cols) {
    testutil::TempDir td;
    // stdout on an 80-column pseudo-terminal; the progress lines on stderr are not the report
    const std::string inner = "stty cols " + std::to_string(cols) + "; " + run + " 2>/dev/null";
    const std::string cmd = "script -qec \"" + inner + "\" /dev/null > " + td.file("out") + " 2>&1 < /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::string out = testutil::slurp(td.file("out"));
    out.erase(std::remove(out.begin(), out.end(), '\r'), out.end());
    return out;
  };
  auto count_starting = [](const std::string& text, const std::string& head) {
    std::size_t n = 0;
    for (const auto& l : lines_of(text)) n += l.rfind(head, 0) == 0;
    return n;
  };
  SUBCASE("compare") {
    const std::string run = bin + " compare --synth noise --duration 0.3s --speed max --rounds 2 --variants "
                                  "'a=hp:80:4 | lp:12k:8;b=lp:1k:2'";
    const std::string narrow = on_terminal(run, 80);
    check_fits(narrow, 80);
    CHECK(count_starting(narrow, "stage        variant ") == 2);  // the stage table in two blocks
    CHECK(count_starting(narrow, "variant ") >= 2);               // so is the summary
    CHECK(narrow.find("throughput only") != std::string::npos);
  }
  SUBCASE("sweep") {
    const std::string run = bin + " sweep --synth noise -c hp:80:4 --chunks 256 --streams 1,2,3,4,5 --duration 0.1s "
                                  "--baseline 0";
    const std::string narrow = on_terminal(run, 80);
    check_fits(narrow, 80);
    CHECK(count_starting(narrow, "   chunk ") == 2);                      // the grid in two blocks
    CHECK(count_starting(narrow, "variant       chunk streams") == 2);  // the cells too
    CHECK(count_starting(narrow, "cpu             256       1") == 2);  // each block keys its rows
    const auto piped = testutil::run_cli({"sweep", "--synth", "noise", "-c", "hp:80:4", "--chunks", "256", "--streams",
                                          "1,2,3,4,5", "--duration", "0.1s", "--baseline", "0"});
    REQUIRE(piped.rc == 0);
    CHECK(count_starting(piped.out, "variant       chunk streams") == 1);  // whole rows into a pipe
    std::size_t wide = 0;
    for (const auto& l : lines_of(piped.out)) wide += chunkscope::display_width(l) > 80;
    CHECK(wide > 0);
  }
}
