#pragma once
// Every file chunkscope writes goes through this module. Not real-time.
//
// Design: an output path is classified once (stat) before anything is written.
//  - a regular file, or a path that does not exist yet: written to a hidden temporary file
//    beside it (.NAME.PID.partial) and renamed over it on commit(), so a failed run never
//    leaves a half-written file that looks complete; a symlink to a regular file keeps the
//    link and replaces the file it points to;
//  - a character device (/dev/null), a FIFO or a socket: written directly, never replaced
//    (a FIFO is waited for a reader for at most kPipeWaitMs, input_file.hpp);
//  - "-" (stdout), /dev/stdout, /dev/stderr, /dev/fd/N: written to that descriptor.
// check_distinct_paths() refuses, before anything is written, an output that is the same
// file as an input or as another output.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace chunkscope {

enum class OutputKind {
  file,    // regular file or new path: temporary file, renamed into place on commit()
  stream,  // character device, FIFO, socket: written directly
  fd,      // "-", /dev/stdout, /dev/stderr, /dev/fd/N: an open descriptor of this process
};

/// What an output path is. Throws InputError (label first, e.g. "--json 'x'"): the path is a
/// folder, its folder does not exist or is not a folder, or it cannot be written. Creates
/// nothing.
OutputKind check_output_path(const std::string& path, const std::string& label);

/// Checks a folder that outputs will be written into (--hgrm, --report-dir): an existing
/// writable folder, or a path whose nearest existing ancestor is a writable folder (it is
/// created when written, see create_output_folder). Creates nothing. Throws InputError.
void check_output_folder(const std::string& dir, const std::string& label);
/// Creates `dir` (and its parents) if needed. Throws RuntimeFailure.
void create_output_folder(const std::string& dir, const std::string& label);

/// One output being written. Move-only; the destructor abandons what was not committed.
class OutputTarget {
 public:
  OutputTarget();
  /// Opens `path` for writing as check_output_path() classifies it. `label` opens every
  /// error message ("--json 'r.json'"). Throws InputError (bad path) or RuntimeFailure (the
  /// temporary file cannot be created, a FIFO without a reader after kPipeWaitMs).
  OutputTarget(const std::string& path, std::string label);
  ~OutputTarget();
  OutputTarget(OutputTarget&& o) noexcept;
  OutputTarget& operator=(OutputTarget&& o) noexcept;
  OutputTarget(const OutputTarget&) = delete;
  OutputTarget& operator=(const OutputTarget&) = delete;

  OutputKind kind() const { return kind_; }
  /// The descriptor to write to (the temporary file for OutputKind::file).
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  const std::string& label() const { return label_; }
  /// Writes all of `data`. Throws RuntimeFailure naming the output.
  void write(std::string_view data);
  /// A buffered stream onto this output, for writers that produce a document piece by
  /// piece (a report, a trace) without holding it in memory: what is put there reaches
  /// write() in blocks of kStreamBuffer bytes and at commit(). A write that fails puts the
  /// stream in a bad state (later output is dropped) and commit() throws its
  /// RuntimeFailure. Do not mix with write() without flushing the stream first.
  std::ostream& stream();
  /// Bytes the stream buffers before handing them to write().
  static constexpr std::size_t kStreamBuffer = 1u << 16;
  /// Finishes the output: flushes stream(), then a file is closed and renamed over its
  /// target; a device or FIFO is closed; a descriptor of this process is left open. Throws
  /// RuntimeFailure (also for a failed write through stream()).
  void commit();
  /// Drops the output: removes the temporary file, closes what was opened. Never throws.
  void abandon() noexcept;

 private:
  OutputKind kind_ = OutputKind::file;
  std::string path_, label_;
  std::string target_;  // file: the path renamed over (a symlink's target)
  std::string tmp_;     // file: the temporary file
  int fd_ = -1;
  bool own_fd_ = false;
  bool done_ = true;
  struct Stream;  // the buffer behind stream(), created on first use
  std::unique_ptr<Stream> stream_;
};

/// Writes `text` to `path` through one OutputTarget. Throws InputError / RuntimeFailure.
void write_text_output(const std::string& path, std::string_view text, const std::string& label);

/// Writes JSON (indented, with a final newline) to `path` through an OutputTarget. `label`
/// names the output in errors (default: "output 'PATH'"). Throws InputError / RuntimeFailure.
void write_json_file(const std::string& path, const nlohmann::json& j, const std::string& label = "");

/// Opens `path` as an OutputTarget, lets `fill` write the document to its stream(), and
/// commits it; a document is never held whole in memory. A throw from `fill` abandons the
/// output (no file replaced). Throws InputError / RuntimeFailure.
void write_streamed_output(const std::string& path, const std::string& label,
                           const std::function<void(std::ostream&)>& fill);

/// A path a command reads or writes, with the option that named it ("input", "--json").
struct PathRole {
  std::string option;
  std::string path;
};

/// Refuses, with InputError (exit 2) naming both options and the path, any output that is
/// the same file as an input or as another output: existing files are compared by device
/// and inode (hard links and other spellings included), paths not yet created by their
/// normalised absolute form. Empty paths are skipped; character devices (/dev/null) may be
/// named more than once. Touches nothing.
void check_distinct_paths(const std::vector<PathRole>& inputs, const std::vector<PathRole>& outputs);

/// For main(): flushes stdout and, when `exit_code` is 0 but stdout could not be written
/// (a full disk, a closed pipe), prints one line and returns 3. Otherwise returns exit_code.
int finish_stdout(int exit_code);

}  // namespace chunkscope
