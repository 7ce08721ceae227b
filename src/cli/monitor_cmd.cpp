#include "src/cli/monitor_cmd.hpp"

#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <thread>
#include <unistd.h>

#include "rt/clock.hpp"
#include "rt/pa_device.hpp"
#include "rt/stats/interval_recorder.hpp"
#include "src/chain_spec.hpp"
#include "src/cli/cli_support.hpp"
#include "src/cli/signals.hpp"
#include "src/cli/live_view.hpp"
#include "src/cli/metrics_cli.hpp"
#include "src/session/device_figures.hpp"
#include "src/report/format.hpp"
#include "src/errors.hpp"
#include "src/io/devices.hpp"
#include "src/session/stream_session.hpp"

namespace chunkscope {

namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

// ---------------------------------------------------------------- setup

// Checks what needs no device; returns the duration in ns (0: until stopped).
std::int64_t check_monitor_options(const MonitorOptions& mo) {
  check_stream_options(mo.stream);
  if (mo.channels < 1 || mo.channels > kMaxChannels)
    throw InputError(fmt::format("--channels: {} is out of range 1..{}", mo.channels, kMaxChannels));
  if (mo.latency_chunks < 1 || mo.latency_chunks > 64)
    throw InputError(fmt::format("--latency-chunks: {} is out of range 1..64", mo.latency_chunks));
  std::int64_t duration_ns = 0;
  if (!mo.duration.empty()) {
    duration_ns = parse_duration_ns(mo.duration, "--duration");
    if (duration_ns <= 0) throw InputError("--duration: must be above 0");
  }
  return duration_ns;
}

// The devices a run streams from and, full duplex, to.
struct MonitorDevices {
  DeviceInfo input, output;
  bool duplex = false;
  double rate = 0;
};

std::string describe_device(const DeviceInfo& d) { return fmt::format("device {} '{}' ({})", d.index, d.name, d.host_api); }

MonitorDevices select_monitor_devices(const PortAudioSession& pa, const MonitorOptions& mo) {
  const auto devs = pa.devices();
  MonitorDevices d;
  d.input = select_device(devs, mo.input, true, pa.host_apis());
  d.duplex = mo.output != "none";
  if (d.duplex) d.output = select_device(devs, mo.output, false, pa.host_apis());
  d.rate = mo.rate > 0 ? mo.rate : d.input.default_rate;
  if (mo.channels > d.input.max_input)
    throw InputError(
        fmt::format("--channels: {} but input device '{}' has {}", mo.channels, d.input.name, d.input.max_input));
  if (d.duplex && mo.channels > d.output.max_output)
    throw InputError(
        fmt::format("--channels: {} but output device '{}' has {}", mo.channels, d.output.name, d.output.max_output));
  return d;
}

// The callback pushes into the engine: no source thread runs.
struct CallbackFedSource final : ChunkSource {
  std::int64_t total_frames() const noexcept override { return -1; }
  Status fill(void*, int, int*) noexcept override { return Status::end_of_stream; }
  const char* describe() const noexcept override { return "device"; }
};

// ---------------------------------------------------------------- run: the live view

// Samples the interval recorders once per second and draws the view.
class LiveMonitor {
 public:
  LiveMonitor(const MonitorOptions& mo, const MonitorDevices& dev, const StreamSession& session)
      : view_(std::cout, isatty(1) != 0), terminal_(isatty(1) != 0) {
    figures_.budget_ns = session.setup().budget_ns;
    figures_.budget_rule = dev.duplex ? fmt::format("{} x D - margin", mo.latency_chunks) : std::string("D - margin");
    figures_.devices = fmt::format("{} ({}) -> {}", dev.input.name, dev.input.host_api,
                                   dev.duplex ? dev.output.name : std::string("none"));
    figures_.queue_capacity = mo.stream.queue_depth;
  }
  stats::IntervalRecorder latency, jitter;  // fed by the sink side without locks

  void draw(double elapsed_s, const DeviceStream& stream, StreamSession& session) {
    latency.sample_into(last_lat_);
    jitter.sample_into(last_jit_);
    total_lat_.add(last_lat_);
    total_jit_.add(last_jit_);
    LiveFigures& f = figures_;
    f.elapsed_s = elapsed_s;
    f.last_second = {last_lat_.count(), &last_lat_, &last_jit_};
    f.since_start = {session.stats().live_counted.load(), &total_lat_, &total_jit_};
    f.xruns = stream.xruns();
    f.underruns = session.engine().live_underruns();
    f.drops = session.engine().live_drops();
    f.misses = session.stats().live_misses.load();
    f.queue_depth = session.engine().live_queue_depth();
    view_.draw(f, terminal_ ? terminal_columns(1) : 80);
  }

