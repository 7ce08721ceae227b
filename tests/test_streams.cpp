// Many streams at once (--streams N): each stream's figures, the worst stream, the stream
// to blame and the pooled figures, from crafted statistics and from real runs.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <csignal>
#include <filesystem>
#include <sstream>
#include <thread>

#include "rt/run_stats.hpp"
#include "src/render/html.hpp"
#include "src/report/build.hpp"
#include "src/report/schema.hpp"
#include "src/report/streams.hpp"
#include "src/report/terminal.hpp"
#include "src/session/stream_set.hpp"
#include "tests/stats_fixture.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;

namespace {

using stats_fixture::config;
using stats_fixture::kB;
using stats_fixture::kD;
using stats_fixture::kT0;

// One stream of `n` chunks whose processing takes 10 us, except the chunks in `slow`.
struct CraftedStream {
  RunStats stats;
  RunReport report;
  CraftedStream(int n, const std::map<std::uint64_t, std::int64_t>& slow) {
    stats.prepare(config());
    std::int64_t prev_end = 0;
    for (int k = 0; k < n; ++k) {
      const auto it = slow.find(static_cast<std::uint64_t>(k));
      const std::int64_t proc = it == slow.end() ? 10'000 : it->second;
      ChunkRecord r = stats_fixture::on_time(static_cast<std::uint64_t>(k), proc);
      if (prev_end > r.dequeue) {  // the processor was still busy with the chunk before
        const std::int64_t shift = prev_end - r.dequeue;
        r.dequeue += shift;
        r.proc_start += shift;
        r.proc_end += shift;
        r.sink_start += shift;
        r.emit += shift;
      }
      prev_end = r.proc_end;
      stats.add(r);
    }
    report = stats_fixture::report_of(stats, static_cast<std::uint64_t>(n));
  }
};

}  // namespace

TEST_CASE("streams: the worst stream, the stream to blame and the pooled figures from each stream's chunks") {
  // stream 0 never misses; stream 1 misses twice in one stall (chunk 50 holds up 51) with a
  // long one; stream 2 misses three times, each its own event, each only just
  const CraftedStream s0(400, {});
  const CraftedStream s1(400, {{50, 12'000'000}});
  const CraftedStream s2(400, {{100, kB}, {200, kB}, {300, kB}});
  REQUIRE(s0.report.counts.misses == 0);
  REQUIRE(s1.report.counts.events() == 1);
  REQUIRE(s1.report.counts.misses == 2);
  REQUIRE(s2.report.counts.events() == 3);
  REQUIRE(s2.report.counts.misses == 3);
  const std::vector<StreamRun> runs = {{&s0.report, &s0.stats, 0}, {&s1.report, &s1.stats, kD / 3},
                                       {&s2.report, &s2.stats, 2 * kD / 3}};
  const StreamsSection s = build_streams_section(runs, true, kD / 3);
  REQUIRE(s.streams.size() == 3);
  CHECK(s.count == 3);
  // pooled counts are the streams' sums; the pooled histogram holds every counted chunk
  CHECK(s.counted == 1200);
  CHECK(s.misses == 5);
  CHECK(s.stalls == 4);
  CHECK(s.latency.count == 1200);
  CHECK(s.latency.max == s1.report.latency.max);
  CHECK(s.latency.min == std::min({s0.report.latency.min, s1.report.latency.min, s2.report.latency.min}));
  CHECK(s.process.count == 1200);
  REQUIRE(s.headroom_p95_ns);
  CHECK(*s.headroom_p95_ns == kB - s.latency.p95);
  // per stream: its own report's figures, its own offset
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(s.streams[k].stream == static_cast<int>(k));
    CHECK(s.streams[k].offset_ns == runs[k].offset_ns);
    CHECK(s.streams[k].counted == runs[k].report->counts.counted);
    CHECK(s.streams[k].latency.p95 == runs[k].report->latency.p95);
  }
  // all three are misses-free at p95, but streams 1 and 2 missed: not safe; of those the
  // worst has the least p95 headroom; the stream to blame has the most stall events
  CHECK(s.streams[0].realtime_safe == true);
  CHECK(s.streams[1].realtime_safe == false);
  CHECK(s.streams[2].realtime_safe == false);
  CHECK(s.realtime_safe == false);
  CHECK(s.unsafe_streams() == 2);
  const int expect_worst = *s.streams[1].headroom_p95_ns <= *s.streams[2].headroom_p95_ns ? 1 : 2;
  CHECK(s.worst == expect_worst);
  REQUIRE(s.blame);
  CHECK(*s.blame == 2);

  // the whole run's report: the worst stream's sections, its verdict over every stream
  const RunReport r = combine_streams(runs, true, kD / 3);
  REQUIRE(r.streams);
  CHECK(r.verdict.realtime_safe == false);
  CHECK(r.counts.misses == runs[static_cast<std::size_t>(s.worst)].report->counts.misses);
  CHECK(r.verdict.text.find(fmt::format("2 of 3 streams not safe; the worst, stream {}", s.worst)) == 0);
  CHECK(budget_broken(r));
  bool finding = false;
  for (const auto& f : r.diagnosis) finding = finding || f.rule == "streams_not_safe";
  CHECK(finding);
  std::ostringstream os;
  print_report(os, r);
  CHECK(os.str().find("blame      stream 2: the most stall events (3) of the 3 streams") != std::string::npos);

  // the page shows every stream and the pooled row
  const std::string html = render_html(r);
  CHECK(html.find("<h2>Streams</h2>") != std::string::npos);
  CHECK(html.find("Stream 2 has the most stall events") != std::string::npos);
  CHECK(html.find("<b>pooled</b>") != std::string::npos);

  // the section survives the JSON report
  const RunReport back = run_report_from_json(to_json(r));
  REQUIRE(back.streams);
  CHECK(back.streams->count == 3);
  CHECK(back.streams->worst == s.worst);
  CHECK(back.streams->blame == s.blame);
  CHECK(back.streams->counted == s.counted);
  CHECK(back.streams->latency.p95 == s.latency.p95);
  CHECK(back.streams->streams[2].stalls == 3);
  CHECK(back.streams->streams[1].offset_ns == kD / 3);
  CHECK(back.streams->staggered);
  CHECK(to_json(back).dump() == to_json(r).dump());
}

