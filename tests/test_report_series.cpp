// What every run report records beyond the summary: the per-chunk series, the I/O
// signature, the input description, checksums of the first chunks and backend counters.
// Each is checked against the run's own counts or against an independent recomputation
// (the same synthetic input regenerated here, the same plan run on a CPU backend here).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "rt/checksum.hpp"
#include "rt/cpu_backend.hpp"
#include "src/plan.hpp"
#include "src/report/build.hpp"
#include "src/report/format.hpp"
#include "src/io/file_stream.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;
using namespace chunkscope;

namespace {
const char* kChain = "lp:8000:4 | peak:1000:q=0.7:gain=6";
}  // namespace

TEST_CASE("series: one point per emitted chunk, columns consistent with each other and with the counts") {
  testutil::TempDir td;
  const auto r = testutil::run_cli({"synth", "--signal", "noise", "--duration", "0.5s", "--chunk", "256", "--speed", "4",
                                    "--chain", kChain, "--json", td.file("r.json"), "--quiet"});
  REQUIRE(r.rc == 0);
  const json j = testutil::load_json(td.file("r.json"));
  const json& s = j["series"];
  const auto n = s["count"].get<std::size_t>();
  CHECK(n == j["counts"]["emitted"].get<std::size_t>());
  CHECK_FALSE(s["truncated"].get<bool>());
  const json& c = s["columns"];
  for (const char* k : {"seq", "sched_ns", "emit_ns", "latency_ns", "period_ns", "source_ns", "queue_in_ns", "process_ns",
                        "queue_out_ns", "sink_ns", "launch_ns", "h2d_ns", "kernel_ns", "d2h_ns", "sync_ns", "flags"}) {
    CAPTURE(k);
    REQUIRE(c[k].size() == n);
  }
  std::size_t warm = 0, miss = 0, shorts = 0;
  const double D = 256 * 1e9 / (48000.0 * 4);  // exact; timing.chunk_ns is rounded to whole ns
  for (std::size_t i = 0; i < n; ++i) {
    const auto seq = c["seq"][i].get<std::uint64_t>();
    CHECK(c["latency_ns"][i].get<std::int64_t>() == c["emit_ns"][i].get<std::int64_t>() - c["sched_ns"][i].get<std::int64_t>());
    if (i > 0) {
      CHECK(seq > c["seq"][i - 1].get<std::uint64_t>());
      CHECK(c["period_ns"][i].get<std::int64_t>() == c["emit_ns"][i].get<std::int64_t>() - c["emit_ns"][i - 1].get<std::int64_t>());
    }
    // paced: the k-th chunk is scheduled at k x D after the first (to rounding)
    CHECK(std::fabs(c["sched_ns"][i].get<double>() - static_cast<double>(seq) * D) <= 2.0);
    const auto f = c["flags"][i].get<std::uint32_t>();
    warm += (f & 2u) != 0;
    miss += (f & 4u) != 0;
    shorts += (f & 1u) != 0;
    CHECK(c["launch_ns"][i].get<std::int64_t>() == 0);  // CPU backend: no GPU parts
  }
  CHECK(warm == j["counts"]["warmup"].get<std::size_t>());
  CHECK(miss == j["counts"]["misses"].get<std::size_t>());
  CHECK(shorts == j["counts"]["short"].get<std::size_t>());
  // the first chunks are the warm-up ones
  for (std::size_t i = 0; i < warm; ++i) CHECK((c["flags"][i].get<std::uint32_t>() & 2u) != 0);
}

