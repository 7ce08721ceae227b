// chunkscope command line: each command registers its subcommand and options (src/cli/
// commands.hpp); this file parses and dispatches. Every error is one line on stderr and a
// documented exit code (docs/profiler.md, "Exit codes and errors").
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <vector>

#include "chunkscope/version.hpp"
#include "src/cli/cli_support.hpp"
#include "src/cli/commands.hpp"
#include "src/io/output_file.hpp"

int main(int argc, char** argv) {
  using namespace chunkscope::cli;
  // first, on the main thread: a signal during parsing or in a command that does not stop on
  // its own ends the process at once, removing temporary files (src/cli/signals.hpp)
  install_signal_handlers();
  CLI::App app{"chunkscope: does this audio filter chain keep real time? Measures every chunk at every stage."};
  app.set_version_flag("-V,--version", fmt::format("chunkscope {} ({})", chunkscope::kVersion, chunkscope::kGitCommit));
  app.require_subcommand(1);
  const std::vector<Command> commands{
      add_chain_command(app),   add_process_command(app), add_bench_command(app),   add_replay_command(app),
      add_devices_command(app), add_monitor_command(app), add_synth_command(app),   add_compare_command(app),
      add_report_command(app),  add_cadence_command(app), add_stage_bench_command(app), add_sweep_command(app),
      add_plugins_command(app),
  };
  const Command* chosen = nullptr;
  if (const int rc = parse_command_line(app, argc, argv, commands, &chosen); rc != kRunCommand)
    return chunkscope::finish_stdout(rc);
  // a report that could not reach stdout (a full disk, a closed pipe) is a failure: exit 3
  return chunkscope::finish_stdout(run_command(*chosen));
}
