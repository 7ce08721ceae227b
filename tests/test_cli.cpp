#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "rt/cpu_backend.hpp"
#include "src/cli/entry.hpp"
#include "src/plan.hpp"
#include "tests/test_util.hpp"

using testutil::run_cli;
namespace fs = std::filesystem;

namespace {
bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }
int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
const std::string kMix = testutil::source_dir() + "/audio/mix_stereo_48k.flac";
}  // namespace

TEST_CASE("cli: --help on every command, exit 0") {
  for (std::string c : {"chain", "process", "bench"}) {
    const auto r = run_cli({c, "--help"});
    CAPTURE(c);
    CHECK(r.rc == 0);
    CHECK(has(r.out, "Usage"));
  }
  CHECK(run_cli({"--help"}).rc == 0);
  CHECK(has(run_cli({"--version"}).out, "chunkscope"));
}

TEST_CASE("cli chain --json: dispatches, sections, and a response that matches the design") {
  const auto r = run_cli({"chain", "hp:80:4 | lp:12000:8 | peak:1000:q=0.7:gain=6", "--rate", "48000", "--json"});
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "chunkscope.chain/1");
  CHECK(j["dispatches_per_chunk"] == 1);
  CHECK(j["sections_per_sample"] == 7);
  CHECK(j["stages"].size() == 3);
  CHECK(j["stages"][1]["sections"].size() == 4);
  const auto plan = chunkscope::plan_chain("hp:80:4 | lp:12000:8 | peak:1000:q=0.7:gain=6", 48000);
  for (const auto& p : j["response_db"]) {
    std::vector<chunkscope::Sos> all;
    for (const auto& s : plan.steps) all.insert(all.end(), s.sections.begin(), s.sections.end());
    CHECK(p["db"].get<double>() == doctest::Approx(chunkscope::sos_response_db(all, p["hz"], 48000)).epsilon(1e-12));
  }
  const auto u = run_cli({"chain", "hp:80:4 | lp:12000:8", "--no-fuse", "--json"});
  CHECK(nlohmann::json::parse(u.out)["dispatches_per_chunk"] == 2);
  const auto t = run_cli({"chain", "hp:80:4 | lp:12000:8"});
  CHECK(t.rc == 0);
  CHECK(has(t.out, "dispatches 1 per chunk"));
}

TEST_CASE("cli process: the output equals the library run chunk by chunk") {
  testutil::TempDir td;
  const auto out = td.file("out.wav");
  const auto r = run_cli({"process", kMix, out, "--chain", "hp:80:4 | lp:8000:4", "--chunk", "333", "--dtype", "f64"});
  REQUIRE(r.rc == 0);
  int ch = 0, rate = 0;
  const auto y = testutil::read_all(out, &ch, &rate);
  CHECK(ch == 2);
  CHECK(rate == 48000);
  auto x = testutil::read_all(kMix);
  REQUIRE(y.size() == x.size());
  const auto plan = chunkscope::plan_chain("hp:80:4 | lp:8000:4", 48000);
  chunkscope::CpuBackend be;
  REQUIRE(be.prepare({48000, 2, 4096, chunkscope::DType::f64}, lay_out_plan(plan, 2)) == chunkscope::Status::ok);
  for (std::size_t pos = 0; pos < x.size() / 2; pos += 4096) {
    const int n = static_cast<int>(std::min<std::size_t>(4096, x.size() / 2 - pos));
    REQUIRE(be.process({x.data() + 2 * pos, n, 2, chunkscope::DType::f64}, nullptr) == chunkscope::Status::ok);
  }
  // the file is 16-bit FLAC in, 16-bit WAV out (the input's subtype): within one LSB
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  CHECK(worst <= 1.0 / 32768 + 1e-12);
  // float output: no quantisation, so much closer
  const auto outf = td.file("out.flac");
  const auto f = run_cli({"process", kMix, outf, "--chain", "hp:80:4 | lp:8000:4"});
  REQUIRE(f.rc == 0);
  CHECK(fs::exists(outf));
  CHECK(has(f.out, "in 1875 chunks of 256 frames"));  // the default chunk, as the stream commands
  // --no-fuse: one pass per filter, the same filter
  const auto outu = td.file("unfused.wav");
  const auto u = run_cli({"process", kMix, outu, "--chain", "hp:80:4 | lp:8000:4", "--chunk", "333", "--dtype", "f64", "--no-fuse"});
  REQUIRE(u.rc == 0);
  CHECK(has(u.out, "2 dispatch(es) per chunk"));
  CHECK(has(r.out, "1 dispatch(es) per chunk"));
  const auto yu = testutil::read_all(outu);
  REQUIRE(yu.size() == y.size());
  double du = 0;
  for (std::size_t i = 0; i < y.size(); ++i) du = std::max(du, std::fabs(yu[i] - y[i]));
  CHECK(du <= 1.0 / 32768 + 1e-12);
}

