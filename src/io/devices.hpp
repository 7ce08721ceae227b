#pragma once
// Choosing an audio device by what the user typed: an index, a name substring or nothing
// (the default). Not real-time.
#include <string>
#include <vector>

#include "rt/pa_device.hpp"

namespace chunkscope {

/// Finds a device by index or case-insensitive name substring among those with input
/// (or output) channels; "" picks the default. Throws RuntimeFailure (no device at all)
/// or InputError (no match, or several: the message lists them).
DeviceInfo select_device(const std::vector<DeviceInfo>& all, const std::string& want, bool input,
                         const std::vector<std::string>& host_apis);

/// Throws RuntimeFailure with the session's error when PortAudio did not start.
void require_portaudio(const PortAudioSession& pa);

}  // namespace chunkscope
