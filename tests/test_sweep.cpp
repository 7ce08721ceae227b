// chunkscope sweep: the grid, the rule, the frontier, the row that stops at its first cell
// that is not safe, and Ctrl-C that keeps the cells done.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <map>
#include <thread>

#include "src/cli/sweep_cmd.hpp"
#include "src/report/sweep.hpp"
#include "rt/run_stats.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;
namespace fs = std::filesystem;

namespace {

SweepCell done_cell(int chunk, int n, bool safe) {
  SweepCell c;
  c.variant = "cpu";
  c.chunk = chunk;
  c.streams = n;
  c.state = SweepCell::State::done;
  c.safe = safe;
  return c;
}

StreamsSection section(std::vector<std::int64_t> headrooms) {
  StreamsSection s;
  s.count = static_cast<int>(headrooms.size());
  for (std::size_t i = 0; i < headrooms.size(); ++i) {
    StreamFigures f;
    f.stream = static_cast<int>(i);
    f.headroom_p95_ns = headrooms[i];
    f.realtime_safe = headrooms[i] > 0;
    s.streams.push_back(f);
  }
  return s;
}

}  // namespace

TEST_CASE("sweep: a cell is safe only with every stream's p95 headroom above 0, no stall event and no drop") {
  CHECK(sweep_cell_safe(section({100, 200})));
  CHECK_FALSE(sweep_cell_safe(section({100, 0})));
  CHECK_FALSE(sweep_cell_safe(section({100, -5})));
  StreamsSection s = section({100, 200});
  s.stalls = 1;
  s.misses = 1;
  CHECK_FALSE(sweep_cell_safe(s));
  s = section({100, 200});
  s.drops = 1;
  CHECK_FALSE(sweep_cell_safe(s));
  s = section({100, 200});
  s.streams[1].state = RunState::interrupted;
  CHECK_FALSE(sweep_cell_safe(s));
  s = section({100});
  s.streams[0].headroom_p95_ns.reset();  // no deadline figure
  CHECK_FALSE(sweep_cell_safe(s));
}

