#pragma once
// `chunkscope replay` and `chunkscope synth`: a file or a synthetic signal streamed through
// the chain by one stream session (src/session/stream_session.hpp), into a file or a null sink,
// and the report. Not real-time.
#include <atomic>
#include <string>

#include "src/options.hpp"
#include "src/session/stream_session.hpp"

namespace chunkscope {

/// Runs `replay` (command "replay", the file in opt.input) or `synth` (command "synth").
/// Returns the exit code; throws InputError / RuntimeFailure for failures before streaming.
int run_stream(const std::string& command, const StreamOptions& opt, const std::atomic<bool>* stop_flag);

}  // namespace chunkscope
