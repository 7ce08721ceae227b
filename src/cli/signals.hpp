#pragma once
// SIGINT and SIGTERM: how a command stops, and what a signal that ends the process at
// once leaves behind. Not real-time.
//
// Design: main() installs one handler for both signals, on the main thread, before a
// command runs. A command that stops on its own when asked (process, replay, synth,
// monitor, compare) calls stop_on_signals() and watches the flag it returns: the first
// signal raises it, and the command ends its run, writes its report marked interrupted
// and exits. A second signal, or the first one in a command that does not watch the flag,
// ends the process at once: the handler removes this process's temporary output files
// (.NAME.PID.partial and .NAME.PID.N.partial, named by OutputTarget, src/io/output_file.hpp)
// in the folders the command named with guard_outputs(), prints one line, and ends the
// process by the signal itself (default action, raised again), so that a shell sees
// 128 + the signal: 130 for SIGINT, 143 for SIGTERM.
//
// The handler runs only async-signal-safe calls: the folders are C strings in static
// storage, filled before the command writes anything and published by an atomic count,
// and they are scanned with getdents64 and unlinkat. Every output file is created on the
// main thread, and the handler always runs there: a signal the kernel delivers to another
// thread (the engine's, the audio callback's) is forwarded to the main thread with tgkill.
// So no temporary file is created while the handler removes them, and a file already
// renamed into place is whole (rename is atomic): nothing half-written outlives the
// process, unless it is killed with SIGKILL, which leaves its .NAME.PID.partial files.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rt/hosted.hpp"
#include "src/io/output_file.hpp"

namespace chunkscope::cli {

/// Installs the SIGINT and SIGTERM handler; main() calls it first, on the main thread.
/// Until stop_on_signals() is called, a signal ends the process at once (see Design).
void install_signal_handlers();

/// The command stops on its own: the first SIGINT or SIGTERM raises the returned flag, a
/// second ends the process at once. Installs the handler when main() has not.
const std::atomic<bool>* stop_on_signals();

/// The signal that raised the stop flag (SIGINT, SIGTERM), 0 while none has.
int stop_signal() noexcept;

/// The exit code of a command a signal stopped: 128 + the signal (130 for SIGINT).
int interrupted_exit_code() noexcept;

/// "SIGINT", "SIGTERM" or "a signal".
const char* signal_name(int sig) noexcept;

/// Records the folders of `outputs` (each path's folder and, for a symlink, the folder of
/// the file it points to), whose temporary files a signal that ends the process at once
/// removes. Call before any of them is written. Paths that are not files ("-", devices,
/// FIFOs) are skipped; beyond kMaxGuardedFolders folders the rest are not guarded.
void guard_outputs(const std::vector<PathRole>& outputs);
inline constexpr int kMaxGuardedFolders = 32;

/// Removes this process's temporary output files in the guarded folders and returns how
/// many it removed. Async-signal-safe: the handler calls it (exposed for tests).
int remove_temporary_outputs() noexcept;

/// A hosted call did not return (`reason`, from stuck_reason()): prints "chunkscope: REASON;
/// ..." (whether the report of the chunks so far was written), removes this process's temporary
/// outputs and ends the process with kExitStageCrash at once, without unwinding: the thread
/// still in the call must not see the backend destroyed under it.
[[noreturn]] void end_after_stuck_call(const std::string& reason, bool report_written);

/// Watches a backend's hosted calls from a thread of its own while a command runs the backend
/// on this one (stage-bench): a call that has not returned after `timeout_ns` ends the process
/// through end_after_stuck_call(), the line prefixed with `who`. A null watch or a zero timeout
/// watches nothing. Not real-time.
class HostedWatchdog {
 public:
  HostedWatchdog(const HostedWatch* watch, std::int64_t timeout_ns, std::string who);
  ~HostedWatchdog();
  HostedWatchdog(const HostedWatchdog&) = delete;
  HostedWatchdog& operator=(const HostedWatchdog&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace chunkscope::cli
