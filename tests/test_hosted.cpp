// Hosted steps (so:): the chain syntax, the loader's refusals, the output of a chain with
// a hosted step against the stage called directly, the real-time audit's exact counts on a
// stage that misbehaves on request, step timing in the report, a failing and a crashing stage.
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "chunkscope/stage.h"
#include "rt/alloc_audit.hpp"
#include "rt/cpu_backend.hpp"
#include "rt/denormals.hpp"
#include "src/chain_spec.hpp"
#include "src/cli/compare_cmd.hpp"
#include "src/cli/signals.hpp"
#include "src/errors.hpp"
#include "src/plan.hpp"
#include "src/report/schema.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;
namespace fs = std::filesystem;

namespace {

const std::string kBad = CHUNKSCOPE_BAD_STAGE;
const std::string kClean = CHUNKSCOPE_CLEAN_STAGE;

std::string mix() { return testutil::source_dir() + "/audio/mix_stereo_48k.flac"; }

// `chain` run by a scalar CPU backend over `x` (interleaved stereo) in chunks of 256.
void run_chain(const std::string& chain, std::vector<float>& x) {
  const Plan plan = plan_chain(chain, 48000);
  CpuBackend be(true, CpuIsa::scalar);
  REQUIRE(be.prepare({48000, 2, 256, DType::f32}, lay_out_plan(plan, 2)) == Status::ok);
  const int frames = static_cast<int>(x.size() / 2);
  for (int f = 0; f < frames; f += 256)
    REQUIRE(be.process({x.data() + 2 * f, std::min(256, frames - f), 2, DType::f32}, nullptr) == Status::ok);
}

// The compressor stage called directly, once, on the whole signal (planar), denormals
// flushed as chunkscope runs hosted code.
void compress_whole(std::vector<float>& x, const char* ratio) {
  void* h = dlopen(CHUNKSCOPE_COMPRESSOR_STAGE, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h != nullptr);
  auto entry = reinterpret_cast<chunkscope_stage_entry_fn>(dlsym(h, CHUNKSCOPE_STAGE_ENTRY));
  REQUIRE(reinterpret_cast<void*>(entry) != nullptr);
  const chunkscope_stage_descriptor* d = entry(CHUNKSCOPE_STAGE_ABI_VERSION);
  REQUIRE(d != nullptr);
  const int frames = static_cast<int>(x.size() / 2);
  chunkscope_stage_param p{"ratio", ratio};
  chunkscope_stage_config cfg{sizeof cfg, 48000, frames, 2, &p, 1};
  char err[256] = {};
  void* inst = d->create(&cfg, err, sizeof err);
  REQUIRE_MESSAGE(inst != nullptr, err);
  std::vector<float> l(static_cast<std::size_t>(frames)), r(static_cast<std::size_t>(frames));
  for (int f = 0; f < frames; ++f) {
    l[static_cast<std::size_t>(f)] = x[2 * static_cast<std::size_t>(f)];
    r[static_cast<std::size_t>(f)] = x[2 * static_cast<std::size_t>(f) + 1];
  }
  float* chans[2] = {l.data(), r.data()};
  {
    ScopedFlushDenormals ftz;
    REQUIRE(d->process(inst, chans, frames) == 0);
  }
  for (int f = 0; f < frames; ++f) {
    x[2 * static_cast<std::size_t>(f)] = l[static_cast<std::size_t>(f)];
    x[2 * static_cast<std::size_t>(f) + 1] = r[static_cast<std::size_t>(f)];
  }
  d->destroy(inst);
  dlclose(h);
}

}  // namespace

TEST_CASE("hosted: so: takes the trailing identifier=value fields as parameters, the rest as the path") {
  auto one = [](const std::string& s) { return parse_chain(s).stages.at(0); };
  const StageSpec a = one("so:/opt/a:b/libx.so:ratio=4:threshold=-18");
  CHECK(a.kind == StageKind::so);
  CHECK(a.path == "/opt/a:b/libx.so");
  REQUIRE(a.params.size() == 2);
  CHECK(a.params[0] == std::pair<std::string, std::string>{"ratio", "4"});
  CHECK(a.params[1] == std::pair<std::string, std::string>{"threshold", "-18"});
  CHECK(one("so:./dir:x=1/libx.so").path == "./dir:x=1/libx.so");  // a value with '/' is path
  CHECK(one("so:libx.so").params.empty());
  CHECK(one("so:./libx.so:9x=1").path == "./libx.so:9x=1");  // not an identifier
  // spaces around '=' and ':' are trimmed, as the docs say: `gain = -6` is `gain=-6`
  const StageSpec spaced = one("so: out/libgain.so : gain = -6 ");
  CHECK(spaced.path == "out/libgain.so");
  REQUIRE(spaced.params.size() == 1);
  CHECK(spaced.params[0] == std::pair<std::string, std::string>{"gain", "-6"});
  const StageSpec lv2 = one("lv2:fil4#stereo : gain = -6");
  CHECK(lv2.path == "fil4#stereo");
  CHECK(lv2.params == std::vector<std::pair<std::string, std::string>>{{"gain", "-6"}});
  const StageSpec ladspa = one("ladspa:filter.so:lpf: 0 = 1000");
  CHECK(ladspa.label == "lpf");
  CHECK(ladspa.params == std::vector<std::pair<std::string, std::string>>{{"0", "1000"}});
  CHECK_THROWS_AS(parse_chain("so:"), InputError);
  CHECK_THROWS_WITH_AS(parse_chain("so:./libx.so:a=1:a=2"), doctest::Contains("given twice"), InputError);
  // built-in filters fuse around a hosted step, which is a step of its own
  const Plan plan = plan_chain("hp:80:4 | peak:1k:gain=3 | so:" + kClean + " | lp:12k:8 | gain:-1", 48000);
  REQUIRE(plan.steps.size() == 3);
  CHECK(plan.steps[0].kind == PlanStep::Kind::cascade);
  CHECK(plan.steps[0].stages.size() == 2);
  CHECK(plan.steps[1].kind == PlanStep::Kind::hosted);
  CHECK(plan.steps[1].label(plan.stages) == "so:libclean_stage.so");
  CHECK(plan.steps[2].stages.size() == 2);
  CHECK(plan.dispatches() == 2);
  CHECK(plan.hosted_steps() == 1);
}

