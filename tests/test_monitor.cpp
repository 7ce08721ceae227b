// Live monitoring against a real audio server: each test starts its own JACK server
// (jackd with the dummy driver: no sound card needed) under a unique name, points
// PortAudio's JACK host API at it through JACK's own JACK_DEFAULT_SERVER variable, and
// stops it afterwards. Without jackd installed these tests skip and say so, and the program
// exits kSkipped, which ctest shows as skipped (SKIP_RETURN_CODE), not as passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "src/metrics/server.hpp"
#include "tests/jack_server.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;
using jacktest::JackServer;
using jacktest::g_skipped;
using jacktest::kSkipped;
using testutil::run_cli;


TEST_CASE("devices --json lists the JACK server's device with its channels and defaults") {
  NEED_JACK();
  JackServer jack;
  REQUIRE(jack.ready());
  const auto r = run_cli({"devices", "--json"});
  REQUIRE(r.rc == 0);
  const auto j = json::parse(r.out);
  CHECK(j["schema"] == "chunkscope.devices/1");
  bool found = false;
  for (const auto& d : j["devices"])
    if (d["host_api"].get<std::string>().find("JACK") != std::string::npos) {
      found = true;
      CHECK(d["max_input_channels"] == 2);
      CHECK(d["max_output_channels"] == 2);
      CHECK(d["default_rate"] == 48000.0);
      CHECK(d["default_low_input_latency_s"].get<double>() > 0);
    }
  CHECK(found);
  const auto t = run_cli({"devices"});
  CHECK(t.rc == 0);
  CHECK(t.out.find("JACK") != std::string::npos);
}

TEST_CASE("monitor, empty chain, 3 s full duplex: chunks follow the device's callbacks at its cadence, and every xrun reaches the verdict") {
  // The dummy driver of a server without real-time scheduling can lose cycles on a loaded
  // machine: the test asserts what the profiler promises about what the device did (counts
  // that add up, the cadence of the callbacks, xruns listed, counted and judged), not that
  // the machine kept time.
  NEED_JACK();
  JackServer jack;
  REQUIRE(jack.ready());
  testutil::TempDir td;
  const auto r = run_cli({"monitor", "--duration", "3s", "--chunk", "256", "--json", td.file("m.json"), "--live"});
  REQUIRE(r.rc == 0);
  const auto j = testutil::load_json(td.file("m.json"));
  CHECK(j["state"] == "complete");
  const double callbacks = j["device"]["callbacks"].get<double>();
  const double expected = 3.0 / (256.0 / 48000.0);  // 562.5 periods in 3 s
  CHECK(callbacks > 0);
  CHECK(callbacks <= expected * 1.05);  // a device cannot call back more often than its period allows
  const double emitted = j["counts"]["emitted"].get<double>();
  CHECK(emitted > 0);
  CHECK(emitted <= callbacks);
  // every chunk after the warm-up is counted, or dropped and said so
  CHECK(j["counts"]["counted"].get<double>() == emitted - 10);
  // the output's cadence is the device's: the median period is the callbacks' median period
  const double cb_p50 = j["device"]["callback_period"]["p50"].get<double>();
  CHECK(j["cadence"]["period"]["p50"].get<double>() == doctest::Approx(cb_p50).epsilon(0.02));
  CHECK(cb_p50 == doctest::Approx(5333333.3).epsilon(0.10));
  // xruns: each one listed, and any of them makes the run not real-time safe
  const auto xruns = j["device"]["xruns"].get<std::uint64_t>();
  CHECK(j["device"]["xrun_list"].size() == std::min<std::uint64_t>(xruns, 4096));  // the list keeps the first 4096
  if (xruns > 0) CHECK(j["verdict"]["realtime_safe"] == false);
  // an empty chain never costs a miss: whatever misses a loaded machine causes are not the chain's
  CHECK(j["counts"]["miss_blame"]["process"] == 0);
  if (j["counts"]["misses"].get<int>() > 0 || j["counts"]["drops"].get<int>() > 0)
    CHECK(j["verdict"]["realtime_safe"] == false);
  if (xruns == 0 && j["device"]["underruns"] == 0 && j["counts"]["misses"] == 0 && j["counts"]["drops"] == 0)
    CHECK(j["verdict"]["realtime_safe"] == true);
  CHECK(j["device"]["duplex"] == true);
  CHECK(j["device"]["reported_output_latency_s"].get<double>() > 0);
  // a live run records its per-chunk series, and says its input cannot be replayed
  CHECK(j["series"]["count"].get<double>() == emitted);
  CHECK_FALSE(j["series"]["truncated"].get<bool>());
  CHECK(j["workload"]["input"]["kind"] == "device");
  CHECK(j["workload"]["signature"]["backend"] == "cpu");
  CHECK(j["checksums"]["chunks"].get<int>() == 10);  // the default warm-up
  CHECK(j["checksums"]["input"] == j["checksums"]["output"]);  // empty chain: output is input
  // stdout is not a terminal here: the live view prints one plain line per second
  int live_lines = 0;
  for (std::size_t p = r.out.find("] last 1 s: chunks "); p != std::string::npos;
       p = r.out.find("] last 1 s: chunks ", p + 1))
    ++live_lines;
  CHECK(r.out.find("\x1b[") == std::string::npos);  // no cursor movement off a terminal
  CHECK(live_lines >= 2);
  CHECK(live_lines <= 3);
  // the output callback's wait and copy come after L: marked on their rows, explained once
  CHECK(r.out.find("\nqueue_out* ") != std::string::npos);
  CHECK(r.out.find("* after L: full duplex, L ends when the chunk is ready to play; queue_out is its wait for the "
                   "output callback 2 callback(s) after its input") != std::string::npos);
}

