// Interrupts: SIGINT sent to the real binary while it runs. A signal stops a run within
// one chunk's processing (queued chunks are counted as not processed) and still writes the
// report, marked interrupted.
// The waits are hang guards, not measurements: each asserts what the process left behind
// and how it ended.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <unistd.h>

#include "tests/test_util.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kMix = testutil::source_dir() + "/audio/mix_stereo_48k.flac";
constexpr int kHangGuardS = 20;

// The temporary file OutputTarget writes `name` to for process `pid`.
std::string partial_of(const testutil::TempDir& td, const std::string& name, pid_t pid) {
  return td.file("." + name + "." + std::to_string(pid) + ".partial");
}

// Files in the folder whose names end in ".partial".
int partial_files(const testutil::TempDir& td) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(td.path()))
    if (e.path().filename().string().find(".partial") != std::string::npos) ++n;
  return n;
}

}  // namespace

TEST_CASE("SIGINT during synth with a 1 s chain: the queued chunks are not processed, the report says so") {
  testutil::TempDir td;
  const pid_t pid = testutil::spawn_cli(
      td.path().string(),
      {"synth", "--duration", "60s", "--chain", "spin:1s", "--queue-depth", "4", "--output", "o.wav", "--json", "r.json",
       "--quiet"},
      td.file("stdout"), td.file("stderr"));
  REQUIRE(testutil::wait_for_path(partial_of(td, "o.wav", pid), kHangGuardS));
  // the first chunk spins for 1 s; meanwhile the source fills the queue and drops the rest
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(pid, SIGINT);
  const int rc = testutil::wait_cli(pid, kHangGuardS);
  REQUIRE(rc == 0);
  const auto j = testutil::load_json(td.file("r.json"));
  CHECK(j["state"] == "interrupted");
  const auto produced = j["counts"]["produced"].get<std::uint64_t>();
  const auto drops = j["counts"]["drops"].get<std::uint64_t>();
  const auto emitted = j["counts"]["emitted"].get<std::uint64_t>();
  CHECK(emitted >= 1);                   // the chunk in processing was finished
  REQUIRE(produced > drops + emitted);   // the queued ones were not
  const std::uint64_t not_processed = produced - drops - emitted;
  CHECK(not_processed <= 4);             // at most the queue's depth
  const std::string reason = j["reason"].get<std::string>();
  CAPTURE(reason);
  CHECK(reason.find(std::to_string(not_processed) + " queued chunk(s) were not processed") != std::string::npos);
  CHECK_FALSE(fs::exists(td.file("o.wav")));  // an interrupted run commits no output
  CHECK(partial_files(td) == 0);
}

