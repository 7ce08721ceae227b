#pragma once
// The commands of the chunkscope executable. Each command file registers its subcommand and
// its options (bound to the option structs of src/options.hpp, whose values are the
// defaults --help shows) and says how to run it; main.cpp parses and dispatches.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace chunkscope {
struct StreamOptions;
}

namespace chunkscope::cli {

/// A registered command: its subcommand and what running it does (returns the exit code;
/// may throw InputError or RuntimeFailure, which the dispatcher maps to exit 2 and 3).
/// Options the shared groups add that a command does not take: hidden from its --help and
/// refused when given, with one line "NAME: `chunkscope CMD` does not take it: WHY".
class NotTaken {
 public:
  /// Hides `name` from `c`'s --help and keeps why it is refused.
  void add(CLI::App* c, const std::string& name, std::string why);
  /// Throws InputError for the first option kept here that `c`'s command line gave.
  void check(const CLI::App* c) const;

 private:
  std::vector<std::pair<std::string, std::string>> list_;
};

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
  std::shared_ptr<const StreamOptions> stream{};  // replay and synth: the options it parsed
  NotTaken refused{};                             // what it does not take (sweep)
};

Command add_chain_command(CLI::App& app);        // chain_cmd.cpp
Command add_process_command(CLI::App& app);      // process_cmd.cpp
Command add_bench_command(CLI::App& app);        // bench_cmd.cpp
Command add_replay_command(CLI::App& app);       // stream_cmd.cpp
Command add_synth_command(CLI::App& app);        // stream_cmd.cpp
Command add_devices_command(CLI::App& app);      // devices_cmd.cpp
Command add_monitor_command(CLI::App& app);      // monitor_cmd.cpp
// compare, report, cadence and stage-bench run in their own files (compare_cmd.cpp,
// report_cmd.cpp, stage_bench.cpp); their options are registered in compare_report_cli.cpp.
Command add_compare_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_cadence_command(CLI::App& app);
Command add_stage_bench_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);        // sweep_cmd.cpp
Command add_plugins_command(CLI::App& app);      // plugins_cmd.cpp

}  // namespace chunkscope::cli