TEST_CASE("hosted: a chain with the compressor replays the bundled file, its output equals the stage applied alone, bit for bit") {
  testutil::TempDir td;
  std::vector<float> ref = testutil::float_stereo_copy(mix(), td.file("in.wav"));
  const std::string chain = fmt::format("hp:80:4 | so:{}:ratio=4 | lp:12k:8", CHUNKSCOPE_COMPRESSOR_STAGE);
  const auto r = testutil::run_cli({"replay", td.file("in.wav"), "--speed", "max", "--isa", "scalar", "-c", chain, "-o",
                                    td.file("out.wav"), "--json", td.file("r.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  run_chain("hp:80:4", ref);
  compress_whole(ref, "4");
  run_chain("lp:12k:8", ref);
  const std::vector<double> out = testutil::read_all(td.file("out.wav"));
  REQUIRE(out.size() == ref.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) differ += static_cast<float>(out[i]) != ref[i];
  CHECK(differ == 0);
  // the report has three steps, each with its own percentiles
  const auto j = testutil::load_json(td.file("r.json"));
  REQUIRE(j.at("steps").at("list").size() == 3);
  const std::uint64_t counted = j.at("counts").at("counted").get<std::uint64_t>();
  for (int s = 1; s <= 3; ++s) {
    CAPTURE(s);
    CHECK(testutil::report_step(j, s).at("wall").at("count").get<std::uint64_t>() == counted);
    CHECK(testutil::report_step(j, s).at("wall").at("p50").get<std::int64_t>() > 0);
  }
  CHECK(testutil::report_step(j, 2).at("kind") == "hosted");
  CHECK(testutil::report_step(j, 2).at("label") == "so:libcompressor_stage.so");
  CHECK(testutil::report_step(j, 2).at("cpu").at("count").get<std::uint64_t>() > 0);
  CHECK(testutil::report_step(j, 2).at("audit").at("calls").get<std::uint64_t>() == 1875);
  CHECK(testutil::report_step(j, 2).at("audit").at("realtime_safe") == true);
  // the steps' means fit inside process's mean: what is left is the engine's (conversions)
  double sum = 0;
  for (int s = 1; s <= 3; ++s) sum += testutil::report_step(j, s).at("wall").at("mean").get<double>();
  CHECK(sum <= j.at("stages").at("process").at("mean").get<double>());
  // the saved report reads back into the same steps
  const RunReport back = run_report_from_json(j);
  REQUIRE(back.steps.size() == 3);
  CHECK(back.steps[1].audit->calls == 1875);
  CHECK(to_json(back).at("steps") == j.at("steps"));
}

TEST_CASE("hosted: the audit counts exactly what the bad stage did, and each is a finding, --fail-on-unsafe exits 1") {
  testutil::TempDir td;
  // 1875 calls: allocations on calls 10, 20, ... (187); sleeps every 100th (18) and locks
  // every 250th (7) call, 3 calls doing both: 22 blocking calls; one NaN, one Inf, one subnormal
  const std::string chain =
      fmt::format("lp:8k | so:{}:alloc_every=10:sleep_every=100:lock_every=250:nan_at=5:inf_at=6:subnormal_at=7:latency=64 "
                  "| hp:50", kBad);
  const std::vector<std::string> args = {"replay", mix(), "--speed", "max", "-c", chain, "--json", td.file("r.json"), "-q"};
  const auto r = testutil::run_cli(args);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = testutil::load_json(td.file("r.json"));
  const auto& a = testutil::report_step(j, 2).at("audit");
  CHECK(a.at("calls") == 1875);
  if (alloc_audit::interposer_active()) {
    CHECK(a.at("allocations") == 187);
    CHECK(a.at("frees") == 187);
    CHECK(a.at("first_alloc_seq") == 9);
  }
  CHECK(a.at("blocking_calls") == 22);
  CHECK(a.at("voluntary_switches").get<std::uint64_t>() >= 22);
  CHECK(a.at("first_block_seq") == 99);
  CHECK(a.at("nonfinite_samples") == 2);
  CHECK(a.at("first_nonfinite_seq") == 5);
  CHECK(a.at("subnormal_samples") == 1);
  CHECK(a.at("realtime_safe") == false);
  CHECK(testutil::report_step(j, 2).at("declared_latency_frames") == 64);
  CHECK(j.at("steps").at("declared_latency_frames") == 64);
  std::vector<std::string> rules;
  for (const auto& f : j.at("diagnosis")) rules.push_back(f.at("rule").get<std::string>());
  auto has = [&](const char* rule) { return std::find(rules.begin(), rules.end(), rule) != rules.end(); };
  CHECK(has("hosted_allocates") == alloc_audit::interposer_active());
  CHECK(has("hosted_blocks"));
  CHECK(has("hosted_nonfinite"));
  CHECK(has("hosted_subnormal"));
  auto gated = args;
  gated.push_back("--fail-on-unsafe");
  CHECK(testutil::run_cli(gated).rc == 1);
}

TEST_CASE("hosted: a clean stage gives a clean audit and no finding, --fail-on-unsafe passes") {
  testutil::TempDir td;
  const std::string chain = fmt::format("hp:80 | so:{}:gain=-3 | lp:12k", kClean);
  const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "--dtype", "f64", "-c", chain, "--json",
                                    td.file("r.json"), "-q", "--fail-on-unsafe"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = testutil::load_json(td.file("r.json"));
  const auto& a = testutil::report_step(j, 2).at("audit");
  for (const char* k : {"allocations", "frees", "blocking_calls", "nonfinite_samples", "subnormal_samples"}) {
    CAPTURE(k);
    CHECK(a.at(k) == 0);
  }
  CHECK(a.at("realtime_safe") == true);
  CHECK(testutil::report_step(j, 2).at("converted_from_f64") == true);
  for (const auto& f : j.at("diagnosis")) CHECK(f.at("rule").get<std::string>().rfind("hosted_", 0) != 0);
}

TEST_CASE("hosted: a miss owned by the chain names the step that took the time") {
  testutil::TempDir td;
  // spin:8ms alone is more than the 4.267 ms budget of a 256-frame chunk: every counted chunk misses
  const auto r = testutil::run_cli({"synth", "--duration", "1s", "-c", "lp:1k | spin:8ms | hp:100", "--baseline", "0",
                                    "--json", td.file("r.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = testutil::load_json(td.file("r.json"));
  REQUIRE(j.at("counts").at("misses").get<int>() > 0);
  // the spin is the chain's, the step named in each miss the chain owns; on a busy machine
  // the scheduler's record may show the machine taking the CPU from a spin for most of it,
  // and that miss is the platform's (its step still the largest of its processing)
  const int chain = j.at("counts").at("miss_owner").at("chain").get<int>();
  CHECK(chain >= 1);
  for (const auto& m : j.at("counts").at("miss_list")) {
    CHECK(m.at("step") == 2);
    if (m.at("owner") != "chain") CHECK(m.at("owner") == "platform");
  }
  CHECK(testutil::report_step(j, 2).at("misses").get<int>() == chain);
  if (j.at("verdict").at("owner") == "chain")
    CHECK(j.at("verdict").at("text").get<std::string>().find("step 2, spin:8ms, took") != std::string::npos);
}

TEST_CASE("hosted: what cannot be hosted is one line naming the library, exit 2, nothing written") {
  testutil::TempDir td;
  fs::create_directories(td.file("folder"));
  struct Case {
    std::string stage, says;
  };
  const std::vector<Case> cases = {
      {"so:" + std::string(CHUNKSCOPE_TOO_NEW_STAGE), "built for stage ABI version 2, newer than this chunkscope's (1)"},
      {"so:" + std::string(CHUNKSCOPE_NO_ENTRY_STAGE), "no chunkscope_stage_entry symbol"},
      {"so:" + std::string(CHUNKSCOPE_NULL_ENTRY_STAGE), "returned no descriptor"},
      {"so:" + kBad + ":bogus=1", "unknown parameter 'bogus' (known: alloc_every"},
      {"so:" + kBad + ":create_fail=1", "create failed: create_fail=1 was asked for"},
      {"so:" + kBad + ":nan_at=x", "nan_at=x: not an integer"},
      {"so:" + td.file("missing.so"), "not found: no file " + td.file("missing.so")},
      {"so:" + td.file("folder"), "is a folder"},
      {"so:" + mix(), "not a loadable shared object"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.stage);
    const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", c.stage, "--json", td.file("r.json"), "-q"});
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(td.file("r.json")));
  }
  // a stage that takes 1 to 8 channels, given 16
  auto r = testutil::run_cli({"synth", "--duration", "0.1s", "--channels", "16", "-c", "so:" + kBad, "-q"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("takes 1 to 8 channels; the chunk has 16") != std::string::npos);
  // hosted code runs on the CPU only
  r = testutil::run_cli({"synth", "--duration", "0.1s", "--backend", "cuda", "-c", "hp:80 | so:" + kClean, "-q"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("chain stage 2 'so:") != std::string::npos);
  CHECK(r.err.find("runs on the CPU only") != std::string::npos);
}

TEST_CASE("hosted: a bare library name that is not in the current folder is refused with the path looked at") {
  testutil::TempDir td;
  const auto r = testutil::run_cli_at(td.path().string(), {"chain", "so:libmissing_stage.so"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("not found: no file " + (fs::canonical(td.path()) / "libmissing_stage.so").string()) !=
        std::string::npos);
  CHECK(r.err.find("a bare file name is looked for in the current folder only") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  // a path with a '/' is a path: no word about the current folder
  const auto p = testutil::run_cli({"chain", "so:" + td.file("libmissing_stage.so")});
  CHECK(p.rc == 2);
  CHECK(p.err.find("current folder") == std::string::npos);
}

TEST_CASE("hosted: a stage that takes one channel runs as one instance per channel, as two mono runs give") {
  testutil::TempDir td;
  // two different channels: the bundled mix's left, and its right scaled and reversed
  int ch = 0, rate = 0;
  const std::vector<double> d = testutil::read_all(mix(), &ch, &rate);
  REQUIRE(ch == 2);
  const std::size_t frames = d.size() / 2;
  std::vector<float> left(frames), right(frames), both(2 * frames);
  for (std::size_t i = 0; i < frames; ++i) {
    left[i] = static_cast<float>(d[2 * i]);
    right[i] = static_cast<float>(0.5 * d[2 * (frames - 1 - i) + 1]);
    both[2 * i] = left[i], both[2 * i + 1] = right[i];
  }
  testutil::write_wav(td.file("l.wav"), left, 1, rate);
  testutil::write_wav(td.file("r.wav"), right, 1, rate);
  testutil::write_wav(td.file("lr.wav"), both, 2, rate);
  const std::string stage = std::string("so:") + CHUNKSCOPE_MONO_STAGE + ":a=0.95";
  for (const char* name : {"l", "r", "lr"}) {
    const auto r = testutil::run_cli({"process", td.file(std::string(name) + ".wav"), td.file(std::string(name) + "_out.wav"),
                                      "-c", stage});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
  }
  const auto l = testutil::read_all(td.file("l_out.wav")), r = testutil::read_all(td.file("r_out.wav"));
  const auto lr = testutil::read_all(td.file("lr_out.wav"));
  REQUIRE(lr.size() == 2 * frames);
  REQUIRE(l.size() == frames);
  std::size_t differ = 0, changed = 0;
  for (std::size_t i = 0; i < frames; ++i) {
    differ += lr[2 * i] != l[i] || lr[2 * i + 1] != r[i];
    changed += l[i] != static_cast<double>(left[i]);
  }
  CHECK(differ == 0);
  CHECK(changed > frames / 2);  // the stage did filter
  // `chain` makes the stage as a run does: fine on two channels, and the report names one step
  const auto c = testutil::run_cli({"chain", "--channels", "2", stage});
  CHECK_MESSAGE(c.rc == 0, c.err);
}

TEST_CASE("hosted: chain makes hosted stages for the chunk it is told of and refuses there what a run would refuse") {
  // the bad stage takes 1 to 8 channels
  const auto ok = testutil::run_cli({"chain", "--channels", "8", "so:" + kBad});
  CHECK_MESSAGE(ok.rc == 0, ok.err);
  const auto r = testutil::run_cli({"chain", "--channels", "16", "so:" + kBad, "--json"});
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("takes 1 to 8 channels; the chunk has 16") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  // its create() refusal, which only making the stage shows
  const auto cf = testutil::run_cli({"chain", "so:" + kBad + ":create_fail=1"});
  CHECK(cf.rc == 2);
  CHECK(cf.err.find("create failed: create_fail=1 was asked for") != std::string::npos);
  const auto bad = testutil::run_cli({"chain", "--channels", "0", "so:" + kBad});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("--channels: 0 is out of range 1..64") != std::string::npos);
}

TEST_CASE("hosted: the stage-bench hint of a run that wrote no JSON runs as printed: the rerun saves run.json, stage-bench reads it") {
  testutil::TempDir td;
  // a NaN: what a sanitizer build (which counts no allocations) sees too
  const std::string chain = "hp:80:4 | so:" + kBad + ":nan_at=5 | lp:12k:8";
  const auto r = testutil::run_cli_at(td.path().string(), {"replay", mix(), "--speed", "max", "-c", chain}, 60);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  std::string next;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);)
    if (l.find("next: check the stage's state") != std::string::npos) next = l;
  REQUIRE_FALSE(next.empty());
  CHECK(next.find("RUN.json") == std::string::npos);
  // the two commands between backticks, in order: the rerun with --json, then stage-bench
  std::vector<std::string> cmds;
  for (std::size_t at = next.find('`'); at != std::string::npos; at = next.find('`', next.find('`', at + 1) + 1))
    cmds.push_back(next.substr(at + 1, next.find('`', at + 1) - at - 1));
  REQUIRE(cmds.size() == 2);
  CHECK(cmds[0].find("--json run.json") != std::string::npos);
  CHECK(cmds[1].find("stage-bench run.json") != std::string::npos);
  for (const auto& cmd : cmds) {
    CAPTURE(cmd);
    const std::string line = fmt::format("cd '{}' && {} >/dev/null 2>&1", td.path().string(), cmd);
    CHECK(std::system(line.c_str()) == 0);
  }
  CHECK(fs::exists(td.file("run.json")));
}

TEST_CASE("hosted: the headline names an unsafe step in every mode, and says the exit status is 0 unless asked") {
  testutil::TempDir td;
  // blocking calls and a NaN: what a sanitizer build (which counts no allocations) sees too
  const std::string chain = "hp:80:4 | so:" + kBad + ":sleep_every=10:nan_at=5 | lp:12k:8";
  auto line_of = [](const std::string& out, const std::string& label) {
    std::istringstream lines(out);
    for (std::string l; std::getline(lines, l);)
      if (l.rfind(label, 0) == 0) return l;
    return std::string();
  };
  // as fast as possible: the headline is throughput, and still names the step
  auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", chain, "--json", td.file("r.json")});
  CHECK(r.rc == 0);
  const std::string head = line_of(r.out, "headline ");
  CHECK(head.find("throughput ") != std::string::npos);
  CHECK(head.find("; but step 2, so:libbad_stage.so is NOT real-time safe (") != std::string::npos);
  CHECK(head.find(" blocking call(s)) and wrote 1 NaN/Inf sample(s)") != std::string::npos);
  CHECK(testutil::load_json(td.file("r.json")).at("verdict").at("text").get<std::string>().find(
            "step 2, so:libbad_stage.so is NOT real-time safe") != std::string::npos);
  CHECK(line_of(r.out, "exit ").find("--fail-on-unsafe") != std::string::npos);
  CHECK(line_of(r.out, "exit ").find("--fail-on-miss") == std::string::npos);
  r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", chain, "--fail-on-unsafe"});
  CHECK(r.rc == 1);
  CHECK(line_of(r.out, "exit ").empty());
  // a clean step: no word of it in the headline, no note
  r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "so:" + kClean});
  CHECK(r.rc == 0);
  CHECK(line_of(r.out, "headline ").find("NOT real-time safe") == std::string::npos);
  CHECK(line_of(r.out, "exit ").empty());
  // paced: a step that always takes longer than the chunk lasts breaks the budget
  r = testutil::run_cli({"synth", "--duration", "1s", "--chunk", "128", "-c", "spin:3ms"});
  CHECK(r.rc == 0);
  CHECK(line_of(r.out, "exit ").find("--fail-on-miss (a broken budget) makes it exit 1") != std::string::npos);
  r = testutil::run_cli({"synth", "--duration", "1s", "--chunk", "128", "-c", "spin:3ms", "--fail-on-miss"});
  CHECK(r.rc == 1);
  CHECK(line_of(r.out, "exit ").empty());
}

TEST_CASE("hosted: a stage whose process() fails stops the run with its message and a partial report") {
  testutil::TempDir td;
  const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "hp:80 | so:" + kBad + ":fail_at=50", "--json",
                                    td.file("r.json"), "-q"});
  CHECK(r.rc == 3);
  CHECK(r.err.find("so:libbad_stage.so: failure requested at call 50") != std::string::npos);
  const auto j = testutil::load_json(td.file("r.json"));
  CHECK(j.at("state") == "incomplete");
  CHECK(j.at("reason").get<std::string>().find("failure requested at call 50") != std::string::npos);
}

TEST_CASE("hosted: a stage that crashes gives one line naming the step, the signal and the chunk, exit 4, nothing left") {
  testutil::TempDir td;
  struct Case {
    std::string param, signal;
  };
  for (const Case& c : {Case{"crash_at=40", "SIGSEGV"}, Case{"abort_at=40", "SIGABRT"}}) {
    CAPTURE(c.param);
    const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "lp:9k | so:" + kBad + ":" + c.param, "-o",
                                      td.file("out.wav"), "--json", td.file("r.json")});
    CHECK(r.rc == 4);
    CHECK(r.err.find("step 2, so:libbad_stage.so, crashed with " + c.signal) != std::string::npos);
    CHECK(r.err.find("while processing chunk 40") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(td.file("out.wav")));
    CHECK_FALSE(fs::exists(td.file("r.json")));
    for (const auto& e : fs::directory_iterator(td.path())) CHECK(e.path().filename().string().find(".partial") == std::string::npos);
  }
  // outside the stream too: a crash in create() names the code and the call
  const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "lp:9k | so:" + kBad + ":create_fail=2", "-o",
                                    td.file("out.wav")});
  CHECK(r.rc == 4);
  CHECK(r.err.find("so:libbad_stage.so crashed with SIGABRT (abort) in create") != std::string::npos);
  CHECK_FALSE(fs::exists(td.file("out.wav")));
}

