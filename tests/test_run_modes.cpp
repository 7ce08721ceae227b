// Run modes: how the engine's threads wait (--wait), where processing runs (--inline),
// their scheduling (--rt, --cpus), the platform baseline around a run, and the per-thread
// usage. Real engine, real threads, real clock; every check is an invariant of the stamps
// or of the output, never a wall-clock threshold, so it holds on a loaded machine.
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <pthread.h>
#include <set>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "rt/clock.hpp"
#include "rt/cpu_backend.hpp"
#include "rt/engine.hpp"
#include "rt/baseline_probe.hpp"
#include "rt/run_stats.hpp"
#include "src/errors.hpp"
#include "src/io/file_stream.hpp"
#include "src/options.hpp"
#include "src/plan.hpp"
#include "src/machine_load.hpp"
#include "src/session/stream_session.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;
using testutil::run_cli;

namespace {

bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

constexpr double kRate = 48000;
constexpr int kChannels = 2;

struct EngineRun {
  EngineResult res;
  std::vector<ChunkRecord> trace;
  std::uint64_t counted = 0;  // chunks the statistics saw (warm-up included)
};

// One engine run of `chunks` chunks of `frames` frames of noise through `chain`, with the
// engine configured by `tweak` (wait mode, inline, pacing...). Every chunk is traced and
// checksummed.
template <class Tweak>
EngineRun run_engine(int chunks, int frames, const std::string& chain, Tweak tweak) {
  Plan plan;
  plan.rate = kRate;
  if (!chain.empty()) plan = plan_chain(chain, kRate);
  CpuBackend be;
  REQUIRE(be.prepare({kRate, kChannels, frames, DType::f32}, lay_out_plan(plan, kChannels)) == Status::ok);
  SynthSpec sp = parse_synth("noise", kRate);
  sp.channels = kChannels;
  sp.frames = static_cast<std::int64_t>(chunks) * frames;
  SynthSource src(sp, DType::f32);
  NullSink sink;
  EngineConfig ec;
  ec.spec = {kRate, kChannels, frames, DType::f32};
  ec.max_speed = true;
  ec.trace_capacity = static_cast<std::size_t>(chunks);
  ec.checksum_chunks = static_cast<std::size_t>(chunks);
  tweak(ec);
  RunStats stats;
  RunStatsConfig sc;
  sc.chunk_ns = static_cast<std::int64_t>(frames * 1e9 / (kRate * (ec.max_speed ? 1.0 : ec.speed)));
  sc.budget_ns = sc.chunk_ns;
  sc.paced = !ec.max_speed;
  sc.warmup = 2;
  sc.media_ns_per_frame = 1e9 / kRate;
  stats.prepare(sc);
  Engine eng;
  REQUIRE(eng.prepare(ec, be, src, sink, stats) == Status::ok);
  EngineRun out;
  out.res = eng.run();
  out.trace = eng.trace();
  out.counted = stats.chunks + stats.warmup_chunks;
  return out;
}

// Every boundary of a chunk's record in order; woke between sched and ready.
void check_stamps_in_order(const std::vector<ChunkRecord>& trace) {
  REQUIRE(!trace.empty());
  std::uint64_t cpu = 0;
  for (const auto& r : trace) {
    CAPTURE(r.seq);
    CHECK(r.sched <= r.woke);
    CHECK(r.woke <= r.ready);
    CHECK(r.ready <= r.dequeue);
    CHECK(r.dequeue <= r.proc_start);
    CHECK(r.proc_start <= r.proc_end);
    CHECK(r.proc_end <= r.sink_start);
    CHECK(r.sink_start <= r.emit);
    // CPU time of the processing thread over a window inside [dequeue, sink_start]
    CHECK(static_cast<std::int64_t>(r.proc_cpu_ns) <= r.sink_start - r.dequeue);
    cpu += r.proc_cpu_ns;
  }
  CHECK(cpu > 0);  // measured (a coarse thread clock may read 0 for one short chunk)
}

// Whether this process may run a thread under SCHED_FIFO (tried on a thread of its own).
bool fifo_permitted() {
  bool permitted = false;
  std::thread t([&] {
    sched_param sp{};
    sp.sched_priority = kDefaultRtPriority;
    permitted = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
  });
  t.join();
  return permitted;
}

// Whether mlockall(MCL_CURRENT | MCL_FUTURE) is permitted (tried in a child process, so
// this one's memory stays unlocked).
bool mlockall_permitted() {
  const pid_t pid = fork();
  if (pid == 0) _exit(mlockall(MCL_CURRENT | MCL_FUTURE) == 0 ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int cpus_configured() {
  const long n = sysconf(_SC_NPROCESSORS_CONF);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace

// ---------------------------------------------------------------- the wake-up stamp

TEST_CASE("paced runs in every wait mode: each chunk's woke lies between its sched and its ready") {
  for (WaitMode mode : {WaitMode::block, WaitMode::hybrid, WaitMode::spin}) {
    CAPTURE(wait_mode_name(mode));
    const EngineRun r = run_engine(120, 128, "lp:5000", [&](EngineConfig& ec) {
      ec.max_speed = false;
      ec.speed = 4;  // D = 0.67 ms
      ec.wait = mode;
    });
    CHECK(r.res.status == Status::ok);
    check_stamps_in_order(r.trace);
    // the source woke for each chunk after (never before) its schedule
    for (const auto& c : r.trace) CHECK(c.woke >= c.sched);
  }
}

TEST_CASE("at --speed max there is no wait: woke equals sched") {
  const EngineRun r = run_engine(50, 64, "", [](EngineConfig&) {});
  REQUIRE(r.res.status == Status::ok);
  for (const auto& c : r.trace) CHECK(c.woke == c.sched);
  check_stamps_in_order(r.trace);
}

// ---------------------------------------------------------------- inline processing

TEST_CASE("inline: processed on the source thread with no queue wait, the same output as three threads") {
  const std::string chain = "hp:80:4 | lp:12000:8 | peak:1000:gain=2";
  const EngineRun threaded = run_engine(300, 64, chain, [](EngineConfig&) {});
  const EngineRun in = run_engine(300, 64, chain, [](EngineConfig& ec) { ec.inline_process = true; });
  REQUIRE(threaded.res.status == Status::ok);
  REQUIRE(in.res.status == Status::ok);
  CHECK(in.res.checksummed == 300);
  CHECK(in.res.checksummed == threaded.res.checksummed);
  CHECK(in.res.input_checksums == threaded.res.input_checksums);
  CHECK(in.res.output_checksums == threaded.res.output_checksums);
  CHECK(in.counted == threaded.counted);
  CHECK(in.res.produced == threaded.res.produced);
  // one thread fills and processes: no source->processor queue, no hand-off
  CHECK(in.res.processor_tid == in.res.source_tid);
  CHECK(in.res.source_tid != 0);
  CHECK(in.res.q_in_high_water == 0);
  CHECK_FALSE(in.res.processor_usage.present);
  for (const auto& c : in.trace) {
    CAPTURE(c.seq);
    CHECK(c.dequeue == c.ready);  // queue_in wait: exactly zero
    CHECK(c.q_in_depth == 0);
  }
  check_stamps_in_order(in.trace);
  // the threaded run handed over through the queue
  CHECK(threaded.res.processor_tid != threaded.res.source_tid);
  CHECK(threaded.res.q_in_high_water >= 1);
}

TEST_CASE("inline at real-time pace: stamps in order, nothing queued before processing") {
  const EngineRun r = run_engine(100, 128, "lp:5000", [](EngineConfig& ec) {
    ec.max_speed = false;
    ec.speed = 4;
    ec.inline_process = true;
  });
  CHECK(r.res.status == Status::ok);
  check_stamps_in_order(r.trace);
  for (const auto& c : r.trace) CHECK(c.dequeue == c.ready);
}

TEST_CASE("inline over a file sink: the CLI writes the same file as the threaded engine") {
  testutil::TempDir td;
  const std::vector<std::string> common{"synth", "--signal", "sweep:20:20000", "--duration", "0.5s", "--chunk", "96",
                                        "--chain", "hp:80:4 | lp:9000:6", "--speed", "max", "--quiet"};
  auto with = [&](std::vector<std::string> extra, const std::string& out) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back("-o");
    a.push_back(out);
    return run_cli(a);
  };
  const auto a = with({}, td.file("threaded.wav"));
  const auto b = with({"--inline"}, td.file("inline.wav"));
  const auto c = with({"--inline", "--wait", "spin"}, td.file("inline_spin.wav"));
  REQUIRE(a.rc == 0);
  REQUIRE(b.rc == 0);
  REQUIRE(c.rc == 0);
  const auto ta = testutil::read_all(td.file("threaded.wav"));
  REQUIRE(!ta.empty());
  CHECK(testutil::read_all(td.file("inline.wav")) == ta);
  CHECK(testutil::read_all(td.file("inline_spin.wav")) == ta);
}

// ---------------------------------------------------------------- wait modes

TEST_CASE("spin and hybrid waits: the same output and the same counts as blocking waits") {
  const std::string chain = "hp:80:4 | lp:12000:8";
  const EngineRun block = run_engine(250, 64, chain, [](EngineConfig&) {});
  REQUIRE(block.res.status == Status::ok);
  for (WaitMode mode : {WaitMode::spin, WaitMode::hybrid}) {
    for (bool in : {false, true}) {
      CAPTURE(wait_mode_name(mode));
      CAPTURE(in);
      const EngineRun r = run_engine(250, 64, chain, [&](EngineConfig& ec) {
        ec.wait = mode;
        ec.inline_process = in;
      });
      REQUIRE(r.res.status == Status::ok);
      CHECK(r.res.produced == block.res.produced);
      CHECK(r.counted == block.counted);
      CHECK(r.res.drops == 0);
      CHECK(r.res.checksummed == block.res.checksummed);
      CHECK(r.res.output_checksums == block.res.output_checksums);
      check_stamps_in_order(r.trace);
    }
  }
}

TEST_CASE("wait modes have names, and --wait parses them") {
  CHECK(std::string(wait_mode_name(WaitMode::block)) == "block");
  CHECK(std::string(wait_mode_name(WaitMode::spin)) == "spin");
  CHECK(std::string(wait_mode_name(WaitMode::hybrid)) == "hybrid");
  CHECK(parse_wait_mode("hybrid") == WaitMode::hybrid);
  CHECK_THROWS_WITH_AS(parse_wait_mode("fast"), "--wait: 'fast' is not block, spin or hybrid", InputError);
}

TEST_CASE("wait_until_ns returns at or after its time in every mode") {
  for (WaitMode mode : {WaitMode::block, WaitMode::spin, WaitMode::hybrid}) {
    CAPTURE(wait_mode_name(mode));
    for (int i = 0; i < 20; ++i) {
      const std::int64_t t = now_ns() + 50'000 + i * 20'000;
      wait_until_ns(t, mode);
      CHECK(now_ns() >= t);
    }
    const std::int64_t past = now_ns() - 1'000'000;
    wait_until_ns(past, mode);  // a time already gone returns at once
    CHECK(now_ns() >= past);
  }
}

// ---------------------------------------------------------------- thread usage and policy

TEST_CASE("each engine thread's usage over the run: present, its own tid, CPU time above 0") {
  const EngineRun r = run_engine(200, 64, "lp:5000", [](EngineConfig&) {});
  REQUIRE(r.res.status == Status::ok);
  CHECK(r.res.policy_status == Status::ok);
  const std::pair<const ThreadUsage*, int> threads[] = {{&r.res.source_usage, r.res.source_tid},
                                                        {&r.res.processor_usage, r.res.processor_tid},
                                                        {&r.res.sink_usage, r.res.sink_tid}};
  for (const auto& [u, tid] : threads) {
    CHECK(u->present);
    CHECK(u->tid == tid);
    CHECK(u->cpu_ns > 0);
    CHECK(u->voluntary >= 0);
    CHECK(u->involuntary >= 0);
  }
  const EngineRun in = run_engine(200, 64, "lp:5000", [](EngineConfig& ec) { ec.inline_process = true; });
  CHECK(in.res.source_usage.present);
  CHECK(in.res.source_usage.cpu_ns > 0);
  CHECK_FALSE(in.res.processor_usage.present);
  CHECK(in.res.sink_usage.present);
}

TEST_CASE("thread_usage_now and usage_delta: this thread's CPU time grows as it works") {
  const ThreadUsage a = thread_usage_now();
  volatile double x = 0;
  for (int i = 0; i < 2'000'000; ++i) x = x + 1.0;
  const ThreadUsage b = thread_usage_now();
  REQUIRE(a.present);
  CHECK(a.tid == b.tid);
  const ThreadUsage d = usage_delta(a, b);
  CHECK(d.present);
  CHECK(d.tid == b.tid);
  CHECK(d.cpu_ns > 0);
  CHECK(d.voluntary >= 0);
}

TEST_CASE("a thread policy the system refuses stops the run at once, reported as unsupported") {
  // CPU 1023 exists on no machine this runs on: pinning to it is refused
  const EngineRun r = run_engine(100000, 64, "", [](EngineConfig& ec) { ec.policy.cpus = {-1, 1023, -1}; });
  CHECK(r.res.policy_status == Status::unsupported);
  CHECK(r.res.status == Status::unsupported);
  CHECK(r.res.produced < 100000u);  // it stopped early
  CHECK(r.res.produced == r.counted + r.res.drops + r.res.not_processed);
  ThreadPolicy p;
  p.cpus = {1023, -1, -1};
  CHECK(apply_thread_policy(p, 0) == Status::unsupported);
  CHECK(apply_thread_policy(ThreadPolicy{}, 0) == Status::ok);  // the default policy changes nothing
}

TEST_CASE("pinning the engine threads to CPU 0 runs, each thread on CPU 0") {
  const EngineRun r = run_engine(100, 64, "lp:5000", [](EngineConfig& ec) { ec.policy.cpus = {0, 0, 0}; });
  CHECK(r.res.status == Status::ok);
  CHECK(r.res.policy_status == Status::ok);
  CHECK(r.counted == 100);
}

// ---------------------------------------------------------------- the platform baseline

TEST_CASE("measure_platform: one wake-up and one hand-off per period, in every wait mode") {
  for (WaitMode mode : {WaitMode::block, WaitMode::hybrid, WaitMode::spin}) {
    CAPTURE(wait_mode_name(mode));
    BaselineConfig bc;
    bc.period_ns = 1'000'000;
    bc.duration_ns = 40'000'000;
    bc.wait = mode;
    const BaselineResult b = measure_platform(bc);
    CHECK(b.status == Status::ok);
    CHECK(b.period_ns == bc.period_ns);
    CHECK(b.duration_ns == bc.duration_ns);
    CHECK(b.wake.count() >= 1);
    CHECK(b.wake.count() <= static_cast<std::uint64_t>(bc.duration_ns / bc.period_ns + 1));
    CHECK(b.handoff.count() == b.wake.count());
    CHECK(b.handoff.min() > 0);  // a round trip through two queues takes time
  }
  BaselineConfig shorter;  // a duration below one period still measures once
  shorter.period_ns = 5'000'000;
  shorter.duration_ns = 1'000'000;
  CHECK(measure_platform(shorter).wake.count() == 1);
  BaselineConfig none;  // no duration: nothing
  none.period_ns = 1'000'000;
  const BaselineResult n = measure_platform(none);
  CHECK(n.wake.count() == 0);
  CHECK(n.status == Status::ok);
}

TEST_CASE("measure_platform with a policy the system refuses reports unsupported") {
  BaselineConfig bc;
  bc.period_ns = 1'000'000;
  bc.duration_ns = 5'000'000;
  bc.policy.cpus = {1023, 1023, 1023};
  CHECK(measure_platform(bc).status == Status::unsupported);
}

TEST_CASE("a stream session measures the baseline and /proc around a paced run, not at --speed max") {
  StreamOptions opt;
  opt.duration = "0.2s";
  opt.chunk = 256;
  opt.baseline = "30ms";
  opt.quiet = true;
  for (std::string speed : {"1", "max"}) {
    CAPTURE(speed);
    opt.speed = speed;
    StreamSession session(setup_stream("synth", "", opt), opt, ReportPaths{});
    auto src = open_source(session.setup(), opt);
    NullSink sink;
    session.prepare(*src, sink, session.engine_config());
    session.measure_before();
    session.run(nullptr);
    session.measure_after();
    const Workload w = session.workload();
    REQUIRE(w.proc_before.has_value());
    REQUIRE(w.proc_after.has_value());
    CHECK(w.proc_after->at_ns >= w.proc_before->at_ns);
    CHECK(w.proc_before->cpus_online >= 1);
    CHECK(w.wait == WaitMode::block);
    CHECK_FALSE(w.rt);
    if (speed == "max") {
      CHECK_FALSE(w.baseline_before.has_value());
      CHECK_FALSE(w.baseline_after.has_value());
      continue;
    }
    const std::int64_t D = session.setup().chunk_ns;
    for (const auto* b : {&w.baseline_before, &w.baseline_after}) {
      REQUIRE(b->has_value());
      CHECK((*b)->status == Status::ok);
      CHECK((*b)->period_ns == D);
      CHECK((*b)->wake.count() >= 1);
      CHECK((*b)->wake.count() <= static_cast<std::uint64_t>(30'000'000 / D + 1));
      CHECK((*b)->handoff.count() == (*b)->wake.count());
    }
  }
  opt.speed = "1";
  opt.baseline = "0";  // none
  StreamSession session(setup_stream("synth", "", opt), opt, ReportPaths{});
  auto src = open_source(session.setup(), opt);
  NullSink sink;
  session.prepare(*src, sink, session.engine_config());
  session.measure_before();
  CHECK_FALSE(session.workload().baseline_before.has_value());
}

TEST_CASE("/proc snapshot and the busy and steal shares between two") {
  const auto a = read_proc_snapshot();
  REQUIRE(a.has_value());
  CHECK(a->cpus_online >= 1);
  CHECK(a->total() > 0);
  CHECK(a->load1 >= 0);
  ProcSnapshot x = *a, y = *a;
  CHECK_FALSE(proc_shares(x, y).has_value());  // no tick passed
  y.user += 30;
  y.idle += 60;
  y.steal += 10;
  const auto s = proc_shares(x, y);
  REQUIRE(s.has_value());
  CHECK(s->busy == doctest::Approx(0.4));
  CHECK(s->steal == doctest::Approx(0.1));
  y = x;
  y.idle += 10;
  if (x.iowait > 0) y.iowait = x.iowait - 1;  // iowait may go backwards: counts as no change
  const auto t = proc_shares(x, y);
  REQUIRE(t.has_value());
  CHECK(t->busy == doctest::Approx(0.0));
}

// ---------------------------------------------------------------- options and the command line

TEST_CASE("--cpus lists: numbers and ranges, each CPU once, on this machine") {
  CHECK(parse_cpu_list("0", 2) == std::vector<int>{0});
  CHECK(parse_cpu_list("0,1", 2) == std::vector<int>{0, 1});
  CHECK(parse_cpu_list("0-3", 4) == std::vector<int>{0, 1, 2, 3});
  CHECK(parse_cpu_list("3,0-1", 4) == std::vector<int>{3, 0, 1});
  CHECK_THROWS_WITH_AS(parse_cpu_list("7", 2), "--cpus: CPU 7 does not exist (this machine has 2)", InputError);
  CHECK_THROWS_WITH_AS(parse_cpu_list("0-7", 2), "--cpus: CPU 7 does not exist (this machine has 2)", InputError);
  for (const char* bad : {"", "a", "1,", "-1", "2-1", "0,,1", "1.5"})
    CHECK_THROWS_WITH_AS(parse_cpu_list(bad, 4),
                         doctest::Contains("is not a CPU list"), InputError);
  CHECK_THROWS_WITH_AS(parse_cpu_list("0,0", 2), "--cpus: CPU 0 is listed twice in '0,0'", InputError);

  StreamOptions o;
  o.cpus = "0";
  CHECK(thread_policy(o).cpus == std::array<int, 3>{0, 0, 0});
  CHECK(thread_policy(o).rt_priority == 0);
  o.rt = true;
  o.rt_priority = 42;
  CHECK(thread_policy(o).rt_priority == 42);
  if (cpus_configured() >= 2) {
    o.cpus = "1,0";
    CHECK(thread_policy(o).cpus == std::array<int, 3>{1, 0, 1});  // round-robin: source, processor, sink
    o.inline_process = true;
    CHECK(thread_policy(o).cpus == std::array<int, 3>{1, 0, 0});  // inline: source, then sink
  }
}

TEST_CASE("rerun command lines carry the run modes, defaults left out") {
  StreamOptions o;
  CHECK_FALSE(has(stream_command_line("synth", o), "--baseline"));
  CHECK_FALSE(has(stream_command_line("synth", o), "--wait"));
  CHECK_FALSE(has(stream_command_line("synth", o), "--rt"));
  o.baseline = "0.5s";  // the default, written otherwise
  CHECK_FALSE(has(stream_command_line("synth", o), "--baseline"));
  o.baseline = "0";
  o.rt = true;
  o.rt_priority = 50;
  o.cpus = "0-1";
  o.wait = WaitMode::hybrid;
  o.inline_process = true;
  const std::string line = stream_command_line("synth", o);
  CHECK(has(line, " --baseline 0"));
  CHECK(has(line, " --rt --rt-priority 50"));
  CHECK(has(line, " --cpus 0-1"));
  CHECK(has(line, " --wait hybrid"));
  CHECK(has(line, " --inline"));
  o.rt_priority = kDefaultRtPriority;
  CHECK_FALSE(has(stream_command_line("synth", o), "--rt-priority"));
  MonitorOptions mo;
  mo.stream.wait = WaitMode::spin;
  mo.stream.inline_process = true;
  CHECK(has(monitor_command_line(mo), " --wait spin --inline"));
}

TEST_CASE("bad run-mode flags: exit 2, one line naming the flag, before anything streams") {
  testutil::TempDir td;
  const std::string json = td.file("r.json");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::string n = std::to_string(cpus_configured());
  const std::vector<Case> cases{
      {{"--cpus", "4000"}, "--cpus: CPU 4000 does not exist (this machine has " + n + ")"},
      {{"--cpus", "0-x"}, "--cpus: '0-x' is not a CPU list"},
      {{"--cpus", "0,0"}, "--cpus: CPU 0 is listed twice"},
      {{"--wait", "fast"}, "--wait: 'fast' is not block, spin or hybrid"},
      {{"--rt", "--rt-priority", "0"}, "--rt-priority: 0 is out of range 1..99"},
      {{"--rt", "--rt-priority", "100"}, "--rt-priority: 100 is out of range 1..99"},
      {{"--rt-priority", "50"}, "--rt-priority requires --rt"},
      {{"--baseline", "5"}, "--baseline: '5' needs a unit"},
      {{"--baseline", "2h"}, "--baseline"},
      {{"--baseline", "61s"}, "--baseline: 61s is out of range 0..60s"},
      {{"--rt", "--wait", "spin"}, "--wait: spin under --rt needs a CPU of its own for each of the 3 engine threads"},
      {{"--rt", "--wait", "spin", "--inline", "--cpus", "0"},
       "--wait: spin under --rt needs a CPU of its own for each of the 2 engine threads"},
  };
  for (const char* cmd : {"synth", "replay"}) {
    for (const auto& c : cases) {
      std::vector<std::string> args{cmd};
      if (std::string(cmd) == "replay") args.push_back(testutil::source_dir() + "/audio/mix_stereo_48k.flac");
      args.insert(args.end(), c.args.begin(), c.args.end());
      args.insert(args.end(), {"--json", json, "--quiet"});
      CAPTURE(cmd);
      CAPTURE(c.says);
      const auto r = run_cli(args);
      CHECK(r.rc == 2);
      CHECK(has(r.err, c.says));
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
      CHECK_FALSE(std::filesystem::exists(json));
    }
  }
  // monitor and compare take the flags too, and refuse bad values the same way (before any device)
  for (const auto& args : std::vector<std::vector<std::string>>{{"monitor", "--wait", "fast"},
                                                                 {"compare", "--synth", "noise", "--wait", "fast"}}) {
    const auto r = run_cli(args);
    CHECK(r.rc == 2);
    CHECK(has(r.err, "--wait: 'fast' is not block, spin or hybrid"));
  }
}

TEST_CASE("the run modes run from the command line: --cpus, --wait, --inline, --baseline") {
  testutil::TempDir td;
  for (const auto& extra : std::vector<std::vector<std::string>>{{"--cpus", "0"},
                                                                  {"--wait", "hybrid", "--baseline", "50ms"},
                                                                  {"--inline", "--baseline", "0"},
                                                                  {"--inline", "--wait", "spin", "--baseline", "20ms"}}) {
    std::vector<std::string> args{"synth", "--duration", "0.3s", "--chunk", "256", "--json", td.file("r.json"), "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string line;
    for (const auto& a : extra) line += a + " ";
    CAPTURE(line);
    const auto r = run_cli(args);
    CHECK(r.rc == 0);
    CHECK(r.err.empty());
    const auto j = testutil::load_json(td.file("r.json"));
    CHECK(j["counts"]["emitted"].get<int>() + j["counts"]["drops"].get<int>() == 57);  // 0.3 s of 256-frame chunks
  }
}

TEST_CASE("trace of an inline run: the thread that reads and processes is named once, for both stages") {
  testutil::TempDir td;
  for (const bool inl : {true, false}) {
    CAPTURE(inl);
    std::vector<std::string> args{"synth", "--duration", "0.1s", "--chunk", "256", "--speed", "max",
                                  "--trace", td.file("t.json"), "--quiet"};
    if (inl) args.push_back("--inline");
    const auto r = run_cli(args);
    REQUIRE(r.rc == 0);
    const auto t = testutil::load_json(td.file("t.json"));
    std::map<int, std::vector<std::string>> names;  // tid -> thread_name labels
    std::set<int> slice_tids;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] == "M" && e["name"] == "thread_name") names[e["tid"].get<int>()].push_back(e["args"]["name"]);
      if (e["ph"] == "X") slice_tids.insert(e["tid"].get<int>());
    }
    for (const auto& [tid, labels] : names) {
      CAPTURE(tid);
      CHECK(labels.size() == 1);  // each thread named once
    }
    for (const int tid : slice_tids) CHECK(names.count(tid) == 1);  // every slice on a named track
    bool combined = false;
    for (const auto& [tid, labels] : names) combined = combined || labels.front() == "source and process thread";
    CHECK(combined == inl);
    CHECK(names.size() == (inl ? 4u : 5u));
  }
}

TEST_CASE("--rt: runs where the system permits SCHED_FIFO and mlockall, else exit 3 saying what was refused") {
  testutil::TempDir td;
  const bool fifo = fifo_permitted();
  const bool lock = mlockall_permitted();
  MESSAGE("SCHED_FIFO permitted: " << fifo << ", mlockall permitted: " << lock);
  const auto r = run_cli({"synth", "--duration", "0.3s", "--chunk", "256", "--rt", "--rt-priority", "20", "--json",
                          td.file("r.json"), "--quiet"});
  if (fifo && lock) {
    CHECK(r.rc == 0);
    CHECK(r.err.empty());
    const auto j = testutil::load_json(td.file("r.json"));
    CHECK(j["counts"]["emitted"].get<int>() + j["counts"]["drops"].get<int>() == 57);
  } else {
    CHECK(r.rc == 3);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    if (!fifo) {
      CHECK(has(r.err, "--rt: SCHED_FIFO at priority 20 was refused"));
      if (has(r.err, "Operation not permitted")) CHECK(has(r.err, "CAP_SYS_NICE"));
    } else {
      CHECK(has(r.err, "--rt: locking the process's memory (mlockall) was refused"));
    }
    CHECK_FALSE(std::filesystem::exists(td.file("r.json")));  // nothing streamed, nothing written
  }
}

TEST_CASE("--rt where the system refuses: exit 3 before streaming, one line saying what and why") {
  // the refusal is made here: a root shell drops the capability and lowers the limit
  if (geteuid() != 0 || !std::filesystem::exists("/usr/bin/setpriv")) {
    MESSAGE("skipped: needs root and setpriv to take the permission away");
    return;
  }
  testutil::TempDir td;
  auto refused_run = [&](const std::string& limit, const std::string& cap) {
    const std::string cmd = "ulimit -S " + limit + " && exec /usr/bin/setpriv --inh-caps=-" + cap +
                            " --bounding-set=-" + cap + " '" + testutil::bin_path() +
                            "' synth --duration 0.3s --rt --quiet --json '" + td.file("r.json") + "' 2>'" +
                            td.file("err") + "' </dev/null";
    const int st = std::system(("bash -c \"" + cmd + "\"").c_str());
    testutil::RunResult r;
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.err = testutil::slurp(td.file("err"));
    return r;
  };
  const auto fifo = refused_run("-r 0", "sys_nice");
  CHECK(fifo.rc == 3);
  CHECK(has(fifo.err, "chunkscope: --rt: SCHED_FIFO at priority 70 was refused: Operation not permitted (needs CAP_SYS_NICE"));
  CHECK(std::count(fifo.err.begin(), fifo.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(td.file("r.json")));
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer makes mlockall a no-op (it would lock the shadow memory): nothing to refuse
  MESSAGE("skipped: mlockall is a no-op under AddressSanitizer");
  return;
#endif
  const auto lock = refused_run("-l 64", "ipc_lock");
  CHECK(lock.rc == 3);
  CHECK(has(lock.err, "chunkscope: --rt: locking the process's memory (mlockall) was refused"));
  CHECK(has(lock.err, "the limit is 64 kB"));
  CHECK(std::count(lock.err.begin(), lock.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(td.file("r.json")));
}
