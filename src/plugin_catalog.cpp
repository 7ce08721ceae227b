#include "src/plugin_catalog.hpp"

#include <fmt/format.h>

#include "src/errors.hpp"
#include "src/hosted_ladspa.hpp"
#include "src/hosted_lv2.hpp"

namespace chunkscope {

std::vector<PluginInfo> list_plugins() {
  std::vector<PluginInfo> out = list_lv2_plugins();
  std::vector<PluginInfo> ladspa = list_ladspa_plugins();
  out.insert(out.end(), std::make_move_iterator(ladspa.begin()), std::make_move_iterator(ladspa.end()));
  return out;
}

PluginInfo describe_plugin(const std::string& spec) {
  const std::string where = fmt::format("plugin '{}'", one_line(spec));
  if (spec.rfind("lv2:", 0) == 0) return describe_lv2_plugin(spec.substr(4), where);
  if (spec.rfind("ladspa:", 0) == 0) {
    const std::string rest = spec.substr(7);
    const auto colon = rest.rfind(':');  // PATH:LABEL; a label has no ':'
    return colon == std::string::npos ? describe_ladspa_plugin("", rest, where)
                                      : describe_ladspa_plugin(rest.substr(0, colon), rest.substr(colon + 1), where);
  }
  throw InputError(fmt::format("{}: give lv2:ID or ladspa:[PATH:]LABEL", where));
}

}  // namespace chunkscope
