// Reports and traces are written as they are produced, never held whole: the streamed
// JSON report is the text of the json document, the trace keeps a stated window of chunks,
// and the output stream reports a failed write at commit.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "src/errors.hpp"
#include "src/io/output_file.hpp"
#include "src/options.hpp"
#include "src/report/schema.hpp"
#include "src/report/trace.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;
using namespace chunkscope;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

// The keys of the object that starts at `text`'s top level, in the order they are written
// (lines indented by exactly two spaces).
std::vector<std::string> top_level_keys(const std::string& text) {
  std::vector<std::string> keys;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.size() > 3 && line.compare(0, 3, "  \"") == 0) keys.push_back(line.substr(3, line.find('"', 3) - 3));
  return keys;
}

std::vector<std::string> partial_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".partial") != std::string::npos) out.push_back(e.path().string());
  return out;
}

ChunkRecord record(std::uint64_t seq, std::int64_t t0) {
  ChunkRecord r{};
  r.seq = seq;
  r.frames = 128;
  r.sched = t0;
  r.ready = t0 + 1'001;
  r.dequeue = t0 + 2'500;
  r.proc_start = t0 + 2'600;
  r.proc_end = t0 + 9'999;
  r.sink_start = t0 + 9'000;  // before proc_end: the queue_out slice is clamped to 0
  r.emit = t0 + 12'345;
  r.q_in_depth = 1;
  r.q_out_depth = 2;
  r.flags = seq == 0 ? kChunkWarmup : 0u;
  return r;
}

}  // namespace

