#pragma once
// Test helpers: run the chunkscope binary, make temporary folders, write audio files.
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/types.h>
#include <vector>

namespace testutil {

struct RunResult {
  int rc = -1;
  std::string out, err;
};

/// Runs the chunkscope binary with `args` (shell-quoted here), capturing stdout and stderr.
RunResult run_cli(const std::vector<std::string>& args);

/// Runs the chunkscope binary with `args` in folder `cwd` (relative paths resolve there),
/// stdin from /dev/null, stdout to the file `stdout_to` when given (captured otherwise),
/// stderr captured. Killed after `timeout_s` seconds (rc 124). Safe to call from several
/// threads at once.
RunResult run_cli_at(const std::string& cwd, const std::vector<std::string>& args, int timeout_s = 30,
                     const std::string& stdout_to = "");

/// Starts the chunkscope binary with `args` in folder `cwd`, stdin from /dev/null, stdout
/// and stderr to the files `out_path` and `err_path`, and returns at once with its pid (for
/// tests that signal it while it runs).
pid_t spawn_cli(const std::string& cwd, const std::vector<std::string>& args, const std::string& out_path,
                const std::string& err_path);
/// Waits for a process spawn_cli started and returns its exit code, 128 + the signal when a
/// signal ended it, or 124 when it still ran after `timeout_s` seconds (then it is killed:
/// a hang guard, not a measurement).
int wait_cli(pid_t pid, int timeout_s);
/// Waits until `path` exists, at most `timeout_s` seconds; true when it does.
bool wait_for_path(const std::string& path, int timeout_s);

/// A fresh temporary folder removed at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return p_; }
  std::string file(const std::string& name) const { return (p_ / name).string(); }

 private:
  std::filesystem::path p_;
};

/// Writes interleaved float samples as a WAV file (float subtype unless pcm16).
void write_wav(const std::string& path, const std::vector<float>& interleaved, int channels, int rate,
               bool pcm16 = false);
/// Reads a whole file as interleaved doubles.
std::vector<double> read_all(const std::string& path, int* channels = nullptr, int* rate = nullptr);
/// The stereo file `source` written again as a float WAV at `path` (so that an output file of
/// a run on it keeps every bit), and its samples, interleaved.
std::vector<float> float_stereo_copy(const std::string& source, const std::string& path);

/// The repository root (where audio/ is) and the chunkscope binary under test.
std::string source_dir();
std::string bin_path();
/// Parses a JSON file (a failed REQUIRE when it cannot be read).
nlohmann::json load_json(const std::string& path);
/// Planned step `index` (1-based) of a run report's `steps` list.
const nlohmann::json& report_step(const nlohmann::json& report, int index);
std::string slurp(const std::string& path);

/// An HTTP reply: status (0 when nothing answered), headers by lower-case name, body.
struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
};
/// One HTTP/1.1 request to 127.0.0.1:`port` over a fresh connection (Connection: close),
/// with an Accept header when `accept` is given; waits at most 30 s for the reply.
HttpReply http(int port, const std::string& method, const std::string& path, const std::string& accept = "");
/// A header of the reply ("" when absent); `name` in lower case.
std::string header(const HttpReply& r, const std::string& name);
/// A port free on loopback right now (the kernel's pick, released before it is used).
int free_port();
/// `s` percent-encoded for a URL's query string.
std::string url_encode(const std::string& s);

}  // namespace testutil