namespace {
// No file of the run is left: no audio, no report, no .partial temporary.
void check_nothing_left(const testutil::TempDir& td) {
  CHECK_FALSE(fs::exists(td.file("out.wav")));
  CHECK_FALSE(fs::exists(td.file("r.json")));
  for (const auto& e : fs::directory_iterator(td.path())) CHECK(e.path().filename().string().find(".partial") == std::string::npos);
}
}  // namespace

TEST_CASE("hosted: a stack overflow, exit(), quick_exit() and _exit() inside process() each end the run named, exit 4, nothing left") {
  testutil::TempDir td;
  struct Case {
    std::string param, words;
  };
  for (const Case& c : {Case{"overflow_at=40", "crashed with SIGSEGV"}, Case{"exit_at=40", "called exit(0)"},
                        Case{"exit_at=40:exit_via=2:exit_status=3", "called quick_exit(3)"},
                        Case{"exit_at=40:exit_via=3:exit_status=7", "called _exit(7)"}}) {
    CAPTURE(c.param);
    const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "lp:9k | so:" + kBad + ":" + c.param, "-o",
                                      td.file("out.wav"), "--json", td.file("r.json")});
    CHECK(r.rc == 4);
    CHECK(r.err.find("step 2, so:libbad_stage.so, " + c.words) != std::string::npos);
    CHECK(r.err.find("while processing chunk 40; no report written") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    check_nothing_left(td);
  }
}

