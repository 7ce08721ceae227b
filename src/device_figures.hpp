#pragma once
// The device section of a monitor report: what the host API reported about a live stream
// and what its callbacks saw, gathered in one value so that the report builder can take it
// as an input. Not real-time.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rt/engine.hpp"
#include "rt/pa_device.hpp"

namespace chunkscope {

struct DeviceFigures {
  std::string input, output;  // device names; output "none" when input only
  std::string host_api;       // of the input
  bool duplex = false;
  int latency_chunks = 0;     // K (0 input only)
  std::string budget_rule;
  double reported_input_latency_s = 0, reported_output_latency_s = 0;  // Pa_GetStreamInfo
  double stream_rate = 0;
  std::uint64_t callbacks = 0;
  struct Period {             // the callback period, ns
    std::uint64_t count = 0;
    std::uint64_t min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;
  } callback_period;
  std::uint64_t xruns = 0, input_overflows = 0, output_underflows = 0, priming = 0;
  struct Xrun {
    std::uint64_t callback = 0;
    double at_s = 0;          // since the stream started
    unsigned long flags = 0;  // PortAudio status flags
  };
  std::vector<Xrun> xrun_list;
  std::uint64_t underruns = 0, late_chunks = 0;
  std::vector<std::uint64_t> underrun_seqs;
};

/// The figures of a stopped stream from `input` (to `output` when duplex) that started at
/// `t0_ns`, with the engine's result.
DeviceFigures device_figures(const DeviceStream& stream, const EngineResult& er, const DeviceInfo& input,
                             const DeviceInfo* output, int latency_chunks, std::int64_t t0_ns);

/// The report's "device" object.
nlohmann::json device_json(const DeviceFigures& d);

}  // namespace chunkscope
