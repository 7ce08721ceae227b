#include "src/plugin_catalog.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "src/errors.hpp"
#include "src/hosted_ladspa.hpp"
#include "src/hosted_lv2.hpp"

namespace chunkscope {

namespace {

// Written by a child after its answer: an answer without it was cut short.
constexpr char kAnswerEnd[] = "\n-- end of answer --\n";
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP};

bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// The child's side: `work`'s answer, then the end mark, then gone without the parent's exit
// handlers (a library that calls exit() itself runs them, after stdio was flushed by the parent).
[[noreturn]] void child_main(int fd, const std::function<std::string()>& work) {
  for (int sig : kFatalSignals) std::signal(sig, SIG_DFL);
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  std::string answer;
  try {
    answer = work();
  } catch (...) {
    ::_exit(125);
  }
  answer += kAnswerEnd;
  ::_exit(write_all(fd, answer.data(), answer.size()) ? 0 : 126);
}

// Reads `fd` to its end; false when `timeout_s` passed first.
bool read_until_end(int fd, std::string& out, int timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  char buf[8192];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r < 0;  // an error reads as the end
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

std::string signal_words(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic error)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGABRT: return "SIGABRT (abort)";
    case SIGKILL: return "SIGKILL";
  }
  const char* d = ::strsignal(sig);
  return fmt::format("signal {} ({})", sig, d ? d : "unknown");
}

// How the child ended, as ChildOutcome::failure words; "" for a clean end.
std::string ending_words(int status) {
  if (WIFSIGNALED(status)) return "was killed by " + signal_words(WTERMSIG(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "";
}

}  // namespace

ChildOutcome run_in_child(const std::function<std::string()>& work, int timeout_s) {
  ChildOutcome out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out.failure = fmt::format("could not be started (pipe: {})", std::strerror(errno));
    return out;
  }
  std::fflush(nullptr);  // nothing buffered here is written twice by a child that calls exit()
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], work);
  }
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    out.failure = fmt::format("could not be started (fork: {})", std::strerror(errno));
    return out;
  }
  std::string got;
  const bool ended = read_until_end(fds[0], got, timeout_s);
  ::close(fds[0]);
  if (!ended) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::size_t mark = sizeof kAnswerEnd - 1;
  const bool whole = got.size() >= mark && got.compare(got.size() - mark, mark, kAnswerEnd) == 0;
  if (!ended) {
    out.failure = fmt::format("did not finish within {} s", timeout_s);
  } else if (std::string why = ending_words(status); !why.empty()) {
    out.failure = why;
  } else if (!whole) {
    out.failure = "exited before it answered";
  } else {
    out.finished = true;
    out.answer = got.substr(0, got.size() - mark);
  }
  return out;
}

std::vector<PluginInfo> list_plugins() {
  std::vector<PluginInfo> out = list_lv2_plugins();
  std::vector<PluginInfo> ladspa = list_ladspa_plugins();
  out.insert(out.end(), std::make_move_iterator(ladspa.begin()), std::make_move_iterator(ladspa.end()));
  return out;
}

PluginInfo describe_plugin(const std::string& spec) {
  const std::string where = fmt::format("plugin '{}'", one_line(spec));
  if (spec.rfind("lv2:", 0) == 0) return describe_lv2_plugin(spec.substr(4), where);
  if (spec.rfind("ladspa:", 0) == 0) {
    const std::string rest = spec.substr(7);
    const auto colon = rest.rfind(':');  // PATH:LABEL; a label has no ':'
    return colon == std::string::npos ? describe_ladspa_plugin("", rest, where)
                                      : describe_ladspa_plugin(rest.substr(0, colon), rest.substr(colon + 1), where);
  }
  throw InputError(fmt::format("{}: give lv2:ID or ladspa:[PATH:]LABEL", where));
}

}  // namespace chunkscope
