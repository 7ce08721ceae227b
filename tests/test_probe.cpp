// The probe library's C API (include/chunkscope/probe.h) driven as an application's
// callback would drive it: configuration refusals, the report it writes (read back by the
// CLI), sections as steps, the step to blame, xruns in the verdict, records lost, calls out
// of order, begins from two threads at once, calls racing close and after it, and the live
// metrics. The JACK client against a real server is in tests/test_probe_jack.cpp.
#include <doctest/doctest.h>

#include <atomic>
#include <barrier>
#include <filesystem>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "chunkscope/probe.h"
#include "rt/clock.hpp"
#include "rt/denormals.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;

namespace {

const char* kSections[] = {"work", "slow"};

chunkscope_probe_config base_config() {
  chunkscope_probe_config c;
  chunkscope_probe_config_init(&c);
  c.name = "unit";
  c.rate = 48000;
  c.block_frames = 64;  // D = 1.333 ms, B = 1.067 ms at the default 20% margin
  c.channels = 2;
  c.sections = kSections;
  c.section_count = 2;
  return c;
}

// One block as a callback does it: "work" is a few additions, "slow" spins `slow_ns`.
void block(chunkscope_probe* p, std::int64_t slow_ns, int frames = 64) {
  chunkscope_probe_begin(p, frames);
  chunkscope_probe_section_begin(p, 0);
  volatile int x = 0;
  for (int i = 0; i < 16; ++i) x = x + i;
  chunkscope_probe_section_end(p, 0);
  chunkscope_probe_section_begin(p, 1);
  if (slow_ns > 0) chunkscope::spin_until_ns(chunkscope::now_ns() + slow_ns);
  chunkscope_probe_section_end(p, 1);
  chunkscope_probe_end(p);
}

// Blocks at the stream's pace; every `slow_every`-th spins 2 ms in "slow" (over B).
void run_blocks(chunkscope_probe* p, int n, int slow_every) {
  const std::int64_t D = 1'333'333;
  std::int64_t next = chunkscope::now_ns();
  for (int i = 0; i < n; ++i) {
    block(p, slow_every > 0 && i % slow_every == slow_every - 1 ? 2'000'000 : 0);
    next += D;
    chunkscope::sleep_until_ns(next);
  }
}

// The N of "N <what>" in a report's reason, 0 when the reason does not say it.
long count_in_reason(const json& j, const std::string& what) {
  if (!j.contains("reason")) return 0;
  const std::string r = j["reason"];
  const auto at = r.find(" " + what);
  if (at == std::string::npos) return 0;
  const auto from = r.find_last_not_of("0123456789", at - 1);
  return std::stol(r.substr(from == std::string::npos ? 0 : from + 1, at));
}

std::string open_error(const chunkscope_probe_config& c) {
  chunkscope_probe* p = nullptr;
  const int rc = chunkscope_probe_open(&c, &p);
  CHECK(p == nullptr);
  CHECK(rc == CHUNKSCOPE_PROBE_BAD_CONFIG);
  return chunkscope_probe_last_error();
}

}  // namespace

