#pragma once
// `chunkscope plugins [ID] [--json]`: the installed LV2 and LADSPA plugins chunkscope can host
// (and those it cannot, with why), or one plugin's ports, ranges, defaults, required
// features, latency port and presets. Not real-time.
#include <string>

namespace chunkscope {

/// Lists every plugin, or describes `spec` ("lv2:ID" or "ladspa:[PATH:]LABEL"); JSON with
/// schema chunkscope.plugins/1 when `json_out`. Returns the exit code; throws InputError for
/// a plugin that is not installed or is ambiguous.
int run_plugins(const std::string& spec, bool json_out, bool all);

}  // namespace chunkscope