TEST_CASE("streams: all streams safe make a safe run, the worst is the one with the least headroom") {
  const CraftedStream a(300, {{10, 2'000'000}});  // one slow chunk, below B
  const CraftedStream b(300, {});
  const std::vector<StreamRun> runs = {{&a.report, &a.stats, 0}, {&b.report, &b.stats, 0}};
  const StreamsSection s = build_streams_section(runs, false, 0);
  CHECK(s.realtime_safe == true);
  CHECK(!s.blame);
  CHECK(s.unsafe_streams() == 0);
  // p95 of both is 10 us-ish; a's max is larger but headroom is judged at p95: the tie on
  // p95 goes to the lower index unless a's p95 is lower
  const int expect = *s.streams[1].headroom_p95_ns < *s.streams[0].headroom_p95_ns ? 1 : 0;
  CHECK(s.worst == expect);
  const RunReport r = combine_streams(runs, false, 0);
  CHECK(r.verdict.realtime_safe == true);
  CHECK(!budget_broken(r));
  CHECK(r.verdict.text.find("worst of 2 streams") == 0);
}

TEST_CASE("streams: a stream with too few chunks to judge leaves the pooled verdict open, one that missed decides it") {
  const CraftedStream many(300, {});
  const CraftedStream few(150, {});                    // nothing missed, 150 counted
  const CraftedStream few_late(150, {{20, 2 * kB}});  // missed: not safe at any count
  REQUIRE(few.report.counts.counted == 150);
  CHECK_FALSE(few.report.verdict.realtime_safe.has_value());
  CHECK(few.report.verdict.needed_chunks == kChunksToJudgeP95);
  CHECK(many.report.verdict.realtime_safe == true);
  CHECK(few_late.report.verdict.realtime_safe == false);
  CHECK(few_late.report.verdict.needed_chunks == 0);

  const std::vector<StreamRun> open_runs = {{&many.report, &many.stats, 0}, {&few.report, &few.stats, 0}};
  const StreamsSection s = build_streams_section(open_runs, false, 0);
  CHECK_FALSE(s.realtime_safe.has_value());
  CHECK(s.needed_chunks == kChunksToJudgeP95);
  CHECK(s.streams[1].needed_chunks == kChunksToJudgeP95);
  CHECK(s.unsafe_streams() == 0);
  const RunReport r = combine_streams(open_runs, false, 0);
  CHECK_FALSE(r.verdict.realtime_safe.has_value());
  CHECK(r.verdict.needed_chunks == kChunksToJudgeP95);
  CHECK(r.verdict.text.find("cannot judge (150 chunks, need 200)") != std::string::npos);
  CHECK(run_report_from_json(to_json(r)) == r);

  const std::vector<StreamRun> late_runs = {{&few.report, &few.stats, 0}, {&few_late.report, &few_late.stats, 0}};
  const StreamsSection t = build_streams_section(late_runs, false, 0);
  CHECK(t.realtime_safe == false);
  CHECK(t.needed_chunks == 0);
  CHECK(combine_streams(late_runs, false, 0).verdict.realtime_safe == false);
}

