// Third-party plugins as hosted steps (lv2:, ladspa:), on the plugins Debian packages:
// the chain syntax, a real chain with an LV2 EQ, output equal to a second host's (lv2apply,
// applyplugin), a worker plugin, a mono plugin on stereo, a latency port, `plugins`, and
// the refusals. A test whose plugin is not installed says it skipped.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "src/chain_spec.hpp"
#include "src/errors.hpp"
#include "src/hosted_ladspa.hpp"
#include "src/hosted_lv2.hpp"
#include "src/plugin_catalog.hpp"
#include "src/suggest.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;
namespace fs = std::filesystem;

namespace {

const char* const kLowpass = "http://plugin.org.uk/swh-plugins/lowpass_iir";

std::string mix() { return testutil::source_dir() + "/audio/mix_stereo_48k.flac"; }

// Whether `spec` ("lv2:ID" / "ladspa:[PATH:]LABEL") is installed and runnable here; else
// the reason, for the skip message.
std::string missing(const std::string& spec) {
  try {
    const PluginInfo p = describe_plugin(spec);
    return p.runnable ? "" : spec + " cannot run here: " + p.why_not;
  } catch (const InputError& e) {
    return e.what();
  }
}

#define NEED_PLUGIN(spec)                                              \
  do {                                                                 \
    if (const std::string why = missing(spec); !why.empty()) {         \
      MESSAGE("skipped: " << why << " (scripts/install-deps.sh installs it)"); \
      return;                                                          \
    }                                                                  \
  } while (0)

bool on_path(const char* tool) { return std::system(fmt::format("command -v {} >/dev/null 2>&1", tool).c_str()) == 0; }

// The C compiler that builds the test plugin libraries ($CC, else cc), or "" when there is none.
std::string c_compiler() {
  const char* cc = std::getenv("CC");
  const std::string c = cc && *cc ? cc : "cc";
  return on_path(c.c_str()) ? c : "";
}

#define NEED_PLUGIN_BUILD()                                                                              \
  do {                                                                                                   \
    if (!lv2_available() || !ladspa_available()) {                                                       \
      MESSAGE("skipped: this chunkscope hosts neither LV2 nor LADSPA, or not both (lilv, ladspa.h)");    \
      return;                                                                                            \
    }                                                                                                    \
    if (c_compiler().empty()) {                                                                          \
      MESSAGE("skipped: no C compiler (cc, or $CC) to build the test plugin libraries");                 \
      return;                                                                                            \
    }                                                                                                    \
  } while (0)

// Builds tests/data/plugin_libs/`source` into the shared library `out` with `flags`.
void build_plugin_library(const std::string& source, const std::string& out, const std::string& flags = "") {
  const std::string cmd = fmt::format("{} -shared -fPIC -O1 -Wall {} -o '{}' '{}/tests/data/plugin_libs/{}' 2>&1",
                                      c_compiler(), flags, out, testutil::source_dir(), source);
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, cmd);
}

// An LV2 bundle in `dir`: tests/data/plugin_libs/`name`.lv2/manifest.ttl and its library
// built from `source` (the manifest's lv2:binary is `library`).
void make_bundle(const fs::path& dir, const std::string& name, const std::string& source, const std::string& library,
                 const std::string& flags = "") {
  const fs::path bundle = dir / (name + ".lv2");
  fs::create_directories(bundle);
  fs::copy_file(fs::path(testutil::source_dir()) / "tests/data/plugin_libs" / (name + ".lv2") / "manifest.ttl",
                bundle / "manifest.ttl");
  build_plugin_library(source, (bundle / library).string(), flags);
}

// The plugins of a `plugins --json` listing, by id.
std::map<std::string, nlohmann::json> listed_by_id(const std::string& out) {
  std::map<std::string, nlohmann::json> by_id;
  const auto list = nlohmann::json::parse(out);
  for (const auto& p : list.at("plugins")) by_id[p.at("id").get<std::string>()] = p;
  return by_id;
}

// Lines of LD_DEBUG=files output that say a library under `dir` was initialised, by the process
// `pid` ("" for any process).
std::size_t inits_under(const std::string& debug, const std::string& dir, const std::string& pid) {
  std::size_t n = 0;
  std::istringstream in(debug);
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find("calling init: ");
    if (at == std::string::npos || line.find(dir, at) == std::string::npos) continue;
    const auto b = line.find_first_not_of(" \t"), e = line.find(':');
    n += pid.empty() || line.substr(b, e - b) == pid;
  }
  return n;
}

