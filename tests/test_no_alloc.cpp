// Proves the real-time paths allocate nothing: global operator new is replaced by a
// counting one, and the count must not move across many process() calls.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "rt/alloc_audit.hpp"
#include "rt/alt_stack.hpp"
#include "rt/cpu_backend.hpp"
#include "rt/engine.hpp"
#include "rt/pa_device.hpp"
#include "src/io/audio_file.hpp"
#include "rt/run_stats.hpp"
#include "rt/sched_record.hpp"
#include "rt/clock.hpp"
#include "src/io/file_stream.hpp"
#include "tests/test_util.hpp"
#include <readerwriterqueue/readerwriterqueue.h>
#include <sndfile.h>
#include <thread>
#include "src/plan.hpp"
#include "chunkscope/probe.h"

namespace {
std::atomic<long> g_news{0};
}

// C allocations are counted too (libsndfile and the C library allocate with malloc): the
// chunkscope binaries' own allocator interposer (rt/alloc_audit.hpp) counts every thread's
// calls into one total while counting is on. Not under the sanitizers, which own malloc.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define CHUNKSCOPE_COUNT_MALLOC 1
#endif
struct MallocCount {
  MallocCount() { chunkscope::alloc_audit::count_all(true); }
  long load() const { return static_cast<long>(chunkscope::alloc_audit::all_allocations()); }
};
const MallocCount g_mallocs;

void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::aligned_alloc(static_cast<std::size_t>(a), (n + static_cast<std::size_t>(a) - 1) &
                                                                    ~(static_cast<std::size_t>(a) - 1)))
    return p;
  throw std::bad_alloc();
}
// GCC cannot see that these pair with the counting operator new above.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using namespace chunkscope;

TEST_CASE("the counter counts") {
  const long before = g_news.load();
  auto* v = new std::vector<int>(10);
  delete v;
  CHECK(g_news.load() - before == 2);
}

TEST_CASE("CpuBackend::process allocates nothing over 1000 chunks (f32 and f64, with calibration)") {
  const Plan plan = plan_chain("hp:80:4 | lp:12000:8 | spin:1us:every=3 | peak:1000:gain=2", 48000);
  for (DType dt : {DType::f32, DType::f64}) {
    CpuBackend be;
    REQUIRE(be.prepare({48000, 8, 256, dt}, lay_out_plan(plan, 8)) == Status::ok);
    std::vector<double> buf(256 * 8, 0.25);
    ProcessStats st;
    const long before = g_news.load();
    for (int i = 0; i < 1000; ++i) (void)be.process({buf.data(), 256, 8, dt}, &st);
    be.reset();
    CHECK(g_news.load() - before == 0);
  }
}