TEST_CASE("streams: a run without a schedule (--speed max) states no stagger and no offsets") {
  testutil::TempDir dir;
  const std::string rd = dir.file("rd"), json = rd + "/report.json", html = rd + "/report.html";
  const auto res = testutil::run_cli({"synth", "--duration", "0.5s", "--chain", "lp:8000:2", "--streams", "2",
                                      "--speed", "max", "--report-dir", rd});
  REQUIRE_MESSAGE(res.rc == 0, res.err);
  CHECK(res.out.find("unpaced (--speed max): no schedules") != std::string::npos);
  CHECK(res.out.find("staggered by") == std::string::npos);
  const auto j = testutil::load_json(json);
  CHECK(j.at("streams").at("offset_step_ns") == 0);
  for (const auto& e : j.at("streams").at("per_stream")) CHECK(e.at("offset_ns") == 0);
  const std::string page = testutil::slurp(html);
  CHECK(page.find("unpaced (--speed max): no schedules") != std::string::npos);
  CHECK(page.find("staggered by") == std::string::npos);
}

TEST_CASE("streams: worst_stream ranks an incomplete stream first, then an unsafe one, then the least headroom") {
  std::vector<StreamFigures> f(4);
  for (int k = 0; k < 4; ++k) {
    f[static_cast<std::size_t>(k)].stream = k;
    f[static_cast<std::size_t>(k)].realtime_safe = true;
    f[static_cast<std::size_t>(k)].headroom_p95_ns = 1000 - k;
  }
  CHECK(worst_stream(f) == 3);
  f[1].realtime_safe = false;
  CHECK(worst_stream(f) == 1);
  f[0].state = RunState::incomplete;
  f[0].realtime_safe.reset();
  CHECK(worst_stream(f) == 0);
}

TEST_CASE("streams: a real run of three synthetic streams counts every chunk of every stream once") {
  testutil::TempDir dir;
  const std::string json = dir.file("r.json");
  const auto res = testutil::run_cli({"synth", "--duration", "1s", "--chunk", "480", "--chain", "lp:8000:4", "--streams",
                                      "3", "--warmup", "5", "--baseline", "0", "--quiet", "--json", json});
  REQUIRE_MESSAGE(res.rc <= 1, res.err);
  const auto j = testutil::load_json(json);
  const auto& st = j.at("streams");
  CHECK(st.at("count") == 3);
  CHECK(st.at("stagger") == true);
  // 1 s at 48 kHz in chunks of 480 frames = D of 10 ms: 100 chunks, 5 of them warm-up
  const std::int64_t D = 10'000'000;
  CHECK(st.at("offset_step_ns").get<std::int64_t>() == (D + 1) / 3);
  std::uint64_t counted = 0, misses = 0;
  for (int k = 0; k < 3; ++k) {
    const auto& e = st.at("per_stream").at(k);
    CHECK(e.at("stream") == k);
    CHECK(e.at("offset_ns").get<std::int64_t>() == (D * k + 1) / 3);
    // a stream drops only when its pool runs dry; what it counts plus what it dropped is every chunk
    CHECK(e.at("counted").get<std::uint64_t>() + e.at("drops").get<std::uint64_t>() == 95);
    counted += e.at("counted").get<std::uint64_t>();
    misses += e.at("misses").get<std::uint64_t>();
  }
  CHECK(st.at("pooled").at("counted").get<std::uint64_t>() == counted);
  CHECK(st.at("pooled").at("latency").at("count").get<std::uint64_t>() == counted);
  CHECK(st.at("pooled").at("misses").get<std::uint64_t>() == misses);
  const int worst = st.at("worst");
  CHECK(j.at("counts").at("counted") == st.at("per_stream").at(worst).at("counted"));
  // the run's verdict is safe only when every stream's is
  bool all_safe = true;
  for (const auto& e : st.at("per_stream")) all_safe = all_safe && e.at("realtime_safe") == true;
  CHECK((j.at("verdict").at("realtime_safe") == true) == all_safe);
}

TEST_CASE("streams: aligned schedules give every stream offset 0") {
  testutil::TempDir dir;
  const std::string json = dir.file("r.json");
  const auto res = testutil::run_cli({"synth", "--duration", "0.3s", "--streams", "2", "--stagger", "off", "--baseline",
                                      "0", "--quiet", "--json", json});
  REQUIRE_MESSAGE(res.rc <= 1, res.err);
  const auto j = testutil::load_json(json);
  CHECK(j.at("streams").at("stagger") == false);
  CHECK(j.at("streams").at("offset_step_ns") == 0);
  for (const auto& e : j.at("streams").at("per_stream")) CHECK(e.at("offset_ns") == 0);
}

