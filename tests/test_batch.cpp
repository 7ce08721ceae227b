// Streams batched into one chunk per period (--batch): the BatchSource's layout, the
// batched processing against each stream processed alone (bit for bit, on every
// instruction set this CPU has), and real batched runs of synth, replay, compare and sweep.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rt/cpu_backend.hpp"
#include "rt/cpu_simd.hpp"
#include "src/io/file_stream.hpp"
#include "src/plan.hpp"
#include "src/report/schema.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;

namespace {

const char* const kSignals[] = {"sine:440", "noise", "sweep:50:15000", "impulse", "sine:97"};

std::unique_ptr<ChunkSource> synth(const std::string& signal, int channels, std::int64_t frames, DType dtype) {
  SynthSpec sp = parse_synth(signal, 48000);
  sp.channels = channels;
  sp.frames = frames;
  return std::make_unique<SynthSource>(sp, dtype);
}

// every fill of `src` in chunks of `chunk`, concatenated
std::vector<unsigned char> drain(ChunkSource& src, int chunk, std::size_t frame_bytes, std::vector<int>* counts = nullptr) {
  std::vector<unsigned char> out, buf(static_cast<std::size_t>(chunk) * frame_bytes);
  int n = 0;
  while (src.fill(buf.data(), chunk, &n) == Status::ok) {
    out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(n) * frame_bytes));
    if (counts) counts->push_back(n);
  }
  return out;
}

// frames of stream k out of a batched buffer of `parts` streams of `part_bytes` a frame
std::vector<unsigned char> part_of(const std::vector<unsigned char>& batched, int parts, int k, std::size_t part_bytes) {
  const std::size_t frame = part_bytes * static_cast<std::size_t>(parts);
  std::vector<unsigned char> out;
  for (std::size_t off = 0; off + frame <= batched.size(); off += frame) {
    const auto* p = batched.data() + off + static_cast<std::size_t>(k) * part_bytes;
    out.insert(out.end(), p, p + part_bytes);
  }
  return out;
}

// `n` streams of `ch` channels: each processed alone by its own backend, and all batched
// into one backend of n x ch channels; both on `isa`, in chunks of `chunk` frames.
void check_batched_equals_alone(CpuIsa isa, DType dtype, int n, int ch, int chunk, std::int64_t frames) {
  const Plan plan = plan_chain("hp:80:4 | lp:12000:8 | peak:1000:q=0.7:gain=6", 48000);
  const std::size_t part_bytes = static_cast<std::size_t>(ch) * dtype_size(dtype);
  std::vector<std::unique_ptr<ChunkSource>> parts;
  for (int k = 0; k < n; ++k) parts.push_back(synth(kSignals[k % 5], ch, frames, dtype));
  BatchSource batch(std::move(parts), ch, chunk, dtype);
  CpuBackend wide(true, isa);
  REQUIRE(wide.prepare({48000, n * ch, chunk, dtype}, lay_out_plan(plan, n * ch)) == Status::ok);
  std::vector<unsigned char> batched, buf(static_cast<std::size_t>(chunk) * part_bytes * static_cast<std::size_t>(n));
  int got = 0;
  while (batch.fill(buf.data(), chunk, &got) == Status::ok) {
    REQUIRE(wide.process({buf.data(), got, n * ch, dtype}, nullptr) == Status::ok);
    batched.insert(batched.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(got) * part_bytes * n));
  }
  REQUIRE(batched.size() == static_cast<std::size_t>(frames) * part_bytes * static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    CAPTURE(k);
    auto src = synth(kSignals[k % 5], ch, frames, dtype);
    const auto input = drain(*src, chunk, part_bytes);
    auto alone = input;
    CpuBackend be(true, isa);
    REQUIRE(be.prepare({48000, ch, chunk, dtype}, lay_out_plan(plan, ch)) == Status::ok);
    for (std::size_t off = 0; off < alone.size(); off += static_cast<std::size_t>(chunk) * part_bytes) {
      const int f = static_cast<int>(std::min(static_cast<std::size_t>(chunk) * part_bytes, alone.size() - off) / part_bytes);
      REQUIRE(be.process({alone.data() + off, f, ch, dtype}, nullptr) == Status::ok);
    }
    const auto mine = part_of(batched, n, k, part_bytes);
    REQUIRE(mine.size() == alone.size());
    CHECK(std::memcmp(mine.data(), alone.data(), alone.size()) == 0);
    CHECK(std::memcmp(mine.data(), input.data(), input.size()) != 0);  // the filter ran
  }
}

}  // namespace