TEST_CASE("hosted: reset(), last_error(), latency() and destroy() that crash are each named by their call, exit 4") {
  testutil::TempDir td;
  // compare resets every variant between rounds
  auto r = testutil::run_cli({"compare", mix(), "--variants", "a=so:" + kBad + ":crash_in=1;b=lp:9k", "--rounds", "2",
                              "--speed", "max", "--json", td.file("r.json")});
  CHECK(r.rc == 4);
  CHECK(r.err.find("step 1, so:libbad_stage.so, crashed with SIGSEGV (invalid memory access) in reset; no report written") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(td.file("r.json")));
  r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "so:" + kBad + ":fail_at=10:crash_in=3", "-o", td.file("out.wav")});
  CHECK(r.rc == 4);
  CHECK(r.err.find("step 1, so:libbad_stage.so, crashed with SIGSEGV (invalid memory access) in last_error while "
                   "processing chunk 10") != std::string::npos);
  check_nothing_left(td);
  r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "so:" + kBad + ":crash_in=2", "-o", td.file("out.wav")});
  CHECK(r.rc == 4);
  CHECK(r.err.find("so:libbad_stage.so crashed with SIGSEGV (invalid memory access) in latency; no report written") !=
        std::string::npos);
  check_nothing_left(td);
  // after the run: the complete output stays, the line says only what was removed
  r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "so:" + kBad + ":crash_in=4", "-o", td.file("out.wav"), "-q"});
  CHECK(r.rc == 4);
  CHECK(r.err.find("so:libbad_stage.so crashed with SIGSEGV (invalid memory access) in destroy; outputs not yet complete "
                   "removed") != std::string::npos);
  CHECK(fs::exists(td.file("out.wav")));
}

