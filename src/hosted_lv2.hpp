#pragma once
// `lv2:` stages: installed LV2 plugins, found and checked through lilv before anything runs,
// hosted on the hosted-step mechanism (rt/hosted.hpp). Not real-time, except the processors.
//
// Design: one lilv world per process, loaded on first use (LV2_PATH is honoured) and kept
// to the end; every lilv call holds its lock. load_lv2_stage() resolves the plugin, refuses
// what chunkscope cannot host (a required feature or option it does not provide, a port type
// it does not know) and checks the controls; the factory's create() instantiates one plugin
// instance for all channels (N audio inputs and N outputs on an N-channel chunk) or one per
// channel (1 input, 1 output), activates it, and reads its latency.
//
// Features hosted: urid:map and urid:unmap (one process-wide table: looking up a URI already
// mapped is lock-free and allocation-free, so a plugin may map in run(); a new URI takes a
// lock and allocates; common URIs are mapped up front), options:options (param:sampleRate,
// bufsz:nominalBlockLength = max_frames, bufsz:minBlockLength = 1, bufsz:maxBlockLength =
// max_frames, bufsz:sequenceSize), bufsz:boundedBlockLength and bufsz:coarseBlockLength (true:
// chunkscope never splits a chunk), worker:schedule (a worker thread per instance; requests
// and responses cross lock-free single-producer rings; responses are delivered at the start
// of the next run(), end_run() after it; outside run() work is done at once on the calling
// thread; a reset holds the worker off, finishes the work asked before it and delivers its
// responses, then deactivates and activates, so work() never runs beside either and nothing
// from before the reset reaches the plugin after it), state:loadDefaultState, log:log (non-real-time: errors and warnings go to stderr;
// from run(): into a fixed ring printed when the processor goes), and the plugin-side
// lv2:inPlaceBroken, lv2:isLive, lv2:hardRTCapable (outputs are never the inputs' buffers).
// bufsz:fixedBlockLength and bufsz:powerOf2BlockLength are not hosted: the last chunk of a
// file may be short.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rt/hosted.hpp"
#include "src/plugin_catalog.hpp"

namespace chunkscope {

/// Whether this build hosts LV2 plugins (built with lilv). [no-alloc, no-block]
bool lv2_available() noexcept;

/// Loads the LV2 plugin `id` (a full plugin URI, or a unique suffix of a URI or of the
/// plugin's name, starting after a non-alphanumeric character: "fil4#stereo", "lowpass_iir",
/// "Glame Butterworth Lowpass"; names compare case-insensitively) with `controls` (symbol=value,
/// plain decimal numbers; the key `preset` names a preset by URI, unique URI suffix or label,
/// applied before the other controls), and returns the factory that makes its processors.
/// Throws InputError naming `where`: no such plugin, an ambiguous id (the candidates listed),
/// a feature or port type not hosted, an unknown control (the control symbols listed), a value
/// that is not a number or lies outside the port's range, an unknown preset. A control whose
/// range is relative to the sample rate (lv2:sampleRate) is checked by create().
/// The processors' label is "lv2:" + the URI's last path segment ("lv2:fil4#stereo").
std::shared_ptr<const HostedFactory> load_lv2_stage(const std::string& id,
                                                    const std::vector<std::pair<std::string, std::string>>& controls,
                                                    const std::string& where);

/// Every installed LV2 plugin, sorted by URI (replaced plugins left out), from lilv's data
/// alone: no plugin library is loaded (whether one loads is not known here). [allocates, blocks]
std::vector<PluginInfo> list_lv2_plugins();

/// The LV2 plugin `id` (as load_lv2_stage resolves it), its library loaded in a child process
/// to check that it loads (run_in_child): one that does not, or whose constructor crashes or
/// exits, makes it not runnable, saying why. Throws InputError naming `where`.
PluginInfo describe_lv2_plugin(const std::string& id, const std::string& where);

}  // namespace chunkscope