TEST_CASE("probe: a bad configuration is refused with one line naming the field") {
  auto c = base_config();
  c.rate = 0;
  CHECK(open_error(c) == "chunkscope_probe_config.rate: 0 is not 1000 to 1536000 Hz");
  c = base_config();
  c.block_frames = 0;
  CHECK(open_error(c).find("chunkscope_probe_config.block_frames: 0") == 0);
  c = base_config();
  c.channels = -1;
  CHECK(open_error(c).find("chunkscope_probe_config.channels: -1") == 0);
  c = base_config();
  c.margin = "2s";
  CHECK(open_error(c).find("chunkscope_probe_config.margin: ") == 0);
  c = base_config();
  c.section_count = 17;
  CHECK(open_error(c).find("chunkscope_probe_config.section_count: 17 is not 0 to 16") == 0);
  c = base_config();
  const char* twice[] = {"a", "a"};
  c.sections = twice;
  CHECK(open_error(c) == "chunkscope_probe_config.sections: 'a' is named twice");
  c = base_config();
  c.size = 8;
  CHECK(open_error(c).find("chunkscope_probe_config.size: 8 bytes, less than the first version's") == 0);
  c = base_config();
  c.ring_blocks = (1 << 20) + 1;
  CHECK(open_error(c) == "chunkscope_probe_config.ring_blocks: 1048577 is not 0 to 1048576");
  c = base_config();
  c.json_path = "/nonexistent-folder/r.json";
  CHECK(open_error(c).find("json_path '/nonexistent-folder/r.json'") != std::string::npos);
  c = base_config();
  c.metrics_listen = "nowhere";
  CHECK(open_error(c).find("chunkscope_probe_config.metrics_listen") == 0);
  CHECK(chunkscope_probe_open(nullptr, nullptr) == CHUNKSCOPE_PROBE_BAD_CONFIG);
}

TEST_CASE("probe: blocks become a run report the CLI reads, the slow section is the step to blame, xruns reach the verdict") {
  testutil::TempDir tmp;
  const std::string dir = tmp.path().string() + "/probe";
  auto c = base_config();
  c.report_dir = dir.c_str();
  chunkscope_probe* p = nullptr;
  REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
  chunkscope_probe_device_latency(p, 64, 192);
  run_blocks(p, 150, 25);  // blocks 24, 49, ..., 149 spin 2 ms: 6, all after the 10 warm-up blocks
  chunkscope_probe_xrun(p);
  chunkscope_probe_xrun(p);
  REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);

  const json j = testutil::load_json(dir + "/report.json");
  CHECK(j["workload"]["command"] == "probe");
  CHECK(j["counts"]["emitted"] == 150);
  CHECK(j["counts"]["warmup"] == 10);
  CHECK(j["counts"]["counted"] == 140);
  CHECK(j["state"] == "complete");
  CHECK(j["device"]["callbacks"] == 150);
  CHECK(j["device"]["xruns"] == 2);
  CHECK(j["device"]["reported_output_latency_s"].get<double>() == doctest::Approx(192 / 48000.0));
  // each slow block misses (2 ms against B = 1.067 ms) with "slow" its largest step
  CHECK(j["counts"]["misses"].get<int>() >= 6);
  REQUIRE(j["steps"]["list"].size() == 2);
  CHECK(j["steps"]["list"][0]["label"] == "work");
  CHECK(j["steps"]["list"][1]["label"] == "slow");
  CHECK(j["steps"]["list"][1]["kind"] == "section");
  CHECK(j["steps"]["list"][1]["misses"].get<int>() >= 6);
  CHECK(j["steps"]["list"][1]["wall"]["max"].get<double>() >= 2e6);
  CHECK(j["verdict"]["realtime_safe"] == false);
  const std::string headline = j["verdict"]["text"];
  CHECK(headline.find("slow") != std::string::npos);
  CHECK(headline.find("2 xrun(s)") != std::string::npos);
  // no next step asks the user to rerun chunkscope on a run that was the application's
  for (const auto& f : j["diagnosis"]) CHECK(f["next"].get<std::string>().find("`chunkscope") == std::string::npos);
  // the CLI reads it unchanged: the terminal report, the cadence view; stage-bench refuses it
  const auto rep = testutil::run_cli({"report", dir + "/report.json"});
  CHECK(rep.rc == 0);
  CHECK(rep.out.find("slow") != std::string::npos);
  // rows that are 0 for every block (a probe sees no source, queue or sink) are named once,
  // not printed as rows of zeros
  CHECK(rep.out.find("(0 for every chunk, not on this run's path: source, wake, read, queue_in, queue_out, sink, overhead)") !=
        std::string::npos);
  CHECK(rep.out.find("\nqueue_in ") == std::string::npos);
  CHECK(rep.out.find("\nprocess ") != std::string::npos);
  CHECK(std::filesystem::exists(dir + "/report.html"));
  CHECK(std::filesystem::is_directory(dir + "/hgrm"));
  const auto sb = testutil::run_cli({"stage-bench", dir + "/report.json"});
  CHECK(sb.rc == 2);
  CHECK(sb.err.find("a probe's report") != std::string::npos);
}