namespace {

struct Counts {
  long news, mallocs;
};

// Allocations made by one engine run() of `seconds` of synthetic audio at --speed max.
// prepare() is outside the window; thread start-up is inside and costs the same whatever
// the length, so two runs of different lengths must count the same.
// `wait` and `inline_process` choose the run mode (--wait, --inline); `batch` streams
// batched into each chunk (--batch: a BatchSource over that many sources).
Counts engine_run_allocations(double seconds, bool file_io, const std::string& dir, WaitMode wait = WaitMode::block,
                              bool inline_process = false, int batch = 1,
                              const std::string& chain = "hp:80:4 | lp:12000:8 | peak:1000:gain=2") {
  const double rate = 48000;
  const int chunk = 64, ch = 2 * batch;
  const Plan plan = plan_chain(chain, rate);
  CpuBackend be;
  REQUIRE(be.prepare({rate, ch, chunk, DType::f32}, lay_out_plan(plan, ch)) == Status::ok);
  std::unique_ptr<ChunkSource> src;
  std::unique_ptr<ChunkSink> sink;
  const auto frames = static_cast<std::int64_t>(seconds * rate);
  if (file_io) {
    // a real file in, a real file out
    SynthSpec sp = parse_synth("noise", rate);
    sp.channels = ch / batch;
    sp.frames = frames;
    {
      SynthSource gen(sp, DType::f32);
      AudioWriter w(dir + "/in.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, rate, sp.channels);
      std::vector<float> buf(4096 * static_cast<std::size_t>(sp.channels));
      int n = 0;
      while (gen.fill(buf.data(), 4096, &n) == Status::ok) w.write(buf.data(), n);
      w.commit();
    }
    if (batch > 1) {
      std::vector<std::unique_ptr<ChunkSource>> parts;
      for (int k = 0; k < batch; ++k) parts.push_back(std::make_unique<FileSource>(dir + "/in.wav", DType::f32));
      src = std::make_unique<BatchSource>(std::move(parts), sp.channels, chunk, DType::f32);
    } else {
      src = std::make_unique<FileSource>(dir + "/in.wav", DType::f32);
    }
    sink = std::make_unique<FileSink>(dir + "/out.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, rate, ch, DType::f32);
  } else {
    SynthSpec sp = parse_synth("sweep:20:20000", rate);
    sp.channels = ch / batch;
    sp.frames = frames;
    if (batch > 1) {
      std::vector<std::unique_ptr<ChunkSource>> parts;
      for (int k = 0; k < batch; ++k) parts.push_back(std::make_unique<SynthSource>(sp, DType::f32));
      src = std::make_unique<BatchSource>(std::move(parts), sp.channels, chunk, DType::f32);
    } else {
      src = std::make_unique<SynthSource>(sp, DType::f32);
    }
    sink = std::make_unique<NullSink>();
  }
  RunStats stats;
  RunStatsConfig sc;
  sc.chunk_ns = 1333333;
  sc.budget_ns = 1000000;
  sc.paced = false;
  sc.warmup = 10;
  sc.media_ns_per_frame = 1e9 / rate;
  sc.series_capacity = 100;  // fewer points than chunks: both the kept and the counted-only path run
  stats.prepare(sc);
  EngineConfig ec;
  ec.spec = {rate, ch, chunk, DType::f32};
  ec.max_speed = true;
  ec.trace_capacity = 20000;
  ec.checksum_chunks = 10;  // the warm-up chunks are hashed on the processor thread
  ec.wait = wait;
  ec.inline_process = inline_process;
  Engine eng;
  REQUIRE(eng.prepare(ec, be, *src, *sink, stats) == Status::ok);
  const Counts before{g_news.load(), g_mallocs.load()};
  const EngineResult r = eng.run();
  const Counts after{g_news.load(), g_mallocs.load()};
  CHECK(r.status == Status::ok);
  CHECK(stats.chunks + stats.warmup_chunks == static_cast<std::uint64_t>((frames + chunk - 1) / chunk));
  return {after.news - before.news, after.mallocs - before.mallocs};
}

}  // namespace

TEST_CASE("the engine allocates nothing per chunk: 100 chunks and 10,000 chunks cost the same") {
  testutil::TempDir td;
  for (bool file_io : {false, true}) {
    CAPTURE(file_io);
    // a first run pays the C library's one-time costs (per-thread arenas, first file open)
    (void)engine_run_allocations(50 * 64 / 48000.0, file_io, td.path().string());
    const Counts small = engine_run_allocations(100 * 64 / 48000.0, file_io, td.path().string());
    const Counts large = engine_run_allocations(10000 * 64 / 48000.0, file_io, td.path().string());
    CHECK(large.news == small.news);
#if defined(CHUNKSCOPE_COUNT_MALLOC)
    CHECK(large.mallocs == small.mallocs);
    MESSAGE("allocations per run (thread start-up): " << large.mallocs);
#endif
  }
}

TEST_CASE("a hosted step (so:) in the chain allocates nothing per chunk, its audit included") {
  const std::string chain = std::string("hp:80:4 | so:") + CHUNKSCOPE_CLEAN_STAGE + ":gain=-3 | lp:12000:8";
  const Plan plan = plan_chain(chain, 48000);
  for (DType dt : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dt));
    CpuBackend be;
    REQUIRE(be.prepare({48000, 2, 256, dt}, lay_out_plan(plan, 2)) == Status::ok);
    std::vector<double> buf(512, 0.25);
    ProcessStats ps{};
    REQUIRE(be.process({buf.data(), 256, 2, dt}, &ps) == Status::ok);  // first call: the stage's own first touches
    const long before_n = g_news.load(), before_m = g_mallocs.load();
    for (int i = 0; i < 1000; ++i) REQUIRE(be.process({buf.data(), 256, 2, dt, static_cast<std::uint64_t>(i)}, &ps) == Status::ok);
    CHECK(g_news.load() - before_n == 0);
#if defined(CHUNKSCOPE_COUNT_MALLOC)
    CHECK(g_mallocs.load() - before_m == 0);
    CHECK(be.hosted_audit().at(0).allocations == 0);
#endif
    CHECK(be.hosted_audit().at(0).calls == 1001);
    CHECK(ps.steps == 3);
    // the watch a watchdog reads, and a reset (each hosted step's watched and marked)
    const long reset_n = g_news.load(), reset_m = g_mallocs.load();
    const HostedWatch* watch = be.hosted_watch();
    be.reset();
    CHECK(g_news.load() - reset_n == 0);
#if defined(CHUNKSCOPE_COUNT_MALLOC)
    CHECK(g_mallocs.load() - reset_m == 0);
#endif
    (void)reset_m;
    REQUIRE(watch != nullptr);
    CHECK(watch->since.load() == 0);  // no call under way
    CHECK(watch->call.load() == std::string("reset"));
  }
  testutil::TempDir td;
  (void)engine_run_allocations(50 * 64 / 48000.0, true, td.path().string(), WaitMode::block, false, 1, chain);
  const Counts small = engine_run_allocations(100 * 64 / 48000.0, true, td.path().string(), WaitMode::block, false, 1, chain);
  const Counts large = engine_run_allocations(10000 * 64 / 48000.0, true, td.path().string(), WaitMode::block, false, 1, chain);
  CHECK(large.news == small.news);
#if defined(CHUNKSCOPE_COUNT_MALLOC)
  CHECK(large.mallocs == small.mallocs);
#endif
}

