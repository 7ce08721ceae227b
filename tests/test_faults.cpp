// Outputs that are devices, FIFOs or stdout; outputs that collide with inputs or with each
// other; inputs that never end or never arrive; and the small gaps (option ranges, stdout
// errors). Every test runs the real binary.
#include <doctest/doctest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <set>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <thread>
#include <unistd.h>

#include "tests/test_util.hpp"

namespace fs = std::filesystem;
using testutil::run_cli_at;
using testutil::RunResult;

namespace {

bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }
int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

std::vector<float> tone(int frames, int channels) {
  std::vector<float> x(static_cast<std::size_t>(frames * channels));
  for (int i = 0; i < frames; ++i)
    for (int c = 0; c < channels; ++c) x[static_cast<std::size_t>(i * channels + c)] = 0.25f * std::sin(0.05f * i);
  return x;
}

void write_text(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

mode_t lmode(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 ? st.st_mode : 0;
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> n;
  for (const auto& e : fs::directory_iterator(dir)) n.insert(e.path().filename().string());
  return n;
}

// Reads everything a writer sends through a FIFO, on its own thread, for at most 30 s. The
// FIFO is opened without blocking, so the thread never waits for a writer that never comes.
class FifoReader {
 public:
  explicit FifoReader(const fs::path& p) : path_(p.string()) {
    th_ = std::thread([this] { run(); });
  }
  ~FifoReader() {
    if (th_.joinable()) th_.join();
  }
  std::string take() {
    if (th_.joinable()) th_.join();
    return data_;
  }

 private:
  void run() {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK);
    if (fd < 0) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    bool writer_seen = false;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        writer_seen = true;
        data_.append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 && (writer_seen || (p.revents & POLLHUP))) {
        break;  // the writer closed
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        break;
      }
    }
    ::close(fd);
  }
  std::string path_, data_;
  std::thread th_;
};

// Writes `bytes` into a FIFO once a reader has opened it (for at most 30 s).
class FifoWriter {
 public:
  FifoWriter(const fs::path& p, std::string bytes) : path_(p.string()), bytes_(std::move(bytes)) {
    th_ = std::thread([this] { run(); });
  }
  ~FifoWriter() {
    if (th_.joinable()) th_.join();
  }

 private:
  void run() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    int fd = -1;
    while (fd < 0 && std::chrono::steady_clock::now() < deadline) {
      fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (fd < 0) return;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    std::string_view left = bytes_;
    while (!left.empty()) {
      const ssize_t n = ::write(fd, left.data(), left.size());
      if (n <= 0) break;
      left.remove_prefix(static_cast<std::size_t>(n));
    }
    ::close(fd);
  }
  std::string path_, bytes_;
  std::thread th_;
};

// A folder with a short stereo WAV and a saved run report (with a chain, for stage-bench).
struct Fixture {
  testutil::TempDir td;
  fs::path dir = td.path();
  Fixture() {
    testutil::write_wav((dir / "in.wav").string(), tone(4800, 2), 2, 48000);
    const auto r = run_cli_at(dir.string(), {"synth", "--duration", "0.1s", "--speed", "max", "-q", "--chain", "lp:1k",
                                             "--json", "run.json"});
    REQUIRE(r.rc == 0);
  }
  RunResult run(const std::vector<std::string>& args, int timeout_s = 30) const {
    return run_cli_at(dir.string(), args, timeout_s);
  }
};

void require_one_line(const RunResult& r, int rc) {
  CAPTURE(r.err);
  CHECK(r.rc == rc);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.rfind("chunkscope: ", 0) == 0);
}

}  // namespace

// ------------------------------------------------------------------ outputs that are not regular files