TEST_CASE("batch: a BatchSource lays each stream's chunk side by side, frame by frame, and ends with the last") {
  const int ch = 2, chunk = 256;
  const std::size_t part_bytes = ch * sizeof(float);
  SUBCASE("streams of one length") {
    std::vector<std::unique_ptr<ChunkSource>> parts;
    for (int k = 0; k < 3; ++k) parts.push_back(synth(kSignals[k], ch, 1000, DType::f32));
    BatchSource b(std::move(parts), ch, chunk, DType::f32);
    CHECK(b.total_frames() == 1000);
    CHECK(b.parts() == 3);
    std::vector<int> counts;
    const auto all = drain(b, chunk, 3 * part_bytes, &counts);
    CHECK(counts == std::vector<int>{256, 256, 256, 232});
    for (int k = 0; k < 3; ++k) {
      auto alone = synth(kSignals[k], ch, 1000, DType::f32);
      CHECK(part_of(all, 3, k, part_bytes) == drain(*alone, chunk, part_bytes));
    }
  }
  SUBCASE("a stream that ends first gives silence until the last one ends") {
    std::vector<std::unique_ptr<ChunkSource>> parts;
    parts.push_back(synth("noise", ch, 300, DType::f32));
    parts.push_back(synth("sine:440", ch, 700, DType::f32));
    BatchSource b(std::move(parts), ch, chunk, DType::f32);
    CHECK(b.total_frames() == 700);
    std::vector<int> counts;
    const auto all = drain(b, chunk, 2 * part_bytes, &counts);
    CHECK(counts == std::vector<int>{256, 256, 188});
    const auto first = part_of(all, 2, 0, part_bytes);
    auto alone = synth("noise", ch, 300, DType::f32);
    const auto ref = drain(*alone, chunk, part_bytes);
    REQUIRE(first.size() == 700 * part_bytes);
    CHECK(std::equal(ref.begin(), ref.end(), first.begin()));
    CHECK(std::all_of(first.begin() + static_cast<std::ptrdiff_t>(ref.size()), first.end(),
                      [](unsigned char c) { return c == 0; }));
    int n = -1;
    std::vector<unsigned char> buf(chunk * 2 * part_bytes);
    CHECK(b.fill(buf.data(), chunk, &n) == Status::end_of_stream);
  }
  SUBCASE("a real file per stream, read through libsndfile") {
    const std::string path = testutil::source_dir() + "/audio/mix_stereo_48k.flac";
    std::vector<std::unique_ptr<ChunkSource>> parts;
    for (int k = 0; k < 2; ++k) parts.push_back(std::make_unique<FileSource>(path, DType::f32, 48000));
    BatchSource b(std::move(parts), ch, chunk, DType::f32);
    const auto all = drain(b, chunk, 2 * part_bytes);
    FileSource alone(path, DType::f32, 48000);
    const auto ref = drain(alone, chunk, part_bytes);
    CHECK(ref.size() == 48000 * part_bytes);
    CHECK(part_of(all, 2, 0, part_bytes) == ref);
    CHECK(part_of(all, 2, 1, part_bytes) == ref);
  }
}

