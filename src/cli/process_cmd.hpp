#pragma once
// `chunkscope process`: a file through the chain in chunks on the calling thread, with the
// reader, writer and backend the streaming engine uses. Not real-time.
#include <cstdint>
#include <string>

#include "src/backends.hpp"
#include "src/options.hpp"

namespace chunkscope {

struct ProcessResult {
  std::int64_t frames = 0;
  std::int64_t chunks = 0;
  double rate = 0;
  int channels = 0;
  std::size_t dispatches_per_chunk = 0;
  std::string in_format, out_format;
};

/// Runs `in` through the chain into `out`. Throws InputError / RuntimeFailure; on any error
/// the output file is not left behind.
ProcessResult process_file(const std::string& in, const std::string& out, const ProcessOptions& opt);

/// `chunkscope process IN OUT`: process_file and one line on what was read and written.
/// Returns the exit code; throws as process_file.
int run_process(const std::string& in, const std::string& out, const ProcessOptions& opt);

}  // namespace chunkscope
