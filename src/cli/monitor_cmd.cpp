#include "src/cli/monitor_cmd.hpp"

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <iostream>
#include <thread>
#include <unistd.h>

#include "rt/clock.hpp"
#include "rt/cpu_backend.hpp"
#include "rt/pa_device.hpp"
#include "src/chain_spec.hpp"
#include "src/environment.hpp"
#include "src/errors.hpp"
#include "src/io/devices.hpp"
#include "src/backends.hpp"
#include "src/report/report.hpp"
#include "rt/run_stats.hpp"

namespace chunkscope {

using nlohmann::json;

int run_devices(bool json_out) {
  PortAudioSession pa;
  require_portaudio(pa);
  const auto devs = pa.devices();
  if (json_out) {
    json j;
    j["schema"] = "chunkscope.devices/1";
    j["portaudio"] = pa.version();
    j["host_apis"] = pa.host_apis();
    json a = json::array();
    for (const auto& d : devs)
      a.push_back({{"index", d.index},
                   {"name", d.name},
                   {"host_api", d.host_api},
                   {"max_input_channels", d.max_input},
                   {"max_output_channels", d.max_output},
                   {"default_rate", d.default_rate},
                   {"default_low_input_latency_s", d.low_input_latency},
                   {"default_high_input_latency_s", d.high_input_latency},
                   {"default_low_output_latency_s", d.low_output_latency},
                   {"default_high_output_latency_s", d.high_output_latency},
                   {"default_input", d.default_input},
                   {"default_output", d.default_output}});
    j["devices"] = a;
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::string apis;
  for (const auto& h : pa.host_apis()) apis += (apis.empty() ? "" : ", ") + h;
  fmt::print("{}\nhost APIs: {}\n\n", pa.version(), apis.empty() ? "none" : apis);
  if (devs.empty()) {
    fmt::print("no devices (no sound card found and no JACK server running)\n");
    return kExitOk;
  }
  fmt::print("{:>3}  {:<2} {:<28} {:<28} {:>4} {:>4} {:>8}  {:>19}  {:>19}\n", "idx", "", "name", "host API", "in", "out",
             "rate", "input lat lo/hi ms", "output lat lo/hi ms");
  for (const auto& d : devs)
    fmt::print("{:>3}  {:<2} {:<28} {:<28} {:>4} {:>4} {:>8.0f}  {:>9.2f}/{:<9.2f}  {:>9.2f}/{:<9.2f}\n", d.index,
               std::string(d.default_input ? "i" : "") + (d.default_output ? "o" : ""), d.name, d.host_api, d.max_input,
               d.max_output, d.default_rate, d.low_input_latency * 1e3, d.high_input_latency * 1e3,
               d.low_output_latency * 1e3, d.high_output_latency * 1e3);
  fmt::print("\ni / o: the default input / output device\n");
  return kExitOk;
}

namespace {

struct LiveView {
  bool tty = false;
  bool drawn = false;
  stats::LogHistogram lat_i, jit_i, lat_all, jit_all;
};

std::string live_line(const char* label, const stats::LogHistogram& lat, const stats::LogHistogram& jit,
                      std::uint64_t chunks, std::int64_t budget) {
  if (lat.count() == 0) return fmt::format("{:<9} chunks {:>6}", label, chunks);
  return fmt::format("{:<9} chunks {:>6}  latency p50 {:>9} p95 {:>9} max {:>9}  headroom p95 {:>9}  jitter p95 {:>9}",
                     label, chunks, fmt_time(double(lat.value_at_percentile(50))),
                     fmt_time(double(lat.value_at_percentile(95))), fmt_time(double(lat.max())),
                     fmt_time(double(budget - static_cast<std::int64_t>(lat.value_at_percentile(95)))),
                     jit.count() ? fmt_time(double(jit.value_at_percentile(95))) : std::string("-"));
}

}  // namespace

int run_monitor(const MonitorOptions& mo, const std::atomic<bool>* stop_flag) {
  const StreamOptions& opt = mo.stream;
  check_chunk_frames(opt.chunk);
  if (opt.dtype != DType::f32) throw InputError("--dtype: monitor runs in f32 (PortAudio delivers float32 samples)");
  if (mo.channels < 1 || mo.channels > kMaxChannels)
    throw InputError(fmt::format("--channels: {} is out of range 1..{}", mo.channels, kMaxChannels));
  if (mo.latency_chunks < 1 || mo.latency_chunks > 64)
    throw InputError(fmt::format("--latency-chunks: {} is out of range 1..64", mo.latency_chunks));
  if (opt.queue_depth < 1 || opt.queue_depth > 4096)
    throw InputError(fmt::format("--queue-depth: {} is out of range 1..4096", opt.queue_depth));
  if (opt.warmup < 0 || opt.warmup > 100'000'000)
    throw InputError(fmt::format("--warmup: {} is out of range 0..100000000", opt.warmup));
  std::int64_t duration_ns = 0;
  if (!mo.duration.empty()) {
    duration_ns = parse_duration_ns(mo.duration, "--duration");
    if (duration_ns <= 0) throw InputError("--duration: must be above 0");
  }
  check_distinct_paths(stream_inputs("", opt), stream_outputs(opt));
  const ReportPaths paths = resolve_report_paths(opt);

  PortAudioSession pa;
  require_portaudio(pa);
  const auto devs = pa.devices();
  const DeviceInfo in = select_device(devs, mo.input, true, pa.host_apis());
  const bool duplex = mo.output != "none";
  DeviceInfo out;
  if (duplex) out = select_device(devs, mo.output, false, pa.host_apis());
  const double rate = mo.rate > 0 ? mo.rate : in.default_rate;
  if (mo.channels > in.max_input)
    throw InputError(fmt::format("--channels: {} but input device '{}' has {}", mo.channels, in.name, in.max_input));
  if (duplex && mo.channels > out.max_output)
    throw InputError(fmt::format("--channels: {} but output device '{}' has {}", mo.channels, out.name, out.max_output));

  Plan plan;
  if (opt.chain.empty()) {
    plan.rate = rate;
    plan.fused = opt.fuse;
  } else {
    plan = plan_chain(opt.chain, rate, opt.fuse);
  }
  const auto chunk_ns = static_cast<std::int64_t>(std::llround(opt.chunk * 1e9 / rate));
  const std::int64_t margin_ns = parse_margin_ns(opt.margin, chunk_ns);
  // Full duplex: a chunk must be ready for output K callbacks after its input arrived.
  const std::int64_t budget_ns = (duplex ? mo.latency_chunks : 1) * chunk_ns - margin_ns;

  const ProcessSpec spec{rate, mo.channels, opt.chunk, DType::f32};
  auto backend = make_backend(opt.backend, plan, spec);
  RunStats stats;
  RunStatsConfig sc;
  sc.chunk_ns = chunk_ns;
  sc.budget_ns = budget_ns;
  sc.paced = true;
  sc.warmup = static_cast<std::uint64_t>(opt.warmup);
  sc.media_ns_per_frame = 1e9 / rate;
  // per-chunk points: as many as the duration needs (plus slack), else up to --series-limit
  sc.series_capacity = opt.series_limit;
  if (duration_ns > 0)
    sc.series_capacity = std::min<std::size_t>(
        opt.series_limit, static_cast<std::size_t>(static_cast<double>(duration_ns) * 1e-9 * rate / opt.chunk) + 64);
  stats.prepare(sc);
  stats::IntervalRecorder live_lat, live_jit;
  stats.enable_live(&live_lat, &live_jit);
  EngineConfig ec;
  ec.spec = spec;
  ec.queue_depth = opt.queue_depth;
  ec.external_source = true;
  ec.external_sink = duplex;
  ec.latency_chunks = mo.latency_chunks;
  ec.trace_capacity = paths.trace.empty() ? 0 : opt.trace_capacity;
  ec.checksum_chunks = std::min<std::size_t>(64, static_cast<std::size_t>(opt.warmup));  // warm-up chunks only
  NullSink null_sink;
  Engine engine;
  struct Unused final : ChunkSource {  // the callback pushes; no source thread runs
    std::int64_t total_frames() const noexcept override { return -1; }
    Status fill(void*, int, int*) noexcept override { return Status::end_of_stream; }
    const char* describe() const noexcept override { return "device"; }
  } unused_source;
  if (!ok(engine.prepare(ec, *backend, unused_source, null_sink, stats)))
    throw RuntimeFailure("engine: prepare failed (invalid configuration)");

  DeviceStream stream;
  StderrSilencer quiet;  // PortAudio's own diagnostics; ours come after restore()
  if (!ok(stream.open(in, duplex ? &out : nullptr, rate, mo.channels, opt.chunk, engine))) {
    quiet.restore();
    throw RuntimeFailure(stream.error());
  }
  EngineResult er;
  std::thread runner([&] { er = engine.run(); });
  if (!ok(stream.start())) {
    engine.finish_source();
    runner.join();
    quiet.restore();
    throw RuntimeFailure(stream.error());
  }

  // ---- supervise: duration, signals, device health, live view
  const std::int64_t t0 = now_ns();
  LiveView lv;
  lv.tty = isatty(1) != 0;
  std::string failure;
  std::int64_t next_live = t0 + 1'000'000'000;
  const std::int64_t stall_ns = std::max<std::int64_t>(500'000'000, 20 * chunk_ns);
  for (;;) {
    sleep_until_ns(now_ns() + 20'000'000);
    const std::int64_t t = now_ns();
    if (stop_flag && stop_flag->load()) break;
    if (duration_ns > 0 && t - t0 >= duration_ns) break;
    const std::int64_t last = stream.last_callback_ns();
    const bool stalled = (last == 0 ? t - t0 : t - last) > stall_ns + (last == 0 ? 1'500'000'000 : 0);
    if (!stream.active() || stalled) {
      failure = fmt::format("audio device '{}' ({}) stopped after {:.2f} s ({} callbacks): {}", in.name, in.host_api,
                            (t - t0) / 1e9, stream.callbacks(),
                            stream.active() ? "no callback for " + fmt_time(double(t - last)) : "the stream ended");
      break;
    }
    if (mo.live && t >= next_live) {
      next_live += 1'000'000'000;
      live_lat.sample_into(lv.lat_i);
      live_jit.sample_into(lv.jit_i);
      lv.lat_all.add(lv.lat_i);
      lv.jit_all.add(lv.jit_i);
      const auto counted = stats.live_counted.load();
      const std::string tail = fmt::format("xruns {}  underruns {}  drops {}  misses {}  queue {}", stream.xruns(),
                                           engine.live_underruns(), engine.live_drops(), stats.live_misses.load(),
                                           engine.live_queue_depth());
      if (lv.tty) {
        if (lv.drawn) std::cout << "\x1b[3A";
        std::cout << "\x1b[2K" << live_line("last 1 s", lv.lat_i, lv.jit_i, lv.lat_i.count(), budget_ns) << "\n"
                  << "\x1b[2K" << live_line("total", lv.lat_all, lv.jit_all, counted, budget_ns) << "\n"
                  << "\x1b[2K" << fmt::format("{:<9} {}", fmt::format("{:.0f} s", (t - t0) / 1e9), tail) << "\n"
                  << std::flush;
        lv.drawn = true;
      } else {
        std::cout << fmt::format("[{:>5.1f} s] {} | {} | {}\n", (t - t0) / 1e9,
                                 live_line("1s", lv.lat_i, lv.jit_i, lv.lat_i.count(), budget_ns),
                                 fmt::format("total chunks {}", counted), tail)
                  << std::flush;
      }
    }
  }
  if (failure.empty()) {
    stream.stop();
  } else {
    stream.abandon();  // closing a stream whose server died aborts inside PortAudio
    pa.abandon();
  }
  engine.finish_source();
  runner.join();
  quiet.restore();

  RunOutcome outcome;
  if (!failure.empty()) {
    outcome.state = "incomplete";
    outcome.reason = failure;
  } else if (stop_flag && stop_flag->load()) {
    outcome.state = "interrupted";
    outcome.reason = "stopped by a signal";
  }
  Workload w;
  w.command = "monitor";
  w.source = fmt::format("device {} '{}' ({})", in.index, in.name, in.host_api);
  w.sink = duplex ? fmt::format("device {} '{}' ({})", out.index, out.name, out.host_api) : std::string("null");
  w.input = {{"kind", "device"}, {"name", in.name}, {"host_api", in.host_api}};
  describe_backend(w, *backend, opt.backend);
  w.rate = rate;
  w.channels = mo.channels;
  w.chunk_frames = opt.chunk;
  w.dtype = DType::f32;
  w.warmup = static_cast<std::uint64_t>(opt.warmup);
  w.speed = 1;
  w.margin_text = opt.margin;
  w.margin_ns = margin_ns;
  w.queue_depth = opt.queue_depth;
  w.media_seconds = static_cast<double>(stats.frames) / rate;
  json report = build_report(w, plan, probe_environment(), stats, er, outcome);
  json xl = json::array();
  for (const auto& x : stream.xrun_list())
    xl.push_back({{"callback", x.callback}, {"at_s", (x.at_ns - t0) / 1e9}, {"flags", x.flags}});
  json cb = {{"count", stream.callback_period().count()}};
  if (stream.callback_period().count()) {
    const auto& h = stream.callback_period();
    cb = {{"count", h.count()},          {"min", h.min()},
          {"p50", h.value_at_percentile(50)}, {"p95", h.value_at_percentile(95)},
          {"p99", h.value_at_percentile(99)}, {"max", h.max()}};
  }
  report["device"] = {{"input", in.name},
                      {"output", duplex ? out.name : std::string("none")},
                      {"host_api", in.host_api},
                      {"duplex", duplex},
                      {"latency_chunks", duplex ? mo.latency_chunks : 0},
                      {"budget_rule", duplex ? "K x D - margin: ready for output K callbacks after the input arrived"
                                             : "D - margin"},
                      {"reported_input_latency_s", stream.reported_input_latency()},
                      {"reported_output_latency_s", duplex ? stream.reported_output_latency() : 0.0},
                      {"stream_rate", stream.actual_rate()},
                      {"callbacks", stream.callbacks()},
                      {"callback_period", cb},
                      {"xruns", stream.xruns()},
                      {"input_overflows", stream.input_overflows()},
                      {"output_underflows", stream.output_underflows()},
                      {"priming", stream.priming()},
                      {"xrun_list", xl},
                      {"underruns", er.underruns},
                      {"late_chunks", er.late_chunks},
                      {"underrun_seqs", er.underrun_seqs}};
  write_reports(report, stats, engine, er, paths, opt.quiet);
  if (!opt.quiet)
    std::cout << fmt::format(
        "device     {} -> {}: host API reports input {} / output {}; measured end-to-end p95 {}; callback period p50 {}; "
        "xruns {}, underruns {}, late {}\n",
        in.name, duplex ? out.name : "none", fmt_time(stream.reported_input_latency() * 1e9),
        duplex ? fmt_time(stream.reported_output_latency() * 1e9) : std::string("-"),
        report["latency"].contains("p95") ? fmt_time(report["latency"]["p95"].get<double>()) : std::string("-"),
        cb.contains("p50") ? fmt_time(cb["p50"].get<double>()) : std::string("-"), stream.xruns(), er.underruns,
        er.late_chunks);
  if (!failure.empty()) {
    std::cerr << "chunkscope: " << failure << " (report marked incomplete)\n";
    return kExitRuntime;
  }
  if (opt.fail_on_miss && (budget_broken(report) || er.underruns > 0 || stream.xruns() > 0)) return kExitMiss;
  return kExitOk;
}

}  // namespace chunkscope