TEST_CASE("hosted: a process() that never returns ends the run after --step-timeout with the report of the chunks before it") {
  testutil::TempDir td;
  const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "lp:9k | so:" + kBad + ":hang_at=50", "-o",
                                    td.file("out.wav"), "--json", td.file("r.json"), "--step-timeout", "1s", "-q"});
  CHECK(r.rc == 4);
  CHECK(r.err.find("chunkscope: step 2, so:libbad_stage.so, had not returned from process() after ") != std::string::npos);
  CHECK(r.err.find("while processing chunk 50 (--step-timeout 1s); the report of the chunks before it was written, marked "
                   "incomplete") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_FALSE(fs::exists(td.file("out.wav")));
  for (const auto& e : fs::directory_iterator(td.path())) CHECK(e.path().filename().string().find(".partial") == std::string::npos);
  const auto j = testutil::load_json(td.file("r.json"));
  CHECK(j.at("state") == "incomplete");
  CHECK(j.at("stuck").at("step") == 2);
  CHECK(j.at("stuck").at("chunk") == 50);
  CHECK(j.at("stuck").at("call") == "process");
  CHECK(j.at("stuck").at("stuck_ns").get<std::int64_t>() >= 1'000'000'000);
  CHECK(j.at("counts").at("emitted") == 50);  // every chunk before the stuck one, measured and kept
  CHECK(j.at("diagnosis").at(0).at("rule") == "stuck_step");
  CHECK(j.at("verdict").at("realtime_safe") == false);
  const auto back = testutil::run_cli({"report", td.file("r.json")});
  CHECK(back.rc == 0);
  CHECK(back.out.find("stopped returning from process() at chunk 50") != std::string::npos);
}

TEST_CASE("hosted: compare, sweep and stage-bench end on a call that never returns, naming it, exit 4") {
  testutil::TempDir td;
  auto r = testutil::run_cli({"compare", mix(), "--variants", "a=so:" + kBad + ":hang_at=30;b=lp:9k", "--rounds", "2",
                              "--speed", "max", "--step-timeout", "1s", "--json", td.file("r.json")});
  CHECK(r.rc == 4);
  CHECK(r.err.find("variant 'a', round 1: step 1, so:libbad_stage.so, had not returned from process() after ") !=
        std::string::npos);
  CHECK(r.err.find("while processing chunk 30") != std::string::npos);
  CHECK_FALSE(fs::exists(td.file("r.json")));
  r = testutil::run_cli({"sweep", mix(), "--chain", "so:" + kBad + ":hang_at=30", "--chunks", "256", "--streams", "1",
                         "--duration", "1s", "--step-timeout", "1s", "--json", td.file("r.json")});
  CHECK(r.rc == 4);
  CHECK(r.err.find("cpu at 256 frames x 1 streams: step 1, so:libbad_stage.so, had not returned") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(td.file("r.json")));
  // the run never reaches call 3000; stage-bench's timed calls after its reset do
  r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "so:" + kBad + ":hang_at=3000", "--json", td.file("run.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  r = testutil::run_cli({"stage-bench", td.file("run.json"), "--iterations", "5000", "--step-timeout", "1s", "--json",
                         td.file("b.json")});
  CHECK(r.rc == 4);
  CHECK(r.err.find(": step 1, so:libbad_stage.so, had not returned from process() after ") != std::string::npos);
  CHECK_FALSE(fs::exists(td.file("b.json")));
}

