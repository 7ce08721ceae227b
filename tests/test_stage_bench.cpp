// stage-bench replays the processing stage of a real run alone: it must compute exactly what
// the run computed (checksums of the recorded chunks, bit for bit on the CPU), refuse a
// harness that differs from the run's signature, and refuse bad input with one line.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernels/gpu.hpp"
#include "src/errors.hpp"
#include "src/cli/stage_bench.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;
using testutil::run_cli;
namespace fs = std::filesystem;

namespace {

const std::string kMix = testutil::source_dir() + "/audio/mix_stereo_48k.flac";
const std::string kChain = "lp:8000:4 | peak:1000:q=0.7:gain=6";

bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

json load_json(const std::string& p) {
  std::ifstream in(p);
  REQUIRE(in.good());
  return json::parse(in);
}

void save_json(const std::string& p, const json& j) {
  std::ofstream o(p);
  o << j.dump(1);
  REQUIRE(o.good());
}

// True once the command line knows `stage-bench`.
bool cli_has_stage_bench() {
  static const bool wired = run_cli({"stage-bench", "--help"}).rc == 0;
  return wired;
}

// Runs `stage-bench ARGS` through the chunkscope binary when it has the command, else
// in-process through run_stage_bench with the same exit-code mapping and error line as the
// command line.
testutil::RunResult stage_bench(const std::vector<std::string>& args) {
  if (cli_has_stage_bench()) {
    std::vector<std::string> a{"stage-bench"};
    a.insert(a.end(), args.begin(), args.end());
    return run_cli(a);
  }
  chunkscope::StageBenchOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&]() -> std::string {
      REQUIRE(i + 1 < args.size());
      return args[++i];
    };
    if (a == "--stage")
      o.stage = next();
    else if (a == "--iterations")
      o.iterations = std::stoll(next());
    else if (a == "--warmup")
      o.warmup = std::stoll(next());
    else if (a == "--json")
      o.json = next();
    else
      o.report = a;
  }
  testutil::RunResult r;
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  try {
    r.rc = chunkscope::run_stage_bench(o);
  } catch (const chunkscope::InputError& e) {
    err << "chunkscope: " << e.what() << "\n";
    r.rc = chunkscope::kExitUsage;
  } catch (const chunkscope::RuntimeFailure& e) {
    err << "chunkscope: " << e.what() << "\n";
    r.rc = chunkscope::kExitRuntime;
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

bool one_line(const std::string& err) {
  return std::count(err.begin(), err.end(), '\n') == 1 && err.rfind("chunkscope: ", 0) == 0;
}

// A real run: synth noise through the chain at --speed max, chunks of 256 frames.
struct Run {
  testutil::TempDir td;
  std::string path = td.file("run.json");
  json report;
  explicit Run(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"synth", "--signal", "noise", "--duration", "1s", "--chunk", "256", "--chain", kChain,
                                  "--speed", "max", "--json", path, "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args);
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    report = load_json(path);
    REQUIRE_MESSAGE(report["workload"].contains("signature"), "the run report has no workload.signature");
    REQUIRE(report.contains("checksums"));
  }
  std::size_t K() const { return report["checksums"]["chunks"].get<std::size_t>(); }
  // the report, changed by `edit`, saved under `name`
  template <class F>
  std::string edited(const std::string& name, F edit) const {
    json j = report;
    edit(j);
    const std::string p = td.file(name);
    save_json(p, j);
    return p;
  }
};

std::string k_of_k(std::size_t k) { return std::to_string(k) + " of " + std::to_string(k) + " chunks match"; }

std::string flip_hex(const std::string& h) {
  std::string s = h;
  s[0] = s[0] == '0' ? '1' : '0';
  return s;
}

}  // namespace

TEST_CASE("stage-bench on a real synth run: every recorded chunk's input and output checksum matches") {
  testutil::TempDir td;
  const std::string run = td.file("run.json"), out = td.file("sb.json");
  const auto r0 = run_cli({"synth", "--signal", "noise", "--duration", "1s", "--chunk", "256", "--chain", kChain,
                           "--json", run, "--quiet"});
  REQUIRE_MESSAGE(r0.rc == 0, r0.err);
  const json rep = load_json(run);
  REQUIRE(rep["workload"].contains("signature"));
  const auto K = rep["checksums"]["chunks"].get<std::size_t>();
  REQUIRE(K > 4);
  const auto r = stage_bench({run, "--iterations", "200", "--json", out});
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(has(r.out, k_of_k(K)));
  const json sb = load_json(out);
  CHECK(sb["schema"] == "chunkscope.stagebench/1");
  CHECK(sb["checksum"]["compared"] == true);
  CHECK(sb["checksum"]["chunks"].get<std::size_t>() == K);
  CHECK(sb["checksum"]["matched"].get<std::size_t>() == K);
  CHECK(sb["checksum"]["first_mismatch"].is_null());
}

