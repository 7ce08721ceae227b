#pragma once
// `chunkscope devices`: the audio host APIs and devices PortAudio sees. Not real-time.

namespace chunkscope {

/// Lists host APIs and devices (JSON with schema chunkscope.devices/1 when `json_out`).
/// Returns the exit code; throws RuntimeFailure when PortAudio does not start.
int run_devices(bool json_out);

}  // namespace chunkscope
