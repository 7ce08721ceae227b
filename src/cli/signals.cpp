#include "src/cli/signals.hpp"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt/hosted.hpp"
#include "src/errors.hpp"

namespace chunkscope::cli {

namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_stop{false};
std::atomic<bool> g_graceful{false};  // a command watches g_stop
std::atomic<int> g_signals{0};        // signals handled on the main thread
std::atomic<int> g_first_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);
pid_t g_pid = 0;
pid_t g_main_tid = 0;  // where the handler does its work
char g_pid_text[24] = {};
std::size_t g_pid_len = 0;

char g_folders[kMaxGuardedFolders][PATH_MAX];
std::atomic<int> g_folder_count{0};

void write_stderr(const char* s) noexcept {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(2, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

bool ends_with(const char* s, std::size_t len, const char* tail, std::size_t tail_len) noexcept {
  return len >= tail_len && std::memcmp(s + len - tail_len, tail, tail_len) == 0;
}

// ".NAME.PID.partial" or ".NAME.PID.N.partial" with this process's PID (OutputTarget's
// naming, src/io/output_file.cpp).
bool is_our_temporary(const char* name) noexcept {
  std::size_t len = std::strlen(name);
  static constexpr char kSuffix[] = ".partial";
  constexpr std::size_t kSuffixLen = sizeof kSuffix - 1;
  if (name[0] != '.' || !ends_with(name, len, kSuffix, kSuffixLen)) return false;
  len -= kSuffixLen;  // ".NAME.PID" or ".NAME.PID.N"
  auto ends_with_pid = [&](std::size_t l) {
    return l > g_pid_len + 2 && name[l - g_pid_len - 1] == '.' && ends_with(name, l, g_pid_text, g_pid_len);
  };
  if (ends_with_pid(len)) return true;
  std::size_t digits = 0;  // ".N": an attempt number after the PID
  while (digits < len && name[len - 1 - digits] >= '0' && name[len - 1 - digits] <= '9') ++digits;
  if (digits == 0 || digits >= len || name[len - 1 - digits] != '.') return false;
  return ends_with_pid(len - 1 - digits);
}

// Ends the process at once: temporary files removed, one line, then the signal's own
// default action, so the parent sees the process killed by it.
[[noreturn]] void end_at_once(int sig) noexcept {
  remove_temporary_outputs();
  write_stderr(sig == SIGTERM ? "chunkscope: stopped at once by SIGTERM; outputs not yet complete were removed\n"
                              : "chunkscope: stopped at once by SIGINT; outputs not yet complete were removed\n");
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, sig);
  pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
  raise(sig);
  _exit(128 + sig);
}

extern "C" void on_signal(int sig) {
  const int saved_errno = errno;
  // the work is done on the main thread, which creates every output file
  if (g_main_tid > 0 && static_cast<pid_t>(syscall(SYS_gettid)) != g_main_tid &&
      syscall(SYS_tgkill, g_pid, g_main_tid, sig) == 0) {
    errno = saved_errno;
    return;
  }
  if (g_graceful.load() && g_signals.fetch_add(1) == 0) {
    g_first_signal.store(sig);
    g_stop.store(true);
    errno = saved_errno;
    return;
  }
  end_at_once(sig);
}

// Appends `s` to buf[*n..cap-1]. Async-signal-safe.
void put(char* buf, std::size_t cap, std::size_t* n, const char* s) noexcept {
  while (*s && *n + 1 < cap) buf[(*n)++] = *s++;
  buf[*n] = '\0';
}
// Appends `v` in decimal. Async-signal-safe.
void put_u64(char* buf, std::size_t cap, std::size_t* n, std::uint64_t v) noexcept {
  char digits[24];
  int k = 0;
  do {
    digits[k++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0);
  char out[24];
  for (int i = 0; i < k; ++i) out[i] = digits[k - 1 - i];
  out[k] = '\0';
  put(buf, cap, n, out);
}

const char* fault_words(int sig) noexcept {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic fault)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGABRT: return "SIGABRT (abort)";
  }
  return "a fatal signal";
}

