// The live view of `monitor --live`: it fits the terminal, redraws in place on a terminal,
// writes one plain line per second elsewhere, and names every figure.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <unistd.h>

#include "src/cli/live_view.hpp"

using namespace chunkscope;

namespace {

struct Sample {
  stats::LogHistogram lat, jit;
  LiveFigures f;
  Sample() {
    for (int i = 0; i < 200; ++i) {
      lat.record(1'000'000 + 10'000 * static_cast<std::uint64_t>(i));  // 1 ms .. 3 ms
      jit.record(20'000 + 100 * static_cast<std::uint64_t>(i));
    }
    f.elapsed_s = 12;
    f.budget_ns = 6'400'000;
    f.budget_rule = "2 x D - margin";
    f.devices = "system (JACK Audio Connection Kit) -> system";
    f.last_second = {187, &lat, &jit};
    f.since_start = {2240, &lat, &jit};
    f.xruns = 1;
    f.underruns = 2;
    f.drops = 3;
    f.misses = 4;
    f.queue_depth = 1;
    f.queue_capacity = 8;
  }
};

bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

}  // namespace

TEST_CASE("live view: every line fits the terminal, and 80 columns show every core figure") {
  const Sample s;
  for (int columns : {40, 60, 80, 100, 132, 200}) {
    CAPTURE(columns);
    const auto lines = live_view_lines(s.f, columns);
    REQUIRE(lines.size() == 5);
    for (const auto& l : lines) CHECK(display_width(l) < static_cast<std::size_t>(columns));
  }
  const auto v = live_view_lines(s.f, 80);
  for (const char* title : {"chunks", "lat p50", "lat p95", "lat max", "headroom p95", "jitter p95"}) {
    CAPTURE(title);
    CHECK(has(v[1], title));
  }
  CHECK(v[2].rfind("last 1 s", 0) == 0);
  CHECK(v[3].rfind("since start", 0) == 0);
  CHECK(has(v[3], "2240"));
  CHECK(has(v[0], "budget B 6.400 ms (2 x D - margin)"));
  CHECK(v[4] == "xruns 1   underruns 2   drops 3   deadline misses 4   source queue 1 of 8");
  // a wider terminal shows more
  CHECK(has(live_view_lines(s.f, 132)[1], "lat p99"));
  CHECK_FALSE(has(v[1], "lat p99"));
}

TEST_CASE("live view: on a terminal each frame replaces the last in place, otherwise one line per second") {
  const Sample s;
  std::ostringstream tty;
  LiveView view(tty, true);
  view.draw(s.f, 80);
  const std::string first = tty.str();
  CHECK(first.rfind("\r\x1b[2K", 0) == 0);  // no cursor-up before the first frame
  CHECK(std::count(first.begin(), first.end(), '\n') == 5);
  view.draw(s.f, 80);
  CHECK(tty.str().substr(first.size()).rfind("\x1b[5A\r\x1b[2K", 0) == 0);  // up over the 5 lines drawn

  std::ostringstream log;
  LiveView plain(log, false);
  plain.draw(s.f, 80);
  plain.draw(s.f, 80);
  const std::string out = log.str();
  CHECK(std::count(out.begin(), out.end(), '\n') == 2);
  CHECK_FALSE(has(out, "\x1b["));
  CHECK(out.rfind("[ 12.0 s] last 1 s: chunks 187, latency p50 ", 0) == 0);
  CHECK(has(out, "| since start: chunks 2240 | xruns 1, underruns 2, drops 3, deadline misses 4, source queue 1 of 8"));
}

TEST_CASE("live view: the width comes from the terminal, 80 columns when there is none") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  CHECK(terminal_columns(fds[1]) == 80);
  close(fds[0]);
  close(fds[1]);
  CHECK(terminal_columns(-1) == 80);
}

TEST_CASE("live view: a second with no chunks shows dashes, not zeros") {
  Sample s;
  stats::LogHistogram empty;
  s.f.last_second = {0, &empty, &empty};
  const auto v = live_view_lines(s.f, 100);
  CHECK(has(v[2], "-"));
  CHECK_FALSE(has(v[2], "0 ns"));
}