TEST_CASE("batch: N streams processed batched give each stream bit for bit what it gets alone, on every instruction set") {
  for (CpuIsa isa : {CpuIsa::scalar, CpuIsa::sse4, CpuIsa::avx2, CpuIsa::avx512}) {
    CAPTURE(cpu_isa_name(isa));
    if (!cpu_isa_supported(isa)) {
      MESSAGE("not checked here: this CPU or build has no " << cpu_isa_name(isa));
      continue;
    }
    for (DType dt : {DType::f32, DType::f64})
      for (int n : {2, 3, 4, 8})
        for (int ch : {1, 2, 3}) {
          CAPTURE(dtype_name(dt));
          CAPTURE(n);
          CAPTURE(ch);
          check_batched_equals_alone(isa, dt, n, ch, 128, 1000);
        }
  }
}

TEST_CASE("batch: a real batched synth run, every stream has the batch's figures and the pooled ones count every stream") {
  testutil::TempDir dir;
  const std::string json = dir.file("r.json");
  const auto res = testutil::run_cli({"synth", "--duration", "1s", "--chunk", "480", "--chain", "lp:8000:4", "--streams",
                                      "3", "--batch", "--warmup", "5", "--baseline", "0", "--quiet", "--json", json});
  REQUIRE_MESSAGE(res.rc <= 1, res.err);
  const auto j = testutil::load_json(json);
  const auto& st = j.at("streams");
  CHECK(st.at("mode") == "batched");
  CHECK(st.at("count") == 3);
  CHECK(st.at("stagger") == false);
  CHECK(st.at("blame").is_null());
  // the stream's channels, and the batch's the backend processed
  CHECK(j.at("workload").at("channels") == 2);
  CHECK(j.at("workload").at("signature").at("channels") == 6);
  CHECK(j.at("workload").at("source").get<std::string>().find("batch of 3 streams") == 0);
  // 1 s at 48 kHz in 480-frame chunks: 100 chunks, 5 of them warm-up, each one batch
  const auto counted = j.at("counts").at("counted").get<std::uint64_t>();
  CHECK(counted + j.at("counts").at("drops").get<std::uint64_t>() == 95);
  REQUIRE(st.at("per_stream").size() == 3);
  for (int k = 0; k < 3; ++k) {
    const auto& e = st.at("per_stream").at(k);
    CHECK(e.at("stream") == k);
    CHECK(e.at("offset_ns") == 0);
    CHECK(e.at("counted") == counted);
    CHECK(e.at("latency") == j.at("latency"));
  }
  CHECK(st.at("pooled").at("counted").get<std::uint64_t>() == 3 * counted);
  CHECK(st.at("pooled").at("misses").get<std::uint64_t>() == 3 * j.at("counts").at("misses").get<std::uint64_t>());
  CHECK(st.at("pooled").at("latency").at("p95") == j.at("latency").at("p95"));
  CHECK(j.at("verdict").at("text").get<std::string>().find("3 streams batched into one chunk per period: ") == 0);
  // one dispatch per chunk for all three streams
  CHECK(j.at("dispatches_per_chunk") == 1.0);
  // the report reads back as it was written
  CHECK(to_json(run_report_from_json(j)) == j);
}

