#include "tests/test_util.hpp"

#include <array>
#include <doctest/doctest.h>
#include <fstream>
#include <random>
#include <sndfile.h>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace testutil {

namespace {
std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}
}  // namespace

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  return nlohmann::json::parse(in);
}

RunResult run_cli(const std::vector<std::string>& args) {
  TempDir td;
  std::string cmd = quote(bin_path());
  std::size_t first = 0;
  if (!args.empty() && args[0] == "timeout-guard") {
    cmd = "timeout 30 " + cmd;  // exit 124 if it hangs
    first = 1;
  }
  for (std::size_t i = first; i < args.size(); ++i) cmd += " " + quote(args[i]);
  cmd += " >" + quote(td.file("out")) + " 2>" + quote(td.file("err")) + " </dev/null";
  const int st = std::system(cmd.c_str());
  RunResult r;
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  r.out = slurp(td.file("out"));
  r.err = slurp(td.file("err"));
  return r;
}

TempDir::TempDir() {
  static std::mt19937_64 rng(std::random_device{}());
  for (int i = 0; i < 100; ++i) {
    auto p = std::filesystem::temp_directory_path() / ("chunkscope-test-" + std::to_string(::getpid()) + "-" +
                                                       std::to_string(rng() % 1000000000));
    std::error_code ec;
    if (std::filesystem::create_directory(p, ec)) {
      p_ = p;
      return;
    }
  }
  throw std::runtime_error("cannot create a temporary folder");
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(p_, ec);
}

void write_wav(const std::string& path, const std::vector<float>& x, int channels, int rate, bool pcm16) {
  SF_INFO si{};
  si.samplerate = rate;
  si.channels = channels;
  si.format = SF_FORMAT_WAV | (pcm16 ? SF_FORMAT_PCM_16 : SF_FORMAT_FLOAT);
  SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &si);
  if (!f) throw std::runtime_error("write_wav: cannot open " + path);
  sf_writef_float(f, x.data(), static_cast<sf_count_t>(x.size() / static_cast<std::size_t>(channels)));
  sf_close(f);
}

std::vector<double> read_all(const std::string& path, int* channels, int* rate) {
  SF_INFO si{};
  SNDFILE* f = sf_open(path.c_str(), SFM_READ, &si);
  if (!f) throw std::runtime_error("read_all: cannot open " + path);
  std::vector<double> v(static_cast<std::size_t>(si.frames * si.channels));
  sf_readf_double(f, v.data(), si.frames);
  sf_close(f);
  if (channels) *channels = si.channels;
  if (rate) *rate = si.samplerate;
  return v;
}

// The binaries can be moved together (a prebuilt set carried to a GPU machine, see
// tests/gpu/check.sh): the paths compiled in are tried first, then the layout of a build
// folder around this test program and the working folder.
std::string bin_path() {
  static const std::string path = [] {
    std::error_code ec;
    if (std::filesystem::exists(CHUNKSCOPE_BIN, ec)) return std::string(CHUNKSCOPE_BIN);
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    for (auto dir = self.parent_path(); !ec && !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
      if (std::filesystem::exists(dir / "chunkscope", ec) && !std::filesystem::is_directory(dir / "chunkscope", ec))
        return (dir / "chunkscope").string();
    return std::string(CHUNKSCOPE_BIN);
  }();
  return path;
}

std::string source_dir() {
  static const std::string path = [] {
    std::error_code ec;
    const auto marker = std::filesystem::path("audio") / "mix_stereo_48k.flac";
    if (std::filesystem::exists(std::filesystem::path(CHUNKSCOPE_SOURCE_DIR) / marker, ec))
      return std::string(CHUNKSCOPE_SOURCE_DIR);
    for (auto dir = std::filesystem::current_path(ec); !ec && !dir.empty(); dir = dir.parent_path()) {
      if (std::filesystem::exists(dir / marker, ec)) return dir.string();
      if (dir == dir.root_path()) break;
    }
    return std::string(CHUNKSCOPE_SOURCE_DIR);
  }();
  return path;
}

}  // namespace testutil