TEST_CASE("stage-bench on a real replay of the bundled FLAC at --speed max: every recorded chunk matches") {
  testutil::TempDir td;
  const std::string run = td.file("run.json"), out = td.file("sb.json");
  const auto r0 = run_cli({"replay", kMix, "--speed", "max", "--chunk", "512", "--chain", kChain, "--json", run, "--quiet"});
  REQUIRE_MESSAGE(r0.rc == 0, r0.err);
  const json rep = load_json(run);
  REQUIRE(rep["workload"]["input"]["kind"] == "file");
  const auto K = rep["checksums"]["chunks"].get<std::size_t>();
  REQUIRE(K > 4);
  const auto r = stage_bench({run, "--iterations", "200", "--json", out});
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(has(r.out, k_of_k(K)));
  const json sb = load_json(out);
  CHECK(sb["checksum"]["matched"].get<std::size_t>() == K);
  CHECK(sb["input"]["kind"] == "file");
}

TEST_CASE("stage-bench matches unfused f64 runs bit for bit too") {
  const Run run({"--dtype", "f64", "--no-fuse"});
  REQUIRE(run.report["workload"]["signature"]["dtype"] == "f64");
  REQUIRE(run.report["workload"]["signature"]["fused"] == false);
  const auto r = stage_bench({run.path, "--iterations", "200", "--json", run.td.file("sb.json")});
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(has(r.out, k_of_k(run.K())));
  CHECK(load_json(run.td.file("sb.json"))["harness"]["dispatches_per_chunk"] == 2);
}

TEST_CASE("stage-bench: the isolated histogram counts exactly --iterations calls") {
  const Run run;
  const auto r = stage_bench({run.path, "--iterations", "317", "--warmup", "7", "--json", run.td.file("sb.json")});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json sb = load_json(run.td.file("sb.json"));
  CHECK(sb["isolated"]["count"] == 317);
  CHECK(sb["iterations"] == 317);
  CHECK(sb["in_pipeline"]["count"] == run.report["stages"]["process"]["count"]);
  // the difference is pipeline minus isolated, percentile by percentile
  CHECK(sb["difference"]["p95"].get<double>() ==
        run.report["stages"]["process"]["p95"].get<double>() - sb["isolated"]["p95"].get<double>());
  CHECK(sb["isolated"]["min"].get<double>() <= sb["isolated"]["p50"].get<double>());
  CHECK(sb["isolated"]["p50"].get<double>() <= sb["isolated"]["max"].get<double>());
}

TEST_CASE("stage-bench: a tampered output checksum is reported at its chunk, exit 3") {
  const Run run;
  REQUIRE(run.K() > 4);
  const std::string p = run.edited("tampered.json", [](json& j) {
    j["checksums"]["output"][3] = flip_hex(j["checksums"]["output"][3].get<std::string>());
  });
  const auto r = stage_bench({p, "--iterations", "200", "--json", run.td.file("sb.json")});
  CHECK(r.rc == 3);
  CHECK(one_line(r.err));
  CHECK(has(r.err, "chunk 3"));
  CHECK(has(r.out, "first mismatch at chunk 3"));
  const json sb = load_json(run.td.file("sb.json"));  // the result is still written in full
  CHECK(sb["checksum"]["first_mismatch"] == 3);
  CHECK(sb["checksum"]["side"] == "output");
  CHECK(sb["checksum"]["matched"].get<std::size_t>() == run.K() - 1);
  CHECK(sb["isolated"]["count"] == 200);
}

TEST_CASE("stage-bench: an input that differs from the run's is named as such, exit 3") {
  const Run run;
  const std::string p = run.edited("input.json", [](json& j) {
    j["checksums"]["input"][2] = flip_hex(j["checksums"]["input"][2].get<std::string>());
  });
  const auto r = stage_bench({p, "--iterations", "50", "--json", run.td.file("sb.json")});
  CHECK(r.rc == 3);
  CHECK(has(r.err, "input differs at chunk 2"));
  const json sb = load_json(run.td.file("sb.json"));
  CHECK(sb["checksum"]["first_mismatch"] == 2);
  CHECK(sb["checksum"]["side"] == "input");
}

