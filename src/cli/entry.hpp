// The whole command line as one call, so that the program's own file compiles without the
// argument parser's headers (their code is compiled once, in chunkscope_cli).
#pragma once

namespace chunkscope::cli {

/// Parses argv, runs the chosen command and returns the process's exit code.
int run_main(int argc, char** argv);

}  // namespace chunkscope::cli