TEST_CASE("a thread's alternate signal stack is mapped, not allocated, and asking again costs nothing") {
  long news = -1, mallocs = -1;
  bool first = false, again = false;
  std::size_t bytes = 0;
  std::thread t([&] {
    const long n0 = g_news.load(), m0 = g_mallocs.load();
    first = ensure_alt_stack();
    again = ensure_alt_stack();
    bytes = alt_stack_bytes();
    news = g_news.load() - n0;
    mallocs = g_mallocs.load() - m0;
  });
  t.join();
  CHECK(first);
  CHECK(again);
  CHECK(bytes >= 64 * 1024);
  CHECK(news == 0);
#if defined(CHUNKSCOPE_COUNT_MALLOC)
  CHECK(mallocs == 0);
#endif
  (void)mallocs;
  const Engine e;
  const long n1 = g_news.load();
  CHECK_FALSE(e.gave_up_on_hosted_call());
  CHECK_FALSE(e.watching_hosted_call());  // not prepared: no backend, no watch
  CHECK(g_news.load() - n1 == 0);
}

TEST_CASE("spin and hybrid waits and inline processing allocate nothing per chunk either") {
  testutil::TempDir td;
  struct Mode {
    WaitMode wait;
    bool inline_process;
  };
  for (const Mode m : {Mode{WaitMode::spin, false}, Mode{WaitMode::hybrid, false}, Mode{WaitMode::block, true},
                       Mode{WaitMode::spin, true}}) {
    CAPTURE(wait_mode_name(m.wait));
    CAPTURE(m.inline_process);
    (void)engine_run_allocations(50 * 64 / 48000.0, false, td.path().string(), m.wait, m.inline_process);
    const Counts small = engine_run_allocations(100 * 64 / 48000.0, false, td.path().string(), m.wait, m.inline_process);
    const Counts large = engine_run_allocations(10000 * 64 / 48000.0, false, td.path().string(), m.wait, m.inline_process);
    CHECK(large.news == small.news);
#if defined(CHUNKSCOPE_COUNT_MALLOC)
    CHECK(large.mallocs == small.mallocs);
#endif
  }
}