TEST_CASE("probe: the report shows what a probe measured: its sections, no chain, queue, pool, drops or flags it never saw") {
  testutil::TempDir tmp;
  auto write = [&](const std::string& name, bool latency) {
    const std::string path = tmp.file(name);
    auto c = base_config();
    c.json_path = path.c_str();
    chunkscope_probe* p = nullptr;
    REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
    if (latency) chunkscope_probe_device_latency(p, 64, 192);
    for (int i = 0; i < 40; ++i) block(p, 0);
    REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
    const auto rep = testutil::run_cli({"report", path});
    REQUIRE_MESSAGE(rep.rc == 0, rep.err);
    return rep.out;
  };
  const std::string out = write("plain.json", false);
  CHECK(out.find("           2 probe section(s): work, slow\n") != std::string::npos);
  for (const char* absent : {"sections, on", "dispatch", "--ftz", "queue depth", "pool ", "\ndrops ", "queue high water",
                             "host API reports", "threads not pinned"}) {
    CAPTURE(absent);
    CHECK(out.find(absent) == std::string::npos);
  }
  CHECK(out.find("mode       inside the application's callback") != std::string::npos);
  CHECK(out.find("paced by the application's callbacks, warm-up 10 chunks") != std::string::npos);
  // a latency the application reported is shown
  CHECK(write("latency.json", true).find("host API reports input 1.333 ms / output 4.000 ms") != std::string::npos);
}

TEST_CASE("probe: calls out of order are counted, ignored, and mark the report incomplete") {
  testutil::TempDir tmp;
  const std::string path = tmp.path().string() + "/r.json";
  auto c = base_config();
  c.json_path = path.c_str();
  c.warmup_blocks = 0;
  chunkscope_probe* p = nullptr;
  REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
  chunkscope_probe_end(p);                // an end without a begin
  chunkscope_probe_section_begin(p, 0);   // a section outside a block
  block(p, 0);
  chunkscope_probe_begin(p, 64);
  chunkscope_probe_begin(p, 64);          // a begin inside a block
  chunkscope_probe_section_begin(p, 2);   // no section 2
  chunkscope_probe_section_end(p, 1);     // an end of a section not begun
  chunkscope_probe_end(p);
  chunkscope_probe_begin(p, 64);
  chunkscope_probe_section_begin(p, 0);
  chunkscope_probe_section_begin(p, 0);   // begun twice
  chunkscope_probe_end(p);                // with section 0 still open
  chunkscope_probe_begin(nullptr, 64);    // a NULL probe: nothing
  chunkscope_probe_end(nullptr);
  REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
  const json j = testutil::load_json(path);
  CHECK(j["counts"]["emitted"] == 3);
  CHECK(j["state"] == "incomplete");
  CHECK(j["reason"].get<std::string>().find("7 probe call(s) out of order ignored") != std::string::npos);
}

TEST_CASE("probe: every block is counted or lost, never both, a lost record marks the report incomplete") {
  testutil::TempDir tmp;
  const std::string path = tmp.path().string() + "/r.json";
  auto c = base_config();
  c.json_path = path.c_str();
  c.ring_blocks = 2;  // the callback may get two records ahead of the reader
  chunkscope_probe* p = nullptr;
  REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
  for (int i = 0; i < 5000; ++i) block(p, 0);
  REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
  const json j = testutil::load_json(path);
  const auto emitted = j["counts"]["emitted"].get<long>();
  const auto callbacks = j["device"]["callbacks"].get<long>();
  CHECK(callbacks == 5000);
  CHECK(emitted <= 5000);
  if (emitted < 5000) {
    CHECK(j["state"] == "incomplete");
    CHECK(j["reason"].get<std::string>().find(std::to_string(5000 - emitted) + " block record(s) lost") == 0);
  } else {
    CHECK(j["state"] == "complete");
  }
}

