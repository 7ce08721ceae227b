#pragma once
// Chain specs: "stage | stage | ...", each stage "name:arg:key=value...".
// Parsing checks syntax and value ranges that do not depend on the sample rate;
// filter design (filter_design.hpp) checks the rest. Errors throw InputError with a
// message that names the stage and the problem. Not real-time.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chunkscope {

enum class StageKind {
  lowpass, highpass, bandpass, bandstop,            // Butterworth, order 1..16
  peak, lowshelf, highshelf, notch, allpass,        // Audio EQ Cookbook biquads
  lp2, hp2, bp2,
  gain,                                             // gain:<dB>
  sos,                                              // sos:<file>
  spin, sleep,                                      // calibration stages
  so,                                               // so:<library>[:key=value...]: the user's own code, hosted
  lv2,                                              // lv2:<URI or suffix>[:symbol=value...]: an LV2 plugin, hosted
  ladspa,                                           // ladspa:[<library>:]<label>[:port=value...]: a LADSPA plugin, hosted
  faust,                                            // faust:<program.dsp>[:control=value...][:opts=...]: a Faust program, compiled and hosted
};

/// The spec name of a stage kind ("lp", "peak", ...).
const char* stage_name(StageKind k);
/// What a stage kind is, in words: "Butterworth lowpass", "LV2 plugin, hosted".
const char* stage_kind_label(StageKind k);
/// Every stage kind's spec name, in the order the docs list them: "lp, hp, ..., ladspa".
std::string stage_kind_names();
/// What the help of a --chain option says after its first words: the syntax and the kinds.
std::string chain_spec_help();
/// True for stages that are linear filters and can fuse into one SOS cascade.
bool is_iir(StageKind k);
/// True for stages whose code chunkscope hosts (so:, lv2:, ladspa:, faust:): run on planar floats between cascades.
bool is_hosted(StageKind k);

struct StageSpec {
  StageKind kind{};
  std::string text;                 // the stage as written, trimmed
  std::vector<double> freqs;        // cutoff or band edges in Hz
  int order = 0;                    // Butterworth order
  double q = 0;                     // cookbook Q (0: default for the kind)
  double slope = 0;                 // shelf slope S (0: use q)
  double gain_db = 0;               // peak/shelf/gain
  bool has_gain = false;
  std::string path;                 // sos file, so library, ladspa library ("" : searched), faust program; lv2: the plugin id
  std::string label;                // ladspa: the plugin's label
  std::vector<std::pair<std::string, std::string>> params;  // hosted stages: key=value parameters, in spec order
  std::int64_t time_ns = 0;         // spin/sleep
  std::uint32_t every = 1;          // spin/sleep: one chunk in N pays
};

struct ChainSpec {
  std::string text;
  std::vector<StageSpec> stages;
};

/// Parses a chain spec. Throws InputError on any syntax or range problem.
ChainSpec parse_chain(std::string_view text);

/// The files a chain spec reads (the paths of its `sos:` stages), in spec order; none for
/// an empty spec. Throws InputError as parse_chain does. (`so:` libraries are checked when
/// they are loaded.)
std::vector<std::string> chain_files(std::string_view text);

/// Parses a duration such as "250us", "1.5ms", "2s", "800ns". Throws InputError naming `what`.
std::int64_t parse_duration_ns(std::string_view s, std::string_view what);

/// Parses a frequency such as "1000", "1k", "12kHz", "80Hz". Throws InputError naming `what`.
double parse_frequency(std::string_view s, std::string_view what);

/// Parses a finite number. Throws InputError naming `what`.
double parse_number(std::string_view s, std::string_view what);

}  // namespace chunkscope
