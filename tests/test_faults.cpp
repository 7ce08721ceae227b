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

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> n;
  for (const auto& e : fs::directory_iterator(dir)) n.insert(e.path().filename().string());
  return n;
}

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