TEST_CASE("probe: live metrics are served under the CLI's names while it is open, one step series per section") {
  testutil::TempDir tmp;
  const std::string path = tmp.path().string() + "/r.json";
  const int port = testutil::free_port();
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  auto c = base_config();
  c.json_path = path.c_str();
  c.metrics_listen = listen.c_str();
  chunkscope_probe* p = nullptr;
  REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
  run_blocks(p, 60, 20);
  chunkscope_probe_xrun(p);
  // served while open: the families a chunkscope run serves
  const auto live = testutil::http(port, "GET", "/metrics");
  CHECK(live.status == 200);
  CHECK(live.body.find("chunkscope_chunk_latency_seconds") != std::string::npos);
  CHECK(live.body.find("chunkscope_step_latency_seconds") != std::string::npos);
  CHECK(live.body.find("step_label=\"slow\"") != std::string::npos);
  REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
  const json j = testutil::load_json(path);
  CHECK(j["counts"]["emitted"] == 60);
  CHECK(j["device"]["xruns"] == 1);
}

TEST_CASE("probe: open measures the platform baseline at the block period when asked, and the report carries it") {
  testutil::TempDir tmp;
  const std::string path = tmp.path().string() + "/r.json";
  auto c = base_config();
  c.json_path = path.c_str();
  c.baseline_seconds = 0.2;
  chunkscope_probe* p = nullptr;
  REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
  run_blocks(p, 30, 0);
  REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
  const json j = testutil::load_json(path);
  REQUIRE(j["platform"].contains("baseline_before"));
  CHECK(j["platform"]["baseline_before"]["period_ns"] == 1'333'333);
  CHECK(j["platform"]["baseline_before"]["wake"]["count"].get<long>() > 0);
  CHECK_FALSE(j["platform"].contains("baseline_after"));
}

TEST_CASE("probe: a run whose only trouble is xruns says so, naming nothing that did not happen") {
  testutil::TempDir tmp;
  const std::string path = tmp.path().string() + "/r.json";
  auto c = base_config();
  c.json_path = path.c_str();
  c.margin = "50%";
  chunkscope_probe* p = nullptr;
  REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
  for (int i = 0; i < 40; ++i) block(p, 0);  // a few additions against a 667 µs budget
  for (int i = 0; i < 3; ++i) chunkscope_probe_xrun(p);
  REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
  const json j = testutil::load_json(path);
  if (j["counts"]["misses"] != 0) return;  // a block preempted past 667 µs: not the case under test
  const std::string text = j["verdict"]["text"];
  CHECK(j["verdict"]["realtime_safe"] == false);
  CHECK(text.find("budget, but 3 xrun(s) on the device: not safe, the device to blame") != std::string::npos);
  CHECK(text.find("stall") == std::string::npos);
  CHECK(text.find("drop") == std::string::npos);
  CHECK(text.find("underrun") == std::string::npos);
}

TEST_CASE("probe: the report says whether the callback's thread flushed subnormals, as it found it") {
  testutil::TempDir tmp;
  for (bool on : {true, false}) {
    CAPTURE(on);
    const std::string path = tmp.path().string() + (on ? "/on.json" : "/off.json");
    auto c = base_config();
    c.json_path = path.c_str();
    chunkscope_probe* p = nullptr;
    REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
    {
      chunkscope::ScopedFlushDenormals ftz(on);
      CHECK(chunkscope::thread_flushes_denormals() == on);
      block(p, 0);
    }
    REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
    CHECK(testutil::load_json(path)["workload"]["run_mode"]["ftz"] == on);
  }
}

