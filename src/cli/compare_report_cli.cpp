// The subcommands and options of compare, report, cadence and stage-bench; they run in
// compare_cmd.cpp, report_cmd.cpp and stage_bench.cpp.
#include <memory>

#include "src/cli/cli_support.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/compare_cmd.hpp"
#include "src/cli/report_cmd.hpp"
#include "src/cli/stage_bench.hpp"
#include "src/errors.hpp"

namespace chunkscope::cli {

Command add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* c = app.add_subcommand(
      "compare", "Run the same input through several backend variants, interleaved in rounds, side by side");
  add_text(c, "input", o->input, "Input audio file (or --synth)");
  // the variants choose backend, mode and fusion; the comparison is the one report file
  add_stream_options(c, o->stream, kDtype | kSpeed | kCudaTuning | kStreams);
  add_text(c, "--variants", o->variants,
           "Comma-separated backends: cpu, cpu:fused, cpu:unfused, cuda:eager, cuda:graph, cuda:eager:unfused, "
           "cuda:graph:unfused; or chains, ';'-separated: 'mine=CHAIN;ref=CHAIN' (on the CPU); or @FILE, one a line");
  add_int(c, "--rounds", o->rounds, "Rounds; each runs every variant once over the whole input");
  add_text(c, "--json", o->json_path, "Write the comparison as JSON (schema chunkscope.compare/1)");
  add_synth_input(c, o->stream, o->synth_given);
  add_text(c, "--duration", o->stream.duration, "Synthetic input: length, e.g. 5s");
  return {c, [o] {
            o->quiet = o->stream.quiet;
            if (o->input.empty() && !o->synth_given) throw InputError("compare: give an input file or --synth SIGNAL");
            return run_compare(*o, stop_on_signals());
          }};
}

Command add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportCmdOptions>();
  auto* c = app.add_subcommand("report", "Render a saved report again: terminal text, or one self-contained HTML file");
  add_text(c, "report", o->path, "A report JSON (replay, synth, monitor or compare)")->required();
  add_text(c, "--html", o->html, "Write an HTML page with plots (inline SVG, readable offline)");
  add_flag(c, "--text", o->text, "Print the terminal report too when writing --html");
  return {c, [o] { return run_report_command(*o); }};
}

Command add_cadence_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto* c = app.add_subcommand("cadence", "The cadence report of a saved run: output period, jitter, drift, gaps");
  add_text(c, "report", *path, "A run report JSON")->required();
  return {c, [path] { return run_cadence_command(*path); }};
}

Command add_stage_bench_command(CLI::App& app) {
  auto o = std::make_shared<StageBenchOptions>();
  auto* c = app.add_subcommand("stage-bench",
                               "Replay one stage of a saved run alone and compare isolated with in-pipeline time");
  add_text(c, "report", o->report, "A run report JSON (or COMPARE.json#variant)")->required();
  add_text(c, "--stage", o->stage, "The stage to replay (process)");
  add_int(c, "--iterations", o->iterations, "Timed calls");
  add_int(c, "--warmup", o->warmup, "Untimed calls first");
  add_text(c, "--json", o->json, "Write the result as JSON (schema chunkscope.stagebench/1)");
  add_text(c, "--step-timeout", o->step_timeout,
           "A hosted call that has not returned after this long ends the bench, naming it, exit 4: auto (the larger "
           "of 2 s and 100 chunk durations), off, or a duration");
  return {c, [o] { return run_stage_bench(*o); }};
}

}  // namespace chunkscope::cli
