// The bad-input table: chain specs, audio files, options, saved reports and output paths
// that chunkscope must refuse. Every case runs the binary in a fresh folder and asserts the
// exit code, exactly one line on stderr (naming what is wrong), and that the folder is
// exactly as it was: no file created, changed or left behind. The cases of one table run on
// a few threads at once.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <thread>
#include <tuple>
#include <unistd.h>

#include "tests/test_util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Setup = std::function<void(const fs::path&)>;

struct Case {
  std::vector<std::string> args;
  int rc = 2;
  std::string err;  // the one stderr line holds this
  Setup setup = {};
};

void write_file(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

std::vector<float> tone(int frames, int channels) {
  std::vector<float> x(static_cast<std::size_t>(frames * channels));
  for (int i = 0; i < frames; ++i)
    for (int c = 0; c < channels; ++c) x[static_cast<std::size_t>(i * channels + c)] = 0.25f * std::sin(0.05f * i);
  return x;
}

// Files every case folder starts with, made once.
struct Shared {
  testutil::TempDir td;
  std::string wav, run_json, cmp_json;
  Shared() {
    const auto d = td.path().string();
    testutil::write_wav(td.file("in.wav"), tone(4800, 2), 2, 48000);
    wav = testutil::slurp(td.file("in.wav"));
    REQUIRE(testutil::run_cli_at(d, {"synth", "--duration", "0.1s", "--speed", "max", "-q", "--chain", "lp:1k",
                                     "--json", "run.json"})
                .rc == 0);
    run_json = testutil::slurp(td.file("run.json"));
    REQUIRE(testutil::run_cli_at(d, {"compare", "--synth", "noise", "--duration", "0.1s", "--speed", "max", "-q",
                                     "--variants", "cpu:fused,cpu:unfused", "--chain", "lp:1k", "--json", "cmp.json"})
                .rc == 0);
    cmp_json = testutil::slurp(td.file("cmp.json"));
  }
};

const Shared& shared() {
  static Shared s;
  return s;
}

void populate(const fs::path& w) {
  const Shared& s = shared();
  write_file(w / "in.wav", s.wav);
  write_file(w / "run.json", s.run_json);
  write_file(w / "cmp.json", s.cmp_json);
  write_file(w / "good.sos", "1 2 1 1 -1.8 0.81\n");
  write_file(w / "notes.txt", "just some notes\n");
  fs::create_directory(w / "sub");
}

// name -> (type and mode, size, mtime in ns, inode)
using Snapshot = std::map<std::string, std::tuple<unsigned, std::uintmax_t, long long, unsigned long long>>;

Snapshot snapshot(const fs::path& dir) {
  Snapshot s;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    ::lstat(e.path().c_str(), &st);
    s[fs::relative(e.path(), dir).string()] = {static_cast<unsigned>(st.st_mode),
                                                S_ISREG(st.st_mode) ? static_cast<std::uintmax_t>(st.st_size) : 0,
                                                st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec,
                                                static_cast<unsigned long long>(st.st_ino)};
  }
  return s;
}

std::string describe(const Snapshot& s) {
  std::string out;
  for (const auto& [k, v] : s) out += k + " (" + std::to_string(std::get<1>(v)) + " bytes) ";
  return out;
}

struct Outcome {
  testutil::RunResult r;
  Snapshot before, after;
};

std::string joined(const std::vector<std::string>& a) {
  std::string s;
  for (const auto& x : a) s += (s.empty() ? "" : " ") + ("'" + x + "'");
  return s;
}

// Runs every case in its own folder, on up to four threads, then checks them in order.
void run_table(const std::vector<Case>& cases) {
  std::vector<std::unique_ptr<testutil::TempDir>> dirs;
  std::vector<Outcome> out(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    dirs.push_back(std::make_unique<testutil::TempDir>());
    const fs::path w = dirs.back()->path();
    populate(w);
    if (cases[i].setup) cases[i].setup(w);
    out[i].before = snapshot(w);
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < cases.size(); i = next++) {
        const fs::path w = dirs[i]->path();
        out[i].r = testutil::run_cli_at(w.string(), cases[i].args, 20);
        out[i].after = snapshot(w);
      }
    });
  for (auto& t : pool) t.join();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto& o = out[i];
    INFO("case ", i, ": chunkscope ", joined(c.args));
    INFO("stderr: ", o.r.err);
    CHECK(o.r.rc == c.rc);
    CHECK(std::count(o.r.err.begin(), o.r.err.end(), '\n') == 1);
    CHECK(o.r.err.rfind("chunkscope: ", 0) == 0);
    CHECK(o.r.err.find(c.err) != std::string::npos);
    INFO("before: ", describe(o.before));
    INFO("after:  ", describe(o.after));
    CHECK(o.after == o.before);
  }
}

// ------------------------------------------------------------------ fixtures for cases