namespace {
// Writes through a null pointer (SIGSEGV), unsanitized so that UBSan does not stop first.
__attribute__((noinline, no_sanitize("undefined"))) void fault_here() {
  volatile int* volatile null_pointer = nullptr;
  *null_pointer = 1;
}

// A child process with chunkscope's handlers installed faults while its thread is inside
// step 2's processing of chunk 7: inside the foreign call itself, or in chunkscope's own code
// around it. Returns the child's wait status and what it wrote on stderr.
std::pair<int, std::string> fault_in_child(bool in_foreign_call) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    const int null_out = open("/dev/null", O_WRONLY);  // the test framework's own report of the fault
    if (null_out >= 0) dup2(null_out, 1);
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // the default action leaves no core file behind
    cli::install_signal_handlers();
    HostedWhere& w = hosted_where();
    w.label.store("so:libx.so");
    w.step.store(2);
    w.chunk.store(7);
    if (in_foreign_call) {
      const ForeignCall call("process");
      fault_here();
    }
    fault_here();
    _exit(0);
  }
  close(fds[1]);
  std::string err;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {status, err};
}
}  // namespace

TEST_CASE("hosted: a fault in chunkscope's own code during a step is never blamed on the step, and reaches the handler before ours") {
  const auto [in_status, in_err] = fault_in_child(true);
  REQUIRE(WIFEXITED(in_status));
  CHECK(WEXITSTATUS(in_status) == 4);
  CHECK(in_err == "chunkscope: step 2, so:libx.so, crashed with SIGSEGV (invalid memory access) while processing chunk 7; "
                  "no report written, outputs not yet complete removed\n");
  const auto [own_status, own_err] = fault_in_child(false);
  CHECK(own_err.find("so:libx.so") == std::string::npos);  // nothing blamed on the step
#if defined(__SANITIZE_ADDRESS__)
  // the sanitizer's handler, installed before ours, gets the fault back: its report reaches the user
  CHECK(own_err.find("AddressSanitizer: SEGV") != std::string::npos);
  CHECK_FALSE((WIFEXITED(own_status) && WEXITSTATUS(own_status) == 4));
#else
  // no handler before ours: the fault happens again under the default action
  REQUIRE(WIFSIGNALED(own_status));
  CHECK(WTERMSIG(own_status) == SIGSEGV);
#endif
}

