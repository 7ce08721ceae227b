// Faust programs as hosted steps (faust:), on Faust's own libraries that Debian installs:
// the chain syntax, output equal to the same program compiled to C++ by the `faust` command
// and run as a so: stage, controls by label and by path, the refusals, compile options as
// compare variants, and libfaust mapped only by a run that has a faust: stage. A build
// without Faust, or a machine without libfaust, says it skipped.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "src/chain_spec.hpp"
#include "src/errors.hpp"
#include "src/hosted_faust.hpp"
#include "src/plan.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;
namespace fs = std::filesystem;

namespace {

std::string program(const std::string& name) { return testutil::source_dir() + "/tests/data/faust/" + name; }
std::string mix() { return testutil::source_dir() + "/audio/mix_stereo_48k.flac"; }

// Why faust: stages cannot run here ("" when they can): a build without the headers, or a
// libfaust that does not load.
std::string faust_missing() {
  static const std::string why = [] {
    if (!faust_available()) return std::string("this chunkscope was built without Faust (install faust-common)");
    const auto r = testutil::run_cli({"chain", "faust:" + program("gain.dsp")});
    return r.rc == 0 ? std::string() : "faust: stages do not run here: " + r.err;
  }();
  return why;
}

#define NEED_FAUST()                                                                 \
  do {                                                                               \
    if (const std::string why = faust_missing(); !why.empty()) {                     \
      MESSAGE("skipped: " << why << " (scripts/install-deps.sh installs libfaust2)"); \
      return;                                                                        \
    }                                                                                \
  } while (0)

// `chain` run over `in` into the float WAV `out` as fast as it goes.
void run_to(const std::string& in, const std::string& chain, const std::string& out) {
  const auto r = testutil::run_cli({"replay", in, "--speed", "max", "-c", chain, "-o", out, "--output-format", "float", "-q"});
  REQUIRE_MESSAGE(r.rc == 0, chain << ": " << r.err);
}

// With `name`=`value` in the environment of the commands run inside the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace

TEST_CASE("faust: the program's path, then controls by label or by path and opts with any value") {
  auto one = [](const std::string& s) { return parse_chain(s).stages.at(0); };
  const StageSpec a = one("faust: dir/comp.dsp : gain = -6 : /comp/ratio=4 : opts=-vec -vs 32 -I /usr/share/faust");
  CHECK(a.kind == StageKind::faust);
  CHECK(is_hosted(a.kind));
  CHECK(a.path == "dir/comp.dsp");
  REQUIRE(a.params.size() == 3);
  CHECK(a.params[0] == std::pair<std::string, std::string>{"gain", "-6"});
  CHECK(a.params[1] == std::pair<std::string, std::string>{"/comp/ratio", "4"});
  CHECK(a.params[2] == std::pair<std::string, std::string>{"opts", "-vec -vs 32 -I /usr/share/faust"});
  CHECK(one("faust:./a=b/x.dsp").path == "./a=b/x.dsp");  // a value with '/' is the path's
  CHECK(one("faust:/opt/x:y/p.dsp:2nd=1").params.at(0).first == "2nd");
  // so: keeps its rule: a key with '/' is part of the path there
  CHECK(one("so:./libx.so:/x=1").path == "./libx.so:/x=1");
  CHECK_THROWS_WITH_AS(parse_chain("faust:"), doctest::Contains("missing program (usage: faust:<program.dsp>"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_chain("faust:x.dsp:gain=1:gain=2"), doctest::Contains("parameter 'gain' given twice"),
                       InputError);
  CHECK(stage_kind_names().find("ladspa, faust") != std::string::npos);
  CHECK(chain_spec_help().find("faust: ") != std::string::npos);
}

TEST_CASE("faust: output equals the program compiled to C++ by the faust command: bit for bit from the interpreter, within 1e-5 from LLVM") {
  NEED_FAUST();
#if !defined(CHUNKSCOPE_FAUST_STAGE)
  MESSAGE("skipped: the faust command was not found when the build was configured (it makes the C++ side)");
  return;
#else
  testutil::TempDir td;
  const std::vector<float> in = testutil::float_stereo_copy(mix(), td.file("in.wav"));
  const std::string controls = ":ratio=6:threshold=-30:gain=4";
  run_to(td.file("in.wav"), std::string("so:") + CHUNKSCOPE_FAUST_STAGE + controls, td.file("cpp.wav"));
  run_to(td.file("in.wav"), "faust:" + program("compressor.dsp") + controls + ":backend=interp", td.file("interp.wav"));
  run_to(td.file("in.wav"), "faust:" + program("compressor.dsp") + controls, td.file("llvm.wav"));
  const auto cpp = testutil::read_all(td.file("cpp.wav")), interp = testutil::read_all(td.file("interp.wav")),
             llvm = testutil::read_all(td.file("llvm.wav"));
  REQUIRE(cpp.size() == in.size());
  REQUIRE(interp.size() == in.size());
  REQUIRE(llvm.size() == in.size());
  std::size_t interp_differ = 0, llvm_differ = 0, changed = 0;
  double llvm_max = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    interp_differ += interp[i] != cpp[i];
    llvm_differ += llvm[i] != cpp[i];
    llvm_max = std::max(llvm_max, std::fabs(llvm[i] - cpp[i]));
    changed += cpp[i] != static_cast<double>(in[i]);
  }
  CHECK(changed > in.size() / 2);  // the program did compress and filter
  // The interpreter runs the compiler's own tree operation by operation, as the C++ does
  // (-fp keeps its parentheses): every sample is the same float.
  CHECK(interp_differ == 0);
  // LLVM: libfaust marks every floating-point operation of the code it gives LLVM `fast`, so
  // the JIT may re-associate sums and use reciprocals where the C++ build (strict IEEE,
  // -ffp-contract=off) rounds each operation in the tree's order: a last-bit difference here
  // and there, carried by the filters' recursion; far below -100 dBFS on this full-scale mix.
  MESSAGE(fmt::format("LLVM against the C++ build: {} of {} samples differ, by at most {:.3g}", llvm_differ, in.size(),
                      llvm_max));
  CHECK(llvm_max <= 1e-5);
#endif
}

TEST_CASE("faust: controls set by label and by path change the output as the program says") {
  NEED_FAUST();
  testutil::TempDir td;
  const std::vector<float> in = testutil::float_stereo_copy(mix(), td.file("in.wav"));
  const std::string gain = "faust:" + program("gain.dsp");
  run_to(td.file("in.wav"), gain, td.file("unity.wav"));
  run_to(td.file("in.wav"), gain + ":level=0.5", td.file("half.wav"));
  run_to(td.file("in.wav"), gain + ":/amp/level=2:amp/trim=-6", td.file("trim.wav"));
  run_to(td.file("in.wav"), gain + ":level=0.5:backend=interp", td.file("half_interp.wav"));
  const auto unity = testutil::read_all(td.file("unity.wav")), half = testutil::read_all(td.file("half.wav")),
             trim = testutil::read_all(td.file("trim.wav")), half_interp = testutil::read_all(td.file("half_interp.wav"));
  REQUIRE(unity.size() == in.size());
  REQUIRE(half.size() == in.size());
  REQUIRE(trim.size() == in.size());
  REQUIRE(half_interp.size() == in.size());
  const double g = 2 * std::pow(10.0, -6.0 / 20);
  std::size_t unity_differ = 0, half_differ = 0, interp_differ = 0, trim_off = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    unity_differ += unity[i] != static_cast<double>(in[i]);
    half_differ += half[i] != static_cast<double>(in[i] * 0.5f);  // one float multiplication
    interp_differ += half_interp[i] != half[i];
    trim_off += std::fabs(trim[i] - in[i] * g) > 1e-6 * std::fabs(in[i] * g) + 1e-30;  // float rounding of the gain
  }
  CHECK(unity_differ == 0);  // level 1, trim 0 dB: the input, bit for bit
  CHECK(half_differ == 0);
  CHECK(interp_differ == 0);
  CHECK(trim_off == 0);
  // a mono program on a stereo chunk: one instance per channel, the step named by the file
  testutil::TempDir rd;
  const auto r = testutil::run_cli({"replay", td.file("in.wav"), "--speed", "max", "-c", "hp:80:4 | " + gain + ":level=0.5 | lp:12k:8",
                                    "--json", rd.file("r.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = testutil::load_json(rd.file("r.json"));
  CHECK(testutil::report_step(j, 2).at("kind") == "hosted");
  CHECK(testutil::report_step(j, 2).at("label") == "faust:gain.dsp");
  CHECK(testutil::report_step(j, 2).at("audit").at("calls").get<std::uint64_t>() == 1875);
  CHECK(testutil::report_step(j, 2).at("audit").at("realtime_safe") == true);
  // the interpreter, asked for, is named in the step's label
  const auto c = testutil::run_cli({"chain", gain + ":backend=interp"});
  CHECK_MESSAGE(c.rc == 0, c.err);
  CHECK(c.out.find("hosted faust:gain.dsp (interpreter)") != std::string::npos);
}

TEST_CASE("faust: each bad input is one line naming the stage, exit 2, nothing written") {
  NEED_FAUST();
  testutil::TempDir td;
  fs::create_directories(td.file("folder"));
  const std::string comp = "faust:" + program("compressor.dsp");
  struct Case {
    std::string stage, says;
  };
  const std::vector<Case> cases = {
      {"faust:" + td.file("missing.dsp"), "not found: no file " + td.file("missing.dsp")},
      {"faust:" + td.file("folder"), "is a folder, not a Faust program"},
      {"faust:" + program("syntax_error.dsp"),
       "Faust compiler: syntax_error.dsp:5: syntax error, unexpected ENDDEF (line 5: 'process = _ * (gain;')"},
      {comp + ":gian=3", "unknown control 'gian'; did you mean 'gain'? (controls: /compressor/comp/attack,"},
      {comp + ":/comp/ratoi=3", "unknown control '/comp/ratoi'"},
      {comp + ":gain=30", "control 'gain' (/compressor/gain): 30 is outside its range [-24, 24]"},
      {comp + ":/compressor/comp/ratio=0.5", "control '/compressor/comp/ratio': 0.5 is outside its range [1, 20]"},
      {comp + ":ratio=4x", "control 'ratio' (/compressor/comp/ratio): '4x' is not a number"},
      {comp + ":opts=-vec -double", "opts: -double is refused: chunkscope passes the program float buffers"},
      {comp + ":opts=-fx", "opts: -fx is refused"},
      {comp + ":opts=-vec -sch", "opts: -sch is refused: its code runs worker threads beside the real-time one"},
      {comp + ":opts=-fm def", "opts: -fm is refused"},
      {comp + ":backend=gpu", "backend=gpu: give llvm or interp"},
      {"faust:" + program("mixdown.dsp"), "faust:mixdown.dsp: has 2 inputs and 1 output; the chunk has 2 channels"},
      {"faust:" + program("soundfile.dsp"), "the program reads a soundfile ('loop'), which chunkscope does not load"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.stage);
    const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "hp:80 | " + c.stage, "-o",
                                      td.file("out.wav"), "--json", td.file("r.json"), "-q"});
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(td.file("r.json")));
    CHECK_FALSE(fs::exists(td.file("out.wav")));
  }
  // a stereo program on a mono chunk
  auto r = testutil::run_cli({"synth", "--duration", "0.1s", "--channels", "1", "-c", comp, "-q"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("has 2 inputs and 2 outputs; the chunk has 1 channel") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  // a libfaust that cannot be opened: the loader's own check, on a library that is not there
  const std::string why = faust_library_problem("libfaust-not-installed.so.2");
  CHECK(why.rfind("libfaust could not be loaded (install libfaust2): libfaust-not-installed.so.2", 0) == 0);
  CHECK(why.find('\n') == std::string::npos);
  CHECK(faust_library_problem("libfaust.so.2").empty());
}

TEST_CASE("faust: how a stage was compiled is kept apart from its step: the backend and the compile time") {
  NEED_FAUST();
  const Plan plan = plan_chain("hp:80 | faust:" + program("gain.dsp") + " | faust:" + program("gain.dsp") +
                                   ":backend=interp | lp:1k",
                               48000);
  std::vector<const HostedFactory*> hosted;
  for (const auto& s : plan.steps)
    if (s.kind == PlanStep::Kind::hosted) hosted.push_back(s.hosted.get());
  REQUIRE(hosted.size() == 2);
  const auto llvm = faust_build_of(*hosted[0]), interp = faust_build_of(*hosted[1]);
  REQUIRE(llvm.has_value());
  REQUIRE(interp.has_value());
  CHECK(llvm->backend == "LLVM");
  CHECK(interp->backend == "interpreter");
  CHECK(llvm->compile_ns > 0);
  CHECK(llvm->llvm_failure.empty());
  CHECK(hosted[1]->label() == "faust:gain.dsp (interpreter)");
  CHECK(faust_build_note(*hosted[0]).find("'s LLVM backend in ") != std::string::npos);
  CHECK(faust_build_note(*hosted[1]).find("'s interpreter backend in ") != std::string::npos);
  // not a faust: stage
  const Plan so = plan_chain(std::string("so:") + CHUNKSCOPE_CLEAN_STAGE, 48000);
  CHECK_FALSE(faust_build_of(*so.steps.at(0).hosted).has_value());
  CHECK(faust_build_note(*so.steps.at(0).hosted).empty());
  // the chain command shows it under the step, and its JSON carries it
  const auto text = testutil::run_cli({"chain", "hp:80 | faust:" + program("gain.dsp") + ":backend=interp"});
  REQUIRE_MESSAGE(text.rc == 0, text.err);
  CHECK(text.out.find("hosted faust:gain.dsp (interpreter) on planar floats (stage 2)\n     compiled by libfaust ") !=
        std::string::npos);
  const auto j = testutil::run_cli({"chain", "faust:" + program("gain.dsp"), "--json"});
  REQUIRE_MESSAGE(j.rc == 0, j.err);
  const auto doc = nlohmann::json::parse(j.out);
  const auto& compile = doc.at("steps").at(0).at("compile");
  CHECK(compile.at("backend") == "LLVM");
  CHECK(compile.at("ns").get<std::int64_t>() > 0);
  CHECK(compile.at("llvm_failure") == "");
}

TEST_CASE("faust: compare runs two compile options of one program as variants and reports both") {
  NEED_FAUST();
  testutil::TempDir td;
  const std::string comp = "faust:" + program("compressor.dsp");
  const auto r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "1s", "--channels", "2", "--speed", "max",
                                    "--rounds", "2", "--variants", "scalar=" + comp + ";vec=" + comp + ":opts=-vec -vs 32",
                                    "--json", td.file("c.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto c = testutil::load_json(td.file("c.json"));
  REQUIRE(c.at("variants").size() == 2);
  CHECK(c.at("variants").at(0).at("name") == "scalar");
  CHECK(c.at("variants").at(1).at("name") == "vec");
  for (const auto& v : c.at("variants")) {
    CAPTURE(v.at("name"));
    const auto& step = v.at("report").at("steps").at("list").at(0);
    CHECK(step.at("label") == "faust:compressor.dsp");
    CHECK(step.at("audit").at("calls").get<std::uint64_t>() > 0);
    CHECK(step.at("audit").at("realtime_safe") == true);
  }
  CHECK(c.at("variants").at(1).at("report").at("workload").at("chain").get<std::string>().find("opts=-vec -vs 32") !=
        std::string::npos);
}

// The dynamic loader's record (LD_DEBUG=files) of the libraries `args` opened, from every process
// the command line started.
std::string libraries_opened(const std::vector<std::string>& args, testutil::RunResult& r) {
  testutil::TempDir td;
  {
    const ScopedEnv what("LD_DEBUG", "files");
    const ScopedEnv where("LD_DEBUG_OUTPUT", td.file("ld").c_str());
    r = testutil::run_cli(args);
  }
  std::string all;
  for (const auto& e : fs::directory_iterator(td.path())) all += testutil::slurp(e.path().string());
  return all;
}

TEST_CASE("faust: libfaust is mapped by a run that has a faust: stage, and by no other") {
  NEED_FAUST();
  testutil::RunResult plain, with;
  const std::string without_faust = libraries_opened({"chain", "hp:80:4 | lp:12k:8"}, plain);
  const std::string with_faust = libraries_opened({"chain", "hp:80:4 | faust:" + program("gain.dsp")}, with);
  REQUIRE(plain.rc == 0);
  REQUIRE(with.rc == 0);
  REQUIRE(without_faust.find("libc.so.6") != std::string::npos);  // the record is there
  CHECK(without_faust.find("libfaust") == std::string::npos);
  CHECK(with_faust.find("libfaust.so.2") != std::string::npos);
}
