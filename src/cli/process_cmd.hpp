#pragma once
// `chunkscope process`: a file through the chain in chunks on the calling thread, with the
// reader, writer and backend the streaming engine uses. Not real-time.
#include <atomic>
#include <cstdint>
#include <string>

#include "src/backends.hpp"
#include "src/options.hpp"

namespace chunkscope {

struct ProcessResult {
  std::int64_t frames = 0;
  std::int64_t chunks = 0;
  std::int64_t total_chunks = 0;  // in the input
  bool interrupted = false;       // the stop flag was raised: OUT was not written
  double rate = 0;
  int channels = 0;
  std::size_t dispatches_per_chunk = 0;
  std::string in_format, out_format;
  bool clips = false;               // the output holds integer samples: beyond full scale is clipped
  std::uint64_t samples = 0;        // samples written (frames x channels)
  std::uint64_t over_full_scale = 0;  // of them, beyond full scale (|x| > 1)
  double peak = 0;                  // the largest |sample| written
};

/// The line on the samples beyond full scale that `process` prints ("" when none): how many
/// of all samples, the peak in dBFS, and whether the file clipped them (integer samples) or
/// kept them (float).
std::string clipping_line(const ProcessResult& r);

/// Runs `in` through the chain into `out`. Throws InputError / RuntimeFailure; on any error
/// the output file is not left behind. When `stop` is raised the run ends before the next
/// chunk, the output is not written (its temporary file removed) and the result says
/// `interrupted`.
ProcessResult process_file(const std::string& in, const std::string& out, const ProcessOptions& opt,
                           const std::atomic<bool>* stop = nullptr);

/// `chunkscope process IN OUT`: process_file and one line on what was read and written, or,
/// stopped by `stop`, one line on stderr and the interrupted exit code (130 for SIGINT).
/// Returns the exit code; throws as process_file.
int run_process(const std::string& in, const std::string& out, const ProcessOptions& opt,
                const std::atomic<bool>* stop = nullptr);

}  // namespace chunkscope