TEST_CASE("monitor with a spin longer than the period: underruns and misses, blamed on processing") {
  NEED_JACK();
  JackServer jack;
  REQUIRE(jack.ready());
  testutil::TempDir td;
  const auto r = run_cli({"monitor", "--duration", "2s", "--chain", "spin:8ms", "--json", td.file("m.json"), "--quiet",
                          "--fail-on-miss"});
  CHECK(r.rc == 1);
  const auto j = testutil::load_json(td.file("m.json"));
  CHECK(j["device"]["underruns"].get<int>() > 50);
  const auto misses = j["counts"]["misses"].get<int>();
  CHECK(misses > 20);
  CHECK(j["counts"]["miss_blame"]["process"].get<int>() == misses);
  CHECK(j["verdict"]["realtime_safe"] == false);
}

TEST_CASE("monitor --inline: the device callback's thread keeps its context-switch record, and processing inside it is split by it") {
  NEED_JACK();
  JackServer jack;
  REQUIRE(jack.ready());
  testutil::TempDir td;
  const auto r = run_cli({"monitor", "--inline", "--duration", "2s", "--chain", "hp:80:4 | lp:12k:8", "--json",
                          td.file("m.json"), "--quiet"});
  REQUIRE(r.rc == 0);
  const auto j = testutil::load_json(td.file("m.json"));
  const std::string method = j["method"]["blame_from"];
  if (method.rfind("wall-clock rules (the thread CPU clock; the kernel refused", 0) == 0) {
    MESSAGE("skipped: the kernel refuses perf events here");
    return;
  }
  CHECK(method.rfind("the scheduler's record", 0) == 0);
  // the callback is the source and the processor: both split by its record
  CHECK(j["off_cpu"]["source"]["preempted"]["count"].get<double>() > 0);
  CHECK(j["off_cpu"]["process"]["blocked"]["count"].get<double>() > 0);
  CHECK(j["process_split"]["on_cpu"]["count"].get<double>() > 0);
}

TEST_CASE("monitor --inline: a stack overflow in the device callback's hosted step is one line, exit 4, nothing left") {
  NEED_JACK();
  JackServer jack;
  REQUIRE(jack.ready());
  testutil::TempDir td;
  const auto r = run_cli({"monitor", "--inline", "--duration", "10s", "--chain",
                          std::string("so:") + CHUNKSCOPE_BAD_STAGE + ":overflow_at=50", "--json", td.file("m.json"), "--quiet"});
  CHECK(r.rc == 4);
  CHECK(r.err.find("step 1, so:libbad_stage.so, crashed with SIGSEGV (invalid memory access) while processing chunk 50") !=
        std::string::npos);
  CHECK_FALSE(std::ifstream(td.file("m.json")).good());
}

