// The functions rt/ tags [no-alloc] that tests/test_no_alloc.cpp does not call, each called
// here under the allocation counter after its set-up, which may allocate. The list is
// tests/check_contracts.py's: a newly tagged function fails that check until a counted
// test calls it. Same program as test_no_alloc.cpp (its counting operator new allocates
// with malloc, so the interposer's process-wide count sees both).
#include <doctest/doctest.h>

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rt/alloc_audit.hpp"
#include "rt/baseline_probe.hpp"
#include "rt/checksum.hpp"
#include "rt/chunk.hpp"
#include "rt/clock.hpp"
#include "rt/cpu_backend.hpp"
#include "rt/cpu_simd.hpp"
#include "rt/denormals.hpp"
#include "rt/engine.hpp"
#include "rt/hosted.hpp"
#include "rt/pa_device.hpp"
#include "rt/run_stats.hpp"
#include "rt/sos_math.hpp"
#include "rt/stats/histogram.hpp"
#include "rt/stats/interval_recorder.hpp"
#include "rt/status.hpp"
#include "rt/stream_io.hpp"
#include "src/io/file_stream.hpp"
#include "src/plan.hpp"

using namespace chunkscope;

namespace {

// The interposer counts every thread's malloc-family calls while count_all is on (it is
// for the whole program: test_no_alloc.cpp turns it on too). Sanitizer builds have no
// interposer and count nothing, so there these checks cannot fail.
const struct CountAll {
  CountAll() { alloc_audit::count_all(true); }
} g_count_all;

// Allocations by any thread since construction.
class Allocations {
 public:
  Allocations() : start_(alloc_audit::all_allocations()) {}
  std::uint64_t since() const { return alloc_audit::all_allocations() - start_; }

 private:
  std::uint64_t start_;
};

constexpr double kRate = 48000;
constexpr int kChunk = 64, kChannels = 2;

// An engine whose source and sink are the caller (a device callback's wiring), running on
// its own thread, warmed until chunks come back processed: what the run's threads allocate
// once at start is then behind us.
struct CallbackEngine {
  CpuBackend backend;
  RunStats stats;
  NullSink null_sink;
  SynthSource unused{parse_synth("silence", kRate), DType::f32};
  Engine engine;
  std::thread runner;
  EngineResult result;

