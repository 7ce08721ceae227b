// Interrupts: SIGINT and SIGTERM sent to the real binary while it runs. A first signal
// stops a run within one chunk's processing (queued chunks are counted as not processed)
// and still writes the report, marked interrupted; a second ends the process at once. In
// every case the temporary output files (.NAME.PID.partial) are gone when the process is.
// The waits are hang guards, not measurements: each asserts what the process left behind
// and how it ended.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <unistd.h>

#include "src/cli/signals.hpp"
#include "src/io/output_file.hpp"
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

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST_CASE("SIGINT or SIGTERM during process: the temporary file is removed, no output, exit 128 + the signal") {
  for (const int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    testutil::TempDir td;
    // 118 chunks of 4096 frames at 100 ms each: about 12 s unless stopped
    const pid_t pid = testutil::spawn_cli(td.path().string(),
                                          {"process", kMix, "out.wav", "--chain", "spin:100ms", "--chunk", "4096"},
                                          td.file("stdout"), td.file("stderr"));
    REQUIRE(testutil::wait_for_path(partial_of(td, "out.wav", pid), kHangGuardS));
    ::kill(pid, sig);
    const int rc = testutil::wait_cli(pid, kHangGuardS);
    CHECK(rc == 128 + sig);
    CHECK_FALSE(fs::exists(partial_of(td, "out.wav", pid)));
    CHECK(partial_files(td) == 0);
    CHECK_FALSE(fs::exists(td.file("out.wav")));
    const std::string err = testutil::slurp(td.file("stderr"));
    CHECK(lines(err) == 1);
    CHECK(err.find("interrupted by ") != std::string::npos);
    CHECK(err.find("'out.wav' was not written") != std::string::npos);
  }
}

TEST_CASE("SIGINT during synth with a 1 s chain: the queued chunks are not processed, the report says so") {
  testutil::TempDir td;
  const pid_t pid = testutil::spawn_cli(
      td.path().string(),
      {"synth", "--duration", "60s", "--chain", "spin:1s", "--queue-depth", "4", "--baseline", "0", "--output", "o.wav",
       "--json", "r.json", "--quiet"},
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
  REQUIRE(j.contains("not_processed"));  // the same count as a field, for tools
  CHECK(j["not_processed"].get<std::uint64_t>() == not_processed);
  CHECK_FALSE(fs::exists(td.file("o.wav")));  // an interrupted run commits no output
  CHECK(partial_files(td) == 0);
}

TEST_CASE("a second SIGINT ends the process at once: killed by SIGINT, no temporary file, no half-written report") {
  testutil::TempDir td;
  const pid_t pid = testutil::spawn_cli(
      td.path().string(),
      {"synth", "--duration", "60s", "--chain", "spin:5s", "--baseline", "0", "--output", "o.wav", "--json", "r.json", "--quiet"},
      td.file("stdout"), td.file("stderr"));
  REQUIRE(testutil::wait_for_path(partial_of(td, "o.wav", pid), kHangGuardS));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGINT);  // the run would end after the 5 s chunk in processing
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGINT);
  const int rc = testutil::wait_cli(pid, kHangGuardS);
  CHECK(rc == 128 + SIGINT);
  CHECK(partial_files(td) == 0);
  CHECK_FALSE(fs::exists(td.file("o.wav")));
  if (fs::exists(td.file("r.json"))) CHECK(testutil::load_json(td.file("r.json"))["state"] == "interrupted");
  const std::string err = testutil::slurp(td.file("stderr"));
  CHECK(lines(err) == 1);
  CHECK(err.find("stopped at once by SIGINT") != std::string::npos);
}

TEST_CASE("remove_temporary_outputs removes this process's temporary files in the guarded folders, nothing else") {
  testutil::TempDir td;
  const std::string target = td.file("x.json");
  chunkscope::cli::guard_outputs({{"--json", target}});
  chunkscope::OutputTarget t(target, "--json 'x.json'");
  t.write("{}");
  const std::string ours = partial_of(td, "x.json", ::getpid());
  REQUIRE(fs::exists(ours));  // the name OutputTarget gives its temporary file
  const std::string pid = std::to_string(::getpid());
  const std::vector<std::string> also_ours{"." + std::string("y.wav.") + pid + ".3.partial"};
  const std::vector<std::string> not_ours{".x.json.1.partial", ".x.json." + pid + "1.partial", "x.json." + pid + ".partial",
                                          ".x.json." + pid + ".partial.bak", "report.json"};
  for (const auto& n : also_ours) std::ofstream(td.file(n)) << "a";
  for (const auto& n : not_ours) std::ofstream(td.file(n)) << "a";
  CHECK(chunkscope::cli::remove_temporary_outputs() == 2);
  CHECK_FALSE(fs::exists(ours));
  for (const auto& n : also_ours) CHECK_FALSE(fs::exists(td.file(n)));
  for (const auto& n : not_ours) {
    CAPTURE(n);
    CHECK(fs::exists(td.file(n)));
  }
  t.abandon();  // its file is already gone: nothing to do, no error
  CHECK_FALSE(fs::exists(target));
}