TEST_CASE("stage-bench refuses a harness whose state length differs from the signature, naming the field") {
  const Run run;
  const std::string p = run.edited("sv.json", [](json& j) {
    j["workload"]["signature"]["state_values"] = j["workload"]["signature"]["state_values"].get<long long>() + 2;
  });
  const auto r = stage_bench({p, "--iterations", "50"});
  CHECK(r.rc == 3);
  CHECK(one_line(r.err));
  CHECK(has(r.err, "state_values"));
  CHECK_FALSE(has(r.out, "isolated"));  // refused before timing
}

TEST_CASE("stage-bench refuses a plan whose dispatches differ from the run's, naming the field") {
  const Run run;
  const std::string p = run.edited("disp.json", [](json& j) { j["workload"]["dispatches_per_chunk_planned"] = 5; });
  const auto r = stage_bench({p, "--iterations", "50"});
  CHECK(r.rc == 3);
  CHECK(one_line(r.err));
  CHECK(has(r.err, "dispatches_per_chunk_planned"));
  CHECK(has(r.err, "5"));
}

TEST_CASE("stage-bench refuses a backend mode other than the run's, naming the field") {
  const Run run;
  const std::string p = run.edited("mode.json", [](json& j) { j["workload"]["signature"]["mode"] = "unfused"; });
  const auto r = stage_bench({p, "--iterations", "50"});
  CHECK(r.rc == 3);
  CHECK(has(r.err, "mode"));
}

TEST_CASE("stage-bench on a live-device run times synthetic input and says the checksum is not comparable") {
  const Run run;
  const std::string p = run.edited("dev.json", [](json& j) {
    j["workload"]["input"] = {{"kind", "device"}, {"name", "system"}};
  });
  const auto r = stage_bench({p, "--iterations", "50", "--json", run.td.file("sb.json")});
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(has(r.out, "not comparable (live device input)"));
  const json sb = load_json(run.td.file("sb.json"));
  CHECK(sb["checksum"]["compared"] == false);
  CHECK(sb["isolated"]["count"] == 50);
}

TEST_CASE("stage-bench selects a run report inside a compare report with #variant") {
  const Run run;
  json cmp = {{"schema", "chunkscope.compare/1"},
              {"variants", json::array({{{"name", "cpu:fused"}, {"available", true}, {"report", run.report}},
                                        {{"name", "cuda:graph"}, {"available", false}, {"reason", "no GPU"}}})}};
  const std::string p = run.td.file("cmp.json");
  save_json(p, cmp);
  const auto whole = stage_bench({p, "--iterations", "50"});
  CHECK(whole.rc == 2);
  CHECK(one_line(whole.err));
  CHECK(has(whole.err, "pick a variant"));
  CHECK(has(whole.err, "variants[i].report"));
  CHECK(has(whole.err, "cpu:fused"));
  const auto one = stage_bench({p + "#cpu:fused", "--iterations", "50"});
  CHECK_MESSAGE(one.rc == 0, one.err);
  CHECK(has(one.out, k_of_k(run.K())));
  const auto gone = stage_bench({p + "#cuda:graph", "--iterations", "50"});
  CHECK(gone.rc == 2);
  CHECK(has(gone.err, "no GPU"));
}

TEST_CASE("stage-bench: a recorded input file that is gone is refused with exit 2") {
  testutil::TempDir td;
  const std::string wav = td.file("in.wav"), run = td.file("run.json");
  std::vector<float> x(48000 * 2 / 4);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 2000.0f - 0.25f;
  testutil::write_wav(wav, x, 2, 48000);
  const auto r0 = run_cli({"replay", wav, "--speed", "max", "--chunk", "256", "--chain", kChain, "--json", run, "--quiet"});
  REQUIRE_MESSAGE(r0.rc == 0, r0.err);
  fs::remove(wav);
  const auto r = stage_bench({run, "--iterations", "50"});
  CHECK(r.rc == 2);
  CHECK(one_line(r.err));
  CHECK(has(r.err, "in.wav"));
  CHECK(has(r.err, "gone"));
}