#if defined(CHUNKSCOPE_GAIN_STAGE)
TEST_CASE("hosted: a stage written in C++ as stage.h shows loads as written and processes as it says") {
  testutil::TempDir td;
  const std::string stage = std::string("so:") + CHUNKSCOPE_GAIN_STAGE;
  const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", stage + ":gain=-6", "-o", td.file("out.wav"),
                                    "--output-format", "float", "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  int ch_in = 0, ch_out = 0;
  const std::vector<double> in = testutil::read_all(mix(), &ch_in);
  const std::vector<double> out = testutil::read_all(td.file("out.wav"), &ch_out);
  REQUIRE(ch_in == ch_out);
  REQUIRE(in.size() == out.size());
  const float factor = static_cast<float>(std::pow(10.0, -6.0 / 20.0));
  std::size_t differ = 0;
  for (std::size_t i = 0; i < in.size(); ++i) differ += static_cast<float>(out[i]) != static_cast<float>(in[i]) * factor;
  CHECK(differ == 0);
  // its own refusal, through create(): one line, exit 2
  const auto bad = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", stage + ":gain=loud"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("create failed: gain=loud: not a number of dB in -120..24") != std::string::npos);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
}
#endif

TEST_CASE("hosted: the allocation interposer counts only the armed thread's calls") {
  if (!alloc_audit::interposer_active()) {
    MESSAGE("skipped: this build has no allocation interposer (sanitizers own malloc)");
    return;
  }
  void* before = std::malloc(16);  // not armed: not counted
  alloc_audit::arm();
  void* p = std::malloc(32);
  void* q = std::realloc(p, 4096);  // an allocation and a free
  std::free(q);
  std::free(before);
  const alloc_audit::Counts c = alloc_audit::disarm();
  CHECK(c.allocations == 2);
  CHECK(c.frees == 2);
  void* after = std::malloc(8);
  std::free(after);
  alloc_audit::arm();
  CHECK(alloc_audit::disarm().allocations == 0);
}