TEST_CASE("monitor: a hosted call that never returns ends the run after --step-timeout, inline or not, with the report of the chunks before it") {
  NEED_JACK();
  JackServer jack;
  REQUIRE(jack.ready());
  for (const bool inline_process : {false, true}) {
    CAPTURE(inline_process);
    testutil::TempDir td;
    std::vector<std::string> args = {"monitor", "--duration", "20s", "--step-timeout", "1s", "--chain",
                                     std::string("so:") + CHUNKSCOPE_BAD_STAGE + ":hang_at=50", "--json", td.file("m.json"),
                                     "--quiet"};
    if (inline_process) args.insert(args.begin() + 1, "--inline");
    const auto r = run_cli(args);
    CHECK(r.rc == 4);
    CHECK(r.err.find("step 1, so:libbad_stage.so, had not returned from process() after ") != std::string::npos);
    CHECK(r.err.find("while processing chunk 50 (--step-timeout 1s); the report of the chunks before it was written") !=
          std::string::npos);
    const auto j = testutil::load_json(td.file("m.json"));
    CHECK(j["state"] == "incomplete");
    CHECK(j["stuck"]["chunk"] == 50);
    CHECK(j["counts"]["emitted"].get<int>() <= 50);
  }
}

TEST_CASE("input-only monitor: no output device, budget D - margin") {
  NEED_JACK();
  JackServer jack;
  REQUIRE(jack.ready());
  testutil::TempDir td;
  const auto r = run_cli({"monitor", "--output", "none", "--duration", "1s", "--chain", "hp:80:4", "--json",
                          td.file("m.json"), "--quiet"});
  REQUIRE(r.rc == 0);
  const auto j = testutil::load_json(td.file("m.json"));
  CHECK(j["device"]["duplex"] == false);
  CHECK(j["timing"]["budget_ns"].get<double>() == doctest::Approx(5333333 * 0.8).epsilon(1e-3));
  CHECK(j["counts"]["emitted"].get<int>() > 150);
}

TEST_CASE("monitor --metrics-listen: the held metrics equal the report, the device's xruns and underruns included") {
  NEED_JACK();
  if (!chunkscope::metrics::server_available()) {
    MESSAGE("this build has no metrics server (civetweb not found): nothing to check");
    return;
  }
  JackServer jack;
  REQUIRE(jack.ready());
  testutil::TempDir td;
  const int port = testutil::free_port();
  const pid_t pid = testutil::spawn_cli(
      td.path().string(),
      {"monitor", "--duration", "2s", "--chain", "hp:80:4", "--json", "m.json", "--quiet", "--metrics-listen",
       "127.0.0.1:" + std::to_string(port), "--metrics-hold", "120s"},
      td.file("stdout"), td.file("stderr"));
  // the report is written after the final sample: from then on the final values are served
  const bool written = testutil::wait_for_path(td.file("m.json"), 60);
  const testutil::HttpReply r = testutil::http(port, "GET", "/metrics");
  ::kill(pid, SIGTERM);  // ends the hold
  CHECK(testutil::wait_cli(pid, 60) == 0);
  REQUIRE_MESSAGE(written, testutil::slurp(td.file("stderr")));
  REQUIRE(r.status == 200);
  const auto j = testutil::load_json(td.file("m.json"));
  const auto value = [&](const std::string& name) {
    const std::size_t at = r.body.find("\n" + name + "{");
    REQUIRE_MESSAGE(at != std::string::npos, name);
    const std::size_t sp = r.body.find("} ", at);
    return std::strtod(r.body.c_str() + sp + 2, nullptr);
  };
  CHECK(value("chunkscope_chunks_total") == j["counts"]["counted"].get<double>());
  CHECK(value("chunkscope_deadline_misses_total") == j["counts"]["misses"].get<double>());
  CHECK(value("chunkscope_dropped_chunks_total") == j["counts"]["drops"].get<double>());
  CHECK(value("chunkscope_xruns_total") == j["device"]["xruns"].get<double>());
  CHECK(value("chunkscope_underruns_total") == j["device"]["underruns"].get<double>());
  CHECK(value("chunkscope_running") == 0);
}

TEST_CASE("killing the server mid-run: exit 3, one line, a partial report marked incomplete") {
  NEED_JACK();
  JackServer jack;
  REQUIRE(jack.ready());
  testutil::TempDir td;
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    jack.kill_now();
  });
  const auto r = run_cli({"monitor", "--duration", "20s", "--json", td.file("m.json"), "--quiet"});
  killer.join();
  CHECK(r.rc == 3);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("stopped") != std::string::npos);
  const auto j = testutil::load_json(td.file("m.json"));
  CHECK(j["state"] == "incomplete");
  CHECK(j["counts"]["emitted"].get<int>() > 0);  // what streamed before the server died
}

