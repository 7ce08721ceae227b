#pragma once
// The device section of a monitor report: what the host API reported about a live stream
// and what its callbacks saw, gathered in one value that the report builder takes as an
// input (so that the verdict and the diagnosis see it). Not real-time.
#include <cstdint>

#include "rt/engine.hpp"
#include "rt/pa_device.hpp"
#include "src/report/model.hpp"

namespace chunkscope {

/// The section of a stopped stream from `input` (to `output` when duplex) that started at
/// `t0_ns`, with the engine's result.
DeviceSection device_section(const DeviceStream& stream, const EngineResult& er, const DeviceInfo& input,
                             const DeviceInfo* output, int latency_chunks, std::int64_t t0_ns);

}  // namespace chunkscope