TEST_CASE("hosted: the trace has one slice per step inside each process slice, the page has the steps section and names each step") {
  testutil::TempDir td;
  const std::string chain = fmt::format("hp:80 | so:{}:gain=-3 | lp:12k", kClean);
  const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", chain, "--json", td.file("r.json"), "--trace",
                                    td.file("t.json"), "--trace-limit", "100", "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto t = testutil::load_json(td.file("t.json"));
  std::size_t steps = 0, hosted = 0;
  for (const auto& e : t.at("traceEvents")) {
    if (e.value("cat", "") != "step") continue;
    ++steps;
    hosted += e.at("name") == "step 2 so:libclean_stage.so";
  }
  CHECK(steps == 3 * 100);
  CHECK(hosted == 100);
  const auto h = testutil::run_cli({"report", td.file("r.json"), "--html", td.file("r.html")});
  REQUIRE_MESSAGE(h.rc == 0, h.err);
  const std::string page = testutil::slurp(td.file("r.html"));
  CHECK(page.find("Steps inside process") != std::string::npos);
  CHECK(page.find("so:libclean_stage.so") != std::string::npos);
  CHECK(page.find("clean: 0 heap call(s)") != std::string::npos);
  // "Where the time goes" names each step's row with its label, not its number alone
  const auto plot = page.find("plot-breakdown");
  REQUIRE(plot != std::string::npos);
  const std::string svg = page.substr(plot, page.find("</svg>", plot) - plot);
  CHECK(svg.find("<title>step 2 so:libclean_stage.so p95 ") != std::string::npos);
  CHECK(svg.find(">so:libclean_stage.so · p50 ") != std::string::npos);
  CHECK(svg.find(">hp:80 · p50 ") != std::string::npos);
}

TEST_CASE("hosted: stage-bench replays a chain with a hosted step, proves its output and times each step alone") {
  testutil::TempDir td;
  const std::string chain = fmt::format("hp:80:4 | so:{}:ratio=4 | lp:12k:8", CHUNKSCOPE_COMPRESSOR_STAGE);
  auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", chain, "--json", td.file("r.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  r = testutil::run_cli({"stage-bench", td.file("r.json"), "--iterations", "200", "--json", td.file("b.json")});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto b = testutil::load_json(td.file("b.json"));
  CHECK(b.at("checksum").at("matched").get<int>() == b.at("checksum").at("chunks").get<int>());
  CHECK(b.at("checksum").at("chunks").get<int>() > 0);
  REQUIRE(b.at("steps").size() == 3);
  CHECK(b.at("steps").at(1).at("label") == "so:libcompressor_stage.so");
  CHECK(b.at("steps").at(1).at("isolated").at("count") == 200);
  CHECK(r.out.find("step 2 iso") != std::string::npos);
}

TEST_CASE("hosted: compare runs chains as variants, interleaved in rounds") {
  const auto v = parse_variants("mine=hp:80 | lp:9k; ref = lp:9k ; cpu:unfused");
  REQUIRE(v.size() == 3);
  CHECK(v[0].name == "mine");
  CHECK(v[0].chain == "hp:80 | lp:9k");
  CHECK(v[1].name == "ref");
  CHECK(v[1].chain == "lp:9k");
  CHECK_FALSE(v[2].chain_variant());
  CHECK_THROWS_WITH_AS(parse_variants("a=lp:1k;a=hp:2k"), doctest::Contains("listed twice"), InputError);
  CHECK_THROWS_WITH_AS(parse_variants("a="), doctest::Contains("names no chain"), InputError);
  testutil::TempDir td;
  {
    std::FILE* f = std::fopen(td.file("v.txt").c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs(fmt::format("# my stage against a stand-in\nmine=hp:80 | so:{}:gain=-3\nstandin=hp:80 | gain:-3\n", kClean).c_str(), f);
    std::fclose(f);
  }
  const auto r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "0.5s", "--rounds", "3", "--speed", "max",
                                    "--variants", "@" + td.file("v.txt"), "--json", td.file("c.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto c = testutil::load_json(td.file("c.json"));
  REQUIRE(c.at("variants").size() == 2);
  CHECK(c.at("variants").at(0).at("name") == "mine");
  CHECK(c.at("variants").at(0).at("report").at("workload").at("chain").get<std::string>().find("so:") != std::string::npos);
  CHECK(c.at("variants").at(1).at("report").at("workload").at("chain") == "hp:80 | gain:-3");
  CHECK(c.at("variants").at(0).at("report").at("steps").at("list").at(1).at("audit").at("calls").get<int>() > 0);
  // a sweep varies backends only
  const auto s = testutil::run_cli({"sweep", "--synth", "noise", "-c", "lp:1k", "--variants", "a=lp:2k", "-q"});
  CHECK(s.rc == 2);
  CHECK(s.err.find("is a chain variant") != std::string::npos);
}

TEST_CASE("hosted: a step that waits on a lock owns the misses it causes (the chain's, not the platform's)") {
  testutil::TempDir td;
  // every call blocks about 1 ms on a mutex another thread holds: more than the 1.07 ms budget of 64 frames
  const auto r = testutil::run_cli({"synth", "--duration", "1s", "--chunk", "64", "--baseline", "0", "-c",
                                    "lp:9k | so:" + kBad + ":lock_every=1", "--json", td.file("r.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = testutil::load_json(td.file("r.json"));
  REQUIRE(j.at("counts").at("misses").get<int>() > 0);
  CHECK(j.at("verdict").at("owner") == "chain");
  CHECK(j.at("counts").at("miss_owner").at("chain").get<int>() > j.at("counts").at("miss_owner").at("platform").get<int>());
  CHECK(testutil::report_step(j, 2).at("audit").at("blocking_calls") == testutil::report_step(j, 2).at("audit").at("calls"));
  CHECK(testutil::report_step(j, 2).at("misses").get<int>() > 0);
}
