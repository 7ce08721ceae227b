// Blame that knows the platform: each part of a late chunk's latency has one owner, and
// one hold-up that delays several chunks is one stall event.
#include <doctest/doctest.h>

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <sstream>
#include <nlohmann/json.hpp>

#include "rt/clock.hpp"
#include "rt/run_stats.hpp"
#include "rt/sched_record.hpp"
#include "src/report/build.hpp"
#include "src/report/terminal.hpp"
#include "tests/stats_fixture.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;

namespace {

using stats_fixture::config;
using stats_fixture::kB;
using stats_fixture::kD;
using stats_fixture::kT0;
using stats_fixture::on_time;

std::int64_t part(const LatencySplit& s, Cause c) { return s.ns[static_cast<std::size_t>(c)]; }

}  // namespace

TEST_CASE("blame: a chunk's latency splits into parts that add up to it, each with one owner") {
  ChunkRecord prev = on_time(0);
  ChunkRecord r = on_time(1);
  // the processor was still busy with the previous chunk for 100 us after this one was ready
  prev.proc_end = r.ready + 100'000;
  r.dequeue = prev.proc_end + 8'000;
  r.proc_start = r.dequeue;
  r.proc_end = r.proc_start + 50'000;
  r.proc_cpu_ns = 20'000;  // 30 us of its 50 us the thread was off the CPU
  r.sink_start = r.proc_end + 6'000;
  r.emit = r.sink_start + 2'000;
  const LatencySplit s = split_latency(r, prev.proc_end, prev.emit, 0.0);
  CHECK(part(s, Cause::source_wake) == 30'000);
  CHECK(part(s, Cause::source_read) == 10'000);
  CHECK(part(s, Cause::processor_busy) == 100'000);
  CHECK(part(s, Cause::handoff_in) == 8'000);
  CHECK(part(s, Cause::process) == 20'000);
  CHECK(part(s, Cause::process_descheduled) == 30'000);
  CHECK(part(s, Cause::handoff_out) == 6'000);
  CHECK(part(s, Cause::sink_write) == 2'000);
  std::int64_t sum = 0;
  for (auto v : s.ns) sum += v;
  CHECK(sum == r.emit - r.sched);
  std::int64_t owners = 0;
  for (auto v : s.owner_ns) owners += v;
  CHECK(owners == sum);
  CHECK(s.owner_ns[static_cast<std::size_t>(Owner::chain)] == 120'000);
  CHECK(s.owner_ns[static_cast<std::size_t>(Owner::platform)] == 30'000 + 8'000 + 30'000 + 6'000);
  CHECK(s.largest == Cause::processor_busy);
  CHECK(s.off_share == doctest::Approx(0.6));
  // the wait behind a chunk that was itself descheduled is the platform's share of it
  const LatencySplit t = split_latency(r, prev.proc_end, prev.emit, 0.5);
  CHECK(part(t, Cause::processor_busy) == 50'000);
  CHECK(part(t, Cause::process_descheduled) == 30'000 + 50'000);
  // spin and sleep steps and GPU sync are the chain's designed waits, not descheduling
  ChunkRecord sp = r;
  sp.calib_ns = 30'000;
  CHECK(part(split_latency(sp, 0, 0, 0), Cause::process_descheduled) == 0);
}

TEST_CASE("blame: processing longer than the budget is the chain's in every chunk, whatever else was late") {
  RunStats st;
  st.prepare(config());
  for (std::uint64_t k = 0; k < 50; ++k) {
    // a spin longer than D: each chunk's processing alone breaks the budget; the source
    // also woke late in some of them
    ChunkRecord r = on_time(k, kD + 200'000);
    r.calib_ns = kD + 200'000;
    r.proc_cpu_ns = static_cast<std::uint32_t>(kD / 2);  // preempted half of the time: a spin still counts
    if (k % 3 == 0) {
      r.woke = r.sched + 2 * kD;
      r.ready = r.woke + 10'000;
      r.dequeue = r.ready + 8'000;
      r.proc_start = r.dequeue;
      r.proc_end = r.proc_start + kD + 200'000;
      r.sink_start = r.proc_end + 6'000;
      r.emit = r.sink_start + 2'000;
    }
    st.add(r);
  }
  CHECK(st.misses == 50);
  CHECK(st.miss_owner[static_cast<std::size_t>(Owner::chain)] == 50);
  for (const auto& m : st.miss_list) CHECK(m.owner == Owner::chain);
}

TEST_CASE("blame: one stall of the whole process is one platform event, however many chunks it held up") {
  RunStats st;
  st.prepare(config());
  std::uint64_t k = 0;
  for (; k < 100; ++k) st.add(*std::make_unique<ChunkRecord>(on_time(k)));
  // an 8.1 ms stall: the source wakes for chunk 100 late, then catches up with chunks
  // 100..102 back to back; all three are emitted within microseconds of each other
  const std::int64_t resume = on_time(100).sched + 8'100'000 + kD;
  for (; k < 103; ++k) {
    ChunkRecord r = on_time(k);
    r.woke = resume + static_cast<std::int64_t>(k - 100) * 2'000;
    r.ready = r.woke + 10'000;
    r.dequeue = r.ready + 8'000;
    r.proc_start = r.dequeue;
    r.proc_end = r.proc_start + 5'000;
    r.sink_start = r.proc_end + 6'000;
    r.emit = r.sink_start + 2'000;
    st.add(r);
  }
  for (; k < 200; ++k) st.add(*std::make_unique<ChunkRecord>(on_time(k)));
  REQUIRE(st.misses >= 2);
  CHECK(st.stalls == 1);
  REQUIRE(st.stall_list.size() == 1);
  const StallEvent& e = st.stall_list.front();
  CHECK(e.first_seq == 100);
  CHECK(e.chunks == st.misses);
  CHECK(e.owner == Owner::platform);
  CHECK(e.cause == Cause::source_wake);
  CHECK(e.cause_ns > 8'000'000);
  CHECK(st.stall_owner[static_cast<std::size_t>(Owner::platform)] == 1);
  CHECK(st.miss_owner[static_cast<std::size_t>(Owner::platform)] == st.misses);

  // the report: one event, the platform's, and the headline says so with its numbers
  const RunReport r = stats_fixture::report_of(st, 200);
  REQUIRE(r.verdict.owner.has_value());
  CHECK(*r.verdict.owner == Owner::platform);
  CHECK(r.verdict.text.find("1 stall event(s)") != std::string::npos);
  CAPTURE(r.verdict.text);
  CHECK(r.verdict.text.find("this machine's scheduling does not keep this budget (the source woke up 13.") !=
        std::string::npos);
  CHECK(r.counts.events() == 1);
  std::ostringstream os;
  print_report(os, r);
  CHECK(os.str().find("stalls     1 event(s)") != std::string::npos);
}

TEST_CASE("blame: misses that do not overlap are separate events, a sink busy with earlier chunks is the consumer's") {
  RunStats st;
  st.prepare(config());
  for (std::uint64_t k = 0; k < 60; ++k) {
    ChunkRecord r = on_time(k);
    if (k == 20 || k == 40) {  // the sink's write of the chunk before took 6 ms
      r.sink_start = r.proc_end + 6'000'000;
      r.emit = r.sink_start + 2'000;
    }
    st.add(r);
  }
  CHECK(st.misses == 2);
  CHECK(st.stalls == 2);
  CHECK(st.stall_owner[static_cast<std::size_t>(Owner::platform)] == 2);  // a late hand-off to the sink
  RunStats io;
  io.prepare(config());
  ChunkRecord prev{};
  for (std::uint64_t k = 0; k < 60; ++k) {
    ChunkRecord r = on_time(k);
    if (k == 20) {  // this chunk's own write took 6 ms
      r.emit = r.sink_start + 6'000'000;
    }
    if (k == 21) {  // and the next waited for it
      r.sink_start = prev.emit + 3'000;
      r.emit = r.sink_start + 2'000;
    }
    io.add(r);
    prev = r;
  }
  CHECK(io.miss_list.size() >= 1);
  CHECK(io.miss_list[0].owner == Owner::io);
  CHECK(io.miss_list[0].cause == Cause::sink_write);
  if (io.miss_list.size() > 1) {
    CHECK(io.miss_list[1].cause == Cause::sink_busy);
    CHECK(io.stalls == 1);  // chunk 21 was scheduled before chunk 20 was out: the same hold-up
  }
}

TEST_CASE("cadence: a consumer holding the margin runs dry exactly when L > B + margin") {
  RunStats st;
  st.prepare(config());
  for (std::uint64_t k = 0; k < 30; ++k) {
    ChunkRecord r = on_time(k);
    const std::int64_t L = k == 10 ? kB + 1 : k == 20 ? kD + 1 : k == 25 ? kD : 0;  // a miss within the margin, one beyond, one at it
    if (L > 0) r.emit = r.sched + L;
    st.add(r);
  }
  CHECK(st.misses == 3);
  CHECK(st.dry_chunks == 1);
  CHECK(st.dry_first_seq == 20);
  CHECK(st.dry_worst_ns == 1);
}

namespace {

// 100 chunks on time, then one whose source woke `wake_ns` late, processed `proc_ns` and
// waited `handoff_out_ns` for the sink; then on time again. The baseline's tails as given.
// `streams`: the run's streams whose processing shares the machine (RunStatsConfig::load_streams),
// on one CPU: at 5 us per chunk, 534 of them hold half of it (kD = 5.333 ms).
void one_late_wake(RunStats& st, std::int64_t wake_max, std::int64_t handoff_max, std::int64_t wake_ns,
                   std::int64_t proc_ns, std::int64_t handoff_out_ns = 6'000, int streams = 1) {
  RunStatsConfig cfg = config();
  cfg.load_streams = streams;
  cfg.cpus = 1;
  st.prepare(cfg);
  st.set_platform_tails(wake_max, handoff_max);
  std::uint64_t k = 0;
  for (; k < 100; ++k) st.add(*std::make_unique<ChunkRecord>(on_time(k)));
  ChunkRecord r = on_time(k++, proc_ns);
  r.woke = r.sched + wake_ns;
  r.ready = r.woke + 10'000;
  r.dequeue = r.ready + 8'000;
  r.proc_start = r.dequeue;
  r.proc_end = r.proc_start + proc_ns;
  r.sink_start = r.proc_end + handoff_out_ns;
  r.emit = r.sink_start + 2'000;
  st.add(r);
  for (; k < 200; ++k) {
    ChunkRecord n = on_time(k);
    if (n.sched < r.emit) continue;  // the stall's catch-up is not what these tests look at
    st.add(n);
  }
}

std::uint64_t owned(const RunStats& st, Owner o) { return st.miss_owner[static_cast<std::size_t>(o)]; }

}  // namespace

TEST_CASE("blame: a platform wait is the platform's only within the baseline's tail and with processing normal") {
  const std::int64_t late = kD + 500'000;  // the source woke a chunk period and 0.5 ms late: a miss
  SUBCASE("within the baseline's latest wake-up: the platform's") {
    RunStats st;
    one_late_wake(st, late + 1'000, 200'000, late, 5'000);
    REQUIRE(st.misses == 1);
    CHECK(owned(st, Owner::platform) == 1);
    CHECK(st.platform_unexplained == 0);
    CHECK(st.miss_list.front().owner == Owner::platform);
  }
  SUBCASE("later than the baseline ever woke, by a run whose processing holds half the CPUs: the run's own, the chain's") {
    RunStats st;
    one_late_wake(st, late - 1'000, 200'000, late, 5'000, 6'000, 534);
    REQUIRE(st.misses == 1);
    CHECK(owned(st, Owner::platform) == 0);
    CHECK(owned(st, Owner::chain) == 1);
    CHECK(st.platform_unexplained == 1);
    CHECK(st.miss_list.front().owner == Owner::chain);
    CHECK(st.miss_list.front().cause == Cause::source_wake);  // the largest part is still named
    REQUIRE(st.stall_list.size() == 1);
    CHECK(st.stall_list.front().owner == Owner::chain);
  }
  SUBCASE("later than the baseline ever woke, by a run that holds less than half the CPUs: the platform's, unexplained") {
    // 533 streams of 5 us hold 2.665 ms of each 5.333 ms: just under half of the one CPU
    for (int streams : {1, 533}) {
      CAPTURE(streams);
      RunStats st;
      one_late_wake(st, late - 1'000, 200'000, late, 5'000, 6'000, streams);
      REQUIRE(st.misses == 1);
      CHECK(owned(st, Owner::platform) == 1);
      CHECK(owned(st, Owner::chain) == 0);
      CHECK(st.platform_unexplained == 1);
      CHECK(st.miss_list.front().owner == Owner::platform);
    }
  }
  SUBCASE("within the tail, but processing above the run's p99 so far: the chain's") {
    RunStats st;
    one_late_wake(st, late + 1'000, 200'000, late, 50'000);
    REQUIRE(st.misses == 1);
    CHECK(owned(st, Owner::chain) == 1);
    CHECK(st.platform_unexplained == 1);
  }
  SUBCASE("a hand-off longer than the baseline's longest round trip, in a run that loads the machine: the chain's") {
    // the source on time, the sink woke 5 ms late for the chunk
    RunStats st;
    one_late_wake(st, 100'000, 1'000'000, 30'000, 5'000, 5'000'000, 534);
    REQUIRE(st.misses == 1);
    CHECK(st.miss_list.front().cause == Cause::handoff_out);
    CHECK(owned(st, Owner::chain) == 1);
    RunStats light;
    one_late_wake(light, 100'000, 1'000'000, 30'000, 5'000, 5'000'000);
    CHECK(owned(light, Owner::platform) == 1);
    CHECK(light.platform_unexplained == 1);
    RunStats within;
    one_late_wake(within, 100'000, 6'000'000, 30'000, 5'000, 5'000'000);
    CHECK(owned(within, Owner::platform) == 1);
    CHECK(within.platform_unexplained == 0);
  }
  SUBCASE("no baseline (--baseline 0, --speed max): the largest share decides, as before") {
    RunStats st;
    one_late_wake(st, 0, 0, late, 50'000);
    REQUIRE(st.misses == 1);
    CHECK(owned(st, Owner::platform) == 1);
    CHECK(st.platform_unexplained == 0);
  }
}

TEST_CASE("blame: the report counts the misses the baseline does not explain, in the JSON and on the terminal") {
  const std::int64_t late = kD + 500'000;
  RunStats st;
  one_late_wake(st, late - 1'000, 200'000, late, 5'000, 6'000, 534);
  const RunReport r = stats_fixture::report_of(st, 200);
  REQUIRE(r.counts.platform_unexplained.has_value());
  CHECK(*r.counts.platform_unexplained == 1);
  std::ostringstream os;
  print_report(os, r);
  CAPTURE(os.str());
  CHECK(os.str().find("owners chain 1 (1 whose platform wait the baseline does not explain)") != std::string::npos);
}

// ------------------------------------------------- blame from the scheduler's own record

namespace {

// A process that busy-loops on CPU `cpu` until destroyed: it takes that CPU from whatever
// else is pinned there, on a quiet machine as on a busy one.
class Competitor {
 public:
  explicit Competitor(int cpu) {
    pid_ = ::fork();
    if (pid_ == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      sched_setaffinity(0, sizeof set, &set);
      for (volatile unsigned long i = 0;; i = i + 1) {
      }
    }
  }
  ~Competitor() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

 private:
  pid_t pid_ = -1;
};

// The lowest CPU this process may run on: where a competitor and the engine are put together.
int first_cpu() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) return i;
  return 0;
}

bool recorded(const nlohmann::json& j) {
  return j.at("method").value("blame_from", "").rfind("the scheduler's record", 0) == 0;
}

// A run's JSON, run on the CLI.
nlohmann::json run_json(const testutil::TempDir& td, std::vector<std::string> args) {
  args.push_back("--json");
  args.push_back(td.file("r.json"));
  args.push_back("-q");
  const auto r = testutil::run_cli(args);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  return testutil::load_json(td.file("r.json"));
}

// Every chain-owned miss of a chunk the calibration step ran in (seq % 50 == 0) names that
// step, and at least one is the chain's. (On a busy machine the platform may own some: a
// wake-up or a preemption longer than the step; the record says which, not the test.)
void check_calibration_misses(const nlohmann::json& j) {
  std::size_t chain_named = 0;
  for (const auto& m : j.at("counts").at("miss_list")) {
    if (m.at("seq").get<std::uint64_t>() % 50 != 0) continue;
    CAPTURE(m.dump());
    if (m.at("owner") == "chain") {
      CHECK(m.at("step") == 2);
      ++chain_named;
    }
  }
  CHECK(chain_named >= 1);
  CHECK(j.at("steps").at("list").at(1).at("misses").get<int>() >= 1);
}

}  // namespace

TEST_CASE("the switch record: a thread that sleeps gave the CPU up, a thread that shares its CPU with a busy one was preempted") {
  SchedRecord rec;
  if (!rec.open()) {
    MESSAGE("skipped: the kernel refuses perf events here (errno " << rec.error() << ")");
    return;
  }
  const std::int64_t a = now_ns();
  for (int i = 0; i < 5; ++i) sleep_until_ns(now_ns() + 1'000'000);
  const OffCpu slept = rec.off_between(a, now_ns());
  CHECK(slept.blocks >= 5);
  CHECK(slept.blocked_ns >= 5'000'000);  // each sleep lasts at least its time
  // pinned to one CPU beside a busy process: the scheduler shares the CPU by preempting
  cpu_set_t old, one;
  sched_getaffinity(0, sizeof old, &old);
  const int cpu = first_cpu();
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  OffCpu busy;
  {
    Competitor c(cpu);
    const std::int64_t b = now_ns();
    spin_until_ns(b + 300'000'000);
    busy = rec.off_between(b, now_ns());
  }
  sched_setaffinity(0, sizeof old, &old);
  CHECK(busy.preemptions >= 1);
  CHECK(busy.preempted_ns > 0);
  const SwitchTotals t = rec.totals();
  CHECK(t.blocks >= 5);
  CHECK(t.preemptions >= busy.preemptions);
  SchedRecord refused;
  CHECK_FALSE(refused.open(true));
  CHECK(refused.error() == EACCES);
}

TEST_CASE("the switch record: a step that spins 3 ms every 50th chunk owns its misses, the step named") {
  testutil::TempDir td;
  const auto j = run_json(td, {"synth", "--duration", "3s", "--chunk", "128", "-c", "hp:80 | spin:3ms:every=50 | lp:12k"});
  if (!recorded(j)) MESSAGE("judged without the record: " << j.at("method").at("blame_from").get<std::string>());
  check_calibration_misses(j);
}

TEST_CASE("the switch record: a step that sleeps 3 ms every 50th chunk is blocked, the chain's, the step named") {
  testutil::TempDir td;
  const auto j = run_json(td, {"synth", "--duration", "3s", "--chunk", "128", "-c", "hp:80 | sleep:3ms:every=50 | lp:12k"});
  check_calibration_misses(j);
  if (!recorded(j)) {
    MESSAGE("skipped the split: the kernel refuses perf events here");
    return;
  }
  // the sleep is blocked time inside processing, and the processor's own
  CHECK(j.at("process_split").at("blocked").at("max").get<double>() >= 3e6);
  // every stage is split by the record of the thread that lived it
  for (const char* stage : {"source", "queue_in", "process", "queue_out", "sink"}) {
    CAPTURE(stage);
    CHECK(j.at("off_cpu").at(stage).at("preempted").at("count").get<double>() > 0);
    CHECK(j.at("off_cpu").at(stage).at("blocked").contains("p99"));
  }
  CHECK(j.at("off_cpu").at("process").at("blocked").at("max").get<double>() >= 3e6);
  // each miss says how much of it the machine took
  for (const auto& m : j.at("counts").at("miss_list")) CHECK(m.at("preempted_ns").get<double>() >= 0);
}

// A chain replayed beside a busy process pinned to the engine's CPU: every miss is the
// machine's (the chain's processing takes microseconds of its budget), so no miss is the
// chain's and no step is named, whatever the machine's own load.
void check_clean_beside_competitor(const std::string& chain, const std::string& chunk) {
  testutil::TempDir td;
  const std::string mix = testutil::source_dir() + "/audio/mix_stereo_48k.flac";
  nlohmann::json j;
  const int cpu = first_cpu();
  {
    Competitor c(cpu);
    j = run_json(td, {"replay", mix, "--chunk", chunk, "--cpus", std::to_string(cpu), "--baseline", "0.2s", "-c", chain});
  }
  if (!recorded(j)) {
    MESSAGE("skipped: the kernel refuses perf events here");
    return;
  }
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // a sanitizer build adds its own checks and page faults (its shadow memory) to the chain's
  // processing: there a late chunk can be the chain's own doing, so that none is is checked
  // in the optimised build only (CI once saw 2 such misses of 1,900 under ASan)
  MESSAGE("sanitizer build: the chain's misses are not judged here ("
          << j.at("counts").at("miss_owner").at("chain").dump() << " owned by the chain)");
#else
  CHECK(j.at("counts").at("miss_owner").at("chain") == 0);
  for (const auto& s : j.at("steps").at("list")) CHECK(s.at("misses") == 0);
  for (const auto& m : j.at("counts").at("miss_list")) CHECK(m.at("owner") != "chain");
  // the timing verdict names no step as having taken the budget (the audit's words, if
  // any, are another matter)
  CHECK(j.at("verdict").at("text").get<std::string>().find(", took ") == std::string::npos);
#endif
  // the record's split is there: preempted time shown per thread and per chunk
  bool processor = false;
  for (const auto& t : j.at("platform").at("threads"))
    if (t.at("thread") == "processor") processor = t.contains("preempted_ns") && t.contains("blocked_ns");
  CHECK(processor);
  CHECK(j.at("process_split").at("preempted").contains("p99"));
}

TEST_CASE("the switch record: a clean chain beside a busy process on its CPU owns no miss and names no step") {
  check_clean_beside_competitor("hp:80:4 | lp:12k:8", "64");
}

TEST_CASE("plugins: the switch record: a plugin chain at 32 frames beside a busy process never has its step blamed for time off the CPU") {
  if (!std::filesystem::exists("/usr/lib/lv2/fil4.lv2")) {
    MESSAGE("skipped: x42-plugins' fil4 is not installed (scripts/install-deps.sh installs it)");
    return;
  }
  check_clean_beside_competitor("hp:80:4 | lv2:http://gareus.org/oss/lv2/fil4#stereo | lp:12k:8", "32");
}

TEST_CASE("the switch record: off (as where the kernel refuses), the wall-clock rules judge and the report says so") {
  testutil::TempDir td;
  const auto j = run_json(td, {"synth", "--duration", "0.5s", "--switch-record", "off", "-c", "hp:80:4"});
  CHECK(j.at("method").at("blame_from") == "wall-clock rules (the thread CPU clock; --switch-record off)");
  CHECK_FALSE(j.contains("process_split"));
  CHECK_FALSE(j.contains("off_cpu"));
  for (const auto& t : j.at("platform").at("threads")) CHECK_FALSE(t.contains("preempted_ns"));
  const auto r = testutil::run_cli({"synth", "--duration", "0.5s", "--switch-record", "off", "-c", "hp:80:4"});
  CHECK(r.out.find("; blame from wall-clock rules (the thread CPU clock; --switch-record off)") != std::string::npos);
  const auto bad = testutil::run_cli({"synth", "--duration", "0.5s", "--switch-record", "maybe"});
  CHECK(bad.rc == 2);
}
