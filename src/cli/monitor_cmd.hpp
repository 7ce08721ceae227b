#pragma once
// `chunkscope monitor`: a live audio device through the chain by one stream session
// (src/session/stream_session.hpp), with a per-second live view and the same report as a replay
// plus the device's own figures. Not real-time.
#include <atomic>

#include "src/options.hpp"

namespace chunkscope {

/// Monitors a device. Returns the exit code; throws InputError / RuntimeFailure before streaming.
int run_monitor(const MonitorOptions& opt, const std::atomic<bool>* stop_flag);

}  // namespace chunkscope
