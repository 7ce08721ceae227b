#include "src/io/devices.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "src/errors.hpp"

namespace chunkscope {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

void require_portaudio(const PortAudioSession& pa) {
  if (!pa.ok()) throw RuntimeFailure(pa.error());
}

DeviceInfo select_device(const std::vector<DeviceInfo>& all, const std::string& want, bool input,
                         const std::vector<std::string>& host_apis) {
  const char* dir = input ? "input" : "output";
  std::vector<DeviceInfo> usable;
  for (const auto& d : all)
    if ((input ? d.max_input : d.max_output) > 0) usable.push_back(d);
  if (usable.empty())
  {
    std::string apis;
    for (const auto& h : host_apis) apis += (apis.empty() ? "" : ", ") + h;
    throw RuntimeFailure(fmt::format("no audio {} device: looked through PortAudio's host APIs ({}) and found {} device(s) "
                                     "with {} channels (no sound card, and no JACK server running?)",
                                     dir, apis.empty() ? "none" : apis, 0, dir));
  }
  if (want.empty()) {
    for (const auto& d : usable)
      if (input ? d.default_input : d.default_output) return d;
    return usable.front();
  }
  const bool numeric = want.size() <= 9 && std::all_of(want.begin(), want.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (numeric) {
    const int idx = std::stoi(want);
    for (const auto& d : usable)
      if (d.index == idx) return d;
    throw InputError(fmt::format("--{} {}: no {} device has index {}", dir, want, dir, idx));
  }
  std::vector<DeviceInfo> hits;
  for (const auto& d : usable)
    if (lower(d.name).find(lower(want)) != std::string::npos ||
        lower(d.host_api + ":" + d.name).find(lower(want)) != std::string::npos)
      hits.push_back(d);
  if (hits.size() == 1) return hits.front();
  std::string names;
  for (const auto& d : (hits.empty() ? usable : hits))
    names += fmt::format("{}{} '{}' ({})", names.empty() ? "" : ", ", d.index, d.name, d.host_api);
  if (hits.empty()) throw InputError(fmt::format("--{} '{}': no {} device matches (devices: {})", dir, want, dir, names));
  throw InputError(fmt::format("--{} '{}': ambiguous, matches {}", dir, want, names));
}

}  // namespace chunkscope