TEST_CASE("a batched engine (--batch: three streams' sources in one chunk) allocates nothing per chunk") {
  testutil::TempDir td;
  for (bool file_io : {false, true}) {
    CAPTURE(file_io);
    (void)engine_run_allocations(50 * 64 / 48000.0, file_io, td.path().string(), WaitMode::block, false, 3);
    const Counts small = engine_run_allocations(100 * 64 / 48000.0, file_io, td.path().string(), WaitMode::block, false, 3);
    const Counts large = engine_run_allocations(10000 * 64 / 48000.0, file_io, td.path().string(), WaitMode::block, false, 3);
    CHECK(large.news == small.news);
#if defined(CHUNKSCOPE_COUNT_MALLOC)
    CHECK(large.mallocs == small.mallocs);
#endif
  }
}

TEST_CASE("the context-switch record is read without allocating: poll, off_between, totals, current") {
  SchedRecord rec;
  if (!rec.open()) {
    MESSAGE("skipped: the kernel refuses perf events here (errno " << rec.error() << ")");
    return;
  }
  SchedRecord::set_current(&rec);
  const long before_n = g_news.load(), before_m = g_mallocs.load();
  std::int64_t off = 0;
  for (int i = 0; i < 200; ++i) {
    const std::int64_t a = now_ns();
    if (i % 20 == 0) sleep_until_ns(a + 100'000);  // a few blocks to read
    SchedRecord::current()->poll();
    off += SchedRecord::current()->off_between(a, now_ns()).total();
  }
  const SwitchTotals t = rec.totals();
  CHECK(g_news.load() - before_n == 0);
  CHECK(g_mallocs.load() - before_m == 0);
  CHECK(t.blocks >= 10);  // each sleep gave the CPU up
  CHECK(off > 0);
  SchedRecord::set_current(nullptr);
}

TEST_CASE("queue round trips and histogram records allocate nothing") {
  moodycamel::BlockingReaderWriterQueue<void*> q(64);
  stats::LogHistogram h;
  int x = 0;
  const long before_n = g_news.load(), before_m = g_mallocs.load();
  for (int i = 0; i < 1000; ++i) {
    q.try_enqueue(&x);
    void* out = nullptr;
    q.try_dequeue(out);
    h.record(static_cast<std::uint64_t>(i) * 977u);
  }
  CHECK(g_news.load() - before_n == 0);
  CHECK(g_mallocs.load() - before_m == 0);
}

namespace {

// DeviceStream::on_callback is what PortAudio calls; here it is driven by a test thread
// with the same engine wiring a monitor run uses (callback as source and as sink; inline,
// the callback processes too).
void device_callbacks_allocate_nothing(bool inline_process) {
  const double rate = 48000;
  const int chunk = 64, ch = 2;
  const Plan plan = plan_chain("hp:80:4 | lp:12000:8", rate);
  CpuBackend be;
  REQUIRE(be.prepare({rate, ch, chunk, DType::f32}, lay_out_plan(plan, ch)) == Status::ok);
  RunStats stats;
  RunStatsConfig sc;
  sc.chunk_ns = 1333333;
  sc.budget_ns = 2 * 1333333 - 266666;
  sc.warmup = 10;
  sc.media_ns_per_frame = 1e9 / rate;
  stats.prepare(sc);
  stats::IntervalRecorder live_lat, live_jit;
  stats.enable_live(&live_lat, &live_jit);
  // and what --metrics-listen records on the same thread: latency, stages, period
  stats::IntervalRecorder m_lat, m_period, m_stage[kStageCount];
  RunStats::MetricRecorders mr;
  mr.latency = &m_lat;
  mr.period = &m_period;
  for (int i = 0; i < kStageCount; ++i) mr.stage[static_cast<std::size_t>(i)] = &m_stage[i];
  stats.enable_metrics(mr);
  EngineConfig ec;
  ec.spec = {rate, ch, chunk, DType::f32};
  ec.external_source = true;
  ec.external_sink = true;
  ec.latency_chunks = 2;
  ec.trace_capacity = 1000;
  ec.inline_process = inline_process;
  NullSink null_sink;
  SynthSpec sp = parse_synth("silence", rate);
  SynthSource unused(sp, DType::f32);
  Engine eng;
  REQUIRE(eng.prepare(ec, be, unused, null_sink, stats) == Status::ok);
  DeviceStream dev;
  dev.prepare_callback(eng, true);
  EngineResult er;
  std::thread runner([&] { er = eng.run(); });
  std::vector<float> in(chunk * ch, 0.25f), out(chunk * ch, 0.0f);
  // warm the path until chunks come back processed (run() has started its processor
  // thread, which allocates once), then count
  int warm = 0;
  while (stats.live_counted.load() < 5 && warm < 200000) {
    dev.on_callback(in.data(), out.data(), chunk, 0);
    ++warm;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  REQUIRE(stats.live_counted.load() >= 5);
  const long before_n = g_news.load(), before_m = g_mallocs.load();
  for (int i = 0; i < 10000; ++i) {
    dev.on_callback(in.data(), out.data(), chunk, i == 5000 ? 0x4ul /* output underflow */ : 0ul);
    // pace like a device would, loosely: let the processor keep up
    if (i % 8 == 0) std::this_thread::yield();
  }
  const long news = g_news.load() - before_n, mallocs = g_mallocs.load() - before_m;
  eng.finish_source();
  runner.join();
  CHECK(news == 0);
#if defined(CHUNKSCOPE_COUNT_MALLOC)
  CHECK(mallocs == 0);
#endif
  CHECK(dev.callbacks() == static_cast<std::uint64_t>(10000 + warm));
  CHECK(dev.xruns() == 1);
  CHECK(stats.chunks + stats.warmup_chunks > 0);
  // every counted chunk reached the metrics' recorders
  stats::LogHistogram got = m_lat.make_histogram();
  m_lat.sample_into(got);
  CHECK(got.count() == stats.chunks);
}

}  // namespace

TEST_CASE("the device callback allocates nothing: 10,000 full-duplex callbacks") { device_callbacks_allocate_nothing(false); }

TEST_CASE("the device callback processing inline allocates nothing: 10,000 full-duplex callbacks") {
  device_callbacks_allocate_nothing(true);
}

TEST_CASE("probe: no callback-side call allocates (begin, sections, end, xrun, device latency), nor the reader draining them") {
  static const char* sections[] = {"dsp", "meter"};
  chunkscope_probe_config cfg;
  chunkscope_probe_config_init(&cfg);
  cfg.rate = 48000;
  cfg.block_frames = 64;
  cfg.channels = 2;
  cfg.sections = sections;
  cfg.section_count = 2;
  for (int cpu_time : {0, 1}) {
    CAPTURE(cpu_time);
    cfg.cpu_time = cpu_time;
    chunkscope_probe* p = nullptr;
    REQUIRE(chunkscope_probe_open(&cfg, &p) == CHUNKSCOPE_PROBE_OK);
    const long before_n = g_news.load(), before_m = g_mallocs.load();
    for (int i = 0; i < 20000; ++i) {
      chunkscope_probe_begin(p, 64);
      chunkscope_probe_section_begin(p, 0);
      chunkscope_probe_section_end(p, 0);
      chunkscope_probe_section_begin(p, 1);
      chunkscope_probe_section_end(p, 1);
      if (i % 1000 == 0) {
        chunkscope_probe_xrun(p);
        chunkscope_probe_device_latency(p, 64, 128);
      }
      chunkscope_probe_end(p);
    }
    CHECK(g_news.load() - before_n == 0);
#if defined(CHUNKSCOPE_COUNT_MALLOC)
    CHECK(g_mallocs.load() - before_m == 0);
#endif
    CHECK(chunkscope_probe_close(p) == CHUNKSCOPE_PROBE_OK);
  }
}