TEST_CASE("series: --series-limit keeps the first N points and says how many it left out") {
  testutil::TempDir td;
  const auto r = testutil::run_cli({"synth", "--signal", "sine:440", "--duration", "0.2s", "--chunk", "128", "--speed",
                                    "max", "--series-limit", "7", "--json", td.file("r.json"), "--quiet"});
  REQUIRE(r.rc == 0);
  const json j = testutil::load_json(td.file("r.json"));
  CHECK(j["series"]["count"].get<int>() == 7);
  CHECK(j["series"]["truncated"].get<bool>());
  CHECK(j["series"]["not_kept"].get<std::uint64_t>() + 7 == j["counts"]["emitted"].get<std::uint64_t>());
  CHECK(j["series"]["columns"]["seq"][0].get<int>() == 0);
  CHECK(j["series"]["columns"]["seq"][6].get<int>() == 6);

  const auto bad = testutil::run_cli({"synth", "--series-limit", "-1", "--quiet"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("--series-limit") != std::string::npos);
}

TEST_CASE("signature, input and checksums describe the run well enough to recompute it") {
  testutil::TempDir td;
  const double rate = 48000;
  const int chunk = 256, ch = 2;
  // checksums cover the warm-up chunks, at most 64
  const auto r = testutil::run_cli({"synth", "--signal", "noise", "--duration", "0.5s", "--chunk", "256", "--speed", "max",
                                    "--warmup", "70", "--chain", kChain, "--json", td.file("r.json"), "--quiet"});
  REQUIRE(r.rc == 0);
  const json j = testutil::load_json(td.file("r.json"));
  const json& sig = j["workload"]["signature"];
  const Plan plan = plan_chain(kChain, rate, true);
  CHECK(sig["frames"] == chunk);
  CHECK(sig["channels"] == ch);
  CHECK(sig["rate"].get<double>() == rate);
  CHECK(sig["dtype"] == "f32");
  CHECK(sig["chain"] == plan.spec);
  CHECK(sig["backend"] == "cpu");
  CHECK(sig["mode"] == "fused");
  CHECK(sig["state_values"].get<std::size_t>() == 2 * plan.total_sections() * ch);
  const json& in = j["workload"]["input"];
  CHECK(in["kind"] == "synth");
  CHECK(in["signal"] == "noise");
  CHECK(in["frames"].get<std::int64_t>() == 24000);
  CHECK(j["backend_counters"]["chunks"].get<std::uint64_t>() == j["counts"]["produced"].get<std::uint64_t>());

  // regenerate the input and run the same plan here: every recorded checksum must match
  const json& ck = j["checksums"];
  CHECK(ck["algorithm"] == "fnv1a64");
  const auto K = ck["chunks"].get<std::size_t>();
  CHECK(K == 64);  // 94 chunks, 70 of them warm-up, none dropped at --speed max
  SynthSpec sp = parse_synth("noise", rate);
  sp.channels = ch;
  sp.frames = 24000;
  SynthSource src(sp, DType::f32);
  CpuBackend be;
  REQUIRE(be.prepare({rate, ch, chunk, DType::f32}, lay_out_plan(plan, ch)) == Status::ok);
  std::vector<float> buf(static_cast<std::size_t>(chunk * ch));
  std::size_t matched_in = 0, matched_out = 0;
  for (std::size_t k = 0; k < K; ++k) {
    int got = 0;
    REQUIRE(src.fill(buf.data(), chunk, &got) == Status::ok);
    const std::size_t bytes = static_cast<std::size_t>(got * ch) * sizeof(float);
    matched_in += hex64(fnv1a64(buf.data(), bytes)) == ck["input"][k].get<std::string>();
    REQUIRE(be.process({buf.data(), got, ch, DType::f32}, nullptr) == Status::ok);
    matched_out += hex64(fnv1a64(buf.data(), bytes)) == ck["output"][k].get<std::string>();
  }
  CHECK(matched_in == K);
  CHECK(matched_out == K);
}

TEST_CASE("checksums: without a chain the output equals the input, and a file input is described by its path") {
  testutil::TempDir td;
  const std::string mix = testutil::source_dir() + "/audio/mix_stereo_48k.flac";
  const auto r = testutil::run_cli({"replay", mix, "--chunk", "4096", "--speed", "max", "--json", td.file("r.json"), "--quiet"});
  REQUIRE(r.rc == 0);
  const json j = testutil::load_json(td.file("r.json"));
  CHECK(j["workload"]["input"]["kind"] == "file");
  CHECK(j["workload"]["input"]["path"] == mix);
  const auto K = j["checksums"]["chunks"].get<std::size_t>();
  CHECK(K == 10);  // the default warm-up: hashing never touches a counted chunk
  CHECK(j["checksums"]["input"] == j["checksums"]["output"]);
  CHECK(j["workload"]["signature"]["state_values"].get<int>() == 0);
}

TEST_CASE("checksums stop at the first dropped chunk") {
  // a 3 ms stall on every chunk of 1.33 ms with a queue of one: the paced source drops
  testutil::TempDir td;
  const auto r = testutil::run_cli({"synth", "--signal", "noise", "--duration", "0.3s", "--chunk", "64", "--queue-depth",
                                    "1", "--chain", "spin:3ms", "--json", td.file("r.json"), "--quiet"});
  REQUIRE(r.rc == 0);
  const json j = testutil::load_json(td.file("r.json"));
  REQUIRE(j["counts"]["drops"].get<std::uint64_t>() > 0);
  const auto first_drop = j["counts"]["drop_seqs"][0].get<std::size_t>();
  CHECK(j["checksums"]["chunks"].get<std::size_t>() == std::min<std::size_t>(10, first_drop));
  CHECK(j["checksums"]["input"].size() == j["checksums"]["chunks"].get<std::size_t>());
}

TEST_CASE("checksums: none without warm-up chunks, since hashing would add to counted chunks' latency") {
  testutil::TempDir td;
  const auto r = testutil::run_cli({"synth", "--signal", "noise", "--duration", "0.2s", "--speed", "max", "--warmup", "0",
                                    "--chain", kChain, "--json", td.file("r.json"), "--quiet"});
  REQUIRE(r.rc == 0);
  const json j = testutil::load_json(td.file("r.json"));
  CHECK(j["checksums"]["chunks"].get<int>() == 0);
  CHECK(j["checksums"]["output"].empty());
}

TEST_CASE("stages add up: in every chunk the five stage times sum to its latency, and their means to the mean latency") {
  testutil::TempDir td;
  // warm-up chunks are checksummed between dequeue and the call: the gap the stages must still cover
  const auto r = testutil::run_cli({"synth", "--signal", "noise", "--duration", "0.5s", "--chunk", "128", "--speed", "4",
                                    "--warmup", "20", "--chain", kChain, "--json", td.file("r.json"), "--quiet"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json j = testutil::load_json(td.file("r.json"));
  const json& c = j["series"]["columns"];
  const auto n = j["series"]["count"].get<std::size_t>();
  REQUIRE(n > 100);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t sum = 0;
    for (const char* k : {"source_ns", "queue_in_ns", "process_ns", "queue_out_ns", "sink_ns"}) sum += c[k][i].get<std::int64_t>();
    CAPTURE(i);
    CHECK(sum == c["latency_ns"][i].get<std::int64_t>());
  }
  // the summary: the counted chunks' stage means add up to their mean latency (each mean is
  // exact and rounded once, hence the few-ns tolerance)
  double means = 0;
  for (const char* k : {"source", "queue_in", "process", "queue_out", "sink"}) means += j["stages"][k]["mean"].get<double>();
  CHECK(means == doctest::Approx(j["latency"]["mean"].get<double>()).epsilon(1e-6));
}
