#pragma once
// The installed third-party plugins (LV2 through lilv, LADSPA from the LADSPA search path),
// for `chunkscope plugins [--json] [ID]`: what each is, its ports, and whether chunkscope
// can run it (and why not). Not real-time.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace chunkscope {

/// One port of a plugin, in port-index order.
struct PluginPort {
  std::string symbol;  // LV2: lv2:symbol; LADSPA: derived from the name (src/hosted_ladspa.hpp)
  std::string name;
  std::string kind;  // audio_in, audio_out, control_in, control_out, cv_in, cv_out, atom_in, atom_out, other
  std::optional<double> min, max, def;
  bool latency = false;      // the port that reports the plugin's latency (a control output)
  bool sample_rate = false;  // min and max are fractions of the sample rate; so is def, unless def_absolute
  bool def_absolute = false;  // with sample_rate: def is in Hz (a LADSPA default of 0, 1, 100 or 440)
};

/// One installed plugin.
struct PluginInfo {
  std::string api;      // "lv2" or "ladspa"
  std::string id;       // the plugin URI, or PATH:LABEL
  std::string name;
  std::string library;  // the shared object's path
  bool runnable = false;  // chunkscope can host it (on a chunk with a matching channel count)
  std::string why_not;    // when not runnable: one line, e.g. "requires feature URI, which chunkscope does not host"
  std::vector<std::string> required_features;  // LV2 feature URIs
  std::vector<PluginPort> ports;
  std::vector<std::string> presets;  // LV2 preset URIs (for a stage's preset=URI)
  std::string label;  // the stage label reports use: "lv2:fil4#stereo", "ladspa:lpf"
};

/// Every installed LV2 and LADSPA plugin (LV2 first, each part sorted by id), with
/// runnable/why_not, without loading a plugin library in this process: LV2 from lilv's data
/// alone (whether a library loads is not known there), LADSPA libraries read in child
/// processes (run_in_child). A LADSPA library that cannot be loaded or read is listed once,
/// as a non-runnable entry whose id is its path. [allocates, blocks]
std::vector<PluginInfo> list_plugins();

/// One plugin by spec: "lv2:ID" (ID as load_lv2_stage takes it) or "ladspa:[PATH:]LABEL".
/// Its library is loaded in a child process: one that does not load makes the plugin not
/// runnable, with why. Throws InputError: a bad prefix, an unknown or ambiguous ID.
/// [allocates, blocks]
PluginInfo describe_plugin(const std::string& spec);

/// How a child process made by run_in_child() ended.
struct ChildOutcome {
  bool finished = false;  // it gave its whole answer and exited with status 0
  std::string answer;     // what it gave (when finished)
  std::string failure;    // when not: "was killed by SIGABRT (abort)", "exited with status 3",
                          // "did not finish within 10 s" (then it was killed)
};

/// Runs `work` in a child process (fork, no exec) and returns its answer: a plugin library's
/// constructor that crashes, exits or hangs there ends only the child. In the child the fatal
/// signals take their default action (no core file), stdout is stderr (a library's chatter
/// stays out of what the parent prints), and nothing of the parent's exit runs after `work`.
/// `work` must not need another thread of the parent. Not real-time. [allocates, blocks]
ChildOutcome run_in_child(const std::function<std::string()>& work, int timeout_s = 10);

}  // namespace chunkscope