TEST_CASE("cli bad input: exit 2, one line naming the input, no output file left") {
  testutil::TempDir td;
  std::ofstream(td.file("notaudio.wav")) << "hello";
  std::ofstream(td.file("bad.sos")) << "1 0 0 1 -2.5 1.2\n";
  std::ofstream(td.file("empty.wav")).close();
  const auto out = td.file("out.wav");
  struct Case {
    std::vector<std::string> args;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {{"process", kMix, out, "--chain", "lp:banana"}, "'banana' is not a number"},
      {{"process", kMix, out, "--chain", "lp:30000"}, "not below Nyquist"},
      {{"process", kMix, out, "--chain", "frob:1"}, "unknown stage 'frob'"},
      {{"process", kMix, out, "--chain", "bp:5000:500"}, "band edges out of order"},
      {{"process", kMix, out, "--chain", "lp:1000:99"}, "out of range 1..16"},
      {{"process", kMix, out, "--chain", "sos:" + td.file("bad.sos")}, "unstable"},
      {{"process", kMix, out, "--chain", "lp:1000", "--chunk", "0"}, "--chunk"},
      {{"process", kMix, out, "--chain", "lp:1000", "--chunk", "70000"}, "--chunk"},
      {{"process", kMix, out, "--chain", "lp:1000", "--dtype", "f16"}, "--dtype"},
      {{"process", td.file("missing.wav"), out, "--chain", "lp:1000"}, "no such file"},
      {{"process", td.file("notaudio.wav"), out, "--chain", "lp:1000"}, "not a readable audio file"},
      {{"process", td.file("empty.wav"), out, "--chain", "lp:1000"}, "empty"},
      {{"process", kMix, td.file("no/dir/out.wav"), "--chain", "lp:1000"}, "does not exist"},
      {{"process", kMix, td.file("out.xyz"), "--chain", "lp:1000"}, "unknown extension"},
      {{"process", kMix, out}, "--chain"},
      {{"chain", "lp:1000", "--rate", "-5"}, "--rate"},
      {{"chain", "lp:1000", "--rate", "abc"}, "--rate"},
      {{"chain", "lp:1000 ||"}, "is empty"},
      {{"nonsense"}, "nonsense"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli(c.args);
    CAPTURE(c.args.back());
    CHECK(r.rc == 2);
    CHECK(has(r.err, c.expect));
    CHECK(lines(r.err) == 1);
    CHECK(!fs::exists(out));
  }
  // the folder holds only what the test put there: no partial files
  int files = 0;
  for (const auto& e : fs::directory_iterator(td.path())) files += e.is_regular_file();
  CHECK(files == 3);
}

TEST_CASE("cli usage errors: one line in chunkscope's own words, exit 2, a did-you-mean for a misspelling") {
  struct Case {
    std::vector<std::string> args;
    std::string err;  // the whole stderr
  };
  const std::string commands =
      "(commands: chain, process, bench, replay, devices, monitor, synth, compare, report, cadence, stage-bench, sweep, plugins)";
  const std::vector<Case> cases = {
      {{"replay", kMix, "--chunkk", "512"},
       "chunkscope: replay: unknown option '--chunkk': did you mean '--chunk'? (see chunkscope replay --help)\n"},
      {{"synth", "--qiuet"}, "chunkscope: synth: unknown option '--qiuet': did you mean '--quiet'? (see chunkscope synth --help)\n"},
      {{"process", kMix, "out.wav", "--chian=lp:1k"},
       "chunkscope: process: unknown option '--chian': did you mean '--chain'? (see chunkscope process --help)\n"},
      {{"monitor", "--dtype", "f64"},
       "chunkscope: monitor: unknown option '--dtype' (process, bench, replay, synth, compare and sweep take it; see chunkscope "
       "monitor --help)\n"},
      {{"synth", "--frobnicate"}, "chunkscope: synth: unknown option '--frobnicate' (see chunkscope synth --help)\n"},
      {{"replya", kMix}, "chunkscope: unknown command 'replya': did you mean 'replay'? " + commands + "\n"},
      {{"stage-bnech"}, "chunkscope: unknown command 'stage-bnech': did you mean 'stage-bench'? " + commands + "\n"},
      {{"nonsense"}, "chunkscope: unknown command 'nonsense' " + commands + "\n"},
      {{}, "chunkscope: no command given " + commands.substr(0, commands.size() - 1) + "; see chunkscope --help)\n"},
      {{"--verison"}, "chunkscope: unknown option '--verison': did you mean '--version'? (see chunkscope --help)\n"},
      {{"chain", "lp:1k", "hp:50"}, "chunkscope: chain: unexpected argument 'hp:50' (see chunkscope chain --help)\n"},
      {{"chain"}, "chunkscope: chain: missing argument 'spec' (see chunkscope chain --help)\n"},
      {{"process", kMix, "out.wav"}, "chunkscope: process: --chain is required (see chunkscope process --help)\n"},
      {{"synth", "--chunk"}, "chunkscope: synth: --chunk needs a value (see chunkscope synth --help)\n"},
      {{"synth", "--chunk", "5", "--chunk", "6"},
       "chunkscope: synth: --chunk is given more than once (see chunkscope synth --help)\n"},
      {{"synth", "--chunk", "abc"}, "chunkscope: --chunk: 'abc' is not a whole number\n"},
      {{"chain", "lp:1k", "--rate", "abc"}, "chunkscope: --rate: 'abc' is not a number\n"},
      {{"bench", "--channels", "1,x"}, "chunkscope: --channels: 'x' is not a whole number\n"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = run_cli(c.args);
    CHECK(r.rc == 2);
    CHECK(r.err == c.err);
    CHECK(r.out.empty());
  }
}

TEST_CASE("cli -V prints the version, as --version does") {
  const auto v = run_cli({"-V"});
  CHECK(v.rc == 0);
  CHECK(v.out.rfind("chunkscope ", 0) == 0);
  CHECK(v.out == run_cli({"--version"}).out);
}

TEST_CASE("cli --rate takes the frequency forms of chain specs: 44.1k, 48kHz") {
  const auto c = run_cli({"chain", "lp:1k", "--rate", "44.1k", "--json"});
  REQUIRE(c.rc == 0);
  CHECK(nlohmann::json::parse(c.out)["rate"] == 44100.0);
  CHECK(has(run_cli({"chain", "lp:1k", "-r", "32kHz"}).out, "rate       32000 Hz"));
  testutil::TempDir td;
  const auto s = run_cli({"synth", "--rate", "44.1k", "--duration", "0.1s", "--speed", "max", "--quiet", "--json",
                          td.file("s.json")});
  REQUIRE(s.rc == 0);
  CHECK(testutil::load_json(td.file("s.json"))["workload"]["rate"] == 44100.0);
  // replay's --rate is a guard: the file is 48 kHz
  CHECK(run_cli({"replay", kMix, "--rate", "48k", "--speed", "max", "--quiet"}).rc == 0);
  const auto r = run_cli({"replay", kMix, "--rate", "44.1k", "--quiet"});
  CHECK(r.rc == 2);
  CHECK(has(r.err, "--rate: 44100 Hz does not match"));
  // monitor reads its --rate before it looks for a device: the next check is the one that fails
  const auto m = run_cli({"monitor", "--rate", "44.1k", "--channels", "0"});
  CHECK(m.rc == 2);
  CHECK(m.err == "chunkscope: --channels: 0 is out of range 1..64\n");
}

TEST_CASE("cli --help of a command lists only the options it takes") {
  const auto m = run_cli({"monitor", "--help"});
  REQUIRE(m.rc == 0);
  for (const char* gone : {"--dtype", "--speed", "Write the processed stream"}) {
    CAPTURE(gone);
    CHECK_FALSE(has(m.out, gone));
  }
  CHECK(has(m.out, "--latency-chunks"));
  const auto c = run_cli({"compare", "--help"});
  REQUIRE(c.rc == 0);
  for (const char* gone : {"--backend", "--mode", "--report-dir", "--hgrm", "--trace", "--output"}) {
    CAPTURE(gone);
    CHECK_FALSE(has(c.out, gone));
  }
  // the defaults shown come from the option structs
  CHECK(has(run_cli({"synth", "--help"}).out, "--chunk INT=256"));
  CHECK(has(run_cli({"process", "--help"}).out, "--chunk INT=256"));
}

TEST_CASE("cli chain: the response table never prints -0.000 dB") {
  // a 20 Hz highpass loses a few millionths of a dB in the passband: that prints as 0.000
  const auto r = testutil::run_cli({"chain", "hp:20:2", "--freqs", "1000,5000,10000"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("-0.000 dB") == std::string::npos);
  CHECK(r.out.find("0.000 dB") != std::string::npos);
}

TEST_CASE("cli synth: --synth is --signal, as process, compare and sweep spell it, giving both keeps one value") {
  testutil::TempDir td;
  const std::string a = td.file("a.json"), b = td.file("b.json");
  const auto r1 = testutil::run_cli({"synth", "--synth", "noise", "--duration", "0.2s", "--speed", "max", "--quiet",
                                     "--chain", "lp:8000:2", "--json", a});
  REQUIRE_MESSAGE(r1.rc == 0, r1.err);
  const auto r2 = testutil::run_cli({"synth", "--signal", "noise", "--duration", "0.2s", "--speed", "max", "--quiet",
                                     "--chain", "lp:8000:2", "--json", b});
  REQUIRE_MESSAGE(r2.rc == 0, r2.err);
  const auto ja = testutil::load_json(a), jb = testutil::load_json(b);
  CHECK(ja.at("workload").at("input").at("signal") == "noise");
  CHECK(ja.at("workload").at("input") == jb.at("workload").at("input"));
}

// ---------------------------------------------------------------- every listed flag is taken

namespace {

struct ListedFlag {
  std::string name, type, value;  // type "" for a switch; value: the default --help shows, if any
  bool needs_rt = false;
};

// The long options a command's --help lists, with their value type and default.
std::vector<ListedFlag> listed_flags(const std::string& help) {
  std::vector<ListedFlag> out;
  // "  -n,--chunk INT=256   ..." / "  --no-fuse   ...": a value type follows the name after one space
  static const std::regex opt(R"(^\s+(?:-\w,)?(--[\w-]+)(?:,--[\w-]+)*(?: ([A-Z]{2,})(?:=(\S+))?)?(?:\s|$))");
  std::istringstream is(help);
  for (std::string line; std::getline(is, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, opt) || m[1] == "--help") continue;
    out.push_back({m[1], m[2], m[3], line.find("Needs: --rt") != std::string::npos});
  }
  return out;
}

// A value each flag takes when --help shows none.
std::string sample_value(const ListedFlag& f) {
  static const std::map<std::string, std::string> by_name = {
      {"--chain", "lp:1k"},        {"--json", "x.json"},          {"--html", "x.html"},   {"--hgrm", "h"},
      {"--trace", "t.json"},       {"--report-dir", "rd"},        {"--output", "o.wav"},  {"--cpus", "0"},
      {"--metrics-listen", ":0"},  {"--synth", "noise"},          {"--input", "0"},       {"--duration", "1s"},
      {"--variants", "cpu"},       {"--freqs", "100,1000"},       {"--rate", "48000"},    {"--channels", "2"},
      {"--stage", "process"},      {"--iterations", "10"},        {"--isa", "auto"},      {"--signal", "noise"}};
  if (!f.value.empty()) return f.value;
  if (auto it = by_name.find(f.name); it != by_name.end()) return it->second;
  if (f.type == "INT") return "1";
  if (f.type == "HZ") return "48000";
  if (f.type == "LIST") return "0";
  return "1";
}

// What a command needs besides the flag under test to be a complete command line.
std::vector<std::string> required_words(const std::string& command) {
  if (command == "chain") return {"lp:1k"};
  if (command == "process") return {"in.wav", "out.wav", "-c", "lp:1k"};
  if (command == "replay") return {"in.wav"};
  if (command == "report" || command == "cadence" || command == "stage-bench") return {"r.json"};
  return {};
}

}  // namespace

TEST_CASE("--help lists only what each command takes: every listed flag, with a value it shows, is taken") {
  const auto top = testutil::run_cli({"--help"});
  REQUIRE(top.rc == 0);
  std::vector<std::string> commands;
  bool in_list = false;
  std::istringstream is(top.out);
  for (std::string line; std::getline(is, line);) {
    if (line.rfind("Subcommands:", 0) == 0) in_list = true;
    else if (in_list && line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ' && line[2] != '-')
      commands.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  REQUIRE(commands.size() >= 13);
  int flags = 0;
  for (const auto& c : commands) {
    const auto help = testutil::run_cli({c, "--help"});
    REQUIRE(help.rc == 0);
    for (const auto& f : listed_flags(help.out)) {
      std::vector<std::string> words{c};
      for (const auto& w : required_words(c)) words.push_back(w);
      if (c == "process" && f.name == "--chain") words.resize(3);  // given below instead of -c
      if (f.needs_rt) words.push_back("--rt");
      words.push_back(f.name);
      if (!f.type.empty()) words.push_back(sample_value(f));
      const std::string refused = chunkscope::cli::refusal_of(words);
      std::string line;
      for (const auto& w : words) line += w + " ";
      CAPTURE(line);
      CHECK(refused == "");
      ++flags;
    }
  }
  CHECK(flags > 200);
  // and the check sees a refusal: sweep does not take --chunk, and hides it
  CHECK(chunkscope::cli::refusal_of({"sweep", "--chunk", "256"}).find("does not take it") != std::string::npos);
}
