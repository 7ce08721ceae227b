// chunkscope command line: each command registers its subcommand and options (src/cli/
// commands.hpp); cli::run_main (src/cli/cli_support.cpp) parses and dispatches. Every error
// is one line on stderr and a documented exit code (docs/profiler.md, "Exit codes and errors").
#include "src/cli/entry.hpp"

int main(int argc, char** argv) { return chunkscope::cli::run_main(argc, argv); }
