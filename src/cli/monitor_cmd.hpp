#pragma once
// `chunkscope devices` and `chunkscope monitor`: a live audio device through the chain,
// with a per-second live view and the same report as a replay. Not real-time.
#include <atomic>
#include <string>

#include "src/cli/stream_cmd.hpp"

namespace chunkscope {

/// Lists host APIs and devices. Returns the exit code.
int run_devices(bool json_out);

/// Monitors a device. Returns the exit code; throws InputError / RuntimeFailure before streaming.
int run_monitor(const MonitorOptions& opt, const std::atomic<bool>* stop_flag);

}  // namespace chunkscope
