#pragma once
// `ladspa:` stages: LADSPA plugins, loaded with dlopen and checked before anything runs, hosted
// on the hosted-step mechanism (rt/hosted.hpp). Not real-time, except the processors.
//
// Libraries are looked for on the search path: the folders of LADSPA_PATH (colon-separated),
// then /usr/lib/ladspa, /usr/local/lib/ladspa and /usr/lib/x86_64-linux-gnu/ladspa. Ports are
// named by their index among all ports ("0") or by a symbol derived from the port's name:
// lower-case, each run of characters other than ASCII letters and digits made one '_', '_'
// trimmed from both ends ("Cutoff Frequency (Hz)" -> "cutoff_frequency_hz"; an empty result is
// "port"); a symbol met again gets _2, _3, ... in port order. A control output named "latency"
// or "_latency" (any case) reports the plugin's latency (the convention hosts follow).
// A plugin with 1 audio input and 1 output runs once per channel; one with N inputs and N
// outputs runs once on an N-channel chunk.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rt/hosted.hpp"
#include "src/plugin_catalog.hpp"

namespace chunkscope {

/// Whether this build hosts LADSPA plugins (built with ladspa.h). [no-alloc, no-block]
bool ladspa_available() noexcept;

/// The folders searched for LADSPA libraries, in order, without repeats. [allocates]
std::vector<std::string> ladspa_search_path();

/// The symbols of ports named `names`, by the rule above. [allocates]
std::vector<std::string> ladspa_port_symbols(const std::vector<std::string>& names);

/// Loads the LADSPA plugin `label` from the library `path` (a file; a bare file name is looked
/// for on the search path; empty: the first library on the search path that has `label`)
/// with `controls` (port symbol or index = plain decimal number) and returns the factory that
/// makes its processors, labelled "ladspa:" + label. A bare label is looked for in child
/// processes, as the list does, and only the library that has it is loaded here. Throws
/// InputError naming `where`: no such
/// library, not loadable (dlerror's reason), no ladspa_descriptor symbol, no such label (the
/// library's labels listed), ports chunkscope cannot connect, an unknown control (the
/// control symbols listed), a value that is not a number or lies outside the port's bounds.
/// A control whose bounds are relative to the sample rate is checked by create().
std::shared_ptr<const HostedFactory> load_ladspa_stage(const std::string& path, const std::string& label,
                                                       const std::vector<std::pair<std::string, std::string>>& controls,
                                                       const std::string& where);

/// Every plugin of every library on the search path, by library path then label, each library
/// read in a child process (run_in_child), none loaded in this one; a library that cannot be
/// loaded, or whose constructor crashes, exits or hangs, is one non-runnable entry (id: its
/// path; why_not says which). [allocates, blocks]
std::vector<PluginInfo> list_ladspa_plugins();

/// The plugin `label` of `path` (as load_ladspa_stage finds it), read in child processes as
/// the list is. Throws InputError naming `where` (a library named that cannot be read, too).
PluginInfo describe_ladspa_plugin(const std::string& path, const std::string& label, const std::string& where);

}  // namespace chunkscope