TEST_CASE("probe: a begin from a second thread while a block is open is dropped and counted, never written into the open record") {
  testutil::TempDir tmp;
  const std::string path = tmp.file("forced.json");
  auto c = base_config();
  c.json_path = path.c_str();
  c.warmup_blocks = 0;
  chunkscope_probe* p = nullptr;
  REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
  // A opens a block of 64 frames and section 0; B's whole block (32 frames, both sections)
  // runs between A's begin and A's end, ordered by the barrier, never by time
  constexpr int kForced = 50;
  std::barrier sync(2);
  std::thread b([&] {
    for (int i = 0; i < kForced; ++i) {
      sync.arrive_and_wait();  // A's block is open
      block(p, 0, 32);
      sync.arrive_and_wait();
    }
  });
  for (int i = 0; i < kForced; ++i) {
    chunkscope_probe_begin(p, 64);
    chunkscope_probe_section_begin(p, 0);
    sync.arrive_and_wait();
    sync.arrive_and_wait();  // B began, sectioned and ended inside this block
    chunkscope_probe_section_end(p, 0);
    chunkscope_probe_end(p);
  }
  b.join();
  REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
  const json j = testutil::load_json(path);
  // every one of B's begins was refused: only A's blocks were recorded, each whole
  CHECK(count_in_reason(j, "concurrent begin(s) dropped") == kForced);
  CHECK(j["counts"]["emitted"] == kForced);
  CHECK(j["device"]["callbacks"] == kForced);
  CHECK(j["counts"]["short"] == 0);  // no record took B's 32 frames
  CHECK(j["counts"]["frames_emitted"] == 64 * kForced);
  CHECK(j["steps"]["list"][0]["wall"]["count"] == kForced);  // A's "work", once per block
  CHECK(j["steps"]["list"][1]["wall"]["max"] == 0);  // B's "slow" never reached a record
  CHECK(j["state"] == "incomplete");
  // B's section and end calls belonged to its dropped block: ignored, not out of order
  CHECK(j["reason"].get<std::string>().find("out of order") == std::string::npos);
}

TEST_CASE("probe: two threads running blocks on one probe at once: every begin is recorded or dropped as concurrent, records stay whole") {
  testutil::TempDir tmp;
  const std::string path = tmp.file("free.json");
  auto c = base_config();
  c.json_path = path.c_str();
  c.warmup_blocks = 0;
  constexpr int kEach = 4000;
  c.ring_blocks = 2 * kEach;  // room for every block: none lost
  chunkscope_probe* p = nullptr;
  REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
  std::latch go(2);
  auto run = [&](int frames) {
    go.arrive_and_wait();
    for (int i = 0; i < kEach; ++i) block(p, 0, frames);
  };
  std::thread a(run, 64), b(run, 32);  // a short block is B's
  a.join();
  b.join();
  REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
  const json j = testutil::load_json(path);
  const long emitted = j["counts"]["emitted"].get<long>();
  const long shorts = j["counts"]["short"].get<long>();
  const long concurrent = count_in_reason(j, "concurrent begin(s) dropped");
  CAPTURE(concurrent);
  CHECK(emitted + concurrent == 2 * kEach);
  CHECK(j["device"]["callbacks"] == emitted);
  CHECK(count_in_reason(j, "block record(s) lost") == 0);
  // each record is one thread's: its frames match its short flag, its seq follows the last
  CHECK(j["counts"]["frames_emitted"] == 64 * (emitted - shorts) + 32 * shorts);
  CHECK(j["device"]["callback_period"]["count"] == emitted - 1);
  CHECK(j["steps"]["list"][0]["wall"]["count"] == emitted);
  CHECK(j["state"] == (concurrent > 0 ? "incomplete" : "complete"));
  if (j.contains("reason")) CHECK(j["reason"].get<std::string>().find("out of order") == std::string::npos);
}

