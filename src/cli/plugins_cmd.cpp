#include "src/cli/plugins_cmd.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "src/cli/cli_support.hpp"
#include "src/cli/commands.hpp"
#include "src/errors.hpp"
#include "src/hosted_ladspa.hpp"
#include "src/hosted_lv2.hpp"
#include "src/plugin_catalog.hpp"

namespace chunkscope {
namespace {

using nlohmann::json;

json port_json(const PluginPort& p) {
  json j{{"symbol", p.symbol}, {"name", p.name}, {"kind", p.kind}};
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  if (p.min || p.max || p.def) {
    j["min"] = opt(p.min);
    j["max"] = opt(p.max);
    j["default"] = opt(p.def);
  }
  if (p.sample_rate) j["fraction_of_rate"] = true;  // min and max, and the default unless default_in_hz
  if (p.sample_rate && p.def_absolute) j["default_in_hz"] = true;
  if (p.latency) j["latency"] = true;
  return j;
}

json plugin_json(const PluginInfo& p, bool ports) {
  json j{{"api", p.api}, {"id", p.id}, {"name", p.name}, {"label", p.label}, {"library", p.library},
         {"runnable", p.runnable}};
  if (!p.runnable) j["why_not"] = p.why_not;
  if (ports) {
    j["required_features"] = p.required_features;
    json a = json::array();
    for (const auto& port : p.ports) a.push_back(port_json(port));
    j["ports"] = a;
    j["presets"] = p.presets;
  }
  return j;
}

std::string range_text(const PluginPort& p) {
  if (!p.min && !p.max && !p.def) return "";
  auto v = [&](const std::optional<double>& x) { return x ? fmt::format("{:g}", *x) : std::string("-"); };
  if (p.sample_rate && p.def_absolute)  // the plugin's default is in Hz, its range a fraction of the rate
    return fmt::format("  [{} .. {}] (x rate) default {} Hz", v(p.min), v(p.max), v(p.def));
  return fmt::format("  [{} .. {}] default {}{}", v(p.min), v(p.max), v(p.def), p.sample_rate ? " (x rate)" : "");
}

void print_plugin(const PluginInfo& p) {
  fmt::print("{} {}\n  name      {}\n  stage     {}\n  library   {}\n", p.api, p.id, p.name, p.label, p.library);
  fmt::print("  runnable  {}\n", p.runnable ? "yes" : "no: " + p.why_not);
  std::string feats;
  for (const auto& f : p.required_features) feats += (feats.empty() ? "" : ", ") + f;
  fmt::print("  requires  {}\n  ports\n", feats.empty() ? "no feature" : feats);
  for (const auto& port : p.ports)
    fmt::print("    {:<20} {:<12} {}{}{}\n", port.symbol, port.kind, port.name, range_text(port),
               port.latency ? "  (reports the latency)" : "");
  for (const auto& pr : p.presets) fmt::print("  preset    {}\n", pr);
}

}  // namespace

int run_plugins(const std::string& spec, bool json_out, bool all) {
  if (!spec.empty()) {
    const PluginInfo p = describe_plugin(spec);
    if (json_out)
      std::cout << json{{"schema", "chunkscope.plugins/1"}, {"plugin", plugin_json(p, true)}}.dump(2) << "\n";
    else
      print_plugin(p);
    return kExitOk;
  }
  const std::vector<PluginInfo> list = list_plugins();
  if (json_out) {
    json a = json::array();
    for (const auto& p : list) a.push_back(plugin_json(p, false));
    std::cout << json{{"schema", "chunkscope.plugins/1"},
                      {"lv2", lv2_available()},
                      {"ladspa", ladspa_available()},
                      {"plugins", a}}
                     .dump(2)
              << "\n";
    return kExitOk;
  }
  std::size_t runnable = 0;
  for (const auto& p : list) {
    runnable += p.runnable ? 1 : 0;
    if (!p.runnable && !all) continue;
    // a library that could not be read has no label: its path names it
    fmt::print("{:<7} {:<40} {}{}\n", p.api, p.label.empty() ? p.id : p.label, p.name,
               p.runnable ? "" : "  (cannot run: " + p.why_not + ")");
  }
  fmt::print("\n{} plugin(s) chunkscope can host, {} it cannot{} (LV2 {}, LADSPA {})\n", runnable, list.size() - runnable,
             all ? "" : " (--all lists them with why)", lv2_available() ? "on" : "off: built without lilv",
             ladspa_available() ? "on" : "off: built without ladspa.h");
  return kExitOk;
}

namespace cli {

Command add_plugins_command(CLI::App& app) {
  struct Opts {
    std::string spec;
    bool json = false, all = false;
  };
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("plugins", "List the LV2 and LADSPA plugins chunkscope can host, or one plugin's ports");
  add_text(c, "plugin", o->spec, "One plugin: lv2:URI (or the end of one) or ladspa:[LIBRARY:]LABEL");
  add_flag(c, "--json", o->json, "Print JSON (schema chunkscope.plugins/1)");
  add_flag(c, "--all", o->all, "List the plugins that cannot run here too, with why");
  return {c, [o] { return run_plugins(o->spec, o->json, o->all); }};
}

}  // namespace cli

}  // namespace chunkscope