TEST_CASE("outputs: a FIFO is written directly and stays a FIFO (JSON report, trace, audio)") {
  Fixture f;
  for (const char* n : {"r.fifo", "t.fifo", "a.au", "p.flac"}) REQUIRE(::mkfifo((f.dir / n).c_str(), 0644) == 0);
  FifoReader rj(f.dir / "r.fifo"), rt(f.dir / "t.fifo"), ra(f.dir / "a.au");
  const auto r = f.run({"synth", "--duration", "0.2s", "--speed", "max", "-q", "--chain", "lp:1k", "--json", "r.fifo",
                        "--trace", "t.fifo", "-o", "a.au"});
  CAPTURE(r.err);
  CHECK(r.rc == 0);
  const auto report = nlohmann::json::parse(rj.take(), nullptr, false);
  CHECK(!report.is_discarded());
  if (!report.is_discarded()) CHECK(report.value("schema", "") == "chunkscope.report/1");
  const auto trace = nlohmann::json::parse(rt.take(), nullptr, false);
  CHECK(!trace.is_discarded());
  const std::string au = ra.take();
  CHECK(au.rfind(".snd", 0) == 0);  // AU streams through a pipe
  CHECK(au.size() > 9600 * 2);

  FifoReader rp(f.dir / "p.flac");
  const auto p = f.run({"process", "in.wav", "p.flac", "--chain", "lp:1k"});
  CAPTURE(p.err);
  CHECK(p.rc == 0);
  CHECK(rp.take().rfind("fLaC", 0) == 0);

  for (const char* n : {"r.fifo", "t.fifo", "a.au", "p.flac"}) {
    CAPTURE(n);
    CHECK(S_ISFIFO(lmode(f.dir / n)));
  }
  CHECK(names_in(f.dir) == std::set<std::string>{"in.wav", "run.json", "r.fifo", "t.fifo", "a.au", "p.flac"});
}

TEST_CASE("outputs: a FIFO nobody reads is given up after the wait: one line, exit 3, the FIFO stays") {
  Fixture f;
  REQUIRE(::mkfifo((f.dir / "r.fifo").c_str(), 0644) == 0);
  const auto r = f.run({"synth", "--duration", "0.1s", "--speed", "max", "-q", "--json", "r.fifo"});
  require_one_line(r, 3);
  CHECK(has(r.err, "--json 'r.fifo': a FIFO with no reader"));
  CHECK(S_ISFIFO(lmode(f.dir / "r.fifo")));
  CHECK(names_in(f.dir) == std::set<std::string>{"in.wav", "run.json", "r.fifo"});
}

