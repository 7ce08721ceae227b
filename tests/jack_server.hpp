#pragma once
// A real JACK server for the tests that need one (tests/test_monitor.cpp,
// tests/test_probe_jack.cpp, one program: chunkscope_jack_tests): jackd with the dummy
// driver at 48 kHz, 256-frame periods, under a name of its own that JACK's clients (and
// PortAudio's JACK host API) find through JACK_DEFAULT_SERVER. Without jackd a test says
// it skipped (NEED_JACK) and the program exits kSkipped.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "tests/test_util.hpp"

namespace jacktest {

using nlohmann::json;
using testutil::run_cli;

inline constexpr int kSkipped = 77;  // tests/CMakeLists.txt: SKIP_RETURN_CODE of monitor_against_jack
inline int g_skipped = 0;             // tests that could not run without jackd

// The JACK server program: jackd, or CHUNKSCOPE_TEST_JACKD (a test of the skip points it at
// a program that does not exist).
inline const char* jackd() {
  const char* j = std::getenv("CHUNKSCOPE_TEST_JACKD");
  return j && *j ? j : "jackd";
}
inline bool have_jackd() { return std::system(("command -v '" + std::string(jackd()) + "' >/dev/null 2>&1").c_str()) == 0; }


// A jackd with the dummy driver at 48 kHz, 256-frame periods, under a unique name.
class JackServer {
 public:
  JackServer() {
    // A few fixed names, tried in turn: JACK reclaims a dead server's registry slot only
    // when a new server takes the same name, so unique names would fill the registry.
    for (int n = 0; n < 6 && !ready_; ++n) start("chunkscope-test-" + std::to_string(n));
  }
  ~JackServer() { stop(SIGTERM); }
  bool ready() const { return ready_; }
  /// Kills the server without warning, as a crash would.
  void kill_now() { stop(SIGKILL); }
  /// SIGSTOP stops the server (no callback arrives), SIGCONT lets it go on.
  void send(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }

 private:
  void start(const std::string& name) {
    name_ = name;
    setenv("JACK_DEFAULT_SERVER", name_.c_str(), 1);
    setenv("JACK_NO_AUDIO_RESERVATION", "1", 1);
    pid_ = fork();
    if (pid_ == 0) {
      const int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      dup2(devnull, 2);
      execlp(jackd(), jackd(), "--no-realtime", "-n", name_.c_str(), "-d", "dummy", "-r", "48000", "-p", "256",
             static_cast<char*>(nullptr));
      _exit(127);
    }
    // ready when PortAudio sees its device (at most 10 s); a server that exits (name in
    // use by another test) makes us try the next name
    for (int i = 0; i < 100 && !ready_; ++i) {
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      const auto r = run_cli({"devices", "--json"});
      if (r.rc == 0 && json::parse(r.out)["devices"].size() > 0) ready_ = true;
      // a device seen while our server is exiting belongs to another process's server of
      // the same name (a test run elsewhere on the machine): not ours, try the next name
      if (ready_ && waitpid(pid_, &st, WNOHANG) == pid_) {
        ready_ = false;
        pid_ = -1;
        return;
      }
      if (!ready_) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    // The devices seen may be another server's of the same name (one left over by a killed
    // test run): ours must still be alive once it has had time to find the name taken.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    int st = 0;
    if (ready_ && waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      ready_ = false;
    }
  }
  void stop(int sig) {
    if (pid_ > 0) {
      kill(pid_, sig);
      int st = 0;
      for (int i = 0; i < 50 && waitpid(pid_, &st, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (waitpid(pid_, &st, WNOHANG) == 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &st, 0);
      }
      pid_ = -1;
    }
  }
  std::string name_;
  pid_t pid_ = -1;
  bool ready_ = false;
};

#define NEED_JACK()                                                                    \
  if (!jacktest::have_jackd()) {                                                       \
    MESSAGE("skipped: jackd is not installed (Debian package jackd2), no audio server"); \
    ++jacktest::g_skipped;                                                             \
    return;                                                                            \
  }

}  // namespace jacktest