// A fatal signal. Inside a hosted step's code: one line naming the step, the signal and the
// chunk, this process's temporary outputs removed, exit kExitStageCrash. Anywhere else it is
// chunkscope's own fault: the default action (a core dump where enabled), as without a handler.
extern "C" void on_fault(int sig) {
  const HostedWhere& where = hosted_where();
  const int step = where.step.load(std::memory_order_relaxed);
  const char* phase = where.phase.load(std::memory_order_relaxed);
  if (step > 0 || phase) {  // in hosted code: in the stream's process(), or loading, create, destroy
    char line[512];
    std::size_t n = 0;
    const char* label = where.label.load(std::memory_order_relaxed);
    put(line, sizeof line, &n, "chunkscope: ");
    if (step > 0) {
      put(line, sizeof line, &n, "step ");
      put_u64(line, sizeof line, &n, static_cast<std::uint64_t>(step));
      put(line, sizeof line, &n, ", ");
    }
    put(line, sizeof line, &n, label ? label : "hosted code");
    put(line, sizeof line, &n, step > 0 ? ", crashed with " : " crashed with ");
    put(line, sizeof line, &n, fault_words(sig));
    if (step > 0) {
      put(line, sizeof line, &n, " while processing chunk ");
      put_u64(line, sizeof line, &n, where.chunk.load(std::memory_order_relaxed));
    } else {
      put(line, sizeof line, &n, " in ");
      put(line, sizeof line, &n, phase);
    }
    put(line, sizeof line, &n, "; no report written, outputs not yet complete removed\n");
    write_stderr(line);
    remove_temporary_outputs();
    _exit(kExitStageCrash);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);  // SIGABRT, or a fault raised by kill(): the default action now
}

void install_fault_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_fault;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;  // a fault inside the handler takes the default action
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

void install_once() {
  static const bool installed = [] {
    install_fault_handlers();
    g_pid = ::getpid();
    g_main_tid = static_cast<pid_t>(syscall(SYS_gettid));
    const std::string pid = std::to_string(g_pid);
    std::memcpy(g_pid_text, pid.c_str(), pid.size() + 1);
    g_pid_len = pid.size();
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);  // one handler at a time on the thread
    sigaddset(&sa.sa_mask, SIGTERM);
    sa.sa_flags = SA_RESTART;  // I/O goes on; the stop flag is what a command watches
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    return true;
  }();
  (void)installed;
}

void guard_folder(const fs::path& dir) {
  std::error_code ec;
  const std::string s = fs::absolute(dir, ec).lexically_normal().string();
  if (ec || s.empty() || s.size() >= PATH_MAX) return;
  const int n = g_folder_count.load();
  for (int i = 0; i < n; ++i)
    if (s == g_folders[i]) return;
  if (n >= kMaxGuardedFolders) return;
  std::memcpy(g_folders[n], s.c_str(), s.size() + 1);
  g_folder_count.store(n + 1, std::memory_order_release);  // the entry is whole before it counts
}

}  // namespace

void install_signal_handlers() { install_once(); }

const std::atomic<bool>* stop_on_signals() {
  install_once();
  g_graceful.store(true);
  return &g_stop;
}

int stop_signal() noexcept { return g_first_signal.load(); }

int interrupted_exit_code() noexcept {
  const int sig = stop_signal();
  return 128 + (sig > 0 ? sig : SIGINT);
}

const char* signal_name(int sig) noexcept {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

void guard_outputs(const std::vector<PathRole>& outputs) {
  install_once();
  for (const auto& o : outputs) {
    if (o.path.empty() || o.path == "-") continue;
    std::error_code ec;
    const fs::path p(o.path);
    const auto st = fs::status(p, ec);
    if (!ec && fs::exists(st) && !fs::is_regular_file(st)) continue;  // a device, FIFO or folder
    guard_folder(p.has_parent_path() ? p.parent_path() : fs::path("."));
    if (!ec && fs::exists(st)) {
      const fs::path real = fs::canonical(p, ec);  // a symlink: its file is replaced
      if (!ec) guard_folder(real.parent_path());
    }
  }
}

int remove_temporary_outputs() noexcept {
  int removed = 0;
  const int n = g_folder_count.load(std::memory_order_acquire);
  alignas(8) static char buf[8192];  // only the main thread scans (see Design)
  for (int i = 0; i < n; ++i) {
    // entries removed while a folder is read may hide others: read it again until a pass
    // removes nothing
    for (int pass = 0; pass < 4; ++pass) {
      const int fd = ::open(g_folders[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) break;
      int this_pass = 0;
      for (;;) {
        const long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (got <= 0) break;
        for (long off = 0; off < got;) {
          // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name
          unsigned short reclen = 0;
          std::memcpy(&reclen, buf + off + 16, sizeof reclen);
          const char* name = buf + off + 19;
          if (is_our_temporary(name) && ::unlinkat(fd, name, 0) == 0) ++this_pass;
          off += reclen;
        }
      }
      ::close(fd);
      removed += this_pass;
      if (this_pass == 0) break;
    }
  }
  return removed;
}

}  // namespace chunkscope::cli