TEST_CASE("outputs: a character device is written, never replaced (a private null device node)") {
  Fixture f;
  const fs::path node = f.dir / "null";
  if (::geteuid() != 0 || ::mknod(node.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0) {
    MESSAGE("skipped: making a device node needs root (mknod)");
    return;
  }
  const std::vector<std::vector<std::string>> runs = {
      {"synth", "--duration", "0.1s", "--speed", "max", "-q", "--json", "null", "--trace", "null", "-o", "null"},
      {"process", "in.wav", "null", "--chain", "lp:1k"},
      {"report", "run.json", "--html", "null"},
      {"stage-bench", "run.json", "--iterations", "5", "--warmup", "0", "--json", "null"},
      {"bench", "--quick", "--channels", "1", "--sections", "1", "--chunks", "64", "--repeats", "1", "--json", "null"},
  };
  for (const auto& a : runs) {
    const auto r = f.run(a);
    CAPTURE(a[0]);
    CAPTURE(r.err);
    CHECK(r.rc == 0);
    struct stat st {};
    REQUIRE(::lstat(node.c_str(), &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    CHECK(st.st_rdev == ::makedev(1, 3));
  }
  CHECK(names_in(f.dir) == std::set<std::string>{"in.wav", "run.json", "null"});
}

TEST_CASE("outputs: /dev/null as every output stays a character device") {
  Fixture f;
  const auto r = f.run({"synth", "--duration", "0.1s", "--speed", "max", "-q", "--json", "/dev/null", "--trace",
                        "/dev/null", "-o", "/dev/null"});
  CAPTURE(r.err);
  CHECK(r.rc == 0);
  CHECK(f.run({"report", "run.json", "--html", "/dev/null"}).rc == 0);
  CHECK(f.run({"process", "in.wav", "/dev/null", "--chain", "lp:1k"}).rc == 0);
  if (::geteuid() != 0) {
    MESSAGE("not root: this user cannot replace /dev/null, so the check that it stays a device proves nothing; skipped");
    return;
  }
  struct stat st {};
  REQUIRE(::lstat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(st.st_rdev == ::makedev(1, 3));
}

TEST_CASE("outputs: '-' writes the JSON report and the HTML page to stdout, two outputs on stdout are refused") {
  Fixture f;
  const auto r = f.run({"synth", "--duration", "0.1s", "--speed", "max", "-q", "--json", "-"});
  CAPTURE(r.err);
  CHECK(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE(!j.is_discarded());
  CHECK(j["schema"] == "chunkscope.report/1");
  const auto h = f.run({"report", "run.json", "--html", "-"});
  CHECK(h.rc == 0);
  CHECK(has(h.out, "<html"));
  CHECK(has(h.out, "</html>"));
  CHECK(!has(h.out, "html report written"));
  const auto both = f.run({"synth", "--duration", "0.1s", "--speed", "max", "-q", "--json", "-", "--trace", "-"});
  require_one_line(both, 2);
  CHECK(has(both.err, "--trace '-' is the same file as --json '-'"));
  CHECK(names_in(f.dir) == std::set<std::string>{"in.wav", "run.json"});  // no file named '-'
}

TEST_CASE("outputs: a replaced file keeps its permissions, a symlink keeps pointing at the file it names") {
  Fixture f;
  write_text(f.dir / "old.json", "old\n");
  fs::permissions(f.dir / "old.json", fs::perms::owner_read | fs::perms::owner_write);
  fs::create_directory(f.dir / "real");
  write_text(f.dir / "real" / "target.json", "old\n");
  fs::create_symlink("real/target.json", f.dir / "link.json");
  const auto r = f.run({"synth", "--duration", "0.1s", "--speed", "max", "-q", "--json", "old.json", "--trace",
                        "link.json"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  CHECK((fs::status(f.dir / "old.json").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(testutil::load_json((f.dir / "old.json").string())["schema"] == "chunkscope.report/1");
  CHECK(fs::is_symlink(f.dir / "link.json"));
  CHECK(testutil::slurp((f.dir / "real" / "target.json").string()).rfind("{", 0) == 0);
  CHECK(names_in(f.dir) == std::set<std::string>{"in.wav", "run.json", "old.json", "real", "link.json"});
  CHECK(names_in(f.dir / "real") == std::set<std::string>{"target.json"});
}

// ------------------------------------------------------------------ colliding paths

namespace {

struct Snapshot {
  std::map<std::string, std::tuple<std::uintmax_t, long long, ino_t, mode_t>> entries;
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(const fs::path& dir) {
  Snapshot s;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    ::lstat(e.path().c_str(), &st);
    s.entries[fs::relative(e.path(), dir).string()] = {
        S_ISREG(st.st_mode) ? static_cast<std::uintmax_t>(st.st_size) : 0,
        static_cast<long long>(st.st_mtim.tv_sec) * 1000000000ll + st.st_mtim.tv_nsec, st.st_ino, st.st_mode};
  }
  return s;
}

}  // namespace

TEST_CASE("paths: an output that is an input or another output is refused before anything is written") {
  Fixture f;
  write_text(f.dir / "eq.sos", "1 2 1 1 -1.8 0.81\n");
  fs::create_directory(f.dir / "sub");
  fs::create_hard_link(f.dir / "in.wav", f.dir / "hard.wav");
  fs::create_symlink("in.wav", f.dir / "soft.wav");
  REQUIRE(f.run({"compare", "--synth", "noise", "--duration", "0.1s", "--speed", "max", "--variants",
                 "cpu:fused,cpu:unfused", "--chain", "lp:1k", "-q", "--json", "cmp.json"})
              .rc == 0);
  struct Case {
    std::vector<std::string> args;
    std::string a, b, path;  // the two options named and the path
  };
  const std::string syn[] = {"synth", "--duration", "0.1s", "--speed", "max", "-q"};
  auto synth = [&](std::vector<std::string> more) {
    std::vector<std::string> v(std::begin(syn), std::end(syn));
    v.insert(v.end(), more.begin(), more.end());
    return v;
  };
  const std::vector<Case> cases = {
      {{"process", "in.wav", "in.wav", "--chain", "lp:1k"}, "output", "input", "in.wav"},
      {{"process", "in.wav", "./in.wav", "--chain", "lp:1k"}, "output", "input", "./in.wav"},
      {{"process", "in.wav", "sub/../in.wav", "--chain", "lp:1k"}, "output", "input", "sub/../in.wav"},
      {{"process", "in.wav", "hard.wav", "--chain", "lp:1k"}, "output", "input", "hard.wav"},
      {{"process", "in.wav", "soft.wav", "--chain", "lp:1k"}, "output", "input", "soft.wav"},
      {{"process", "in.wav", "eq.sos", "--chain", "sos:eq.sos"}, "output", "sos file", "eq.sos"},
      {{"replay", "in.wav", "--speed", "max", "-q", "--json", "in.wav"}, "--json", "input", "in.wav"},
      {{"replay", "in.wav", "--speed", "max", "-q", "-o", "in.wav"}, "--output", "input", "in.wav"},
      {{"replay", "in.wav", "--speed", "max", "-q", "-o", "x.wav", "--json", "x.wav"}, "--json", "--output", "x.wav"},
      {{"replay", "in.wav", "--speed", "max", "-q", "--trace", "t.json", "--json", "t.json"}, "--trace", "--json",
       "t.json"},
      {{"replay", "in.wav", "--speed", "max", "-q", "--trace", "./t.json", "--json", "sub/../t.json"}, "--trace",
       "--json", "t.json"},
      {{"replay", "in.wav", "--speed", "max", "-q", "--report-dir", "new/rd", "-o", "new/rd/report.json"},
       "--report-dir", "--output", "new/rd/report.json"},
      {{"replay", "in.wav", "--speed", "max", "-q", "--hgrm", "h", "--json", "h/process.hgrm"}, "--hgrm", "--json",
       "h/process.hgrm"},
      {synth({"--chain", "sos:eq.sos", "--trace", "eq.sos"}), "--trace", "sos file", "eq.sos"},
      {synth({"--json", "out.json", "--trace", "./out.json"}), "--trace", "--json", "out.json"},
      {{"compare", "in.wav", "--speed", "max", "-q", "--json", "in.wav"}, "--json", "input", "in.wav"},
      {{"report", "run.json", "--html", "run.json"}, "--html", "report", "run.json"},
      {{"stage-bench", "run.json", "--json", "./run.json"}, "--json", "report", "run.json"},
      {{"stage-bench", "cmp.json#cpu:fused", "--json", "cmp.json"}, "--json", "report", "cmp.json"},
      {{"monitor", "--json", "m.json", "--trace", "m.json"}, "--trace", "--json", "m.json"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const Snapshot before = snapshot(f.dir);
    const auto r = f.run(c.args);
    require_one_line(r, 2);
    CHECK(has(r.err, "same file"));
    CHECK(has(r.err, c.a + " '"));
    CHECK(has(r.err, c.b + " '"));
    CHECK(has(r.err, c.path));
    CHECK(snapshot(f.dir) == before);
  }
}

// ------------------------------------------------------------------ inputs that never end or never arrive

TEST_CASE("inputs: SOS files must be regular files of at most 1 MiB") {
  Fixture f;
  REQUIRE(::mkfifo((f.dir / "fifo.sos").c_str(), 0644) == 0);
  const std::string line = "1 2 1 1 -1.8 0.81\n";
  std::string big = line;
  big.resize(std::size_t{1} << 20, ' ');  // exactly the limit: accepted
  write_text(f.dir / "limit.sos", big);
  write_text(f.dir / "big.sos", big + "\n");  // one byte over
  auto err_of = [&](const std::string& spec) {
    const auto r = f.run({"chain", spec}, 20);
    require_one_line(r, 2);
    return r.err;
  };
  CHECK(has(err_of("sos:/dev/zero"), "sos file '/dev/zero': a character device, not a regular file"));
  CHECK(has(err_of("sos:fifo.sos"), "sos file 'fifo.sos': a FIFO, not a regular file"));
  CHECK(has(err_of("sos:big.sos"), "sos file 'big.sos': 1048577 bytes, above the limit of 1 MiB"));
  CHECK(f.run({"chain", "sos:limit.sos"}).rc == 0);
}

TEST_CASE("inputs: saved reports must be regular files of at most 512 MiB (report, cadence, stage-bench)") {
  Fixture f;
  REQUIRE(::mkfifo((f.dir / "fifo.json").c_str(), 0644) == 0);
  {
    std::ofstream o(f.dir / "huge.json");  // sparse: costs no disk
  }
  fs::resize_file(f.dir / "huge.json", (std::uintmax_t{512} << 20) + 1);
  for (const char* cmd : {"report", "cadence", "stage-bench"}) {
    CAPTURE(cmd);
    const auto z = f.run({cmd, "/dev/zero"}, 20);
    require_one_line(z, 2);
    CHECK(has(z.err, "report '/dev/zero': a character device, not a regular file"));
    const auto p = f.run({cmd, "fifo.json"}, 20);
    require_one_line(p, 2);
    CHECK(has(p.err, "report 'fifo.json': a FIFO, not a regular file"));
    const auto h = f.run({cmd, "huge.json"}, 20);
    require_one_line(h, 2);
    CHECK(has(h.err, "report 'huge.json': 536870913 bytes, above the limit of 512 MiB"));
  }
}

TEST_CASE("inputs: process of a FIFO that no one writes gives up after the wait with one line") {
  Fixture f;
  REQUIRE(::mkfifo((f.dir / "in.fifo").c_str(), 0644) == 0);
  const auto r = f.run({"process", "in.fifo", "out.wav", "--chain", "lp:1k"}, 30);
  require_one_line(r, 2);
  CHECK(has(r.err, "input 'in.fifo': a FIFO that gave no data within 5 s"));
  CHECK(!fs::exists(f.dir / "out.wav"));
  CHECK(names_in(f.dir) == std::set<std::string>{"in.wav", "run.json", "in.fifo"});
}

TEST_CASE("inputs: process reads a FIFO that has a writer, replay and compare refuse a FIFO at once") {
  Fixture f;
  REQUIRE(::mkfifo((f.dir / "in.fifo").c_str(), 0644) == 0);
  {
    FifoWriter w(f.dir / "in.fifo", testutil::slurp((f.dir / "in.wav").string()));
    const auto r = f.run({"process", "in.fifo", "out.wav", "--chain", "lp:1k"});
    CAPTURE(r.err);
    CHECK(r.rc == 0);
  }
  CHECK(testutil::read_all((f.dir / "out.wav").string()).size() == 9600);
  for (const char* cmd : {"replay", "compare"}) {
    CAPTURE(cmd);
    const auto r = f.run({cmd, "in.fifo", "--speed", "max", "-q"}, 20);
    require_one_line(r, 2);
    CHECK(has(r.err, "input 'in.fifo': a FIFO, not a regular file"));
  }
}

// ------------------------------------------------------------------ small gaps

TEST_CASE("options: --warmup above 100000000 is refused instead of wrapping to a negative count") {
  Fixture f;
  for (const char* cmd : {"synth", "monitor"}) {
    CAPTURE(cmd);
    const auto r = f.run({cmd, "--warmup", "2147483648", "--duration", "1s"});
    require_one_line(r, 2);
    CHECK(has(r.err, "--warmup: 2147483648 is out of range 0..100000000"));
  }
  const auto ok = f.run({"synth", "--duration", "0.1s", "--speed", "max", "-q", "--warmup", "100000000"});
  CHECK(ok.rc == 0);
}

TEST_CASE("chain --freqs: a frequency outside 0..Nyquist is refused, naming it") {
  Fixture f;
  for (const char* v : {"-5", "1e9", "0", "24000"}) {
    CAPTURE(v);
    const auto r = f.run({"chain", "lp:1k", "--freqs", v});
    require_one_line(r, 2);
    CHECK(has(r.err, "--freqs: "));
    CHECK(has(r.err, "is not a frequency between 0 and Nyquist (24000 Hz at rate 48000)"));
  }
  for (const char* v : {"nan", "100,inf"}) {  // refused already as numbers, naming the value
    CAPTURE(v);
    const auto r = f.run({"chain", "lp:1k", "--freqs", v});
    require_one_line(r, 2);
    CHECK(has(r.err, "--freqs: '"));
    CHECK(has(r.err, "is not a finite number"));
  }
  const auto ok = f.run({"chain", "lp:1k", "--freqs", "100,23999"});
  CHECK(ok.rc == 0);
  CHECK(has(ok.out, "23999 Hz"));
}

TEST_CASE("stdout that cannot be written (/dev/full) is a failure: exit 3, one line") {
  Fixture f;
  const std::vector<std::vector<std::string>> runs = {
      {"chain", "lp:1k"},
      {"chain", "lp:1k", "--json"},
      {"report", "run.json"},
      {"synth", "--duration", "0.1s", "--speed", "max", "-q", "--json", "-"},
  };
  for (const auto& a : runs) {
    CAPTURE(a[0]);
    const auto r = run_cli_at(f.dir.string(), a, 30, "/dev/full");
    require_one_line(r, 3);
    // the report on stdout ('-') fails where it is written, the rest when stdout is flushed
    CHECK(has(r.err, a.back() == "-" ? "--json '-': write failed (No space left on device)"
                                     : "stdout: write failed (No space left on device)"));
  }
}

TEST_CASE("audio input: a sample rate out of range names the file") {
  Fixture f;
  // a WAV whose header says 2 MHz: patch the rate and byte-rate fields of a valid file
  std::string w = testutil::slurp((f.dir / "in.wav").string());
  REQUIRE(w.size() > 44);
  auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) w[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  put32(24, 2000000);
  put32(28, 2000000u * 8u);
  write_text(f.dir / "fast.wav", w);
  for (const std::vector<std::string>& a : {std::vector<std::string>{"process", "fast.wav", "out.wav", "--chain", "lp:1k"},
                                            std::vector<std::string>{"replay", "fast.wav", "--speed", "max", "-q"}}) {
    CAPTURE(a[0]);
    const auto r = f.run(a);
    require_one_line(r, 2);
    CHECK(has(r.err, "input 'fast.wav': sample rate 2000000 Hz is out of range (1 Hz .. 1 MHz)"));
  }
  CHECK(!fs::exists(f.dir / "out.wav"));
}