TEST_CASE("streams: bad --streams and what cannot go with it are one line and exit 2") {
  auto one_line_exit2 = [](const std::vector<std::string>& args, const std::string& says) {
    const auto r = testutil::run_cli(args);
    CHECK(r.rc == 2);
    CHECK(r.err.find(says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  one_line_exit2({"synth", "--streams", "0"}, "--streams");
  one_line_exit2({"synth", "--streams", "257"}, "--streams");
  one_line_exit2({"synth", "--streams", "two"}, "--streams");
  one_line_exit2({"synth", "--streams", "2", "--stagger", "sometimes"}, "--stagger");
  testutil::TempDir dir;
  one_line_exit2({"synth", "--streams", "2", "--output", dir.file("o.wav")}, "--output: one file cannot hold 2 streams");
}

TEST_CASE("streams: SIGINT stops every stream, the report is interrupted and names each stream's state") {
  testutil::TempDir td;
  const pid_t pid = testutil::spawn_cli(td.path().string(),
                                        {"synth", "--duration", "60s", "--chain", "spin:1s", "--streams", "2", "--baseline",
                                         "0", "--json", "r.json", "--quiet"},
                                        td.file("stdout"), td.file("stderr"));
  // streaming: the main thread, two stream launchers and each stream's three engine threads
  const std::string tasks = fmt::format("/proc/{}/task", pid);
  bool running = false;
  for (int i = 0; i < 300 && !running; ++i) {
    std::error_code ec;
    std::size_t n = 0;
    for (auto it = std::filesystem::directory_iterator(tasks, ec); !ec && it != std::filesystem::directory_iterator();
         it.increment(ec))
      ++n;
    running = n >= 9;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(running);
  ::kill(pid, SIGINT);
  REQUIRE(testutil::wait_cli(pid, 60) == 0);
  const auto j = testutil::load_json(td.file("r.json"));
  CHECK(j.at("state") == "interrupted");
  const int worst = j.at("streams").at("worst");
  CHECK(j.at("reason").get<std::string>().find(fmt::format("stream {}: stopped by a signal", worst)) == 0);
  for (const auto& e : j.at("streams").at("per_stream")) CHECK(e.at("state") == "interrupted");
}

TEST_CASE("streams: compare --streams 2 runs every variant's streams at once, rounds and verdicts cover all of them") {
  testutil::TempDir dir;
  const std::string json = dir.file("c.json");
  const auto res = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.5s", "--chunk", "480", "--chain",
                                      "lp:8000:2", "--variants", "cpu:fused,cpu:unfused", "--rounds", "2", "--streams", "2",
                                      "--warmup", "5", "--quiet", "--json", json});
  REQUIRE_MESSAGE(res.rc <= 1, res.err);
  const auto j = testutil::load_json(json);
  REQUIRE(j.at("variants").size() == 2);
  for (std::size_t v = 0; v < 2; ++v) {
    const auto& rep = j.at("variants").at(v).at("report");
    const auto& st = rep.at("streams");
    CHECK(st.at("count") == 2);
    // 0.5 s at 48 kHz in 480-frame chunks: 50 chunks a round, 5 of them warm-up, two rounds
    std::uint64_t counted = 0, drops = 0, misses = 0;
    for (const auto& e : st.at("per_stream")) {
      CHECK(e.at("counted").get<std::uint64_t>() + e.at("drops").get<std::uint64_t>() == 2 * 45);
      counted += e.at("counted").get<std::uint64_t>();
      drops += e.at("drops").get<std::uint64_t>();
      misses += e.at("misses").get<std::uint64_t>();
    }
    // each round pools both streams' chunks of that round
    const auto& rounds = j.at("per_round").at(v).at("rounds");
    REQUIRE(rounds.size() == 2);
    std::uint64_t round_counted = 0, round_misses = 0;
    for (const auto& r : rounds) {
      round_counted += r.at("counted").get<std::uint64_t>();
      round_misses += r.at("misses").get<std::uint64_t>();
    }
    CHECK(round_counted == counted);
    CHECK(round_misses == misses);
    // the summary's misses and drops are every stream's
    const auto& sum = j.at("summary").at(v);
    CHECK(sum.at("misses").get<std::uint64_t>() == misses);
    CHECK(sum.at("drops").get<std::uint64_t>() == drops);
  }
}
