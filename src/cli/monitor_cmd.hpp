#pragma once
// `chunkscope devices` and `chunkscope monitor`: a live audio device through the chain,
// with a per-second live view and the same report as a replay. Not real-time.
#include <atomic>
#include <string>

#include "src/cli/stream_cmd.hpp"

namespace chunkscope {

struct MonitorOptions {
  StreamOptions stream;      // chain, chunk, margin, warm-up, queue depth, report files
  std::string input;         // index or name substring; "" = default input
  std::string output;        // index, name substring, "none"; "" = default output
  double rate = 0;           // 0: the input device's default rate
  int channels = 2;
  std::string duration;      // "" = until SIGINT/SIGTERM
  bool live = false;
  int latency_chunks = 2;
};

/// Lists host APIs and devices. Returns the exit code.
int run_devices(bool json_out);

/// Monitors a device. Returns the exit code; throws InputError / RuntimeFailure before streaming.
int run_monitor(const MonitorOptions& opt, const std::atomic<bool>* stop_flag);

}  // namespace chunkscope
