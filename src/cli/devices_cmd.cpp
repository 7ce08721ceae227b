#include "src/cli/devices_cmd.hpp"

#include <fmt/format.h>
#include <iostream>
#include <nlohmann/json.hpp>

#include "rt/pa_device.hpp"
#include "src/cli/cli_support.hpp"
#include "src/errors.hpp"
#include "src/io/devices.hpp"

namespace chunkscope {

int run_devices(bool json_out) {
  using nlohmann::json;
  PortAudioSession pa;
  require_portaudio(pa);
  const auto devs = pa.devices();
  if (json_out) {
    json j;
    j["schema"] = "chunkscope.devices/1";
    j["portaudio"] = pa.version();
    j["host_apis"] = pa.host_apis();
    json a = json::array();
    for (const auto& d : devs)
      a.push_back({{"index", d.index},
                   {"name", d.name},
                   {"host_api", d.host_api},
                   {"max_input_channels", d.max_input},
                   {"max_output_channels", d.max_output},
                   {"default_rate", d.default_rate},
                   {"default_low_input_latency_s", d.low_input_latency},
                   {"default_high_input_latency_s", d.high_input_latency},
                   {"default_low_output_latency_s", d.low_output_latency},
                   {"default_high_output_latency_s", d.high_output_latency},
                   {"default_input", d.default_input},
                   {"default_output", d.default_output}});
    j["devices"] = a;
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::string apis;
  for (const auto& h : pa.host_apis()) apis += (apis.empty() ? "" : ", ") + h;
  fmt::print("{}\nhost APIs: {}\n\n", pa.version(), apis.empty() ? "none" : apis);
  if (devs.empty()) {
    fmt::print("no devices (no sound card found and no JACK server running)\n");
    return kExitOk;
  }
  fmt::print("{:>3}  {:<2} {:<28} {:<28} {:>4} {:>4} {:>8}  {:>19}  {:>19}\n", "idx", "", "name", "host API", "in", "out",
             "rate", "input lat lo/hi ms", "output lat lo/hi ms");
  for (const auto& d : devs)
    fmt::print("{:>3}  {:<2} {:<28} {:<28} {:>4} {:>4} {:>8.0f}  {:>9.2f}/{:<9.2f}  {:>9.2f}/{:<9.2f}\n", d.index,
               std::string(d.default_input ? "i" : "") + (d.default_output ? "o" : ""), d.name, d.host_api, d.max_input,
               d.max_output, d.default_rate, d.low_input_latency * 1e3, d.high_input_latency * 1e3,
               d.low_output_latency * 1e3, d.high_output_latency * 1e3);
  fmt::print("\ni / o: the default input / output device\n");
  return kExitOk;
}

namespace cli {

Command add_devices_command(CLI::App& app) {
  auto json_out = std::make_shared<bool>(false);
  auto* c = app.add_subcommand("devices", "List audio host APIs and devices (PortAudio)");
  add_flag(c, "--json", *json_out, "Print JSON (schema chunkscope.devices/1)");
  return {c, [json_out] { return run_devices(*json_out); }};
}

}  // namespace cli

}  // namespace chunkscope
