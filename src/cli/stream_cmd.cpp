#include "src/cli/stream_cmd.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <optional>

#include "src/cli/cli_support.hpp"
#include "src/cli/signals.hpp"
#include "src/cli/metrics_cli.hpp"
#include "src/errors.hpp"
#include "src/io/file_stream.hpp"
#include "src/io/audio_file.hpp"
#include "src/io/output_file.hpp"
#include "src/report/diagnosis.hpp"
#include "src/session/stream_set.hpp"

namespace chunkscope {

namespace {

// --streams N above 1: N independent streams at once (or, --batch, batched into one
// engine), one report for all of them.
int run_stream_set(const std::string& command, const StreamOptions& opt, const std::atomic<bool>* stop_flag) {
  StreamSetup su = setup_stream(command, opt.input, opt);
  check_distinct_paths(stream_inputs(opt.input, opt), stream_outputs(opt));
  cli::guard_outputs(stream_outputs(opt));
  const ReportPaths paths = resolve_report_paths(opt);
  StreamSet set(su, opt, paths, opt.streams);
  // listens now: an address that cannot be served fails before anything streams
  const auto exporter = cli::open_metrics(set.session(0), set.sessions());
  std::vector<RunStats::MetricRecorders> recorders;
  if (exporter)
    for (int k = 0; k < set.sessions(); ++k) recorders.push_back(exporter->recorders(k));
  set.prepare(exporter ? &recorders : nullptr);
  set.run(
      stop_flag, [&] { cli::start_metrics(exporter.get(), set); },
      [&] {
        if (exporter) exporter->finish();  // every stream has joined: the final values
      });
  const RunOutcome outcome = set.outcome();
  const RunReport report = set.report();
  const StreamSession& worst = set.worst();
  worst.write(report);
  for (int k = 0; k < set.sessions(); ++k)
    if (set.session(k).result().stuck.stuck) cli::end_after_stuck_call(stuck_reason(set.session(k).result().stuck), true);
  const int code = worst.finish(report, outcome);
  cli::finish_metrics(exporter.get(), set.session(0), stop_flag);
  return code;
}

}  // namespace

int run_stream(const std::string& command, const StreamOptions& opt, const std::atomic<bool>* stop_flag) {
  if (opt.streams > 1) return run_stream_set(command, opt, stop_flag);
  // ---- setup
  StreamSetup su = setup_stream(command, opt.input, opt);
  check_distinct_paths(stream_inputs(opt.input, opt), stream_outputs(opt));
  cli::guard_outputs(stream_outputs(opt));
  ReportPaths paths = resolve_report_paths(opt);
  auto source = open_source(su, opt);
  std::unique_ptr<ChunkSink> sink;
  FileSink* file_sink = nullptr;
  if (!opt.output.empty()) {
    const int fmt_out =
        output_format_for(opt.output, su.in_format, su.channels, su.rate, parse_output_subtype(opt.output_format));
    auto s = std::make_unique<FileSink>(opt.output, fmt_out, su.rate, su.channels, opt.dtype);
    file_sink = s.get();
    sink = std::move(s);
  } else {
    sink = std::make_unique<NullSink>();
  }
  StreamSession session(std::move(su), opt, std::move(paths));
  // listens now: an address that cannot be served fails before anything streams
  const auto exporter = cli::open_metrics(session);
  const auto recorders = exporter ? std::optional(exporter->recorders()) : std::nullopt;

  // ---- prepare, run, outcome
  session.prepare(*source, *sink, session.engine_config(), nullptr, nullptr, recorders ? &*recorders : nullptr);
  session.measure_before();
  cli::start_metrics(exporter.get(), session);
  session.run(stop_flag);
  if (exporter) exporter->finish();  // the run has joined: the final values
  session.measure_after();
  const RunOutcome outcome = session.outcome();
  if (file_sink && outcome.state == RunState::complete) {
    file_sink->commit();
    if (session.result().drops > 0)
      std::cerr << fmt::format("chunkscope: warning: {} dropped chunk(s) are missing from '{}' (it is {} frames short)\n",
                               session.result().drops, one_line(opt.output),
                               static_cast<std::int64_t>(session.result().drops) * opt.chunk);
  }

  // ---- report
  auto report = session.report(session.workload(), outcome);
  if (file_sink) {  // what the file holds: its levels, and the finding when they went past full scale
    const AudioWriter& w = file_sink->writer();
    report.output = OutputLevels{opt.output, w.clips(), w.samples_written(), w.over_full_scale(), w.peak()};
    report.diagnosis = diagnose(report);
  }
  session.write(report);
  if (session.result().stuck.stuck) cli::end_after_stuck_call(outcome.reason, true);
  const int code = session.finish(report, outcome);
  cli::finish_metrics(exporter.get(), session, stop_flag);
  return code;
}

namespace cli {

Command add_replay_command(CLI::App& app) {
  auto o = std::make_shared<StreamOptions>();
  auto* c = app.add_subcommand("replay", "Stream a file through the chain at real-time pace and report on every chunk");
  add_text(c, "input", o->input, "Input audio file")->required();
  add_stream_options(c, *o, kAllStreamOptions | kMetrics | kStreams);
  add_rate(c, "--rate", o->expect_rate, "Expected sample rate (an error when the file differs)");
  add_int(c, "--channels", o->expect_channels, "Expected channel count (an error when the file differs)")
      ->default_str("");
  return {c, [o] { return run_stream("replay", *o, stop_on_signals()); }, o};
}

Command add_synth_command(CLI::App& app) {
  auto o = std::make_shared<StreamOptions>();
  auto* c = app.add_subcommand("synth", "Stream a synthetic signal through the chain and report on every chunk");
  add_stream_options(c, *o, kAllStreamOptions | kMetrics | kStreams);
  add_text(c, "--signal,--synth", o->signal,
           "sine:<hz>, noise, sweep:<f0>:<f1>, impulse, silence or burst:<time> (loud noise, then a silent tail); "
           "--synth is the same option, as process, compare and sweep spell it");
  add_text(c, "--duration", o->duration, "Length of the signal, e.g. 10s");
  add_int(c, "--channels", o->channels, "Channels");
  add_rate(c, "--rate", o->rate, "Sample rate in Hz (48000, 44.1k, 48kHz)");
  return {c, [o] { return run_stream("synth", *o, stop_on_signals()); }, o};
}

}  // namespace cli

}  // namespace chunkscope
