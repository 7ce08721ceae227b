#pragma once
// What every command file uses to register its options and what the dispatcher uses to
// parse: option helpers that parse values with the project's own parsers (so a bad value
// is a one-line error naming the flag, exit 2) and show the option struct's value as the
// default in --help; the stream options shared by replay, synth, monitor and compare; the
// translation of command-line mistakes into one line with a did-you-mean. Signals are in
// signals.hpp.
#include <climits>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "src/cli/commands.hpp"
#include "src/cli/signals.hpp"  // stop_on_signals
#include "src/options.hpp"

namespace chunkscope::cli {

// ---------------------------------------------------------------- options

/// A text option; --help shows the field's value as the default when it is not empty.
CLI::Option* add_text(CLI::App* c, const std::string& names, std::string& field, const std::string& desc);
/// A whole-number option within lo..hi ("--chunk: 'abc' is not a whole number").
CLI::Option* add_int(CLI::App* c, const std::string& names, int& field, const std::string& desc,
                     long long lo = INT_MIN, long long hi = INT_MAX);
CLI::Option* add_int(CLI::App* c, const std::string& names, long long& field, const std::string& desc);
/// A parser of whole numbers within lo..hi for `flag`, for lists (add_list).
std::function<int(const std::string&)> whole_number(const std::string& flag, long long lo = INT_MIN,
                                                    long long hi = INT_MAX);
/// A sample rate in Hz, written as chain specs write frequencies: 48000, 44.1k, 48kHz
/// (parse_frequency). A field of 0 shows no default.
CLI::Option* add_rate(CLI::App* c, const std::string& names, double& field, const std::string& desc);
/// A flag that sets `field`; `value` is what it sets (false for --no-fuse).
CLI::Option* add_flag(CLI::App* c, const std::string& names, bool& field, const std::string& desc, bool value = true);
/// An option parsed by `parse` (which throws InputError); --help shows `default_text`.
template <class T>
CLI::Option* add_parsed(CLI::App* c, const std::string& names, T& field, const std::string& desc,
                        std::function<T(const std::string&)> parse, const std::string& default_text) {
  auto* o = c->add_option_function<std::string>(names, [&field, parse](const std::string& s) { field = parse(s); },
                                                desc);
  if (!default_text.empty()) o->default_str(default_text);
  return o;
}
/// A comma-separated list, each item parsed by `parse`.
template <class T>
CLI::Option* add_list(CLI::App* c, const std::string& names, std::vector<T>& field, const std::string& desc,
                      std::function<T(const std::string&)> parse, const std::string& default_text) {
  auto* o = c->add_option_function<std::vector<std::string>>(
      names,
      [&field, parse](const std::vector<std::string>& items) {
        field.clear();
        for (const auto& s : items) field.push_back(parse(s));
      },
      desc);
  o->delimiter(',');
  if (!default_text.empty()) o->default_str(default_text);
  return o;
}

/// The stream option groups a command can take besides the common ones (--chain, --chunk,
/// --no-fuse, --warmup, --margin, --queue-depth, --fail-on-miss, --quiet, --series-limit).
enum StreamOptionGroup : unsigned {
  kFileOutput = 1u << 0,   // -o, --output FILE
  kDtype = 1u << 1,        // --dtype
  kSpeed = 1u << 2,        // --speed
  kBackendKind = 1u << 3,  // --backend, --mode
  kCudaTuning = 1u << 4,   // --gpu-timing, --short-chunk
  kReportFiles = 1u << 5,  // --json, --hgrm, --trace, --report-dir
  kAllStreamOptions = 0x3f,
  kMetrics = 1u << 6,      // --metrics-listen, --metrics-hold (replay, synth, monitor)
  kStreams = 1u << 7,      // --streams, --stagger (replay, synth, compare)
};
void add_stream_options(CLI::App* c, StreamOptions& o, unsigned groups);
/// --synth SIGNAL (sets o.signal and `given`), --channels and --rate: the synthetic input
/// of compare and sweep, which otherwise read a file.
void add_synth_input(CLI::App* c, StreamOptions& o, bool& given, const std::string& signal_note = "");

// ---------------------------------------------------------------- parsing and running

/// What parse_command_line returns when a command is to run.
inline constexpr int kRunCommand = -1;

/// Parses the command line. Help and version print and return 0; a usage error prints one
/// line on stderr ("chunkscope: replay: unknown option '--chunkk': did you mean '--chunk'?
/// (see chunkscope replay --help)") and returns 2. Otherwise sets *chosen and returns
/// kRunCommand.
int parse_command_line(CLI::App& app, int argc, char** argv, const std::vector<Command>& commands,
                       const Command** chosen);

/// Runs a command: InputError is exit 2, RuntimeFailure exit 3, each one line on stderr.
int run_command(const Command& command);

}  // namespace chunkscope::cli
