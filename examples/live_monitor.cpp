// Monitor the default audio device for a few seconds with the library API and print the
// headline: PortAudio callback -> engine -> chain -> back to the device.
//   example_live_monitor [seconds] ["chain spec"]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "rt/cpu_backend.hpp"
#include "rt/engine.hpp"
#include "rt/pa_device.hpp"
#include "src/environment.hpp"
#include "src/errors.hpp"
#include "src/io/devices.hpp"
#include "src/plan.hpp"
#include "src/report/build.hpp"
#include "rt/run_stats.hpp"

int main(int argc, char** argv) {
  using namespace chunkscope;
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  const std::string spec = argc > 2 ? argv[2] : "hp:80:4 | lp:12000:8";
  try {
    PortAudioSession pa;
    require_portaudio(pa);
    const auto devs = pa.devices();
    const DeviceInfo in = select_device(devs, "", true, pa.host_apis());
    const DeviceInfo out = select_device(devs, "", false, pa.host_apis());
    const double rate = in.default_rate;
    const int chunk = 256, channels = 2;

    const Plan plan = plan_chain(spec, rate);
    CpuBackend backend;
    backend.prepare({rate, channels, chunk, DType::f32}, lay_out_plan(plan, channels));

    const auto D = static_cast<std::int64_t>(chunk * 1e9 / rate);
    RunStats stats;
    RunStatsConfig sc;
    sc.chunk_ns = D;
    sc.budget_ns = 2 * D - D / 5;  // full duplex, 2 chunks of pipeline, 20 % margin
    sc.warmup = 10;
    sc.media_ns_per_frame = 1e9 / rate;
    stats.prepare(sc);

    EngineConfig ec;
    ec.spec = {rate, channels, chunk, DType::f32};
    ec.external_source = ec.external_sink = true;  // the callback feeds and drains the engine
    ec.latency_chunks = 2;
    NullSink unused_sink;
    struct NoSource final : ChunkSource {
      std::int64_t total_frames() const noexcept override { return -1; }
      Status fill(void*, int, int*) noexcept override { return Status::end_of_stream; }
      const char* describe() const noexcept override { return "device"; }
    } unused_source;
    Engine engine;
    engine.prepare(ec, backend, unused_source, unused_sink, stats);

    DeviceStream stream;
    if (!ok(stream.open(in, &out, rate, channels, chunk, engine))) throw RuntimeFailure(stream.error());
    EngineResult result;
    std::thread runner([&] { result = engine.run(); });
    if (!ok(stream.start())) {
      engine.finish_source();
      runner.join();
      throw RuntimeFailure(stream.error());
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stream.stop();
    engine.finish_source();
    runner.join();

    Workload w;
    w.command = "example";
    w.source = in.name;
    w.sink = out.name;
    w.backend = backend.name();
    w.mode = backend.mode();
    w.rate = rate;
    w.channels = channels;
    w.chunk_frames = chunk;
    w.margin_text = "20%";
    w.margin_ns = D / 5;
    const RunReport report = build_run_report(w, plan, probe_environment(), stats, result, RunOutcome{});
    std::cout << report.verdict.text << " (" << stats.chunks << " chunks, "
              << result.underruns << " underruns, " << stream.xruns() << " xruns)\n";
  } catch (const std::exception& e) {
    std::cerr << "example_live_monitor: " << e.what() << "\n";
    return 3;
  }
}
