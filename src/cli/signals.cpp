#include "src/cli/signals.hpp"

#include <cerrno>
#include <climits>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt/alt_stack.hpp"
#include "rt/hosted.hpp"
#include "rt/clock.hpp"
#include "src/errors.hpp"
#include "src/session/stream_session.hpp"

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

// stderr as the process got it, kept apart: monitor silences fd 2 while the device streams
// (the audio library's own diagnostics), and a line that ends the process must still be seen
int g_stderr_fd = 2;

void write_stderr(const char* s) noexcept {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(g_stderr_fd, s, n);
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
  for (;;) syscall(SYS_exit_group, 128 + sig);  // not _exit(): this file interposes it
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
    case SIGTRAP: return "SIGTRAP (trap: a breakpoint instruction)";
    case SIGSYS: return "SIGSYS (bad system call)";
  }
  return "a fatal signal";
}

constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
struct sigaction g_previous[NSIG];  // the actions found at install: chained to outside hosted code
std::atomic<pid_t> g_ending_tid{0};  // the thread that is ending the process for hosted code

// Ends the process now with `code`, without running anything of the C library's exit (whose
// exit() and _exit() this file interposes).
[[noreturn]] void exit_group_now(int code) noexcept {
  for (;;) syscall(SYS_exit_group, code);
}

// Whether the calling thread is inside a call into hosted code, in this process (a forked
// child, such as a plugin-listing helper, is not: its faults and exits are its own).
bool in_hosted_code() noexcept {
  return hosted_where().phase.load(std::memory_order_relaxed) != nullptr && g_pid != 0 &&
         static_cast<pid_t>(syscall(SYS_getpid)) == g_pid;
}

// "chunkscope: step 2, so:libx.so, WHAT while processing chunk 40; ..." or, outside the
// stream, "chunkscope: so:libx.so WHAT in create; ...". Async-signal-safe.
void blame_line(char* line, std::size_t cap, const char* what, const char* what_more) noexcept {
  const HostedWhere& where = hosted_where();
  const int step = where.step.load(std::memory_order_relaxed);
  const char* phase = where.phase.load(std::memory_order_relaxed);
  const char* label = where.label.load(std::memory_order_relaxed);
  const std::uint64_t chunk = where.chunk.load(std::memory_order_relaxed);
  std::size_t n = 0;
  put(line, cap, &n, "chunkscope: ");
  if (step > 0) {
    put(line, cap, &n, "step ");
    put_u64(line, cap, &n, static_cast<std::uint64_t>(step));
    put(line, cap, &n, ", ");
  }
  put(line, cap, &n, label ? label : "hosted code");
  put(line, cap, &n, step > 0 ? ", " : " ");
  put(line, cap, &n, what);
  put(line, cap, &n, what_more);
  const bool processing = phase && std::strcmp(phase, "process") == 0;
  if (!processing && phase) {
    put(line, cap, &n, " in ");
    put(line, cap, &n, phase);
  }
  if (step > 0 && chunk != kNoChunk) {
    put(line, cap, &n, " while processing chunk ");
    put_u64(line, cap, &n, chunk);
  }
  // after the run (an instance destroyed, a library unloaded) the report and the outputs are
  // already written; before and during it nothing complete is
  bool after = false;
  for (const char* p : {"destroy", "unloading", "cleanup", "deactivate"}) after = after || (phase && std::strcmp(phase, p) == 0);
  put(line, cap, &n, after ? "; outputs not yet complete removed\n" : "; no report written, outputs not yet complete removed\n");
}

// One thread ends the process for hosted code: the first. Another thread that gets here
// meanwhile waits for the process to end; the same thread faulting again inside the handler
// takes the default action. Async-signal-safe.
void claim_the_end(int sig) noexcept {
  const auto me = static_cast<pid_t>(syscall(SYS_gettid));
  pid_t none = 0;
  if (g_ending_tid.compare_exchange_strong(none, me)) return;
  if (none == me) {
    if (sig == 0) exit_group_now(kExitStageCrash);  // an exit() while ending
    signal(sig, SIG_DFL);
    raise(sig);
    exit_group_now(128 + sig);
  }
  for (;;) pause();
}

// Hosted code ended the process its own way (a fatal signal, exit()): one line naming the
// step, the call and the chunk, this process's temporary outputs removed, exit
// kExitStageCrash. Async-signal-safe.
[[noreturn]] void end_for_hosted(const char* what, const char* what_more) noexcept {
  char line[640];
  blame_line(line, sizeof line, what, what_more);
  write_stderr(line);
  remove_temporary_outputs();
  exit_group_now(kExitStageCrash);
}

