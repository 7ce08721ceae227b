// The probe in a real JACK client: examples/probe_client, built against the installed
// package (the ctest fixture probe_client_builds_against_the_package), run against a real
// jackd with the dummy driver; its report is checked against the server's own cycle count
// and read back by `chunkscope report`.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/jack_server.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;

namespace {

struct ClientRun {
  int rc = -1;
  std::string out;
  unsigned long long blocks = 0, cycles = 0;
};

// Runs the installed-package client for `seconds` with its report in `dir`.
ClientRun run_client(const std::string& dir, const std::string& extra) {
  ClientRun r;
  const std::string cmd = std::string("'") + CHUNKSCOPE_PROBE_CLIENT + "' --seconds 3 --report-dir '" + dir + "' " + extra + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[512];
  while (fgets(buf, sizeof buf, f)) r.out += buf;
  r.rc = WEXITSTATUS(pclose(f));
  const auto at = r.out.find("blocks ");
  if (at != std::string::npos) std::sscanf(r.out.c_str() + at, "blocks %llu server_cycles %llu", &r.blocks, &r.cycles);
  return r;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

}  // namespace

TEST_CASE("probe: a JACK client built against the installed package reports its callbacks, the slow section and the xruns") {
  NEED_JACK();
  if (!std::filesystem::exists(CHUNKSCOPE_PROBE_CLIENT)) {  // the fixture skipped: no JACK development files
    MESSAGE("skipped: the probe's JACK client was not built (JACK's development files are not installed)");
    ++jacktest::g_skipped;
    return;
  }
  jacktest::JackServer jack;
  REQUIRE(jack.ready());
  testutil::TempDir tmp;
  const std::string dir = tmp.path().string() + "/report";
  // every 40th block spins 12 ms: more than two 5.333 ms periods of the server
  const ClientRun r = run_client(dir, "--slow-every 40 --slow-us 12000");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  const json j = read_json(dir + "/report.json");
  CHECK(j["workload"]["command"] == "probe");
  // every callback is a block, and the server's own cycle count between the first and the
  // last callback agrees: equal, but for the cycles the server ran while the client was
  // still busy (it reports those as xruns; a server that itself ran late may skip more)
  const auto& c = j["counts"];
  const auto xruns = j["device"]["xruns"].get<unsigned long long>();
  CHECK(c["emitted"].get<unsigned long long>() == r.blocks);
  CHECK(j["device"]["callbacks"].get<unsigned long long>() == r.blocks);
  CHECK(r.blocks > 400);
  CHECK(r.cycles >= r.blocks);
  if (xruns == 0) CHECK(r.cycles == r.blocks);
  // the slow blocks (12 ms against a 4.267 ms budget) miss, and the verdict names the slow
  // section as the step to blame
  const auto slow_blocks = r.blocks / 40;
  CHECK(c["misses"].get<unsigned long long>() >= slow_blocks);
  REQUIRE(j["steps"]["list"].size() == 2);
  CHECK(j["steps"]["list"][0]["label"] == "filter");
  CHECK(j["steps"]["list"][1]["label"] == "slow");
  CHECK(j["steps"]["list"][1]["kind"] == "section");
  CHECK(j["steps"]["list"][1]["misses"].get<unsigned long long>() >= slow_blocks);
  CHECK(j["verdict"]["realtime_safe"] == false);
  const std::string verdict = j["verdict"]["text"];
  CHECK(verdict.find("step 2, slow") != std::string::npos);
  // a client 12 ms late in a 5.333 ms cycle is still running when the server's next cycle
  // starts: the server reports xruns, and they reach the verdict
  CHECK(xruns > 0);
  CHECK(verdict.find(std::to_string(xruns) + " xrun(s)") != std::string::npos);
  // the files of a run, read by the CLI unchanged
  CHECK(std::filesystem::exists(dir + "/report.html"));
  CHECK(std::filesystem::exists(dir + "/hgrm/end_to_end.hgrm"));
  const auto rep = testutil::run_cli({"report", dir + "/report.json"});
  CHECK(rep.rc == 0);
  CHECK(rep.out.find("slow") != std::string::npos);
}