TEST_CASE("stage-bench: bad reports and options exit 2 with one line") {
  const Run run;
  const auto& td = run.td;
  SUBCASE("missing file") {
    const auto r = stage_bench({td.file("nope.json")});
    CHECK(r.rc == 2);
    CHECK(one_line(r.err));
    CHECK(has(r.err, "nope.json"));
  }
  SUBCASE("not JSON") {
    std::ofstream(td.file("x.json")) << "hello, not json";
    const auto r = stage_bench({td.file("x.json")});
    CHECK(r.rc == 2);
    CHECK(one_line(r.err));
    CHECK(has(r.err, "not JSON"));
  }
  SUBCASE("another schema") {
    save_json(td.file("b.json"), json{{"schema", "chunkscope.bench/1"}, {"rows", json::array()}});
    const auto r = stage_bench({td.file("b.json")});
    CHECK(r.rc == 2);
    CHECK(has(r.err, "chunkscope.bench/1"));
  }
  SUBCASE("no signature") {
    const std::string p = run.edited("old.json", [](json& j) { j["workload"].erase("signature"); });
    const auto r = stage_bench({p, "--iterations", "50"});
    CHECK(r.rc == 2);
    CHECK(one_line(r.err));
    CHECK(has(r.err, "predates"));
  }
  SUBCASE("empty chain") {
    const std::string p = run.edited("empty.json", [](json& j) { j["workload"]["signature"]["chain"] = ""; });
    const auto r = stage_bench({p, "--iterations", "50"});
    CHECK(r.rc == 2);
    CHECK(has(r.err, "nothing to bench"));
  }
  SUBCASE("a stage that exists only in the pipeline") {
    const auto r = stage_bench({run.path, "--stage", "queue_in"});
    CHECK(r.rc == 2);
    CHECK(one_line(r.err));
    CHECK(has(r.err, "supported: process"));
  }
  SUBCASE("an unknown stage") {
    const auto r = stage_bench({run.path, "--stage", "frobnicate"});
    CHECK(r.rc == 2);
    CHECK(has(r.err, "frobnicate"));
    CHECK(has(r.err, "supported: process"));
  }
  SUBCASE("--iterations 0") {
    const auto r = stage_bench({run.path, "--iterations", "0"});
    CHECK(r.rc == 2);
    CHECK(one_line(r.err));
    CHECK(has(r.err, "--iterations"));
  }
  SUBCASE("--json into a missing folder leaves nothing behind") {
    const auto r = stage_bench({run.path, "--iterations", "50", "--json", td.file("no/such/sb.json")});
    CHECK(r.rc == 2);
    CHECK(has(r.err, "does not exist"));
  }
}

TEST_CASE("stage-bench on a CUDA run: bit-identical replay on a GPU, a clear refusal (exit 3) without one") {
  const chunkscope::GpuInfo gpu = chunkscope::probe_gpu();
  if (chunkscope::cuda_built() && gpu.available) {
    const Run run({"--backend", "cuda", "--mode", "graph"});
    REQUIRE(run.report["workload"]["signature"]["backend"] == "cuda");
    const auto r = stage_bench({run.path, "--iterations", "200", "--json", run.td.file("sb.json")});
    CHECK_MESSAGE(r.rc == 0, r.err);
    CHECK(has(r.out, k_of_k(run.K())));
    CHECK(load_json(run.td.file("sb.json"))["isolated"]["count"] == 200);
    return;
  }
  // no usable GPU here: a report recorded on one cannot be replayed, and says why
  const Run run;
  const std::string p = run.edited("cuda.json", [](json& j) {
    j["workload"]["signature"]["backend"] = "cuda";
    j["workload"]["signature"]["mode"] = "graph";
  });
  const auto r = stage_bench({p, "--iterations", "50"});
  CHECK(r.rc == 3);
  CHECK(one_line(r.err));
  CHECK(has(r.err, "cuda"));
  MESSAGE("no usable GPU (" << (chunkscope::cuda_built() ? gpu.reason : std::string("built without CUDA"))
                            << "): checked the refusal only, not a CUDA replay");
}

TEST_CASE("stage-bench: a run of a relative input path replays from another folder") {
  testutil::TempDir td;
  std::filesystem::create_directories(td.file("run"));
  std::filesystem::create_directories(td.file("elsewhere"));
  std::filesystem::copy_file(testutil::source_dir() + "/audio/mix_stereo_48k.flac", td.file("run/in.flac"));
  auto r = testutil::run_cli_at(td.file("run"), {"replay", "in.flac", "--speed", "max", "-c", "lp:8k", "--json", "r.json", "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(testutil::load_json(td.file("run/r.json"))["workload"]["input"]["path"] ==
        std::filesystem::canonical(td.file("run/in.flac")).string());
  r = testutil::run_cli_at(td.file("elsewhere"), {"stage-bench", "../run/r.json", "--iterations", "50"});
  CHECK_MESSAGE(r.rc == 0, r.err);
}