// A fatal signal. Inside a call into hosted code: end_for_hosted(). Anywhere else it is
// chunkscope's own fault (or a sanitizer's business): the action found at install is put
// back and the fault happens again where it was, under it (a signal sent by kill() or
// raise(), abort() included, is sent again instead).
extern "C" void on_fault(int sig, siginfo_t* info, void* /*context*/) {
  if (in_hosted_code()) {
    claim_the_end(sig);
    end_for_hosted("crashed with ", fault_words(sig));
  }
  sigaction(sig, &g_previous[sig], nullptr);
  const bool sent = !info || info->si_code <= 0 || sig == SIGABRT;
  if (sent) {
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, sig);
    pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
    syscall(SYS_tgkill, static_cast<pid_t>(syscall(SYS_getpid)), static_cast<pid_t>(syscall(SYS_gettid)), sig);
  }
}

// Hosted code called `fn`(status): the process ends as for a crash, named.
[[noreturn]] void exit_from_hosted(const char* fn, int status) noexcept {
  claim_the_end(0);
  char call[64];
  std::size_t n = 0;
  put(call, sizeof call, &n, fn);
  put(call, sizeof call, &n, "(");
  if (status < 0) put(call, sizeof call, &n, "-");
  put_u64(call, sizeof call, &n, status < 0 ? 0 - static_cast<std::uint64_t>(status) : static_cast<std::uint64_t>(status));
  put(call, sizeof call, &n, ")");
  end_for_hosted("called ", call);
}

// The interposed `fn`(status): from hosted code, the end named; else the C library's own `fn`
// (`forward`: exit, quick_exit, whose handlers run) or the process's end at once (_exit, _Exit).
[[noreturn]] void end_process(const char* fn, int status, bool forward) noexcept {
  if (in_hosted_code()) exit_from_hosted(fn, status);
  if (forward)
    if (const auto real = reinterpret_cast<void (*)(int)>(dlsym(RTLD_NEXT, fn))) real(status);
  exit_group_now(status);
}

void install_fault_handlers() {
  ensure_alt_stack();  // the main thread loads and creates hosted code
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sigemptyset(&sa.sa_mask);
  // on the alternate stack: a stack overflow in hosted code is handled too
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  for (int sig : kFaultSignals) sigaction(sig, &sa, &g_previous[sig]);
}

void install_once() {
  static const bool installed = [] {
    install_fault_handlers();
    if (const int fd = fcntl(2, F_DUPFD_CLOEXEC, 3); fd >= 0) g_stderr_fd = fd;
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

void end_after_stuck_call(const std::string& reason, bool report_written) {
  const std::string line = "chunkscope: " + reason +
                           (report_written ? "; the report of the chunks before it was written, marked incomplete; "
                                             "outputs not yet complete removed\n"
                                           : "; no report written, outputs not yet complete removed\n");
  std::fflush(nullptr);
  write_stderr(line.c_str());
  remove_temporary_outputs();
  exit_group_now(kExitStageCrash);
}

struct HostedWatchdog::State {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread thread;
};

HostedWatchdog::HostedWatchdog(const HostedWatch* watch, std::int64_t timeout_ns, std::string who)
    : state_(std::make_unique<State>()) {
  if (!watch || timeout_ns <= 0) return;
  const auto poll = std::chrono::nanoseconds(std::clamp<std::int64_t>(timeout_ns / 10, 1'000'000, 50'000'000));
  state_->thread = std::thread([st = state_.get(), watch, timeout_ns, poll, who = std::move(who)] {
    std::unique_lock lock(st->m);
    while (!st->cv.wait_for(lock, poll, [st] { return st->done; })) {
      const std::int64_t since = watch->since.load(std::memory_order_acquire);
      const std::int64_t now = now_ns();
      if (since <= 0 || now - since <= timeout_ns) continue;
      StuckCall s{true, watch->step.load(), watch->label.load(), watch->call.load(), watch->chunk.load(), now - since,
                  timeout_ns};
      end_after_stuck_call(who + ": " + stuck_reason(s), false);
    }
  });
}

HostedWatchdog::~HostedWatchdog() {
  if (!state_->thread.joinable()) return;
  {
    const std::lock_guard lock(state_->m);
    state_->done = true;
  }
  state_->cv.notify_one();
  state_->thread.join();
}

int remove_temporary_outputs() noexcept {
  int removed = 0;
  const int n = g_folder_count.load(std::memory_order_acquire);
  alignas(8) char buf[4096];  // on the caller's stack: any thread, the handler's alternate stack included
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

// The process-ending calls of the C library, interposed (the binary exports them, so plugin
// libraries bind here): called from hosted code they end the run as a crash does, named;
// from anywhere else they do what the C library's do. A raw exit_group system call is not
// seen (docs/profiler.md, "When hosted code fails").
extern "C" {

void exit(int status) noexcept { chunkscope::cli::end_process("exit", status, true); }
void quick_exit(int status) noexcept { chunkscope::cli::end_process("quick_exit", status, true); }
void _exit(int status) { chunkscope::cli::end_process("_exit", status, false); }
void _Exit(int status) noexcept { chunkscope::cli::end_process("_Exit", status, false); }

}  // extern "C"
