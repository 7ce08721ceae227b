// The whole command line as one call, so that the program's own file compiles without the
// argument parser's headers (their code is compiled once, in chunkscope_cli).
#pragma once
#include <string>
#include <vector>

namespace chunkscope {
struct StreamOptions;
}

namespace chunkscope::cli {

/// Parses argv, runs the chosen command and returns the process's exit code.
int run_main(int argc, char** argv);

/// A `replay` or `synth` command line (words after the program's name, as a shell splits
/// them) parsed by the same parser as run_main, without running it: its options. Throws
/// InputError with the line run_main would print when the words do not parse, or name
/// another command. For checking that what chunkscope prints for the user to run means
/// what it says.
StreamOptions parse_stream_command(const std::vector<std::string>& words);

/// Any command line (words after the program's name) parsed as run_main parses it, with the
/// options the chosen command does not take refused as it refuses them, without running
/// anything: "" when it would run, else the one line it would print.
std::string refusal_of(const std::vector<std::string>& words);

}  // namespace chunkscope::cli
