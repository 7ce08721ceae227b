#include "tests/test_util.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <cerrno>
#include <fstream>
#include <mutex>
#include <poll.h>
#include <random>
#include <sndfile.h>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>

namespace testutil {

namespace {
// The suite checks chunkscope against the plugins the project installs, found where the
// system puts them: a search path of the user's own (which may leave those folders out, or
// put other plugins first) is not what it examines. Removed before any case runs, so every
// chunkscope the cases start searches the default path. JACK tests name their own server.
const bool kDefaultSearchPaths = [] {
  ::unsetenv("LV2_PATH");
  ::unsetenv("LADSPA_PATH");
  return true;
}();

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

RunResult run_cli_at(const std::string& cwd, const std::vector<std::string>& args, int timeout_s,
                     const std::string& stdout_to) {
  std::vector<std::string> argv_s{bin_path()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {  // only async-signal-safe calls until exec
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    const int in = ::open("/dev/null", O_RDONLY);
    if (in < 0 || ::dup2(in, 0) < 0) ::_exit(126);
    if (!stdout_to.empty()) {
      const int o = ::open(stdout_to.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (o < 0 || ::dup2(o, 1) < 0) ::_exit(126);
    } else if (::dup2(out[1], 1) < 0) {
      ::_exit(126);
    }
    if (::dup2(err[1], 2) < 0) ::_exit(126);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  RunResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool killed = false;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* dst[2] = {&r.out, &r.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    if (::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000))) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        dst[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.rc = killed ? 124 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return r;
}

pid_t spawn_cli(const std::string& cwd, const std::vector<std::string>& args, const std::string& out_path,
                const std::string& err_path) {
  std::vector<std::string> argv_s{bin_path()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {  // only async-signal-safe calls until exec
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    const int in = ::open("/dev/null", O_RDONLY);
    const int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || o < 0 || e < 0 || ::dup2(in, 0) < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(126);
    // the test runner may have left these ignored or blocked; the program gets the defaults
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

int wait_cli(pid_t pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int st = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      return 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

bool wait_for_path(const std::string& path, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::error_code ec;
  while (!std::filesystem::exists(path, ec)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

TempDir::TempDir() {
  static std::mutex m;  // test cases may make folders from several threads
  const std::lock_guard<std::mutex> lock(m);
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

std::vector<float> float_stereo_copy(const std::string& source, const std::string& path) {
  int ch = 0, rate = 0;
  const std::vector<double> d = read_all(source, &ch, &rate);
  REQUIRE(ch == 2);
  std::vector<float> f(d.begin(), d.end());
  write_wav(path, f, ch, rate);
  return f;
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

// ---------------------------------------------------------------- HTTP


std::string header(const HttpReply& r, const std::string& name) {
  const auto it = r.headers.find(name);
  return it == r.headers.end() ? std::string() : it->second;
}

// One request over a fresh connection (Connection: close); status 0 when nothing answered.
HttpReply http(int port, const std::string& method, const std::string& path, const std::string& accept) {
  HttpReply r;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return r;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return r;
  }
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!accept.empty()) req += "Accept: " + accept + "\r\n";
  if (method == "POST") req += "Content-Length: 0\r\n";
  req += "\r\n";
  (void)!::write(fd, req.data(), req.size());
  std::string all;
  char buf[8192];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) all.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  const std::size_t head_end = all.find("\r\n\r\n");
  if (all.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return r;
  r.status = std::atoi(all.c_str() + 9);
  std::istringstream hs(all.substr(0, head_end));
  std::string h;
  std::getline(hs, h);
  while (std::getline(hs, h)) {
    if (!h.empty() && h.back() == '\r') h.pop_back();
    const std::size_t c = h.find(':');
    if (c == std::string::npos) continue;
    std::string name = h.substr(0, c);
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::string v = h.substr(c + 1);
    while (!v.empty() && v[0] == ' ') v.erase(0, 1);
    r.headers[name] = v;
  }
  r.body = all.substr(head_end + 4);
  return r;
}

// A port free on loopback right now (the kernel's pick; released before it is used).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);  // a failed REQUIRE when none is
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

// `s` percent-encoded for a query string.
std::string url_encode(const std::string& s) {
  std::string enc;
  for (unsigned char ch : s) {
    if (std::isalnum(ch) || ch == '_' || ch == '.') {
      enc += static_cast<char>(ch);
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", ch);
      enc += b;
    }
  }
  return enc;
}

const nlohmann::json& report_step(const nlohmann::json& report, int index) {
  return report.at("steps").at("list").at(static_cast<std::size_t>(index - 1));
}

}  // namespace testutil