// The pid of the process that wrote the first line of LD_DEBUG output (the program itself).
std::string first_pid(const std::string& debug) {
  const auto b = debug.find_first_not_of(" \t\n"), e = debug.find(':', b);
  return b == std::string::npos || e == std::string::npos ? "" : debug.substr(b, e - b);
}

// A compare run of `chain` over three rounds (each after a reset) on a stereo noise input:
// its exit code, stderr, and whether every round of every variant completed.
struct RoundsRun {
  int rc = -1;
  std::string err;
  bool all_rounds = false;
};
RoundsRun compare_rounds(const std::string& chain, const testutil::TempDir& td) {
  const auto r = testutil::run_cli({"compare", "--synth", "noise", "--duration", "1s", "--channels", "2", "--variants",
                                    "cpu", "--rounds", "3", "--speed", "max", "-c", chain, "--json", td.file("c.json"),
                                    "-q"});
  RoundsRun out{r.rc, r.err, false};
  if (r.rc != 0) return out;
  const auto j = testutil::load_json(td.file("c.json"));
  std::size_t complete = 0;
  for (const auto& variant : j.at("per_round"))
    for (const auto& round : variant.at("rounds")) complete += round.at("complete").get<bool>() ? 1 : 0;
  out.all_rounds = j.at("rounds_completed") == 3 && j.at("per_round").size() == 1 && complete == 3;
  return out;
}

// The left channel of the bundled mix, times `scale`, as a mono file of `format`.
std::vector<float> write_mono(const std::string& path, double scale, int format) {
  int ch = 0, rate = 0;
  const std::vector<double> st = testutil::read_all(mix(), &ch, &rate);
  std::vector<float> mono(st.size() / 2);
  for (std::size_t i = 0; i < mono.size(); ++i) mono[i] = static_cast<float>(st[2 * i] * scale);
  SF_INFO si{};
  si.samplerate = rate;
  si.channels = 1;
  si.format = format;
  SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &si);
  REQUIRE(f != nullptr);
  sf_writef_float(f, mono.data(), static_cast<sf_count_t>(mono.size()));
  sf_close(f);
  return mono;
}

}  // namespace

TEST_CASE("plugins: lv2: keeps the URI's colons, ladspa: splits library and label, both take key=value controls") {
  auto one = [](const std::string& s) { return parse_chain(s).stages.at(0); };
  const StageSpec a = one("lv2:http://gareus.org/oss/lv2/fil4#stereo:enable=1:g0=-3");
  CHECK(a.kind == StageKind::lv2);
  CHECK(a.path == "http://gareus.org/oss/lv2/fil4#stereo");
  REQUIRE(a.params.size() == 2);
  CHECK(a.params[1] == std::pair<std::string, std::string>{"g0", "-3"});
  CHECK(one("lv2:fil4#stereo").path == "fil4#stereo");
  const StageSpec b = one("ladspa:/usr/lib/ladspa/filter.so:lpf:0=1000");
  CHECK(b.kind == StageKind::ladspa);
  CHECK(b.path == "/usr/lib/ladspa/filter.so");
  CHECK(b.label == "lpf");
  REQUIRE(b.params.size() == 1);
  CHECK(b.params[0].first == "0");  // a port by its index
  // each side of the library's ':' is trimmed, as every field is
  CHECK(one("ladspa:: lpf").label == "lpf");
  CHECK(one("ladspa:: lpf").path.empty());
  CHECK(one("ladspa: filter.so : lpf").path == "filter.so");
  const StageSpec c = one("ladspa:lpf:cutoff_frequency_hz=500");
  CHECK(c.path.empty());
  CHECK(c.label == "lpf");
  CHECK_THROWS_WITH_AS(parse_chain("ladspa:"), doctest::Contains("missing plugin"), InputError);
  CHECK_THROWS_WITH_AS(parse_chain("lv2:"), doctest::Contains("missing plugin"), InputError);
  // a LADSPA symbol is the port's name, lower case, other characters as '_'
  const auto sym = ladspa_port_symbols({"Cutoff Frequency (Hz)", "Input", "Input"});
  REQUIRE(sym.size() == 3);
  CHECK(sym[0] == "cutoff_frequency_hz");
  CHECK(sym[1] == "input");
  CHECK(sym[2] == "input_2");
}