  CallbackEngine() {
    const Plan plan = plan_chain("hp:80:4 | lp:12000:8", kRate);
    REQUIRE(backend.prepare({kRate, kChannels, kChunk, DType::f32}, lay_out_plan(plan, kChannels)) == Status::ok);
    RunStatsConfig sc;
    sc.chunk_ns = 1333333;
    sc.budget_ns = 2 * 1333333 - 266666;
    sc.warmup = 10;
    sc.media_ns_per_frame = 1e9 / kRate;
    stats.prepare(sc);
    EngineConfig ec;
    ec.spec = {kRate, kChannels, kChunk, DType::f32};
    ec.external_source = true;
    ec.external_sink = true;
    ec.latency_chunks = 2;
    ec.trace_capacity = 1000;
    REQUIRE(engine.prepare(ec, backend, unused, null_sink, stats) == Status::ok);
  }
  void start() {
    runner = std::thread([this] { result = engine.run(); });
  }
  // `tick` plays one callback; called until five chunks have been counted
  template <class F>
  void warm(F&& tick) {
    for (int i = 0; stats.live_counted.load() < 5 && i < 200000; ++i) {
      tick();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    REQUIRE(stats.live_counted.load() >= 5);
  }
  void finish() {
    engine.finish_source();
    runner.join();
  }
  ~CallbackEngine() {
    if (runner.joinable()) finish();  // a failed REQUIRE left it running
  }
};

}  // namespace

TEST_CASE("contracts: alloc_audit's own calls allocate nothing") {
  const Allocations n;
  const bool active = alloc_audit::interposer_active();
  alloc_audit::count_all(true);
  alloc_audit::arm();
  alloc_audit::note_alloc();  // counts itself: the one allocation the window may hold
  alloc_audit::note_free();
  const alloc_audit::Counts c = alloc_audit::disarm();
  const std::uint64_t allocations = n.since();
  CHECK(allocations == 1);
  CHECK(c.allocations == 1);
  CHECK(c.frees == 1);
  if (!active) MESSAGE("no allocation interposer in this build (sanitizers): the contract checks count nothing");
}

TEST_CASE("contracts: histogram queries, merges and slot walks allocate nothing") {
  stats::LogHistogram h, same, other(1'000'000, 2);
  for (std::uint64_t v = 1; v < 5000; v += 7) same.record(v * 1000);
  other.record(5);
  volatile int digits = 3;  // keeps the constexpr function a run-time call
  std::uint64_t acc = 0;
  double dacc = 0;
  bool merged = false, refused = true, equal = false, was_empty = false;
  const Allocations n;
  was_empty = h.empty();
  h.record_n(1234, 10);
  h.record_n(99, 0);
  merged = h.add(same);
  refused = h.add(other);  // another layout: false, nothing changes
  acc += h.saturated() + h.min() + h.max() + static_cast<std::uint64_t>(h.sum());
  dacc += h.mean() + h.stddev() + h.percentile_rank(50'000) + h.relative_error_bound();
  acc += h.value_at_percentile(99.9);
  acc += h.highest_trackable() + static_cast<std::uint64_t>(h.significant_digits() + h.bucket_count() + h.sub_bucket_count());
  acc += h.counts_length() + h.memory_bytes() + (h.same_layout(same) ? 1 : 0);
  acc += static_cast<std::uint64_t>(stats::LogHistogram::sub_bucket_count_magnitude_for(digits));
  const std::size_t i = h.index_of(3'000'000);
  acc += h.count_at_index(i) + h.value_from_index(i) + h.slot_width(i);
  acc += h.lowest_equivalent_value(3'000'000) + h.highest_equivalent_value(3'000'000) +
         h.median_equivalent_value(3'000'000);
  std::uint64_t walked = 0;
  for (std::size_t k = h.first_recorded_index(); k <= h.last_recorded_index(); ++k) walked += h.count_at_index(k);
  std::uint64_t visited = 0;
  h.for_each_recorded([&](std::uint64_t, std::uint64_t, std::uint64_t c) { visited += c; });
  const std::uint64_t total = h.count();
  swap(h, same);
  equal = operator==(h, same);
  same.reset();
  const std::uint64_t allocations = n.since();
  CHECK(allocations == 0);
  CHECK(was_empty);
  CHECK(merged);
  CHECK_FALSE(refused);
  CHECK_FALSE(equal);
  CHECK(walked == visited);
  CHECK(total == visited);
  CHECK(same.count() == 0);  // swapped, then reset
  CHECK(acc + static_cast<std::uint64_t>(dacc) > 0);
}

TEST_CASE("contracts: interval recorder writes, layout queries and a same-layout sample allocate nothing") {
  stats::IntervalRecorder rec;
  stats::LogHistogram out = rec.make_histogram();
  const Allocations n;
  for (int i = 0; i < 1000; ++i) {
    rec.record(static_cast<std::uint64_t>(i) * 977u);
    rec.record_n(static_cast<std::uint64_t>(i), 3);
  }
  const std::uint64_t layout = rec.highest_trackable() + static_cast<std::uint64_t>(rec.significant_digits()) +
                               rec.memory_bytes();
  rec.sample_into(out);
  const std::uint64_t allocations = n.since();
  CHECK(allocations == 0);
  CHECK(out.count() == 4000);
  CHECK(layout > 0);
}

TEST_CASE("contracts: the chunk pool's accessors allocate nothing") {
  ChunkPool pool;
  pool.prepare(8, kChunk, kChannels, DType::f32);
  const Allocations n;
  std::size_t sum = 0;
  for (std::size_t i = 0; i < pool.size(); ++i) sum += pool.at(i)->rec.frames;
  const std::size_t bytes = pool.bytes();
  const std::uint64_t allocations = n.since();
  CHECK(allocations == 0);
  CHECK(sum == 0);
  CHECK(bytes >= 8u * kChunk * kChannels * sizeof(float));
}

TEST_CASE("contracts: engine stop requests, schedule and config, and destruction allocate nothing") {
  auto idle = std::make_unique<Engine>();
  std::atomic<bool> flag{false};
  const Allocations n;
  idle->watch_stop_flag(&flag);
  idle->schedule_start(now_ns() + 1'000'000);
  const std::int64_t start_at = idle->config().start_at_ns;
  idle->request_stop();
  idle.reset();  // ~Engine
  const std::uint64_t allocations = n.since();
  CHECK(allocations == 0);
  CHECK(start_at > 0);
}

TEST_CASE("contracts: engine push and pull from the caller's thread, and the live counters, allocate nothing") {
  CallbackEngine ce;
  std::vector<float> in(kChunk * kChannels, 0.25f), out(kChunk * kChannels, 0.0f);
  std::uint64_t index = 0;
  ce.start();
  ce.warm([&] {
    (void)ce.engine.push(in.data(), kChunk, now_ns());
    (void)ce.engine.pull(out.data(), kChunk, index++);
  });
  std::uint64_t live = 0;
  int played = 0;
  const Allocations n;
  for (int i = 0; i < 10000; ++i) {
    (void)ce.engine.push(in.data(), kChunk, now_ns());  // a drop is counted, not an error
    played += ce.engine.pull(out.data(), kChunk, index++) == Status::ok;  // queue_full: an underrun
    live += ce.engine.live_drops() + ce.engine.live_underruns() + ce.engine.live_queue_depth();
    live += static_cast<std::uint64_t>(ce.engine.config().latency_chunks);
    if (i % 8 == 0) std::this_thread::yield();  // let the processor keep up
  }
  const std::uint64_t allocations = n.since();
  ce.finish();
  CHECK(allocations == 0);
  CHECK(played > 0);
  CHECK(live > 0);
  CHECK(ce.stats.chunks > 0);
}

TEST_CASE("contracts: the gated device callback and the stream's accessors allocate nothing (no device opened)") {
  CallbackEngine ce;
  auto dev = std::make_unique<DeviceStream>();
  dev->prepare_callback(ce.engine, true);
  DeviceStream::CallbackGate gate;
  gate.stream = dev.get();
  gate.out_frame_bytes = kChannels * sizeof(float);
  std::vector<float> in(kChunk * kChannels, 0.25f), out(kChunk * kChannels, 0.0f);
  ce.start();
  ce.warm([&] { (void)DeviceStream::gated_callback(gate, in.data(), out.data(), kChunk, 0); });
  double sum = 0;
  std::uint64_t counts = 0;
  const Allocations n;
  for (int i = 0; i < 10000; ++i) {
    (void)DeviceStream::gated_callback(gate, in.data(), out.data(), kChunk, i == 5000 ? 0x1ul /* input underflow */ : 0ul);
    if (i % 8 == 0) std::this_thread::yield();
  }
  counts += dev->callbacks() + dev->xruns() + dev->xrun_list().size() + dev->input_overflows() +
            dev->output_underflows() + dev->priming() + dev->callback_period().count();
  sum += static_cast<double>(dev->last_callback_ns()) + dev->reported_input_latency() +
         dev->reported_output_latency() + dev->actual_rate();
  const bool active = dev->active();  // never opened: false, no PortAudio call
  const bool no_error = dev->error().empty();
  const std::uint64_t allocations = n.since();
  ce.finish();
  CHECK(allocations == 0);
  CHECK_FALSE(active);
  CHECK(no_error);
  CHECK(dev->xruns() == 1);
  CHECK(counts > 0);
  CHECK(sum > 0);

  // Stopping, abandoning (the gate goes to the process-wide list) and destroying a stream
  // that was never opened: the paths without PortAudio calls.
  DeviceStream::CallbackGate detached;
  detached.detached.store(true);
  detached.out_frame_bytes = kChannels * sizeof(float);
  const Allocations m;
  dev->stop();
  dev->abandon();
  const int r = DeviceStream::gated_callback(detached, in.data(), out.data(), kChunk, 0);  // plays silence
  dev.reset();  // ~DeviceStream
  const std::uint64_t after_stop = m.since();
  CHECK(after_stop == 0);
  CHECK(r == 0);  // paContinue
  CHECK(out[0] == 0.0f);
}

TEST_CASE("contracts: run statistics' keys, latency split and add() with misses, stalls and series allocate nothing") {
  RunStats st;
  RunStatsConfig sc;
  sc.chunk_ns = 1333333;
  sc.budget_ns = 1000000;
  sc.paced = true;
  sc.warmup = 5;
  sc.media_ns_per_frame = 1e9 / kRate;
  sc.series_capacity = 50;  // fewer points than chunks: the kept and the counted-only path
  sc.steps = 2;
  st.prepare(sc);
  stats::IntervalRecorder live_lat, live_jit, m_lat, m_period;
  RunStats::MetricRecorders mr;
  mr.latency = &m_lat;
  mr.period = &m_period;
  std::size_t key_chars = 0;
  const Allocations n;
  st.enable_live(&live_lat, &live_jit);
  st.enable_metrics(mr);
  for (int i = 0; i < kStageCount; ++i) key_chars += std::char_traits<char>::length(stage_key(static_cast<Stage>(i)));
  for (int i = 0; i < kPartCount; ++i) key_chars += std::char_traits<char>::length(part_key(static_cast<Part>(i)));
  for (int i = 0; i < kOwnerCount; ++i) key_chars += std::char_traits<char>::length(owner_key(static_cast<Owner>(i)));
  int owners = 0;
  for (int i = 0; i < kCauseCount; ++i) {
    key_chars += std::char_traits<char>::length(cause_key(static_cast<Cause>(i)));
    owners += static_cast<int>(cause_owner(static_cast<Cause>(i)));
  }
  std::int64_t split_ns = 0;
  for (int segment = 0; segment < 2; ++segment) {
    st.begin_segment();
    for (int k = 0; k < 200; ++k) {
      ChunkRecord r{};
      const std::int64_t t = (segment * 1000 + k) * sc.chunk_ns + 1'000'000'000;
      r.seq = static_cast<std::uint64_t>(k);
      r.media_frame = static_cast<std::int64_t>(k) * kChunk;
      r.frames = kChunk;
      r.sched = t;
      r.woke = t + 20'000;
      r.ready = r.woke + 10'000;
      r.dequeue = r.ready + 5'000;
      r.proc_start = r.dequeue;
      r.proc_end = r.proc_start + (k % 10 == 9 ? 2 * sc.chunk_ns : 100'000);  // every tenth chunk misses
      r.sink_start = r.proc_end + 5'000;
      r.emit = r.sink_start + 10'000;
      r.proc_cpu_ns = 90'000;
      r.steps = 2;
      r.step_ns[0] = 40'000;
      r.step_ns[1] = 50'000;
      const LatencySplit s = split_latency(r, r.proc_start - 1000, r.emit - sc.chunk_ns, 0.0);
      split_ns += s.ns[static_cast<std::size_t>(s.largest)];
      st.add(r);
    }
  }
  const double ppm = st.drift_ppm();
  const std::uint64_t points = st.drift_points();
  const std::int64_t budget = st.config().budget_ns;
  const std::uint64_t allocations = n.since();
  CHECK(allocations == 0);
  CHECK(key_chars > 0);
  CHECK(owners > 0);
  CHECK(split_ns > 0);
  CHECK(st.misses > 0);
  CHECK(st.stalls > 0);
  CHECK(st.series.size() == 50);
  CHECK(points > 0);
  CHECK(ppm == ppm);  // a number
  CHECK(budget == sc.budget_ns);
}

TEST_CASE("contracts: CPU backend accessors, calibration steps and a hosted step's processor allocate nothing") {
  const std::string chain = std::string("hp:80:4 | so:") + CHUNKSCOPE_CLEAN_STAGE + ":gain=-3 | lp:12000:8";
  const Plan plan = plan_chain(chain, kRate);
  const ChainLayout layout = lay_out_plan(plan, kChannels);
  REQUIRE(layout.hosted.size() == 1);
  CpuBackend be;
  REQUIRE(be.prepare({kRate, kChannels, 256, DType::f32}, layout) == Status::ok);
  std::vector<float> buf(256 * kChannels, 0.25f);
  ProcessStats ps{};
  REQUIRE(be.process({buf.data(), 256, kChannels, DType::f32}, &ps) == Status::ok);  // the stage's first touches
  std::string error;
  const std::shared_ptr<const HostedFactory> factory = layout.hosted[0];
  std::unique_ptr<HostedProcessor> proc = factory->create(HostedShape{kRate, 256, kChannels}, error);
  REQUIRE(proc);
  std::vector<float> left(256, 0.25f), right(256, 0.25f);
  float* planar[] = {left.data(), right.data()};
  proc->process(planar, 256);

  const Backend& base = be;
  std::size_t chars = 0;
  std::uint64_t values = 0;
  bool processed = true;
  const Allocations n;
  chars += std::char_traits<char>::length(be.name()) + std::char_traits<char>::length(be.mode()) +
           std::char_traits<char>::length(base.name()) + std::char_traits<char>::length(base.mode()) +
           std::char_traits<char>::length(be.last_error()) + std::char_traits<char>::length(base.last_error());
  values += be.counters().chunks + base.counters().chunks + be.state_values() + base.state_values() + be.chunks();
  values += static_cast<std::uint64_t>(be.isa()) + static_cast<std::uint64_t>(be.layout()) + be.hosted_latency(0);
  be.set_audit(false);
  processed &= be.process({buf.data(), 256, kChannels, DType::f32, 1}, &ps) == Status::ok;
  be.set_audit(true);
  processed &= be.process({buf.data(), 256, kChannels, DType::f32, 2}, &ps) == Status::ok;
  be.reset();
  chars += factory->label().size();
  processed &= proc->process(planar, 256);
  proc->reset();
  chars += std::char_traits<char>::length(proc->last_error());
  values += proc->latency_frames();
  ProcessStats calib{};
  spin_for_ns(20'000);
  sleep_for_ns(20'000);
  pay_calibration(true, 10'000, calib);
  pay_calibration(false, 10'000, calib);
  // a backend made and dropped inside the window: the constructor sizes nothing
  { const CpuBackend fresh(false, CpuIsa::scalar, false); chars += std::char_traits<char>::length(fresh.mode()); }
  const std::uint64_t allocations = n.since();
  CHECK(allocations == 0);
  CHECK(processed);
  CHECK(chars > 0);
  CHECK(values > 0);
  CHECK(calib.host_steps == 2);
  CHECK(be.hosted_audit().at(0).allocations == 0);
}

TEST_CASE("contracts: instruction-set queries allocate nothing (no kernel runs)") {
  const CpuIsa all[] = {CpuIsa::scalar, CpuIsa::sse4, CpuIsa::avx2, CpuIsa::avx512};
  std::size_t chars = 0;
  int parsed = 0, supported = 0, layouts = 0;
  const Allocations n;
  for (CpuIsa isa : all) {
    const char* name = cpu_isa_name(isa);
    CpuIsa back = CpuIsa::scalar;
    parsed += parse_cpu_isa(name, &back) && back == isa;
    supported += cpu_isa_supported(isa);
    chars += std::char_traits<char>::length(cpu_isa_requires(isa));
    for (int ch : {1, 2, 8, 24}) {
      const CascadeLayout l = cascade_layout(isa, 4, ch, 8);
      layouts += static_cast<int>(l);
      chars += std::char_traits<char>::length(cascade_layout_name(l));
    }
  }
  const CpuIsa best = cpu_isa_best();
  const CpuIsa chosen = cpu_isa_auto(4, 2, 8);
  const bool best_ok = cpu_isa_supported(best) && cpu_isa_supported(chosen);
  const std::uint64_t allocations = n.since();
  CHECK(allocations == 0);
  CHECK(parsed == 4);
  CHECK(supported >= 1);  // scalar at least
  CHECK(best_ok);
  CHECK(chars > 0);
  CHECK(layouts >= 0);
}

TEST_CASE("contracts: clock reads, waits and pacing allocate nothing") {
  const WaitMode modes[] = {WaitMode::block, WaitMode::spin, WaitMode::hybrid};
  const Allocations n;
  const std::int64_t t0 = now_ns();
  const std::int64_t cpu0 = thread_cpu_ns();
  sleep_until_ns(now_ns() + 20'000);
  cpu_relax();
  spin_until_ns(now_ns() + 20'000);
  for (WaitMode m : modes) wait_until_ns(now_ns() + 20'000, m);
  const ThreadUsage a = thread_usage_now();
  spin_until_ns(now_ns() + 50'000);
  const ThreadUsage b = thread_usage_now();
  const ThreadUsage d = usage_delta(a, b);
  const std::int64_t t1 = now_ns(), cpu1 = thread_cpu_ns();
  const std::uint64_t allocations = n.since();
  CHECK(allocations == 0);
  CHECK(t1 - t0 >= 6 * 20'000);
  CHECK(cpu1 >= cpu0);
  CHECK(b.present);
  CHECK(d.cpu_ns >= 0);
}

TEST_CASE("contracts: applying a thread policy (pinning to the current CPU) allocates nothing") {
  // on a thread of its own, so the test thread keeps its affinity
  std::uint64_t allocations = 1;
  Status plain = Status::invalid_argument, pinned = Status::invalid_argument;
  std::thread t([&] {
    ThreadPolicy none;
    ThreadPolicy pin;
    pin.cpus[1] = sched_getcpu();
    const Allocations n;
    plain = apply_thread_policy(none, 0);
    pinned = apply_thread_policy(pin, 1);
    allocations = n.since();
  });
  t.join();
  CHECK(allocations == 0);
  CHECK(plain == Status::ok);
  CHECK(pinned == Status::ok);
}

TEST_CASE("contracts: denormal flushing, status, checksum, biquad and dtype helpers allocate nothing") {
  std::vector<float> samples(512, 0.5f);
  const bool before = thread_flushes_denormals();
  bool inside = false, outside = !before, cleared = true;
  std::size_t chars = 0;
  int oks = 0;
  const Allocations n;
  {
    const ScopedFlushDenormals on;
    inside = thread_flushes_denormals();
    {
      const ScopedFlushDenormals off(false);
      cleared = thread_flushes_denormals();
    }
  }
  outside = thread_flushes_denormals();
  for (int s = 0; s <= static_cast<int>(Status::stage_failed); ++s) {
    chars += std::char_traits<char>::length(describe(static_cast<Status>(s)));
    oks += ok(static_cast<Status>(s));
  }
  const std::uint64_t h = fnv1a64(samples.data(), samples.size() * sizeof(float));
  double s1 = 0, s2 = 0, y = 0;
  for (int i = 0; i < 64; ++i) y = biquad_step(0.2, 0.4, 0.2, -0.5, 0.1, s1, s2, i == 0 ? 1.0 : 0.0);
  const unsigned width = dtype_size(DType::f32) + dtype_size(DType::f64);
  chars += std::char_traits<char>::length(dtype_name(DType::f64));
  HostedWhere& where = hosted_where();
  const int step = where.step.load();
  const std::uint64_t allocations = n.since();
  CHECK(allocations == 0);
  CHECK(inside);
  CHECK_FALSE(cleared);
  CHECK(outside == before);  // restored
  CHECK(oks == 1);
  CHECK(chars > 0);
  CHECK(h != kFnvOffset);
  CHECK(y == y);
  CHECK(width == 12);
  CHECK(step >= 0);
}

TEST_CASE("contracts: source, sink and stderr silencing calls allocate nothing") {
  SynthSpec sp = parse_synth("sine:440", kRate);
  sp.channels = kChannels;
  SynthSource src(sp, DType::f32);
  NullSink sink;
  ChunkSource& any_src = src;
  ChunkSink& any_sink = sink;
  std::vector<float> buf(kChunk * kChannels);
  int frames = 0, filled = 0;
  bool all_ok = true;
  const Allocations n;
  const std::int64_t total = any_src.total_frames() + src.total_frames();
  std::size_t chars = std::char_traits<char>::length(any_src.describe()) + std::char_traits<char>::length(src.describe());
  for (int i = 0; i < 100; ++i) {
    all_ok &= any_src.fill(buf.data(), kChunk, &frames) == Status::ok;
    filled += frames;
    all_ok &= any_sink.consume(buf.data(), frames) == Status::ok;
    all_ok &= sink.consume(buf.data(), frames) == Status::ok;
  }
  chars += std::char_traits<char>::length(any_sink.describe()) + std::char_traits<char>::length(sink.describe());
  {
    StderrSilencer quiet;  // ~StderrSilencer restores
  }
  {
    StderrSilencer quiet;
    quiet.restore();
  }
  const std::uint64_t allocations = n.since();
  CHECK(allocations == 0);
  CHECK(all_ok);
  CHECK(filled == 100 * kChunk);
  CHECK(total == 2 * sp.frames);
  CHECK(chars > 0);
}