Setup file_with(const std::string& name, const std::string& content) {
  return [=](const fs::path& w) { write_file(w / name, content); };
}

Setup fifo(const std::string& name) {
  return [=](const fs::path& w) { REQUIRE(::mkfifo((w / name).c_str(), 0644) == 0); };
}

std::string wav_bytes() { return shared().wav; }

// The valid WAV with a little-endian 32-bit field at `at` set to `v`.
std::string wav_patched(std::size_t at, std::uint32_t v) {
  std::string w = wav_bytes();
  for (int i = 0; i < 4; ++i) w[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return w;
}

// The saved run report with `f` applied, as NAME.
Setup run_report(const std::string& name, std::function<void(json&)> f) {
  return [=](const fs::path& w) {
    json r = json::parse(shared().run_json);
    f(r);
    write_file(w / name, r.dump(1));
  };
}

Setup cmp_report(const std::string& name, std::function<void(json&)> f) {
  return [=](const fs::path& w) {
    json r = json::parse(shared().cmp_json);
    f(r);
    write_file(w / name, r.dump(1));
  };
}

const std::vector<std::string> kSynth = {"synth", "--duration", "0.1s", "--speed", "max", "-q"};
const std::vector<std::string> kReplay = {"replay", "in.wav", "--speed", "max", "-q"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

}  // namespace

// ------------------------------------------------------------------ chain specs

TEST_CASE("bad input table: chain specs") {
  auto chain = [](const std::string& spec, const std::string& err) { return Case{{"chain", spec}, 2, err}; };
  std::vector<Case> cases = {
      chain("", "chain: the spec is empty"),
      chain("   ", "chain: the spec is empty"),
      chain("foo:3", "chain stage 1 'foo:3': unknown stage 'foo'"),
      chain("LP:1k", "unknown stage 'LP'"),
      chain("lp", "chain stage 1 'lp'"),
      chain("lp:", "chain stage 1 'lp:'"),
      chain("lp:abc", "chain stage 1 'lp:abc'"),
      chain("lp:0", "chain stage 1 'lp:0'"),
      chain("lp:-1k", "chain stage 1 'lp:-1k'"),
      chain("lp:nan", "chain stage 1 'lp:nan'"),
      chain("lp:inf", "chain stage 1 'lp:inf'"),
      chain("lp:1e999", "chain stage 1 'lp:1e999'"),
      chain("lp:1e306k", "chain stage 1 'lp:1e306k': cutoff: '1e306k' is out of range"),  // finite, but not in kHz
      chain("lp:1kHzz", "chain stage 1 'lp:1kHzz'"),
      // 31 gains of 200 dB multiply to 1e310: beyond a double, fused or not
      chain([] {
        std::string s = "gain:200";
        for (int i = 1; i < 31; ++i) s += " | gain:200";
        return s;
      }(), "its gain stages multiply to more than a number can hold"),
      chain("lp:30k", "30000 Hz is not below Nyquist"),
      chain("lp:1k:0", "order 0 is out of range 1..16"),
      chain("lp:1k:17", "order 17 is out of range 1..16"),
      chain("lp:1k:2.5", "chain stage 1 'lp:1k:2.5'"),
      chain("lp:1k:order=3:order=4", "chain stage 1 'lp:1k:order=3:order=4'"),
      chain("lp:1k:3:order=4", "order given twice"),
      chain("lp:1k:x=1", "chain stage 1 'lp:1k:x=1'"),
      chain("hp:1k:2:3", "chain stage 1 'hp:1k:2:3'"),
      chain("bp:3k:1k", "band edges out of order"),
      chain("bp:1k", "chain stage 1 'bp:1k'"),
      chain("bs:1k:1k", "band edges out of order"),
      chain("bp:1k:30k", "30000 Hz is not below Nyquist"),
      chain("peak:1k", "missing gain=<dB>"),
      chain("peak:1k:gain=abc", "chain stage 1 'peak:1k:gain=abc'"),
      chain("peak:1k:gain=6:q=0", "chain stage 1 'peak:1k:gain=6:q=0'"),
      chain("peak:1k:gain=6:q=-1", "chain stage 1 'peak:1k:gain=6:q=-1'"),
      chain("lowshelf:1k:gain=6:q=1:s=1", "give q= or s=, not both"),
      chain("highshelf:1k:gain=6:s=0", "s=0 must be above 0"),
      chain("lowshelf:1k:gain=40:s=10", "too steep"),
      chain("notch:1k:gain=3", "chain stage 1 'notch:1k:gain=3'"),
      chain("allpass", "chain stage 1 'allpass'"),
      chain("gain:300", "outside -200..200 dB"),
      chain("gain:abcdB", "chain stage 1 'gain:abcdB'"),
      chain("gain:", "chain stage 1 'gain:'"),
      chain("spin:200", "needs a unit"),
      chain("spin:-1ms", "chain stage 1 'spin:-1ms'"),
      chain("spin:2h", "chain stage 1 'spin:2h'"),
      chain("spin:10000s", "chain stage 1 'spin:10000s'"),
      chain("sleep:1ms:every=0", "every=0 must be a whole number"),
      chain("sleep:1ms:every=1.5", "every=1.5 must be a whole number"),
      // control characters from the user are escaped, so the message stays one line
      chain("bogus\nline2", "chain stage 1 'bogus\\nline2': unknown stage 'bogus\\nline2'"),
      chain("lp:1k\t| hp:x\x01", "chain stage 2 'hp:x\\x01'"),
      chain("lp:1k | ", "chain stage 2 is empty"),
      chain("| lp:1k", "chain stage 1 is empty"),
      chain("lp:1k || hp:50", "chain stage 2 is empty"),
      chain("sos:", "missing file"),
      chain("sos:missing.sos", "sos file 'missing.sos': cannot open"),
      chain("sos:sub", "sos file 'sub': a folder, not a regular file"),
      chain("sos:/dev/zero", "sos file '/dev/zero': a character device, not a regular file"),
      {{"chain", "sos:p.sos"}, 2, "sos file 'p.sos': a FIFO, not a regular file", fifo("p.sos")},
      {{"chain", "sos:e.sos"}, 2, "sos file 'e.sos': no sections", file_with("e.sos", "# nothing\n\n")},
      {{"chain", "sos:c.sos"}, 2, "sos file 'c.sos' line 2: 5 columns", file_with("c.sos", "1 0 0 1 0 0\n1 2 1 1 0\n")},
      {{"chain", "sos:z.sos"}, 2, "sos file 'z.sos' line 1: a0 is 0", file_with("z.sos", "1 0 0 0 0 0\n")},
      {{"chain", "sos:u.sos"}, 2, "sos file 'u.sos' line 1: unstable section", file_with("u.sos", "1 0 0 1 0 1.5\n")},
      {{"chain", "sos:t.sos"}, 2, "sos file 't.sos' line 1", file_with("t.sos", "one two three four five six\n")},
      {{"chain", "sos:n.sos"}, 2, "sos file 'n.sos' line 1", file_with("n.sos", "nan 0 0 1 0 0\n")},
      {{"chain", "sos:h.sos"}, 2, "sos file 'h.sos' line 1", file_with("h.sos", "1e400 0 0 1 0 0\n")},
      {{"chain", "sos:b.sos"}, 2, "sos file 'b.sos': 1200000 bytes, above the limit of 1 MiB",
       file_with("b.sos", "1 0 0 1 0 0\n" + std::string(1200000 - 12, '#'))},
      {{"chain", "lp:10k", "--rate", "16000"}, 2, "10000 Hz is not below Nyquist"},
      {{"chain", "lp:1k", "--rate", "0"}, 2, "--rate: 0 Hz is out of range"},
      {{"chain", "lp:1k", "--rate", "-1"}, 2, "--rate: -1 Hz is out of range"},
      {{"chain", "lp:1k", "--rate", "2e6"}, 2, "--rate: 2000000 Hz is out of range"},
      {{"chain", "lp:1k", "--rate", "nan"}, 2, "--rate"},
      {{"process", "in.wav", "out.wav", "--chain", "foo"}, 2, "unknown stage 'foo'"},
      {{"process", "in.wav", "out.wav", "--chain", "lp:30k"}, 2, "30000 Hz is not below Nyquist"},
      {with(kReplay, {"--chain", "lp:1k:17", "-o", "out.wav"}), 2, "order 17 is out of range"},
      {with(kSynth, {"--chain", "spin:5", "--json", "r.json"}), 2, "needs a unit"},
      {with(kSynth, {"--chain", "sos:missing.sos", "--json", "r.json"}), 2, "sos file 'missing.sos'"},
      {{"compare", "--synth", "noise", "--chain", "peak:1k", "--json", "c.json"}, 2, "missing gain=<dB>"},
  };
  run_table(cases);
}

// ------------------------------------------------------------------ audio files

TEST_CASE("bad input table: audio files") {
  auto both = [](const std::string& file, const std::string& err, Setup s) {
    return std::vector<Case>{{{"process", file, "out.wav", "--chain", "lp:1k"}, 2, err, s},
                             {{"replay", file, "--speed", "max", "-q", "-o", "out.wav", "--json", "r.json"}, 2, err, s}};
  };
  std::vector<Case> cases;
  auto add = [&](std::vector<Case> v) { cases.insert(cases.end(), v.begin(), v.end()); };
  add(both("missing.wav", "input 'missing.wav': no such file", nullptr));
  add(both("empty.wav", "input 'empty.wav': file is empty", file_with("empty.wav", "")));
  add(both("head.wav", "input 'head.wav'", file_with("head.wav", wav_bytes().substr(0, 20))));
  add(both("cut.wav", "input 'cut.wav': file is truncated", file_with("cut.wav", wav_bytes().substr(0, 5000))));
  add(both("text.wav", "input 'text.wav': not a readable audio file", file_with("text.wav", "hello, this is text\n")));
  add(both("noise.wav", "input 'noise.wav': not a readable audio file",
           file_with("noise.wav", std::string(4096, '\x5a'))));
  add(both("sub", "input 'sub': is a directory", nullptr));
  add(both("no\nsuch.wav", "input 'no\\nsuch.wav': no such file", nullptr));
  add(both("fast.wav", "input 'fast.wav': sample rate 2000000 Hz is out of range",
           file_with("fast.wav", wav_patched(24, 2000000))));
  add(both("dangling.wav", "input 'dangling.wav': no such file",
           [](const fs::path& w) { fs::create_symlink("nowhere.wav", w / "dangling.wav"); }));
  add(both("hdr.wav", "input 'hdr.wav'", [](const fs::path& w) {
    testutil::write_wav((w / "hdr.wav").string(), {}, 2, 48000);  // a header and no frames
  }));
  add(both("many.wav", "input 'many.wav': 65 channels", [](const fs::path& w) {
    testutil::write_wav((w / "many.wav").string(), tone(16, 65), 65, 48000);
  }));
  cases.push_back({{"replay", "p.wav", "--speed", "max", "-q"}, 2, "input 'p.wav': a FIFO, not a regular file", fifo("p.wav")});
  cases.push_back({{"compare", "p.wav", "--speed", "max", "-q"}, 2, "input 'p.wav': a FIFO, not a regular file", fifo("p.wav")});
  cases.push_back({{"replay", "/dev/zero", "--speed", "max", "-q"}, 2, "input '/dev/zero': a character device"});
  cases.push_back({{"process", "/dev/zero", "out.wav", "--chain", "lp:1k"}, 2, "input '/dev/zero': not a readable audio file"});
  cases.push_back({{"process", "/dev/null", "out.wav", "--chain", "lp:1k"}, 2, "input '/dev/null': not a readable audio file"});
  cases.push_back({with(kReplay, {"--rate", "44100"}), 2, "--rate: 44100 Hz does not match 'in.wav' (48000 Hz)"});
  cases.push_back({with(kReplay, {"--channels", "1"}), 2, "--channels: 1 does not match 'in.wav' (2 channels)"});
  cases.push_back({{"compare", "missing.wav", "-q"}, 2, "input 'missing.wav': no such file"});
  cases.push_back({{"compare", "text.wav", "-q"}, 2, "input 'text.wav': not a readable audio file",
                   file_with("text.wav", "hello\n")});
  cases.push_back({{"compare", "-q"}, 2, "compare: give an input file or --synth SIGNAL"});
  cases.push_back({{"compare", "in.wav", "--synth", "noise", "-q"}, 2, "give an input file ('in.wav') or --synth, not both"});
  cases.push_back({{"stage-bench", "gone.json"}, 2, "input file 'gone.wav' (workload.input.path) is gone", run_report("gone.json", [](json& r) {
                     r["workload"]["input"] = {{"kind", "file"}, {"path", "gone.wav"}};
                   })});
  if (::geteuid() != 0) {
    add(both("locked.wav", "input 'locked.wav': cannot read", [](const fs::path& w) {
      write_file(w / "locked.wav", shared().wav);
      fs::permissions(w / "locked.wav", fs::perms::none);
    }));
  } else {
    MESSAGE("running as root: an unreadable input cannot be made, those two cases are left out");
  }
  run_table(cases);
}

// ------------------------------------------------------------------ options

TEST_CASE("bad input table: options") {
  const std::vector<std::string> proc = {"process", "in.wav", "out.wav", "--chain", "lp:1k"};
  std::vector<Case> cases = {
      {{"frobnicate"}, 2, "unknown command 'frobnicate'"},
      {{"process"}, 2, "(see chunkscope process --help)"},
      {{"process", "in.wav", "out.wav"}, 2, "--chain is required (see chunkscope process --help)"},
      {with(proc, {"--chunk", "0"}), 2, "--chunk: 0 frames is out of range 1..65536"},
      {with(proc, {"--chunk", "70000"}), 2, "--chunk: 70000 frames is out of range 1..65536"},
      {with(proc, {"--chunk", "-1"}), 2, "--chunk"},
      {with(proc, {"--chunk", "abc"}), 2, "--chunk"},
      {with(proc, {"--dtype", "f16"}), 2, "--dtype: 'f16' is not f32 or f64"},
      {with(proc, {"--backend", "gpu"}), 2, "--backend"},
      {with(proc, {"--mode", "foo"}), 2, "--mode"},
      {with(proc, {"--bogus"}), 2, "--bogus"},
      {with({"replay", "in.wav", "-q"}, {"--speed", "0"}), 2, "--speed: 0 must be above 0"},
      {with({"replay", "in.wav", "-q"}, {"--speed", "-1"}), 2, "--speed"},
      {with({"replay", "in.wav", "-q"}, {"--speed", "abc"}), 2, "--speed"},
      {with({"replay", "in.wav", "-q"}, {"--speed", "2000"}), 2, "--speed: 2000 is above 1000"},
      {with(kReplay, {"--warmup", "-1"}), 2, "--warmup: -1 is out of range"},
      {with(kReplay, {"--warmup", "2147483648"}), 2, "--warmup: 2147483648 is out of range 0..100000000"},
      {with(kReplay, {"--warmup", "99999999999999999999"}), 2, "--warmup"},
      {with(kReplay, {"--warmup", "1e3"}), 2, "--warmup"},
      {with(kReplay, {"--margin", "200%"}), 2, "--margin: 200% "},
      {with(kReplay, {"--margin", "5"}), 2, "--margin: '5' needs a unit: '5%' (a share of D) or a time such as '5ms'"},
      {with(kReplay, {"--margin", "-1ms"}), 2, "--margin"},
      {with(kReplay, {"--margin", "abc"}), 2, "--margin"},
      {with(kReplay, {"--margin", "-5%"}), 2, "--margin: -5% is negative"},
      {with(kReplay, {"--queue-depth", "0"}), 2, "--queue-depth: 0 is out of range 1..4096"},
      {with(kReplay, {"--queue-depth", "5000"}), 2, "--queue-depth: 5000 is out of range 1..4096"},
      {with(kReplay, {"--series-limit", "-1"}), 2, "--series-limit: -1 is out of range"},
      {with(kReplay, {"--series-limit", "1000000000000"}), 2, "--series-limit"},
      {with(kReplay, {"--trace-limit", "-1"}), 2, "--trace-limit: -1 is out of range"},
      {with(kReplay, {"--trace-limit", "16777217"}), 2, "--trace-limit: 16777217 is out of range 0..16777216"},
      {with(kReplay, {"--gpu-timing", "maybe"}), 2, "--gpu-timing: 'maybe' is not on or off"},
      {with(kReplay, {"--short-chunk", "x"}), 2, "--short-chunk: 'x' is not eager or recapture"},
      {with(kReplay, {"--chunk", "0"}), 2, "--chunk: 0 frames is out of range"},
      {with(kReplay, {"--dtype", "int8"}), 2, "--dtype: 'int8'"},
      {with(kSynth, {"--signal", "foo"}), 2, "--signal 'foo': unknown signal 'foo'"},
      {with(kSynth, {"--signal", "sine:"}), 2, "--signal 'sine:'"},
      {with(kSynth, {"--signal", "sine:30k"}), 2, "--signal 'sine:30k'"},
      {with(kSynth, {"--signal", "sweep:1k"}), 2, "--signal 'sweep:1k': usage"},
      {with(kSynth, {"--signal", "noise:3"}), 2, "'noise' takes no argument"},
      {{"synth", "--duration", "0s"}, 2, "--duration: must be above 0"},
      {{"synth", "--duration", "5"}, 2, "--duration: '5' needs a unit"},
      {{"synth", "--duration", "-1s"}, 2, "--duration"},
      {with(kSynth, {"--rate", "500"}), 2, "--rate: 500 Hz is out of range 1000..768000"},
      {with(kSynth, {"--rate", "1e7"}), 2, "--rate: 10000000 Hz is out of range"},
      {with(kSynth, {"--channels", "0"}), 2, "--channels: 0 is out of range 1..64"},
      {with(kSynth, {"--channels", "65"}), 2, "--channels: 65 is out of range 1..64"},
      {{"compare", "--synth", "noise", "--variants", "foo"}, 2, "--variants"},
      {{"compare", "--synth", "noise", "--variants", "cpu,cpu"}, 2, "--variants: 'cpu' is listed twice"},
      {{"compare", "--synth", "noise", "--rounds", "0"}, 2, "--rounds: 0 is out of range 1..100"},
      {{"compare", "--synth", "noise", "--rounds", "101"}, 2, "--rounds: 101 is out of range 1..100"},
      {{"bench", "--channels", "0"}, 2, "--channels: 0 is out of range 1..64"},
      {{"bench", "--sections", "300"}, 2, "--sections: 300 is out of range 1..256"},
      {{"bench", "--chunks", "0"}, 2, "--chunks"},
      {{"bench", "--repeats", "0"}, 2, "--repeats: must be 1 or more"},
      {{"bench", "--dtype", "f16"}, 2, "--dtype: 'f16'"},
      {{"stage-bench", "run.json", "--stage", "sink"}, 2, "--stage: 'sink' cannot run alone"},
      {{"stage-bench", "run.json", "--stage", "foo"}, 2, "--stage: 'foo' is not a stage"},
      {{"stage-bench", "run.json", "--iterations", "0"}, 2, "--iterations: 0 must be 1 or more"},
      {{"stage-bench", "run.json", "--warmup", "-1"}, 2, "--warmup: -1 is negative"},
      {{"chain", "lp:1k", "--freqs", "nan"}, 2, "--freqs: 'nan' is not a finite number"},
      {{"chain", "lp:1k", "--freqs", "-5"}, 2, "--freqs: -5 is not a frequency"},
      {{"chain", "lp:1k", "--freqs", "1e9"}, 2, "--freqs: 1000000000 is not a frequency"},
      {{"chain", "lp:1k", "--freqs", "abc"}, 2, "--freqs"},
      {{"monitor", "--warmup", "2147483648"}, 2, "--warmup: 2147483648 is out of range"},
      {{"monitor", "--channels", "0"}, 2, "--channels: 0 is out of range 1..64"},
      {{"monitor", "--latency-chunks", "0"}, 2, "--latency-chunks: 0 is out of range 1..64"},
      {{"monitor", "--dtype", "f64"}, 2, "monitor: unknown option '--dtype'"},
  };
  run_table(cases);
}

// ------------------------------------------------------------------ saved reports

TEST_CASE("bad input table: saved reports") {
  std::vector<Case> cases;
  auto all3 = [&](const std::string& file, const std::string& err, Setup s) {
    for (const char* cmd : {"report", "cadence", "stage-bench"}) cases.push_back({{cmd, file}, 2, err, s});
  };
  all3("missing.json", "report 'missing.json': no such file", nullptr);
  all3("empty.json", "report 'empty.json': empty file, not JSON", file_with("empty.json", ""));
  all3("blank.json", "report 'blank.json': empty file, not JSON", file_with("blank.json", " \n\t\n"));
  all3("text.json", "report 'text.json': not JSON", file_with("text.json", "hello\n"));
  all3("cut.json", "report 'cut.json': truncated JSON",
       [](const fs::path& w) { write_file(w / "cut.json", shared().run_json.substr(0, shared().run_json.size() / 2)); });
  all3("arr.json", "report 'arr.json': JSON but not a chunkscope report", file_with("arr.json", "[1, 2]\n"));
  all3("obj.json", "report 'obj.json': JSON but not a chunkscope report (no \"schema\" key", file_with("obj.json", "{}\n"));
  all3("other.json", "schema 'chunkscope.other/9'", file_with("other.json", "{\"schema\": \"chunkscope.other/9\"}\n"));
  all3("num.json", "schema '42'", file_with("num.json", "{\"schema\": 42}\n"));
  all3("sub", "report 'sub'", nullptr);
  all3("/dev/zero", "report '/dev/zero': a character device, not a regular file", nullptr);
  all3("p.json", "report 'p.json': a FIFO, not a regular file", fifo("p.json"));
  all3("huge.json", "report 'huge.json': 536870913 bytes, above the limit of 512 MiB", [](const fs::path& w) {
    write_file(w / "huge.json", "");
    fs::resize_file(w / "huge.json", (std::uintmax_t{512} << 20) + 1);  // sparse
  });
  all3("big.json", "report 'big.json'", [](const fs::path& w) {
    std::string s = shared().run_json;
    const auto at = s.find("\"p95\": ");
    s.insert(at + 7, "1e400, \"x\": ");
    write_file(w / "big.json", s);
  });
  for (const char* section : {"workload", "environment", "method", "timing", "counts", "stages", "latency", "verdict",
                              "cadence", "throughput", "queues", "engine_overhead"}) {
    cases.push_back({{"report", "r.json"}, 2, std::string("field '") + section + "': missing",
                     run_report("r.json", [=](json& r) { r.erase(section); })});
    cases.push_back({{"cadence", "r.json"}, 2, std::string("field '") + section + "': expected an object, found number",
                     run_report("r.json", [=](json& r) { r[section] = 5; })});
  }
  cases.push_back({{"report", "c.json"}, 2, "field 'variants': missing", cmp_report("c.json", [](json& r) { r.erase("variants"); })});
  cases.push_back({{"report", "c.json"}, 2, "field 'variants': expected an array, found string", cmp_report("c.json", [](json& r) { r["variants"] = "x"; })});
  cases.push_back({{"cadence", "cmp.json"}, 2, "report 'cmp.json'"});
  cases.push_back({{"stage-bench", "cmp.json"}, 2, "a compare report; pick a variant"});
  cases.push_back({{"stage-bench", "cmp.json#nope"}, 2, "no variant 'nope'"});
  cases.push_back({{"stage-bench", "run.json#x"}, 2, "a run report has no variants (#x names one)"});
  cases.push_back({{"stage-bench", "r.json"}, 2, "report 'r.json'", run_report("r.json", [](json& r) {
                     r["workload"]["signature"] = "abc";
                   })});
  cases.push_back({{"stage-bench", "r.json"}, 2, "report 'r.json'", run_report("r.json", [](json& r) {
                     r["workload"].erase("signature");
                   })});
  cases.push_back({{"stage-bench", "r.json"}, 2, "report 'r.json'", run_report("r.json", [](json& r) {
                     r["workload"]["signature"]["rate"] = 5e6;
                   })});
  cases.push_back({{"stage-bench", "r.json"}, 2, "report 'r.json'", run_report("r.json", [](json& r) {
                     r["workload"]["signature"]["chain"] = "foo:1";
                   })});
  cases.push_back({{"report", "r.json"}, 2, "report 'r.json'", run_report("r.json", [](json& r) {
                     r["workload"]["chunk_frames"] = "abc";
                   })});
  cases.push_back({{"report", "r.json"}, 2, "report 'r.json'", run_report("r.json", [](json& r) {
                     r["latency"]["p95"] = "abc";
                   })});
  cases.push_back({{"report", "run.json", "--html", "sub"}, 2, "--html 'sub': is a folder"});
  cases.push_back({{"report", "run.json", "--html", "nodir/x.html"}, 2, "--html 'nodir/x.html': folder 'nodir' does not exist"});
  run_table(cases);
}

// Damaged reports with impossible values: refused in one line naming the field.
TEST_CASE("bad input table: saved reports with impossible values") {
  std::vector<Case> cases = {
      {{"report", "r.json"}, 2, "field 'counts.emitted': expected a count (0 or more), found -1",
       run_report("r.json", [](json& r) { r["counts"]["emitted"] = -1; })},
      {{"report", "r.json"}, 2, "field 'workload.chunk_frames': 1e+300 is out of range",
       run_report("r.json", [](json& r) { r["workload"]["chunk_frames"] = 1e300; })},
      {{"report", "r.json"}, 2, "field 'workload.rate': -1 is below 0",
       run_report("r.json", [](json& r) { r["workload"]["rate"] = -1; })},
      {{"report", "r.json"}, 2, "field 'latency.p95': -1 ns is not a time (below 0)",
       run_report("r.json", [](json& r) { r["latency"]["p95"] = -1; })},
      {{"cadence", "r.json"}, 2, "field 'timing.chunk_ns': 1e+300 is out of range",
       run_report("r.json", [](json& r) { r["timing"]["chunk_ns"] = 1e300; })},
      {{"report", "r.json"}, 2, "field 'verdict.realtime_safe': expected true or false, found string",
       run_report("r.json", [](json& r) { r["verdict"]["realtime_safe"] = "abc"; })},
      // series durations are recorded clamped to 0..2^31-1 ns and kept in 32 bits
      {{"report", "r.json"}, 2, "field 'series.columns.process_ns[0]': 3000000000 is out of range 0..2147483647",
       run_report("r.json", [](json& r) { r["series"]["columns"]["process_ns"][0] = 3000000000LL; })},
      {{"report", "r.json"}, 2, "field 'series.columns.flags[1]': -2 is out of range 0..2147483647",
       run_report("r.json", [](json& r) { r["series"]["columns"]["flags"][1] = -2; })},
  };
  run_table(cases);
}

// ------------------------------------------------------------------ output paths

TEST_CASE("bad input table: output paths") {
  const std::vector<std::string> proc_in = {"process", "in.wav"};
  auto proc = [&](const std::string& out, const std::string& err, Setup s = {}) {
    return Case{with(proc_in, {out, "--chain", "lp:1k"}), 2, err, s};
  };
  std::vector<Case> cases = {
      proc("in.wav", "output 'in.wav' is the same file as input 'in.wav'"),
      proc("./in.wav", "output './in.wav' is the same file as input 'in.wav'"),
      proc("sub/../in.wav", "output 'sub/../in.wav' is the same file as input 'in.wav'"),
      proc("hard.wav", "output 'hard.wav' is the same file as input 'in.wav'",
           [](const fs::path& w) { fs::create_hard_link(w / "in.wav", w / "hard.wav"); }),
      proc("soft.wav", "output 'soft.wav' is the same file as input 'in.wav'",
           [](const fs::path& w) { fs::create_symlink("in.wav", w / "soft.wav"); }),
      proc("sub", "output 'sub': is a folder"),
      proc("nodir/out.wav", "output 'nodir/out.wav': folder 'nodir' does not exist"),
      proc("notes.txt/out.wav", "output 'notes.txt/out.wav': 'notes.txt' is not a folder"),
      proc("out.mp4", "output 'out.mp4': unknown extension '.mp4'"),
      proc("-", "output '-': audio is not written to stdout"),
      {{"process", "in.wav", "good.sos", "--chain", "sos:good.sos"}, 2,
       "output 'good.sos' is the same file as sos file 'good.sos'"},
      {with(kReplay, {"--json", "in.wav"}), 2, "--json 'in.wav' is the same file as input 'in.wav'"},
      {with(kReplay, {"-o", "in.wav"}), 2, "--output 'in.wav' is the same file as input 'in.wav'"},
      {with(kReplay, {"-o", "x.wav", "--json", "x.wav"}), 2, "--json 'x.wav' is the same file as --output 'x.wav'"},
      {with(kReplay, {"--trace", "t.json", "--json", "t.json"}), 2, "--trace 't.json' is the same file as --json 't.json'"},
      {with(kReplay, {"--trace", "./t.json", "--json", "t.json"}), 2, "--trace './t.json' is the same file as --json 't.json'"},
      {with(kReplay, {"--json", "sub"}), 2, "--json 'sub': is a folder"},
      {with(kReplay, {"--json", "nodir/r.json"}), 2, "--json 'nodir/r.json': folder 'nodir' does not exist"},
      {with(kReplay, {"--trace", "nodir/t.json"}), 2, "--trace 'nodir/t.json': folder 'nodir' does not exist"},
      {with(kReplay, {"-o", "nodir/o.wav"}), 2, "output 'nodir/o.wav': folder 'nodir' does not exist"},
      {with(kReplay, {"-o", "sub"}), 2, "is a folder"},
      {with(kReplay, {"--hgrm", "notes.txt"}), 2, "--hgrm 'notes.txt': not a folder"},
      {with(kReplay, {"--report-dir", "notes.txt"}), 2, "--report-dir 'notes.txt': not a folder"},
      {with(kReplay, {"--report-dir", "notes.txt/d"}), 2, "--report-dir 'notes.txt/d': cannot create"},
      // a file system that holds no folders: refused before the run, as root too
      {with(kReplay, {"--report-dir", "/proc/nonexistent/rd"}), 2,
       "--report-dir '/proc/nonexistent/rd': cannot create"},
      {with(kReplay, {"--report-dir", "new/rd", "-o", "new/rd/report.json"}), 2,
       "--report-dir 'new/rd/report.json' is the same file as --output 'new/rd/report.json'"},
      {with(kReplay, {"--report-dir", "rd", "-o", "rd/trace.json"}), 2, "is the same file as --output 'rd/trace.json'"},
      {with(kReplay, {"--report-dir", "new/rd", "--trace", "in.wav"}), 2, "--trace 'in.wav' is the same file as input 'in.wav'"},
      {with(kReplay, {"--hgrm", "h", "--json", "h/process.hgrm"}), 2, "--hgrm 'h/process.hgrm' is the same file as --json 'h/process.hgrm'"},
      {with(kReplay, {"--chain", "sos:good.sos", "--json", "good.sos"}), 2, "--json 'good.sos' is the same file as sos file 'good.sos'"},
      {with(kReplay, {"--chain", "lp:30k", "--json", "in.wav"}), 2, "30000 Hz is not below Nyquist"},
      {with(kSynth, {"--json", "-", "--trace", "-"}), 2, "--trace '-' is the same file as --json '-'"},
      {with(kSynth, {"--json", "o.json", "--trace", "sub/../o.json"}), 2, "--trace 'sub/../o.json' is the same file as --json 'o.json'"},
      {with(kSynth, {"--json", "run.json", "--trace", "run.json"}), 2, "--trace 'run.json' is the same file as --json 'run.json'"},
      {with(kSynth, {"-o", "-"}), 2, "output '-': audio is not written to stdout"},
      {{"compare", "in.wav", "-q", "--json", "in.wav"}, 2, "--json 'in.wav' is the same file as input 'in.wav'"},
      {{"compare", "in.wav", "-q", "--json", "nodir/c.json"}, 2, "--json 'nodir/c.json': folder 'nodir' does not exist"},
      {{"report", "run.json", "--html", "run.json"}, 2, "--html 'run.json' is the same file as report 'run.json'"},
      {{"report", "run.json", "--html", "./run.json"}, 2, "--html './run.json' is the same file as report 'run.json'"},
      {{"stage-bench", "run.json", "--json", "run.json"}, 2, "--json 'run.json' is the same file as report 'run.json'"},
      {{"stage-bench", "cmp.json#cpu:fused", "--json", "cmp.json"}, 2, "--json 'cmp.json' is the same file as report 'cmp.json'"},
      {{"stage-bench", "run.json", "--json", "nodir/s.json"}, 2, "--json 'nodir/s.json': folder 'nodir' does not exist"},
      {{"monitor", "--json", "m.json", "--trace", "m.json"}, 2, "--trace 'm.json' is the same file as --json 'm.json'"},
      {{"bench", "--quick", "--json", "nodir/b.json"}, 2, "--json 'nodir/b.json': folder 'nodir' does not exist"},
      {{"bench", "--quick", "--json", "sub"}, 2, "--json 'sub': is a folder"},
  };
  if (::geteuid() == 0) {
    cases.push_back({with(kSynth, {"--json", "blk"}), 2, "--json 'blk': is a block device", [](const fs::path& w) {
                       REQUIRE(::mknod((w / "blk").c_str(), S_IFBLK | 0600, ::makedev(7, 0)) == 0);
                     }});
  }
  run_table(cases);
}