TEST_CASE("plugins: an LV2 EQ between built-in filters replays the bundled file: its own step, CPU time, a clean audit") {
  NEED_PLUGIN("lv2:http://gareus.org/oss/lv2/fil4#stereo");
  testutil::TempDir td;
  const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "hp:80:4 | lv2:fil4#stereo | lp:12k:8", "--json",
                                    td.file("r.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = testutil::load_json(td.file("r.json"));
  REQUIRE(j.at("steps").at("list").size() == 3);
  const auto& s = testutil::report_step(j, 2);
  CHECK(s.at("kind") == "hosted");
  CHECK(s.at("label") == "lv2:fil4#stereo");
  CHECK(s.at("wall").at("count") == j.at("counts").at("counted"));
  CHECK(s.at("cpu").at("count").get<int>() > 0);
  CHECK(s.at("audit").at("calls") == 1875);
  CHECK(s.at("audit").at("nonfinite_samples") == 0);
}

TEST_CASE("plugins: chunkscope's output equals lv2apply's for the same plugin and file, bit for bit") {
  NEED_PLUGIN(std::string("lv2:") + kLowpass);
  if (!on_path("lv2apply")) {
    MESSAGE("skipped: lv2apply (lilv-utils) is not installed");
    return;
  }
  testutil::TempDir td;
  write_mono(td.file("in.wav"), 1.0, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
  const std::string cmd = fmt::format("lv2apply -i '{}' -o '{}' -c cutoff 1000 -c stages 2 {} >/dev/null 2>&1", td.file("in.wav"),
                                      td.file("ref.wav"), kLowpass);
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto r = testutil::run_cli({"process", td.file("in.wav"), td.file("out.wav"), "--chain",
                                    "lv2:lowpass_iir:cutoff=1000:stages=2", "--chunk", "256"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto ref = testutil::read_all(td.file("ref.wav")), out = testutil::read_all(td.file("out.wav"));
  REQUIRE(ref.size() == out.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) differ += ref[i] != out[i];
  CHECK(differ == 0);
}

TEST_CASE("plugins: a mono plugin on a stereo file runs as two instances, its left channel is the mono run's") {
  NEED_PLUGIN(std::string("lv2:") + kLowpass);
  testutil::TempDir td;
  write_mono(td.file("mono.wav"), 1.0, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
  std::vector<float> st;
  {
    int ch = 0;
    for (double v : testutil::read_all(mix(), &ch)) st.push_back(static_cast<float>(v));
  }
  testutil::write_wav(td.file("stereo.wav"), st, 2, 48000);
  const std::string chain = "lv2:lowpass_iir:cutoff=1000:stages=2";
  REQUIRE(testutil::run_cli({"process", td.file("mono.wav"), td.file("m.wav"), "-c", chain}).rc == 0);
  const auto r = testutil::run_cli({"process", td.file("stereo.wav"), td.file("s.wav"), "-c", chain});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto m = testutil::read_all(td.file("m.wav")), s = testutil::read_all(td.file("s.wav"));
  REQUIRE(s.size() == 2 * m.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < m.size(); ++i) differ += s[2 * i] != m[i];
  CHECK(differ == 0);
}

TEST_CASE("plugins: a LADSPA filter gives what applyplugin gives, once written as applyplugin writes 16-bit samples") {
  NEED_PLUGIN("ladspa:filter.so:lpf");
  if (!on_path("applyplugin")) {
    MESSAGE("skipped: applyplugin (ladspa-sdk) is not installed");
    return;
  }
  testutil::TempDir td;
  // 16-bit input for applyplugin, the same samples as floats for chunkscope (x / 32768 both ways)
  const std::vector<float> in = write_mono(td.file("in16.wav"), 0.5, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  const std::vector<double> exact = testutil::read_all(td.file("in16.wav"));
  testutil::write_wav(td.file("inf.wav"), std::vector<float>(exact.begin(), exact.end()), 1, 48000);
  const std::string cmd = fmt::format("applyplugin '{}' '{}' /usr/lib/ladspa/filter.so lpf 1000 >/dev/null 2>&1",
                                      td.file("in16.wav"), td.file("ref16.wav"));
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto r = testutil::run_cli({"process", td.file("inf.wav"), td.file("out.wav"), "-c", "ladspa:filter.so:lpf:0=1000"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto out = testutil::read_all(td.file("out.wav"));
  SF_INFO si{};
  SNDFILE* f = sf_open(td.file("ref16.wav").c_str(), SFM_READ, &si);
  REQUIRE(f != nullptr);
  std::vector<short> ref(static_cast<std::size_t>(si.frames));
  sf_readf_short(f, ref.data(), si.frames);
  sf_close(f);
  REQUIRE(ref.size() == out.size());
  // applyplugin: lrintf(y * 2^31) as a 32-bit sample, which libsndfile writes as its top 16 bits
  std::size_t differ = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const long v = std::lrintf(static_cast<float>(out[i]) * 2147483648.0f);
    differ += static_cast<short>(static_cast<std::int32_t>(v) >> 16) != ref[i];
  }
  CHECK(differ == 0);
}

TEST_CASE("plugins: a worker plugin runs and declares its latency, a latency port is reported") {
  NEED_PLUGIN("lv2:http://gareus.org/oss/lv2/zeroconvolv#Stereo");
  NEED_PLUGIN("lv2:http://plugin.org.uk/swh-plugins/artificialLatency");
  testutil::TempDir td;
  auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "lv2:zeroconvolv#Stereo:preset=noopStereo", "--json",
                              td.file("w.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  auto j = testutil::load_json(td.file("w.json"));
  CHECK(testutil::report_step(j, 1).at("declared_latency_frames") == 64);
  CHECK(testutil::report_step(j, 1).at("audit").at("nonfinite_samples") == 0);
  r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", "lp:9k | lv2:artificialLatency:delay=10", "--json",
                         td.file("l.json"), "-q"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  j = testutil::load_json(td.file("l.json"));
  CHECK(testutil::report_step(j, 2).at("declared_latency_frames") == 480);  // 10 ms at 48 kHz
  CHECK(j.at("steps").at("declared_latency_frames") == 480);
}

TEST_CASE("plugins: `plugins` lists what is installed and describes one plugin's ports") {
  NEED_PLUGIN("lv2:http://gareus.org/oss/lv2/fil4#stereo");
  auto r = testutil::run_cli({"plugins", "--json"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto all = nlohmann::json::parse(r.out);
  CHECK(all.at("schema") == "chunkscope.plugins/1");
  bool fil4 = false;
  for (const auto& p : all.at("plugins")) fil4 = fil4 || (p.at("id") == "http://gareus.org/oss/lv2/fil4#stereo" && p.at("runnable") == true);
  CHECK(fil4);
  r = testutil::run_cli({"plugins", "lv2:artificialLatency", "--json"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto one = nlohmann::json::parse(r.out).at("plugin");
  bool latency_port = false, delay = false;
  for (const auto& port : one.at("ports")) {
    latency_port = latency_port || port.value("latency", false);
    delay = delay || port.at("symbol") == "delay";
  }
  CHECK(latency_port);
  CHECK(delay);
}

TEST_CASE("plugins: what cannot be hosted is one line naming the plugin and why, exit 2, nothing written") {
  NEED_PLUGIN("lv2:http://gareus.org/oss/lv2/fil4#stereo");
  NEED_PLUGIN("ladspa:filter.so:lpf");
  testutil::TempDir td;
  {
    std::FILE* f = std::fopen(td.file("broken.so").c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("not an ELF file", f);
    std::fclose(f);
  }
  struct Case {
    std::string stage, says;
  };
  const std::vector<Case> cases = {
      {"lv2:nosuchplugin", "no installed LV2 plugin matches 'nosuchplugin'"},
      {"lv2:#mono", "'#mono' is ambiguous: it matches"},
      {"lv2:fil4#stereo:gian=1", "unknown control 'gian'; did you mean one of 'gain', "},
      {"lv2:fil4#stereo:gain=99", "control 'gain': 99 is outside its range"},
      {"lv2:fil4#stereo:gain=1k", "is not a number"},
      {"ladspa:nosuchlabel", "no LADSPA plugin labelled 'nosuchlabel'"},
      {"ladspa:/usr/lib/ladspa/filter.so:nosuch", "no plugin labelled 'nosuch' in /usr/lib/ladspa/filter.so (labels: lpf, hpf)"},
      {"ladspa:" + td.file("broken.so") + ":lpf", "not a loadable shared object"},
      {"ladspa:filter.so:lpf:cutoff=3", "unknown control 'cutoff'"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.stage);
    const auto r = testutil::run_cli({"replay", mix(), "--speed", "max", "-c", c.stage, "--json", td.file("r.json"), "-q"});
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(td.file("r.json")));
  }
  // a stereo plugin given three channels
  const auto r = testutil::run_cli({"synth", "--duration", "0.1s", "--channels", "3", "-c", "lv2:fil4#stereo", "-q"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("the chunk has 3 channels") != std::string::npos);
}

TEST_CASE("plugins: a decaying tail after a burst: subnormal output without --ftz, none with it, side by side") {
  NEED_PLUGIN("ladspa:filter.so:lpf");
  testutil::TempDir td;
  auto run = [&](const char* ftz, const std::string& json) {
    const auto r = testutil::run_cli({"synth", "--signal", "burst:0.2s", "--duration", "2s", "--speed", "max", "--ftz", ftz,
                                      "-c", "ladspa:filter.so:lpf:0=100", "--json", td.file(json), "-q"});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    return testutil::load_json(td.file(json));
  };
  const auto off = run("off", "off.json"), on = run("on", "on.json");
  CHECK(off.at("workload").at("run_mode").at("ftz") == false);
  CHECK(on.at("workload").at("run_mode").at("ftz") == true);
  // ladspa-sdk's one-pole lowpass decays through the subnormal range on the silent tail unless flushed
  CHECK(testutil::report_step(off, 1).at("audit").at("subnormal_samples").get<std::uint64_t>() > 0);
  CHECK(testutil::report_step(on, 1).at("audit").at("subnormal_samples") == 0);
  bool finding = false;
  for (const auto& f : off.at("diagnosis")) finding = finding || f.at("rule") == "hosted_subnormal";
  CHECK(finding);
}

TEST_CASE("plugins: a plugin that needs what chunkscope does not host is refused, naming what") {
  if (!fs::exists("/usr/lib/lv2/amp-swh.lv2/plugin-linux.so")) {
    MESSAGE("skipped: swh-lv2's amp plugin (the test bundle's binary) is not installed");
    return;
  }
  // the test bundle beside the installed plugins, as lilv reads LV2_PATH
  const std::string path = testutil::source_dir() + "/tests/data/lv2:/usr/lib/lv2";
  ::setenv("LV2_PATH", path.c_str(), 1);
  struct Case {
    std::string uri, says;
  };
  const std::vector<Case> cases = {
      {"urn:chunkscope:test:needs-instance-access",
       "requires feature http://lv2plug.in/ns/ext/instance-access, which chunkscope does not host"},
      {"urn:chunkscope:test:needs-fixed-block", "buf-size#fixedBlockLength, which chunkscope does not host"},
      {"urn:chunkscope:test:needs-option", "requires option http://lv2plug.in/ns/extensions/ui#updateRate"},
      {"urn:chunkscope:test:event-port", "of type http://lv2plug.in/ns/ext/event#EventPort, which chunkscope does not host"},
      {"urn:chunkscope:test:broken-library", "has a library that cannot be loaded"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.uri);
    const auto r = testutil::run_cli({"synth", "--duration", "0.1s", "--channels", "1", "-c", "lv2:" + c.uri, "-q"});
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  // a relative folder in LV2_PATH (lilv alone crashes on one) is taken from the current folder
  ::setenv("LV2_PATH", "tests/data/lv2:/usr/lib/lv2", 1);
  const auto rel = testutil::run_cli_at(testutil::source_dir(), {"chain", "lv2:urn:chunkscope:test:needs-fixed-block"});
  CHECK(rel.rc == 2);
  CHECK(rel.err.find("fixedBlockLength, which chunkscope does not host") != std::string::npos);
  ::unsetenv("LV2_PATH");
}

TEST_CASE("plugins: the label `plugins` shows names its plugin even where names end the same way") {
  NEED_PLUGIN("lv2:http://drobilla.net/plugins/mda/Delay");
  if (!fs::is_directory("/usr/lib/lv2/mda.lv2") || !fs::is_directory("/usr/lib/lv2/midifilter.lv2")) {
    MESSAGE("skipped: mda-lv2's and x42-plugins' bundles are not where Debian puts them");
    return;
  }
  // the bundles this case is about and no others, whatever else the machine has installed:
  // mda's Delay (URI tail 'Delay') beside x42's "MIDI N-Tap Delay" (a name ending the same way)
  testutil::TempDir td;
  fs::create_directory_symlink("/usr/lib/lv2/mda.lv2", td.file("mda.lv2"));
  fs::create_directory_symlink("/usr/lib/lv2/midifilter.lv2", td.file("midifilter.lv2"));
  ::setenv("LV2_PATH", td.path().c_str(), 1);
  const auto r = testutil::run_cli({"plugins", "lv2:Delay", "--json"});
  ::unsetenv("LV2_PATH");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(nlohmann::json::parse(r.out).at("plugin").at("id") == "http://drobilla.net/plugins/mda/Delay");
}

TEST_CASE("suggestions: the case-only match first, then the names that contain the text, then the nearest") {
  const std::vector<std::string> names = {"gain", "HSgain", "LSgain", "LSfreq", "enable", "gain1"};
  CHECK(suggestions("lsgain", names) == std::vector<std::string>{"LSgain", "HSgain", "gain"});
  CHECK(suggestions("gain", names) == std::vector<std::string>{"HSgain", "LSgain", "gain1"});
  CHECK(suggestions("gian", names) == std::vector<std::string>{"gain", "gain1"});
  CHECK(suggestions("zzzzzz", names).empty());
  CHECK(did_you_mean("enabel", names) == "; did you mean 'enable'?");
  CHECK(did_you_mean("LSGAIN", names, 1) == "; did you mean 'LSgain'?");
}

TEST_CASE("plugins: a name that finds no plugin or control says which ones it most likely meant") {
  NEED_PLUGIN("lv2:http://gareus.org/oss/lv2/fil4#stereo");
  NEED_PLUGIN("ladspa:filter.so:lpf");
  struct Case {
    std::string stage, says;
  };
  const std::vector<Case> cases = {
      // the candidates that contain the text
      {"lv2:fil4", "no installed LV2 plugin matches 'fil4'; did you mean one of "},
      {"lv2:fil4", "'lv2:fil4#mono', 'lv2:fil4#stereo'"},
      // the nearest name first
      {"lv2:fil4#stero", "'fil4#stero'; did you mean 'lv2:fil4#stereo'"},
      // a control that differs only in case, named first
      {"lv2:fil4#stereo:lsgain=1", "unknown control 'lsgain'; did you mean one of 'LSgain', "},
      {"ladspa:filter.so:lpf:cutoff_frequency=100", "unknown control 'cutoff_frequency'; did you mean 'cutoff_frequency_hz'?"},
      {"ladspa:Lpf", "no LADSPA plugin labelled 'Lpf' in the "},
      {"ladspa:Lpf", "; did you mean one of 'lpf', "},
  };
  for (const auto& c : cases) {
    CAPTURE(c.stage);
    const auto r = testutil::run_cli({"chain", c.stage});
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("plugins: a control that takes only some values refuses the others, naming them") {
  NEED_PLUGIN("lv2:http://gareus.org/oss/lv2/balance");
  NEED_PLUGIN("lv2:http://gareus.org/oss/lv2/fil4#stereo");
  NEED_PLUGIN("ladspa:caps.so:Compress");
  const std::string balance = "lv2:http://gareus.org/oss/lv2/balance";
  struct Case {
    std::string stage, says;
  };
  const std::vector<Case> refused = {
      // lv2:enumeration: its scale points, with their labels
      {balance + ":unitygain=1.5",
       "control 'unitygain': 1.5 is not one of its values: 0 (Balance), 1 (Unity Gain - Equal Amplitude), 2 (Seesaw - "
       "Equal Power)"},
      // lv2:integer
      {balance + ":delayLeft=2.5", "control 'delayLeft': 2.5 is not a whole number (an integer control)"},
      // lv2:toggled
      {"lv2:fil4#stereo:enable=0.5", "control 'enable': 0.5 is not one of its values: 0 (off), 1 (on)"},
      // LADSPA_HINT_INTEGER
      {"ladspa:caps.so:Compress:mode=1.5", "control 'mode': 1.5 is not a whole number (an integer control)"},
  };
  for (const auto& c : refused) {
    CAPTURE(c.stage);
    const auto r = testutil::run_cli({"chain", c.stage});
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  for (const std::string ok : {balance + ":unitygain=2", balance + ":delayLeft=12", std::string("lv2:fil4#stereo:enable=0"),
                               std::string("ladspa:caps.so:Compress:mode=2")}) {
    CAPTURE(ok);
    const auto r = testutil::run_cli({"chain", ok});
    CHECK_MESSAGE(r.rc == 0, r.err);
  }
}

TEST_CASE("plugins: a LADSPA label that two libraries have is ambiguous, each named, and the listing names the library") {
  NEED_PLUGIN("ladspa:filter.so:lpf");
  // two libraries with the label 'lpf' first on the search path (copies of ladspa-sdk's)
  testutil::TempDir td;
  fs::copy_file("/usr/lib/ladspa/filter.so", td.file("a.so"));
  fs::copy_file("/usr/lib/ladspa/filter.so", td.file("b.so"));
  ::setenv("LADSPA_PATH", td.path().c_str(), 1);
  const auto bare = testutil::run_cli({"chain", "ladspa:lpf"});
  const auto named = testutil::run_cli({"chain", "ladspa:b.so:lpf"});
  const auto list = testutil::run_cli({"plugins", "--json"});
  ::unsetenv("LADSPA_PATH");
  CHECK(bare.rc == 2);
  // the search path's default folders follow LADSPA_PATH's: filter.so (and others) may be named too
  CHECK(bare.err.find("'lpf' is ambiguous: ") != std::string::npos);
  CHECK(bare.err.find("LADSPA libraries have it: ladspa:a.so:lpf, ladspa:b.so:lpf") != std::string::npos);
  CHECK(std::count(bare.err.begin(), bare.err.end(), '\n') == 1);
  CHECK_MESSAGE(named.rc == 0, named.err);
  REQUIRE_MESSAGE(list.rc == 0, list.err);
  std::vector<std::string> labels;
  const auto listed = nlohmann::json::parse(list.out);
  for (const auto& p : listed.at("plugins"))
    if (p.at("api") == "ladspa") labels.push_back(p.at("label").get<std::string>());
  CHECK(std::count(labels.begin(), labels.end(), "ladspa:a.so:lpf") == 1);
  CHECK(std::count(labels.begin(), labels.end(), "ladspa:b.so:lpf") == 1);
  CHECK(std::count(labels.begin(), labels.end(), "ladspa:lpf") == 0);
  CHECK(std::count(labels.begin(), labels.end(), "ladspa:a.so:hpf") == 1);
}

TEST_CASE("plugins: the listing loads no plugin library: an LV2 plugin whose library aborts when loaded is listed, describing it says it cannot be loaded") {
  NEED_PLUGIN_BUILD();
  testutil::TempDir td;
  make_bundle(td.path(), "crash-on-load", "crash_on_load.c", "crash_on_load.so", "-DCS_ON_LOAD_ABORT");
  const std::string uri = "urn:chunkscope:test:crash-on-load";
  ::setenv("LV2_PATH", (td.path().string() + ":/usr/lib/lv2").c_str(), 1);
  const auto list = testutil::run_cli({"plugins", "--json"});
  const auto text = testutil::run_cli({"plugins"});
  const auto one = testutil::run_cli({"plugins", "lv2:" + uri, "--json"});
  const auto one_text = testutil::run_cli({"plugins", "lv2:" + uri});
  const auto chain = testutil::run_cli({"chain", "lv2:" + uri});
  ::setenv("LD_DEBUG", "files", 1);  // the loader's own report (run without a shell between)
  const auto debug = testutil::run_cli_at(testutil::source_dir(), {"plugins", "--json"}, 120);
  ::unsetenv("LD_DEBUG");
  ::unsetenv("LV2_PATH");
  // the whole listing, this plugin in it (from its data: whether it loads is not known there)
  REQUIRE_MESSAGE(list.rc == 0, list.err);
  const auto by_id = listed_by_id(list.out);
  REQUIRE(by_id.count(uri) == 1);
  CHECK(by_id.at(uri).at("label") == "lv2:crash-on-load");
  CHECK_MESSAGE(text.rc == 0, text.err);
  CHECK(text.out.find("lv2:crash-on-load") != std::string::npos);
  CHECK(text.out.find(" plugin(s) chunkscope can host") != std::string::npos);
  // describing it loads its library, apart: it is not runnable, and why
  REQUIRE_MESSAGE(one.rc == 0, one.err);
  const auto p = nlohmann::json::parse(one.out).at("plugin");
  CHECK(p.at("runnable") == false);
  CHECK(p.at("why_not") ==
        "has a library that cannot be loaded (the process that loaded it to check it was killed by SIGABRT (abort))");
  CHECK_MESSAGE(one_text.rc == 0, one_text.err);
  CHECK(one_text.out.find("runnable  no: has a library that cannot be loaded") != std::string::npos);
  // a chain that hosts it loads it here: the crash is the plugin's, named, exit 4
  CHECK(chain.rc == 4);
  CHECK(chain.err.find("crash_on_load.so") != std::string::npos);
  CHECK(chain.err.find("SIGABRT") != std::string::npos);
  // LD_DEBUG: no library under the bundle, nor under /usr/lib/lv2, starts in the listing process
  REQUIRE_MESSAGE(debug.rc == 0, debug.err.substr(0, 2000));
  const std::string pid = first_pid(debug.err);
  REQUIRE_FALSE(pid.empty());
  CHECK(debug.err.find("calling init: ") != std::string::npos);  // LD_DEBUG did report
  CHECK(inits_under(debug.err, td.path().string(), pid) == 0);
  CHECK(inits_under(debug.err, "/lv2/", pid) == 0);
  CHECK(inits_under(debug.err, "/ladspa/", pid) == 0);
}

TEST_CASE("plugins: a LADSPA library whose constructor aborts or exits is listed as not loadable, with why, and the others still are") {
  NEED_PLUGIN_BUILD();
  testutil::TempDir td;
  build_plugin_library("crash_on_load.c", td.file("abort.so"), "-DCS_ON_LOAD_ABORT");
  build_plugin_library("crash_on_load.c", td.file("exit.so"), "-DCS_ON_LOAD_EXIT=3");
  build_plugin_library("crash_on_load.c", td.file("good.so"));
  ::setenv("LADSPA_PATH", td.path().c_str(), 1);
  ::setenv("LD_DEBUG", "files", 1);  // the loader's own report (run without a shell between)
  const auto list = testutil::run_cli_at(testutil::source_dir(), {"plugins", "--json"}, 120);
  ::unsetenv("LD_DEBUG");
  const auto text = testutil::run_cli({"plugins", "--all"});
  const auto bare = testutil::run_cli({"plugins", "ladspa:cs_pass", "--json"});
  const auto chain = testutil::run_cli({"chain", "ladspa:cs_pass"});
  const auto named = testutil::run_cli({"plugins", "ladspa:" + td.file("abort.so") + ":cs_pass"});
  ::unsetenv("LADSPA_PATH");
  REQUIRE_MESSAGE(list.rc == 0, list.err.substr(0, 2000));
  const auto by_id = listed_by_id(list.out);
  REQUIRE(by_id.count(td.file("abort.so")) == 1);
  REQUIRE(by_id.count(td.file("exit.so")) == 1);
  REQUIRE(by_id.count(td.file("good.so") + ":cs_pass") == 1);
  CHECK(by_id.at(td.file("abort.so")).at("runnable") == false);
  CHECK(by_id.at(td.file("abort.so")).at("why_not") ==
        "cannot be loaded: the process that loaded it to read its plugins was killed by SIGABRT (abort)");
  CHECK(by_id.at(td.file("exit.so")).at("why_not") ==
        "cannot be loaded: the process that loaded it to read its plugins exited with status 3");
  CHECK(by_id.at(td.file("good.so") + ":cs_pass").at("runnable") == true);
  // the libraries of the default folders after them are listed as well
  if (fs::exists("/usr/lib/ladspa/filter.so")) CHECK(by_id.count("/usr/lib/ladspa/filter.so:lpf") == 1);
  // each library was loaded in a process of its own, none in the listing's
  const std::string pid = first_pid(list.err);
  CHECK(inits_under(list.err, td.path().string(), "") >= 3);
  CHECK(inits_under(list.err, td.path().string(), pid) == 0);
  CHECK_MESSAGE(text.rc == 0, text.err);
  const auto line_at = text.out.find("ladspa  " + td.file("abort.so"));
  REQUIRE(line_at != std::string::npos);
  CHECK(text.out.substr(line_at, text.out.find('\n', line_at) - line_at).find("(cannot run: cannot be loaded: ") !=
        std::string::npos);
  // a bare label is found past them, and only its library is loaded to run it
  REQUIRE_MESSAGE(bare.rc == 0, bare.err);
  CHECK(nlohmann::json::parse(bare.out).at("plugin").at("id") == td.file("good.so") + ":cs_pass");
  CHECK_MESSAGE(chain.rc == 0, chain.err);
  // the library named: one line, exit 2, as for a plugin not found
  CHECK(named.rc == 2);
  CHECK(named.err.find("abort.so: cannot be loaded: the process that loaded it to read its plugins was killed by SIGABRT") !=
        std::string::npos);
  CHECK(std::count(named.err.begin(), named.err.end(), '\n') == 1);
}

TEST_CASE("plugins: an LV2 worker plugin over compare's resets: work() never beside activate or deactivate, nothing asked before a reset lost or answered after it") {
  NEED_PLUGIN_BUILD();
  testutil::TempDir td;
  make_bundle(td.path(), "cs-worker", "cs_worker.c", "cs_worker.so");
  ::setenv("LV2_PATH", td.path().c_str(), 1);
  const RoundsRun r = compare_rounds("lv2:urn:chunkscope:test:worker", td);
  ::unsetenv("LV2_PATH");
  // the plugin aborts (exit 4, its reason on stderr) when a rule is broken
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.all_rounds);
  // one instance per channel, each reset before each of the 3 rounds, each asked for work
  std::istringstream in(r.err);
  int instances = 0;
  for (std::string line; std::getline(in, line);) {
    unsigned long requests = 0, answered = 0, resets = 0;
    if (std::sscanf(line.c_str(), "cs-worker: %lu requests, %lu answered, %lu resets", &requests, &answered, &resets) != 3)
      continue;
    ++instances;
    CHECK(resets == 3);
    CHECK(requests > 0);
    CHECK(answered <= requests);
  }
  CHECK(instances == 2);
}

TEST_CASE("plugins: a packaged worker plugin (x42 zeroconvolv) runs every round of a compare, reset between rounds") {
  NEED_PLUGIN("lv2:http://gareus.org/oss/lv2/zeroconvolv#Stereo");
  testutil::TempDir td;
  const RoundsRun r = compare_rounds("lv2:zeroconvolv#Stereo:preset=noopStereo", td);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.all_rounds);
}
