// `chunkscope compare`: variant parsing, identical input for every variant, pooled rounds,
// ratios to the baseline, and unavailable variants listed with their reason.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernels/gpu.hpp"
#include "src/cli/compare_cmd.hpp"
#include "src/errors.hpp"
#include "src/plan.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;
using namespace chunkscope;

namespace {
const json* variant(const json& c, const std::string& name) {
  for (const auto& v : c["variants"])
    if (v["name"] == name) return &v;
  return nullptr;
}
}  // namespace

TEST_CASE("compare: variant lists parse into backend, mode and fusion") {
  const auto v = parse_variants("cpu, cpu:unfused,cuda:eager,cuda:graph:unfused");
  REQUIRE(v.size() == 4);
  CHECK(v[0].name == "cpu");
  CHECK(v[0].choice.backend == BackendKind::cpu);
  CHECK_FALSE(v[0].fuse_given);
  CHECK(v[1].fuse_given);
  CHECK_FALSE(v[1].fuse);
  CHECK(v[2].choice.backend == BackendKind::cuda);
  CHECK(v[2].choice.cuda.mode == CudaOptions::Mode::eager);
  CHECK(v[3].choice.cuda.mode == CudaOptions::Mode::graph);
  CHECK_FALSE(v[3].fuse);
  for (const char* bad : {"gpu", "cpu:fast", "cuda", "cuda:lazy", "cpu,cpu", "cpu,,cuda:eager", "cuda:graph:x", ""}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_variants(bad), InputError);
  }
}

TEST_CASE("compare: every variant sees the same input, rounds pool, and the baseline's ratios are 1") {
  testutil::TempDir td;
  const char* chain = "hp:80:2 | lp:9000:4 | peak:1000:q=0.7:gain=6";
  const int rounds = 2;
  const auto r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.25s", "--channels", "2", "--chunk",
                                    "128", "--speed", "max", "--warmup", "5", "--chain", chain, "--variants",
                                    "cpu:fused,cpu:unfused,cuda:graph", "--rounds", std::to_string(rounds), "--json",
                                    td.file("c.json")});
  REQUIRE(r.rc == 0);
  const json c = testutil::load_json(td.file("c.json"));
  CHECK(c["schema"] == "chunkscope.compare/1");
  CHECK(c["baseline"] == "cpu:fused");
  CHECK(c["rounds_completed"] == rounds);
  const json* fused = variant(c, "cpu:fused");
  const json* unfused = variant(c, "cpu:unfused");
  REQUIRE(fused);
  REQUIRE(unfused);
  const Plan plan = plan_chain(chain, 48000, false);
  const std::uint64_t chunks = (12000 + 127) / 128;  // 94 per round
  for (const json* v : {fused, unfused}) {
    const json& rep = (*v)["report"];
    CHECK(rep["counts"]["counted"].get<std::uint64_t>() == rounds * (chunks - 5));
    CHECK(rep["counts"]["warmup"].get<std::uint64_t>() == rounds * 5u);
    CHECK(rep["series"]["count"].get<std::uint64_t>() == rounds * chunks);
    CHECK(rep["workload"]["rounds"] == rounds);
  }
  CHECK((*fused)["report"]["dispatches_per_chunk"].get<double>() == 1.0);
  CHECK((*unfused)["report"]["dispatches_per_chunk"].get<double>() == static_cast<double>(plan.dispatches()));
  CHECK(plan.dispatches() == 3);
  // identical input: the recorded input checksums agree chunk for chunk
  CHECK((*fused)["report"]["checksums"]["input"] == (*unfused)["report"]["checksums"]["input"]);
  CHECK((*fused)["report"]["checksums"]["chunks"].get<int>() == 5);  // the warm-up chunks of round 1
  for (const auto& row : c["table"])
    if (row["variant"] == "cpu:fused") {
      CAPTURE(row["stage"]);
      CHECK(row["ratio_p50"].get<double>() == 1.0);
      CHECK(row["ratio_p95"].get<double>() == 1.0);
    }
  // the pause between rounds is not an output period: the series says 0 where a round starts
  {
    const json& cols = (*fused)["report"]["series"]["columns"];
    std::size_t restarts = 0;
    for (std::size_t i = 1; i < cols["seq"].size(); ++i)
      if (cols["seq"][i].get<std::uint64_t>() <= cols["seq"][i - 1].get<std::uint64_t>()) {
        ++restarts;
        CHECK(cols["period_ns"][i].get<std::int64_t>() == 0);
      }
    CHECK(restarts == rounds - 1);
  }
  const json* gpu = variant(c, "cuda:graph");
  REQUIRE(gpu);
  if (!probe_gpu().available) {
    CHECK_FALSE((*gpu)["available"].get<bool>());
    CHECK((*gpu)["reason"].get<std::string>().find("cuda") != std::string::npos);
    CHECK(r.out.find("unavailable cuda:graph") != std::string::npos);
  }
  // the terminal table names every available variant in the summary
  CHECK(r.out.find("cpu:unfused") != std::string::npos);
  CHECK(r.out.find("x e2e") != std::string::npos);
}