TEST_CASE("a server stopped until monitor gives up, then continued: exit 3, one line, an incomplete report, no crash after the give-up") {
  // monitor gives up after 0.5 s without a callback and leaves the stream open (closing it
  // could abort inside PortAudio); when the server goes on, its callbacks resume while the
  // report is written and the engine freed. They must find the callback disarmed: under
  // AddressSanitizer a callback that still recorded into the freed statistics ends the
  // process with a heap-use-after-free report instead of exit 3.
  NEED_JACK();
  JackServer jack;
  REQUIRE(jack.ready());
  testutil::TempDir td;
  const pid_t pid = testutil::spawn_cli(td.path().string(),
                                        {"monitor", "--duration", "30s", "--json", "m.json", "--quiet", "--live"},
                                        td.file("stdout"), td.file("stderr"));
  // streaming once the live view has printed its first line
  bool streaming = false;
  for (int i = 0; i < 200 && !streaming; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    streaming = testutil::slurp(td.file("stdout")).find("] last 1 s: chunks ") != std::string::npos;
  }
  REQUIRE(streaming);
  jack.send(SIGSTOP);
  // monitor gives up after 0.5 s, writes the report, then frees the engine and exits: the
  // server goes on as soon as the report is there, so that its callbacks resume while that
  // happens (or, at the latest, after 10 s)
  testutil::wait_for_path(td.file("m.json"), 10);
  jack.send(SIGCONT);
  const int rc = testutil::wait_cli(pid, 30);
  const std::string err = testutil::slurp(td.file("stderr"));
  CAPTURE(err);
  CHECK(rc == 3);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  CHECK(err.find("no callback for") != std::string::npos);
  CHECK(err.find("AddressSanitizer") == std::string::npos);
  const auto j = testutil::load_json(td.file("m.json"));
  CHECK(j["state"] == "incomplete");
  CHECK(j["counts"]["emitted"].get<int>() > 0);  // what streamed before the stall
  CHECK(j["device"]["callbacks"].get<int>() > 0);
}

TEST_CASE("SIGINT during monitor: the stream is stopped, exit 0, a report marked interrupted") {
  NEED_JACK();
  JackServer jack;
  REQUIRE(jack.ready());
  testutil::TempDir td;
  const pid_t pid = testutil::spawn_cli(td.path().string(), {"monitor", "--duration", "30s", "--json", "m.json", "--quiet"},
                                        td.file("stdout"), td.file("stderr"));
  // streaming once a JACK client of ours is on the server; a second is plenty
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid, SIGINT);
  const int rc = testutil::wait_cli(pid, 20);
  CHECK(rc == 0);
  const auto j = testutil::load_json(td.file("m.json"));
  CHECK(j["state"] == "interrupted");
  CHECK(j["counts"]["emitted"].get<int>() > 0);
  CHECK(j["reason"].get<std::string>().find("stopped by a signal") == 0);
}

TEST_CASE("no server and no device: monitor fails at once with exit 3 and says what it looked for") {
  setenv("JACK_DEFAULT_SERVER", ("chunkscope-absent-" + std::to_string(::getpid())).c_str(), 1);
  const auto d = run_cli({"devices", "--json"});
  REQUIRE(d.rc == 0);
  if (!json::parse(d.out)["devices"].empty()) {
    MESSAGE("skipped: this machine has an audio device, so 'no device' cannot be shown");
    return;
  }
  const auto r = run_cli({"timeout-guard", "monitor", "--duration", "2s"});
  CHECK(r.rc == 3);
  CHECK(r.err.find("no audio input device") != std::string::npos);
  CHECK(r.err.find("looked through") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("device selection: a name that matches nothing is bad input, exit 2") {
  NEED_JACK();
  JackServer jack;
  REQUIRE(jack.ready());
  const auto r = run_cli({"monitor", "--input", "no-such-device", "--duration", "1s"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("no input device matches") != std::string::npos);
  const auto s = run_cli({"monitor", "--input", "7", "--duration", "1s"});
  CHECK(s.rc == 2);
}

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit() || rc != 0) return rc;
  if (g_skipped > 0) {
    std::printf("skipped: %d test(s) need jackd, which is not installed (Debian package jackd2)\n", g_skipped);
    return kSkipped;
  }
  return 0;
}