TEST_CASE("probe: xrun and device latency from another thread while close runs and after it are safe, later calls reach nothing") {
  testutil::TempDir tmp;
  const std::string path = tmp.file("first.json"), path2 = tmp.file("second.json");
  auto c = base_config();
  c.json_path = path.c_str();
  chunkscope_probe* p = nullptr;
  REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
  for (int i = 0; i < 20; ++i) block(p, 0);
  constexpr long kBefore = 1000;
  std::latch hammering(1), second_open(1);
  std::atomic<bool> closed{false};
  long until_closed = 0;
  std::thread hammer([&] {
    long n = 0;
    for (; n < kBefore; ++n) {
      chunkscope_probe_xrun(p);
      chunkscope_probe_device_latency(p, 64, 128);
    }
    hammering.count_down();
    for (; !closed.load(); ++n) {  // racing close
      chunkscope_probe_xrun(p);
      chunkscope_probe_device_latency(p, 32, 256);
    }
    until_closed = n;
    second_open.wait();
    for (int i = 0; i < 10000; ++i) {  // after close, with another probe open
      chunkscope_probe_xrun(p);
      chunkscope_probe_device_latency(p, 1, 1);
      block(p, 0);
    }
  });
  hammering.wait();
  REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
  closed.store(true);
  auto c2 = base_config();
  c2.json_path = path2.c_str();
  chunkscope_probe* p2 = nullptr;
  REQUIRE(chunkscope_probe_open(&c2, &p2) == CHUNKSCOPE_PROBE_OK);
  second_open.count_down();
  hammer.join();
  for (int i = 0; i < 20; ++i) block(p2, 0);
  REQUIRE(chunkscope_probe_close(p2) == CHUNKSCOPE_PROBE_OK);
  // a second close of the first is refused, not a double free
  CHECK(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_BAD_CONFIG);
  CHECK(std::string(chunkscope_probe_last_error()) == "chunkscope_probe_close: the probe is already closed");

  const json j = testutil::load_json(path);
  const long xruns = j["device"]["xruns"].get<long>();
  CHECK(xruns >= kBefore);        // every xrun before close began
  CHECK(xruns <= until_closed);   // none after close returned
  CHECK(j["device"]["callbacks"] == 20);
  const double out = j["device"]["reported_output_latency_s"].get<double>() * 48000;
  CHECK((out == doctest::Approx(128) || out == doctest::Approx(256)));
  // the calls after close reached neither the first probe nor the second
  const json j2 = testutil::load_json(path2);
  CHECK(j2["device"]["xruns"] == 0);
  CHECK(j2["device"]["reported_output_latency_s"] == 0);
  CHECK(j2["device"]["callbacks"] == 20);
  CHECK(j2["counts"]["emitted"] == 20);
  CHECK(j2["state"] == "complete");
}

TEST_CASE("probe: a block still open when close begins is counted out of order, calls after close do nothing") {
  testutil::TempDir tmp;
  const std::string path = tmp.file("r.json");
  auto c = base_config();
  c.json_path = path.c_str();
  c.warmup_blocks = 0;
  chunkscope_probe* p = nullptr;
  REQUIRE(chunkscope_probe_open(&c, &p) == CHUNKSCOPE_PROBE_OK);
  block(p, 0);
  chunkscope_probe_begin(p, 64);  // never ended
  chunkscope_probe_section_begin(p, 0);
  REQUIRE(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
  chunkscope_probe_section_end(p, 0);  // after close: no-ops
  chunkscope_probe_end(p);
  block(p, 0);
  chunkscope_probe_xrun(p);
  const json j = testutil::load_json(path);
  CHECK(j["counts"]["emitted"] == 1);
  CHECK(j["state"] == "incomplete");
  CHECK(count_in_reason(j, "probe call(s) out of order ignored") == 1);
}