 private:
  LiveView view_;
  bool terminal_;
  LiveFigures figures_;
  stats::LogHistogram last_lat_, last_jit_, total_lat_, total_jit_;
};

// ---------------------------------------------------------------- run: supervision

// Watches the running stream until the duration is up, a signal arrives or the device
// stops delivering callbacks, and draws the live view once per second. Returns why the
// device failed ("" when it did not).
std::string supervise(const DeviceStream& stream, StreamSession& session, const MonitorDevices& dev,
                      std::int64_t duration_ns, std::int64_t t0, const std::atomic<bool>* stop_flag,
                      LiveMonitor* live) {
  std::int64_t next_live = t0 + kSecond;
  const std::int64_t stall_ns = std::max<std::int64_t>(500'000'000, 20 * session.setup().chunk_ns);
  bool attached = false;
  for (;;) {
    sleep_until_ns(now_ns() + 20'000'000);
    // the callback's thread keeps a context-switch record once it has named itself
    if (!attached) attached = session.engine().attach_callback_record();
    const std::int64_t t = now_ns();
    if (session.engine().gave_up_on_hosted_call()) return "";  // the run is over: see run_monitor
    if (stop_flag && stop_flag->load()) return "";
    if (duration_ns > 0 && t - t0 >= duration_ns) return "";
    const std::int64_t last = stream.last_callback_ns();
    const bool stalled = (last == 0 ? t - t0 : t - last) > stall_ns + (last == 0 ? 1'500'000'000 : 0);
    // a callback inside a hosted call that does not return (the server may drop a client whose
    // callback overruns) is the step's, which the engine's watch ends the run for
    // (--step-timeout): not a device that stopped
    const bool on_step = session.engine().watching_hosted_call();
    if (!on_step && (!stream.active() || stalled))
      return fmt::format("audio device '{}' ({}) stopped after {:.2f} s ({} callbacks): {}", dev.input.name,
                         dev.input.host_api, (t - t0) / 1e9, stream.callbacks(),
                         stream.active() ? "no callback for " + fmt_time(double(t - last)) : "the stream ended");
    if (live && t >= next_live) {
      next_live += kSecond;
      live->draw((t - t0) / 1e9, stream, session);
    }
  }
}

// ---------------------------------------------------------------- outcome and report

// Where a device run's samples came from.
InputDesc device_input(const DeviceInfo& d) {
  InputDesc in;
  in.kind = InputDesc::Kind::device;
  in.device_name = d.name;
  in.host_api = d.host_api;
  return in;
}

RunOutcome monitor_outcome(const std::string& failure, bool interrupted, const EngineResult& er) {
  RunOutcome o;
  if (!failure.empty()) {
    o.state = RunState::incomplete;
    o.reason = failure;
  } else if (interrupted) {
    o.state = RunState::interrupted;
    o.reason = interrupted_reason(er.not_processed);
  }
  return o;
}

}  // namespace

int run_monitor(const MonitorOptions& mo, const std::atomic<bool>* stop_flag) {
  const StreamOptions& opt = mo.stream;
  // ---- setup
  const std::int64_t duration_ns = check_monitor_options(mo);
  check_distinct_paths(stream_inputs("", opt), stream_outputs(opt));
  cli::guard_outputs(stream_outputs(opt));
  ReportPaths paths = resolve_report_paths(opt);
  PortAudioSession pa;
  require_portaudio(pa);
  const MonitorDevices dev = select_monitor_devices(pa, mo);
  StreamSession session(
      setup_device_stream(opt, dev.rate, mo.channels, dev.duplex ? mo.latency_chunks : 1, duration_ns,
                          device_input(dev.input)),
      opt, std::move(paths));

  // ---- prepare: the callback is the source and, full duplex, the sink
  EngineConfig ec = session.engine_config();
  ec.external_source = true;
  ec.external_sink = dev.duplex;
  ec.latency_chunks = mo.latency_chunks;
  CallbackFedSource callback_source;
  NullSink null_sink;
  LiveMonitor live(mo, dev, session);
  // listens now: an address that cannot be served fails before the device streams
  const auto exporter = cli::open_metrics(session);
  const auto recorders = exporter ? std::optional(exporter->recorders()) : std::nullopt;
  session.prepare(callback_source, null_sink, ec, &live.latency, &live.jitter, recorders ? &*recorders : nullptr);

  // ---- run: the engine on its own thread, fed by the device; this thread supervises
  session.measure_before();  // the platform baseline, before the device streams
  DeviceStream stream;
  StderrSilencer quiet;  // PortAudio's own diagnostics; ours come after restore()
  if (!ok(stream.open(dev.input, dev.duplex ? &dev.output : nullptr, dev.rate, mo.channels, opt.chunk,
                      session.engine()))) {
    quiet.restore();
    throw RuntimeFailure(stream.error());
  }
  std::thread runner([&] { session.run(nullptr); });
  if (!ok(stream.start())) {
    session.engine().finish_source();
    runner.join();
    quiet.restore();
    throw RuntimeFailure(stream.error());
  }
  // the sampler reads the stream's xrun count: it stops before the stream goes away
  cli::start_metrics(exporter.get(), session, [&stream] { return stream.xruns(); });
  struct StopSampling {
    metrics::MetricsExporter* e;
    ~StopSampling() {
      if (e) e->finish();
    }
  } stop_sampling{exporter.get()};
  const std::int64_t t0 = now_ns();
  const std::string failure = supervise(stream, session, dev, duration_ns, t0, stop_flag, mo.live ? &live : nullptr);
  const bool interrupted = failure.empty() && stop_flag && stop_flag->load();
  // a hosted call that did not return: the stream is left as it is (stopping it waits for a
  // callback that may be inside the call); the process ends once the report is written
  const bool stuck = session.engine().gave_up_on_hosted_call();
  if (!stuck && failure.empty()) {
    stream.stop();
    // interrupted: what is still queued is not processed (the device stopped playing), so
    // the run ends within one chunk's processing
    if (interrupted) session.engine().request_stop();
  } else if (!stuck) {
    // Closing a stream whose server died aborts inside PortAudio, so the stream is left
    // open and its callback thread alive. abandon() disarms the callback and returns only
    // when none is in flight: a server that comes back calls a callback that touches
    // nothing of the engine, the statistics or the stream freed below (rt/pa_device.hpp).
    stream.abandon();
    pa.abandon();
  }
  if (!stuck) session.engine().finish_source();
  runner.join();
  if (exporter) exporter->finish();  // the run has joined: the final values
  quiet.restore();
  if (failure.empty()) session.measure_after();

  // ---- outcome and report: the device section goes in before the verdict is decided
  const RunOutcome outcome = stuck ? RunOutcome{RunState::incomplete, stuck_reason(session.result().stuck)}
                                  : monitor_outcome(failure, interrupted, session.result());
  Workload w = session.workload();
  w.source = describe_device(dev.input);
  w.sink = dev.duplex ? describe_device(dev.output) : std::string("null");
  const RunReport report = session.report(
      w, outcome,
      device_section(stream, session.result(), dev.input, dev.duplex ? &dev.output : nullptr, mo.latency_chunks, t0));
  session.write(report);
  if (stuck) cli::end_after_stuck_call(outcome.reason, true);
  const int code = session.finish(report, outcome);
  cli::finish_metrics(exporter.get(), session, stop_flag);
  return code;
}

namespace cli {

Command add_monitor_command(CLI::App& app) {
  auto o = std::make_shared<MonitorOptions>();
  auto* c = app.add_subcommand("monitor", "Run a live audio device through the chain and report on every chunk");
  // no --dtype (PortAudio delivers float32), no --speed (a device keeps its own time), and
  // --output names a device, not a file
  add_stream_options(c, o->stream, kBackendKind | kCudaTuning | kReportFiles | kMetrics);
  add_text(c, "--input,-i", o->input, "Input device: index or name substring (default: the default input)");
  add_text(c, "--output,-o", o->output, "Output device: index, name substring or 'none' (input only)");
  add_rate(c, "--rate", o->rate, "Sample rate in Hz, e.g. 48000 or 44.1k (default: the input device's)");
  add_int(c, "--channels", o->channels, "Channels");
  add_text(c, "--duration", o->duration, "Stop after this long, e.g. 10s (default: at SIGINT/SIGTERM)");
  add_flag(c, "--live", o->live, "Show a live view once per second");
  add_int(c, "--latency-chunks", o->latency_chunks, "Full duplex: the output of input chunk k plays at callback k + K");
  return {c, [o] { return run_monitor(*o, stop_on_signals()); }};
}

}  // namespace cli

}  // namespace chunkscope