TEST_CASE("report stream: a real run's streamed report is to_json's text, keys in alphabetical order") {
  testutil::TempDir td;
  const auto r = testutil::run_cli({"synth", "--signal", "noise", "--duration", "0.3s", "--chunk", "128", "--speed", "max",
                                    "--chain", "lp:8000:4", "--json", td.file("r.json"), "--quiet"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const std::string file = testutil::slurp(td.file("r.json"));
  const RunReport model = run_report_from_json(json::parse(file));
  REQUIRE(model.series.size() == model.counts.emitted);
  REQUIRE(model.series.size() > 100);

  std::ostringstream streamed;
  write_json(streamed, model);
  CHECK(json::parse(streamed.str()) == to_json(model));
  CHECK(streamed.str() == to_json(model).dump(2));
  CHECK(file == streamed.str() + "\n");  // what the run wrote is the same text

  const auto keys = top_level_keys(file);
  CHECK(keys.size() == to_json(model).size());
  CHECK(std::is_sorted(keys.begin(), keys.end()));
  CHECK(std::find(keys.begin(), keys.end(), "series") != keys.end());
}

TEST_CASE("report stream: an empty series and a report without a device give the same text as to_json") {
  RunReport r;
  r.verdict.text = "nothing ran";
  std::ostringstream o;
  write_json(o, r);
  CHECK(o.str() == to_json(r).dump(2));
  CHECK(has(o.str(), "\"seq\": []"));
}

TEST_CASE("report stream: a comparison streams each variant's run report, the same text as to_json") {
  testutil::TempDir td;
  const auto r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.1s", "--chunk", "256", "--speed", "max",
                                    "--chain", "lp:8000:2", "--variants", "cpu:fused,cpu:unfused,cuda:graph", "--json",
                                    td.file("c.json"), "--quiet"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const std::string file = testutil::slurp(td.file("c.json"));
  const CompareReport c = compare_report_from_json(json::parse(file));
  REQUIRE(c.variants.size() == 3);
  std::ostringstream streamed;
  write_json(streamed, c);
  CHECK(json::parse(streamed.str()) == to_json(c));
  CHECK(streamed.str() == to_json(c).dump(2));
  CHECK(file == streamed.str() + "\n");
}

TEST_CASE("trace stream: events one a line, exact µs times, slices clamped at 0, the window stated") {
  std::vector<ChunkRecord> recs;
  const std::int64_t t0 = 81'234'567'891'234;  // ns of CLOCK_MONOTONIC
  for (std::uint64_t s = 40; s < 43; ++s) recs.push_back(record(s, t0 + static_cast<std::int64_t>(s) * 100'000));
  const TraceThreads th{4242, 4243, 4244, 4245};
  std::ostringstream o;
  write_trace(o, recs, th, {3, 43, {}});
  const json t = json::parse(o.str());

  const json& od = t["otherData"];
  CHECK(od["trace_limit"] == 3);
  CHECK(od["chunks_emitted"] == 43);
  CHECK(od["chunks_held"] == 3);
  CHECK(od["chunks_not_kept"] == 40);
  CHECK(od["first_seq"] == 40);
  CHECK(od["last_seq"] == 42);
  CHECK(has(od["window"].get<std::string>(), "the last 3 chunks"));
  CHECK(od["clock"] == "CLOCK_MONOTONIC");

  int x = 0, c = 0, m = 0;
  for (const auto& e : t["traceEvents"]) {
    const std::string ph = e["ph"];
    CHECK(e["pid"] == 4242);
    if (ph == "M") ++m;
    if (ph == "C") ++c;
    if (ph != "X") continue;
    ++x;
    const std::uint64_t seq = e["args"]["seq"];
    const ChunkRecord& r = recs[seq - 40];
    const std::string cat = e["cat"];
    const std::int64_t from = cat == "source"      ? r.sched
                              : cat == "queue_in"  ? r.ready
                              : cat == "process"   ? r.proc_start  // the stages as the statistics cut them
                              : cat == "queue_out" ? r.proc_end
                                                   : r.sink_start;
    CHECK(e["ts"].get<double>() == static_cast<double>(from) / 1e3);
    CHECK(e["args"]["latency_us"].get<double>() == 12.345);
    CHECK(e["args"]["warmup"] == false);
    if (cat == "queue_out") CHECK(e["dur"].get<double>() == 0.0);
    if (cat == "source") CHECK(e["dur"].get<double>() == 1.001);
    if (cat == "queue_out") CHECK(e["tid"] == kTraceQueueOutTrack);
    if (cat == "process") CHECK(e["tid"] == 4244);
  }
  CHECK(x == 15);
  CHECK(c == 6);
  CHECK(m == 11);
  // one event a line: 11 metadata + 15 slices + 6 counters, between the opening and closing lines
  const std::string text = o.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 11 + 15 + 6 + 1);
}

TEST_CASE("trace stream: an empty window holds no chunk and says so") {
  std::ostringstream o;
  write_trace(o, {}, TraceThreads{1, 0, 0, 0}, {0, 17, {}});
  const json t = json::parse(o.str());
  CHECK(t["otherData"]["chunks_held"] == 0);
  CHECK(t["otherData"]["chunks_not_kept"] == 17);
  CHECK(t["otherData"]["first_seq"].is_null());
  for (const auto& e : t["traceEvents"]) CHECK(e["ph"] == "M");
}

TEST_CASE("trace: a run keeps the last --trace-limit chunks, by default 100000, and says which") {
  CHECK(StreamOptions{}.trace_capacity == 100000);
  testutil::TempDir td;
  const auto r = testutil::run_cli({"synth", "--duration", "0.5s", "--chunk", "128", "--speed", "max", "--trace-limit",
                                    "50", "--trace", td.file("t.json"), "--json", td.file("r.json"), "--quiet"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json t = testutil::load_json(td.file("t.json"));
  const json rep = testutil::load_json(td.file("r.json"));
  const std::uint64_t emitted = rep["counts"]["emitted"];
  REQUIRE(emitted == (24000 + 127) / 128);
  const json& od = t["otherData"];
  CHECK(od["trace_limit"] == 50);
  CHECK(od["chunks_held"] == 50);
  CHECK(od["chunks_emitted"] == emitted);
  CHECK(od["chunks_not_kept"] == emitted - 50);
  CHECK(od["last_seq"] == emitted - 1);  // no drops at --speed max: seq runs 0..emitted-1
  CHECK(od["first_seq"] == emitted - 50);
  std::size_t slices = 0;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "X") {
      ++slices;  // at --speed max there is no wake-up to show: stage slices only
      CHECK(e["args"]["seq"].get<std::uint64_t>() >= emitted - 50);
    }
  CHECK(slices == 5 * 50);

  const auto big = testutil::run_cli({"synth", "--duration", "0.1s", "--trace-limit", "16777217", "--trace",
                                      td.file("t2.json"), "--quiet"});
  CHECK(big.rc == 2);
  CHECK(has(big.err, "--trace-limit"));
}

TEST_CASE("output stream: a document larger than the buffer reaches the file whole, renamed into place") {
  testutil::TempDir td;
  const std::string path = td.file("big.txt");
  std::string expect;
  {
    OutputTarget t(path, "test 'big.txt'");
    for (int i = 0; i < 50000; ++i) {
      const std::string line = std::to_string(i) + "\n";
      t.stream() << line;
      expect += line;
    }
    const std::string block(3 * OutputTarget::kStreamBuffer, 'x');  // one write larger than the buffer
    t.stream() << block;
    expect += block;
    CHECK_FALSE(fs::exists(path));  // still the hidden temporary file
    t.commit();
  }
  CHECK(testutil::slurp(path) == expect);
  CHECK(partial_files(td.path()).empty());
}

TEST_CASE("output stream: a failed write is thrown at commit, naming the output, an abandoned one leaves nothing") {
  if (!fs::exists("/dev/full")) {
    MESSAGE("skipped: /dev/full is missing");
    return;
  }
  OutputTarget t("/dev/full", "--json '/dev/full'");
  t.stream() << std::string(4 * OutputTarget::kStreamBuffer, 'x');
  CHECK_FALSE(t.stream().good());
  try {
    t.commit();
    FAIL("commit() did not throw");
  } catch (const RuntimeFailure& e) {
    CHECK(has(e.what(), "--json '/dev/full': write failed"));
  }

  testutil::TempDir td;
  {
    OutputTarget a(td.file("gone.json"), "test");
    a.stream() << std::string(2 * OutputTarget::kStreamBuffer, 'y');
  }  // not committed
  CHECK_FALSE(fs::exists(td.file("gone.json")));
  CHECK(partial_files(td.path()).empty());
}