TEST_CASE("batch: what cannot go with --batch is one line and exit 2, before anything streams") {
  auto one_line_exit2 = [](const std::vector<std::string>& args, const std::string& says) {
    CAPTURE(says);
    const auto r = testutil::run_cli(args);
    CHECK(r.rc == 2);
    CHECK(r.err.find(says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  one_line_exit2({"synth", "--batch"}, "--batch: needs --streams 2 or more");
  one_line_exit2({"synth", "--batch", "--streams", "2", "--stagger", "on"}, "--stagger on: --batch");
  one_line_exit2({"synth", "--batch", "--streams", "200", "--channels", "8"},
                 "--batch: 200 streams x 8 channels = 1600 channels in one chunk, above the 1024");
  one_line_exit2({"compare", "--synth", "noise", "--batch", "--streams", "2", "--stagger", "on", "--variants", "cpu"},
                 "--stagger on: --batch");
  one_line_exit2({"sweep", "--batch", "--stagger", "on", "--chunks", "256", "--streams", "1,2"}, "--stagger on: --batch");
  one_line_exit2({"sweep", "--batch", "--chunks", "256", "--streams", "1,200", "--channels", "8"},
                 "--batch: 200 streams x 8 channels");
  // --stagger off says what --batch does anyway: accepted
  const auto r = testutil::run_cli({"synth", "--batch", "--streams", "2", "--stagger", "off", "--duration", "0.1s",
                                    "--baseline", "0", "--quiet"});
  CHECK_MESSAGE(r.rc <= 1, r.err);
}

TEST_CASE("batch: compare --streams 2 --batch runs one batched lane per variant") {
  testutil::TempDir dir;
  const std::string json = dir.file("c.json");
  const auto res = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.5s", "--chunk", "480", "--chain",
                                      "lp:8000:2", "--variants", "cpu:fused,cpu:unfused", "--rounds", "2", "--streams", "2",
                                      "--batch", "--warmup", "5", "--quiet", "--json", json});
  REQUIRE_MESSAGE(res.rc <= 1, res.err);
  const auto j = testutil::load_json(json);
  REQUIRE(j.at("variants").size() == 2);
  for (std::size_t v = 0; v < 2; ++v) {
    const auto& rep = j.at("variants").at(v).at("report");
    const auto& st = rep.at("streams");
    CHECK(st.at("mode") == "batched");
    CHECK(st.at("count") == 2);
    CHECK(rep.at("workload").at("signature").at("channels") == 4);
    // 0.5 s in 480-frame chunks: 50 a round, 5 of them warm-up, two rounds; one batch each
    const auto counted = rep.at("counts").at("counted").get<std::uint64_t>();
    CHECK(counted + rep.at("counts").at("drops").get<std::uint64_t>() == 2 * 45);
    std::uint64_t round_counted = 0;
    for (const auto& r : j.at("per_round").at(v).at("rounds")) round_counted += r.at("counted").get<std::uint64_t>();
    CHECK(round_counted == counted);  // a round counts the batch's chunks
    // the summary's misses and drops count every stream's chunks
    CHECK(j.at("summary").at(v).at("misses").get<std::uint64_t>() == 2 * rep.at("counts").at("misses").get<std::uint64_t>());
    CHECK(j.at("summary").at(v).at("drops").get<std::uint64_t>() == 2 * rep.at("counts").at("drops").get<std::uint64_t>());
  }
}

TEST_CASE("batch: a sweep with --batch runs its cells of 2 or more streams batched") {
  testutil::TempDir dir;
  const std::string json = dir.file("s.json");
  const auto res = testutil::run_cli({"sweep", "--synth", "noise", "--chain", "lp:8000:2", "--chunks", "480", "--streams",
                                      "2,3", "--batch", "--duration", "0.3s", "--baseline", "0", "--quiet", "--json", json});
  REQUIRE_MESSAGE(res.rc == 0, res.err);
  const auto j = testutil::load_json(json);
  CHECK(j.at("workload").at("batch") == true);
  CHECK(j.at("workload").at("stagger") == false);
  // 0.3 s in 480-frame chunks: 30 chunks, 10 of them warm-up; a cell counts every stream's
  // the row's first cell always runs, so at least the 2-stream batch is checked
  int done = 0;
  for (const auto& c : j.at("cells")) {
    if (c.at("state") != "done") continue;
    const auto n = c.at("streams").get<std::uint64_t>();
    CHECK(n >= 2);
    CHECK(c.at("counted").get<std::uint64_t>() + c.at("drops").get<std::uint64_t>() == 20 * n);
    ++done;
  }
  CHECK(done >= 1);
}

TEST_CASE("batch: stage-bench refuses a batched report in one line, exit 2") {
  testutil::TempDir dir;
  const std::string json = dir.file("b.json");
  const auto res = testutil::run_cli({"synth", "--duration", "0.2s", "--chunk", "480", "--chain", "lp:8000:2", "--streams",
                                      "2", "--batch", "--baseline", "0", "--quiet", "--json", json});
  REQUIRE_MESSAGE(res.rc <= 1, res.err);
  const auto r = testutil::run_cli({"stage-bench", json, "--stage", "process"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("a --batch run (2 streams of 2 channel(s) in one chunk of 4)") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}