TEST_CASE("compare: bad usage and no runnable variant are one-line errors") {
  auto r = testutil::run_cli({"compare", "--variants", "cpu"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--synth") != std::string::npos);
  r = testutil::run_cli({"compare", "--synth", "noise", "--variants", "cpu,tpu"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("'tpu'") != std::string::npos);
  r = testutil::run_cli({"compare", "--synth", "noise", "--rounds", "0"});
  CHECK(r.rc == 2);
  r = testutil::run_cli({"compare", testutil::source_dir() + "/audio/mix_stereo_48k.flac", "--synth", "noise"});
  CHECK(r.rc == 2);
  if (!probe_gpu().available) {
    r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.1s", "--variants", "cuda:eager,cuda:graph"});
    CHECK(r.rc == 3);
    CHECK(r.err.find("no variant can run") != std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
  }
}

TEST_CASE("backend options: unknown values are usage errors, and CUDA without a usable GPU fails at once with exit 3") {
  auto r = testutil::run_cli({"synth", "--duration", "0.1s", "--backend", "tpu", "--quiet"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--backend: 'tpu'") != std::string::npos);
  r = testutil::run_cli({"synth", "--duration", "0.1s", "--mode", "lazy", "--quiet"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--mode: 'lazy'") != std::string::npos);
  r = testutil::run_cli({"synth", "--duration", "0.1s", "--gpu-timing", "maybe", "--quiet"});
  CHECK(r.rc == 2);
  r = testutil::run_cli({"synth", "--duration", "0.1s", "--short-chunk", "drop", "--quiet"});
  CHECK(r.rc == 2);
  if (probe_gpu().available) {
    MESSAGE("a CUDA device is present: the no-GPU failure path is not exercised here");
    return;
  }
  testutil::TempDir td;
  r = testutil::run_cli({"synth", "--duration", "0.1s", "--backend", "cuda", "--mode", "graph", "--json", td.file("r.json")});
  CHECK(r.rc == 3);
  CHECK(r.err.rfind("chunkscope: --backend cuda: ", 0) == 0);
  CHECK(r.err.find('\n') == r.err.size() - 1);
  CHECK_FALSE(std::filesystem::exists(td.file("r.json")));  // failed before streaming: no report
  r = testutil::run_cli({"process", testutil::source_dir() + "/audio/mix_stereo_48k.flac", td.file("o.wav"), "--chain",
                         "lp:1000", "--backend", "cuda"});
  CHECK(r.rc == 3);
  CHECK_FALSE(std::filesystem::exists(td.file("o.wav")));
}

TEST_CASE("report: a saved report with a key removed or of the wrong type is refused in one line, exit 2") {
  testutil::TempDir td;
  auto r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.1s", "--speed", "max", "--rounds", "1",
                              "--variants", "cpu:fused,cpu:unfused", "--json", td.file("c.json"), "--quiet"});
  REQUIRE(r.rc == 0);
  json c = testutil::load_json(td.file("c.json"));
  json run = c["variants"][0]["report"];
  const auto write = [&](const std::string& name, const json& j) {
    std::ofstream(td.file(name)) << j.dump();
    return td.file(name);
  };
  c["summary"][0].erase("misses");
  run["cadence"].erase("period");
  json typed = c["variants"][0]["report"];
  typed["workload"]["rate"] = "fast";
  for (const auto& [name, doc] : {std::pair<std::string, json>{"c.json", c}, {"r.json", run}, {"t.json", typed}}) {
    CAPTURE(name);
    r = testutil::run_cli({"report", write(name, doc)});
    CHECK(r.rc == 2);
    CHECK(r.err.rfind("chunkscope: report '", 0) == 0);
    CHECK(r.err.find('\n') == r.err.size() - 1);
  }
}