TEST_CASE("sweep: a frontier set by the machine's scheduling says so, with the processing share, and a chain's stays the chain's") {
  SweepReport r;
  r.rate = 48000;
  r.variants = {"cpu"};
  r.chunks = {16, 32, 256};
  r.streams = {1, 2};
  auto cell = [](int chunk, int n, bool safe, std::uint64_t chain, std::uint64_t platform, std::int64_t p95) {
    SweepCell c = done_cell(chunk, n, safe);
    c.stall_owner[static_cast<std::size_t>(Owner::chain)] = chain;
    c.stall_owner[static_cast<std::size_t>(Owner::platform)] = platform;
    c.budget_ns = static_cast<std::int64_t>(1e9 * chunk / 48000 * 0.8);
    c.process.count = 100;
    c.process.p95 = p95;
    return c;
  };
  // 1 stream: the small chunks missed on the platform's account (3 chain, 377 platform);
  // 2 streams: on the chain's (processing over the budget)
  r.cells = {cell(16, 1, false, 3, 377, 15'300), cell(32, 1, false, 0, 40, 16'000), cell(256, 1, true, 0, 0, 20'000),
             cell(16, 2, false, 90, 10, 300'000), cell(32, 2, false, 50, 5, 600'000), cell(256, 2, true, 0, 0, 40'000)};
  const auto f = sweep_frontier(r);
  const auto lines = frontier_sentences(r, f.at(0));
  REQUIRE(lines.size() >= 2);
  CHECK(lines[0] ==
        "1 stream: the machine's scheduling limits this chain below 256 frames: 417 of the 420 stall event(s) of the chunks "
        "below it were the platform's, while processing took at most 5.7% of the budget at p95; the smallest safe chunk "
        "here is 256 frames (5.333 ms)");
  CHECK(lines[1] == "2 streams: the smallest safe chunk is 256 frames (5.333 ms)");
  // no safe size at all, on the platform's account
  r.cells = {cell(16, 1, false, 0, 9, 1'000), cell(32, 1, false, 1, 9, 1'000), cell(256, 1, false, 0, 3, 1'000)};
  r.streams = {1};
  const auto none = frontier_sentences(r, sweep_frontier(r).at(0));
  CHECK(none.at(0).rfind("1 stream: the machine's scheduling limits this chain at every size in the grid: 21 of the 22 "
                         "stall event(s) of the chunks in the grid were the platform's",
                         0) == 0);
}

TEST_CASE("sweep: the frontier is the smallest safe chunk per stream count and the largest safe count per chunk") {
  SweepReport r;
  r.rate = 48000;
  r.variants = {"cpu"};
  r.chunks = {64, 128, 256};
  r.streams = {1, 2, 4};
  r.cells = {done_cell(64, 1, false), done_cell(128, 1, true), done_cell(128, 2, false), done_cell(256, 1, true),
             done_cell(256, 2, true), done_cell(256, 4, true)};
  SweepCell skipped;
  skipped.variant = "cpu";
  skipped.chunk = 64;
  skipped.streams = 2;
  r.cells.push_back(skipped);
  const auto f = sweep_frontier(r);
  REQUIRE(f.size() == 1);
  CHECK(f[0].smallest_safe_chunk.at(1) == 128);
  CHECK(f[0].smallest_safe_chunk.at(2) == 256);
  CHECK(f[0].smallest_safe_chunk.at(4) == 256);
  CHECK(!f[0].largest_safe_streams.at(64));
  CHECK(f[0].largest_safe_streams.at(128) == 1);
  CHECK(f[0].largest_safe_streams.at(256) == 4);
  r.frontier = f;
  const auto lines = frontier_sentences(r, f[0]);
  REQUIRE(lines.size() == 6);
  CHECK(lines[0] == "1 stream: the smallest safe chunk is 128 frames (2.667 ms)");
  CHECK(lines[3] == "chunk 64 frames: not even 1 stream is safe");
  CHECK(lines[5] == "chunk 256 frames: the largest safe stream count is 4");
  // the JSON says the same
  const auto j = to_json(r);
  CHECK(j.at("schema") == "chunkscope.sweep/1");
  CHECK(j.at("frontier").at(0).at("smallest_safe_chunk").at(1).at("chunk") == 256);
  CHECK(j.at("frontier").at(0).at("largest_safe_streams").at(0).at("streams").is_null());
  CHECK(j.at("cells").size() == 7);
  // the page draws one heat map and its frontier per variant
  const std::string html = render_sweep_html(r);
  CHECK(html.find("id=\"plot-sweep-0\"") != std::string::npos);
  CHECK(html.find("id=\"sweep-frontier-0\"") != std::string::npos);
}

TEST_CASE("sweep: the planned time is each cell's audio at its speed, two baselines and the start") {
  const double one = sweep_planned_seconds({1}, 2.0, 1.0, 0.2);
  const double four = sweep_planned_seconds({4}, 2.0, 1.0, 0.2);
  CHECK(one == doctest::Approx(2.0 + 0.4 + 0.1 + 0.01));
  CHECK(four - one == doctest::Approx(3 * 0.01));
  CHECK(sweep_planned_seconds({1, 2}, 2.0, 2.0, 0.0) == doctest::Approx(1.0 + 0.1 + 0.01 + 1.0 + 0.1 + 0.02));
}

TEST_CASE("sweep: the chunk sizes whose cells count too few chunks to judge are named before the sweep, with the duration that would") {
  CHECK(sweep_short_cells({128, 256, 512}, 3 * 48000, 48000, 10).empty());  // the defaults: 512 frames count 272
  CHECK(sweep_short_cells({256, 1024}, 2 * 48000, 48000, 10) ==
        "cells of 1024 frames (84 chunks) count fewer chunks per stream than the 200 a verdict needs: a cell of them "
        "that misses nothing will say 'cannot judge' (--duration 4.5s counts enough)");
  const std::string two = sweep_short_cells({512, 2048}, 48000, 48000, 0);
  CHECK(two.find("cells of 512 frames (94 chunks), 2048 frames (24 chunks)") == 0);
  CHECK(two.find("(--duration 8.6s counts enough)") != std::string::npos);  // 200 x 2048 / 48000 = 8.53
}

TEST_CASE("sweep: a real grid, a row stops at its first cell that is not safe, every done cell counts every chunk") {
  testutil::TempDir td;
  const std::string json = td.file("s.json"), html = td.file("s.html");
  // a 6 ms spin cannot keep a 5.333 ms chunk (256 frames) in time, so that row stops at
  // one stream; 2048 frames (42.7 ms) has room for it
  const auto r = testutil::run_cli({"sweep", "--chain", "lp:8000:2 | spin:6ms", "--chunks", "2048,256", "--streams", "1,2",
                                    "--duration", "0.5s", "--warmup", "2", "--baseline", "0", "--json", json, "--html",
                                    html, "--quiet"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.err.find("sweep of 4 cells (2 chunk size(s) x 2 stream count(s) x 1 variant(s))") != std::string::npos);
  // a sweep of seconds plans in tenths of a second, not "at most 0 s"; the 2048-frame cells
  // count 10 chunks a stream, and the sweep says so before it starts
  const auto at_most = r.err.find("at most ");
  REQUIRE(at_most != std::string::npos);
  CHECK(r.err.find(" s (a row stops") == r.err.find('.', at_most) + 2);
  // 0.5 s at 48 kHz less 2 warm-up chunks: 94 - 2 chunks of 256 frames, 12 - 2 of 2048, in the grid's order
  CHECK(r.err.find("cells of 256 frames (92 chunks), 2048 frames (10 chunks) count fewer chunks per stream than the 200") !=
        std::string::npos);
  const auto j = testutil::load_json(json);
  CHECK(j.at("schema") == "chunkscope.sweep/1");
  CHECK(j.at("state") == "complete");
  CHECK(j.at("grid").at("chunks") == nlohmann::json::array({256, 2048}));
  const auto& cells = j.at("cells");
  REQUIRE(cells.size() == 4);
  std::map<std::pair<int, int>, nlohmann::json> by;
  for (const auto& c : cells) by[{c.at("chunk").get<int>(), c.at("streams").get<int>()}] = c;
  // 256 frames: not safe with one stream, and the second cell of the row is not run
  CHECK(by[{256, 1}].at("state") == "done");
  CHECK(by[{256, 1}].at("safe") == false);
  CHECK(by[{256, 1}].at("headroom_p95_ns").get<std::int64_t>() < 0);
  CHECK(by[{256, 2}].at("state") == "skipped");
  CHECK(by[{256, 2}].at("safe").is_null());
  // every done cell: each of its streams counted or dropped every chunk after the warm-up
  for (const auto& c : cells) {
    if (c.at("state") != "done") continue;
    const int chunk = c.at("chunk"), n = c.at("streams");
    const std::uint64_t chunks = (24000 + chunk - 1) / chunk;  // 0.5 s at 48 kHz
    CHECK(c.at("counted").get<std::uint64_t>() + c.at("drops").get<std::uint64_t>() == n * (chunks - 2));
    CHECK(c.at("latency").at("count") == c.at("counted"));
    const std::int64_t D = c.at("chunk_ns");
    CHECK(D == std::llround(chunk * 1e9 / 48000));
    CHECK(c.at("budget_ns").get<std::int64_t>() == D - std::llround(D * 0.2));  // margin 20 %
    // the rule, recomputed from the cell's own figures: a cell that missed nothing but
    // counted fewer than 200 chunks in a stream (2048 frames: 10 each) cannot be judged
    const bool safe = c.at("headroom_p95_ns").get<std::int64_t>() > 0 && c.at("stall_events") == 0 && c.at("drops") == 0;
    CHECK(c.at("fewest_counted").get<std::uint64_t>() * n <= c.at("counted").get<std::uint64_t>());
    if (safe && c.at("fewest_counted").get<std::uint64_t>() < kChunksToJudgeP95) {
      CHECK(c.at("safe").is_null());
      CHECK(c.at("needed_chunks") == kChunksToJudgeP95);
    } else {
      CHECK(c.at("safe") == safe);
      CHECK_FALSE(c.contains("needed_chunks"));
    }
    CHECK(c.at("engine_cpu_ns").get<std::int64_t>() > 0);
  }
  // the frontier agrees with the cells
  const auto& f = j.at("frontier").at(0);
  for (const auto& e : f.at("largest_safe_streams")) {
    const int chunk = e.at("chunk");
    int best = 0;
    for (int n : {1, 2})
      if (by[{chunk, n}].at("safe") == true) best = n;
    if (best == 0)
      CHECK(e.at("streams").is_null());
    else
      CHECK(e.at("streams") == best);
  }
  CHECK(f.at("largest_safe_streams").at(0).at("chunk") == 256);
  CHECK(f.at("largest_safe_streams").at(0).at("streams").is_null());
  const std::string page = testutil::slurp(html);
  CHECK(page.find("id=\"sweep-frontier-0\"") != std::string::npos);
  // a cell that cannot be judged says so with its count on the page (the run is --quiet),
  // and does not end its row
  for (const auto& [key, c] : by) {
    if (!c.contains("needed_chunks")) continue;
    CHECK(page.find(fmt::format("cannot judge ({} chunks, need 200)", c.at("fewest_counted").get<std::uint64_t>())) !=
          std::string::npos);
    if (key.second == 1) CHECK(by[{key.first, 2}].at("state") == "done");
  }
}

TEST_CASE("sweep: SIGINT keeps the cells done and marks the rest") {
  testutil::TempDir td;
  const pid_t pid = testutil::spawn_cli(td.path().string(),
                                        {"sweep", "--chunks", "256,512,1024", "--streams", "1,2,3", "--duration", "30s",
                                         "--baseline", "0", "--json", "s.json", "--quiet"},
                                        td.file("stdout"), td.file("stderr"));
  // the plan line comes before the first cell starts streaming
  bool planned = false;
  for (int i = 0; i < 300 && !planned; ++i) {
    planned = testutil::slurp(td.file("stderr")).find("at most") != std::string::npos;
    if (!planned) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(planned);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(pid, SIGINT);
  const int rc = testutil::wait_cli(pid, 60);
  REQUIRE(rc == 0);
  const auto j = testutil::load_json(td.file("s.json"));
  CHECK(j.at("state") == "interrupted");
  const auto& cells = j.at("cells");
  REQUIRE(cells.size() == 9);
  CHECK(cells.at(0).at("state") == "interrupted");  // 30 s of audio: still running when stopped
  CHECK(cells.at(0).at("safe").is_null());
  for (std::size_t i = 1; i < cells.size(); ++i) {
    CHECK(cells.at(i).at("state") == "skipped");
    CHECK(cells.at(i).at("reason") == "the sweep was stopped before this cell");
  }
}

TEST_CASE("sweep: bad options are one line and exit 2, before anything streams") {
  testutil::TempDir td;
  auto bad = [&](const std::vector<std::string>& args, const std::string& says) {
    std::vector<std::string> a = {"sweep", "--json", td.file("s.json")};
    a.insert(a.end(), args.begin(), args.end());
    const auto r = testutil::run_cli(a);
    CHECK(r.rc == 2);
    CAPTURE(r.err);
    CHECK(r.err.find(says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(td.file("s.json")));
  };
  bad({"--chunk", "256"}, "--chunk: `chunkscope sweep` does not take it: a sweep takes --chunks LIST");
  bad({"--chunks", "0"}, "--chunks");
  bad({"--streams", "257"}, "--streams");
  bad({"--streams", "1,x"}, "--streams");
  bad({"--speed", "max"}, "--speed: a sweep is paced");
  bad({"--chunks", "16,256", "--margin", "1ms"}, "--margin");  // leaves no budget at 16 frames
  bad({"--variants", "gpu"}, "--variants");
  bad({"--duration", "0s"}, "--duration");
  bad({"--fail-on-miss"}, "--fail-on-miss: `chunkscope sweep` does not take it");
  bad({"--fail-on-unsafe"}, "--fail-on-unsafe: `chunkscope sweep` does not take it");
  bad({(testutil::source_dir() + "/audio/mix_stereo_48k.flac"), "--synth", "noise"}, "not both");
}

TEST_CASE("--help lists only what a command takes: sweep hides the shared options it refuses, compare lists --baseline") {
  const auto sweep = testutil::run_cli({"sweep", "--help"});
  REQUIRE(sweep.rc == 0);
  for (const char* refused : {"--chunk ", "--fail-on-miss", "--fail-on-unsafe", "or 'max'"}) {
    CAPTURE(refused);
    CHECK(sweep.out.find(refused) == std::string::npos);
  }
  CHECK(sweep.out.find("--chunks") != std::string::npos);
  // compare measures the baseline around its rounds (test_compare.cpp), so it lists the flag
  const auto compare = testutil::run_cli({"compare", "--help"});
  REQUIRE(compare.rc == 0);
  CHECK(compare.out.find("--baseline") != std::string::npos);
}
