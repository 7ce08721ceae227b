// The cost of what hosting adds, measured in one run with the configurations interleaved
// round by round (make bench-hosted):
//   step timing  process() p50 of a 6-step unfused chain with each step timed against the
//                same chain untimed, per step;
//   hosting      the example compressor's call as chunkscope times it (its step, the call
//                alone) and process() as a whole, against the stage called in a bare loop
//                on the same planar chunks;
//   audit        process() p50 of a pass-through hosted stage with the audit on and off,
//                on by the system calls around each call and on by the thread's
//                context-switch record (rt/sched_record.hpp), which the engine's threads keep;
//   interposer   malloc+free through the binary's interposer, not armed, against the C library.
// Each figure is the median over rounds of each round's p50 of `calls` calls.
//   bench_hosted COMPRESSOR.so CLEAN.so [rounds] [calls]
#include <dlfcn.h>
#include <sys/resource.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "chunkscope/stage.h"
#include "rt/clock.hpp"
#include "rt/cpu_backend.hpp"
#include "rt/denormals.hpp"
#include "rt/sched_record.hpp"
#include "src/plan.hpp"

using namespace chunkscope;

namespace {

constexpr int kFrames = 256, kChannels = 2;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// p50 of `calls` timed calls of `f` (which returns the ns to record).
double p50_of(int calls, const std::function<std::int64_t()>& f) {
  std::vector<double> t(static_cast<std::size_t>(calls));
  for (int i = 0; i < 20; ++i) (void)f();
  for (auto& x : t) x = static_cast<double>(f());
  return median(t);
}

// noise-like input, the same for every configuration
std::vector<float> input() {
  std::vector<float> x(static_cast<std::size_t>(kFrames * kChannels));
  std::uint32_t s = 12345;
  for (auto& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int>(s >> 8) - (1 << 23)) / static_cast<float>(1 << 24);
  }
  return x;
}

struct Chain {
  CpuBackend be;
  Chain(const std::string& chain, bool fuse, bool step_timing) : be(fuse, std::nullopt, step_timing) {
    const Plan plan = plan_chain(chain, 48000, fuse);
    if (be.prepare({48000, kChannels, kFrames, DType::f32}, lay_out_plan(plan, kChannels)) != Status::ok) {
      std::fprintf(stderr, "bench_hosted: cannot prepare '%s': %s\n", chain.c_str(), be.last_error());
      std::exit(2);
    }
  }
};

// process() wall time of one chunk; `step` >= 0: that step's own time instead.
std::int64_t call_process(CpuBackend& be, std::vector<float>& work, const std::vector<float>& in, int step) {
  work = in;
  ProcessStats ps{};
  const std::int64_t t0 = now_ns();
  (void)be.process({work.data(), kFrames, kChannels, DType::f32}, &ps);
  const std::int64_t t1 = now_ns();
  return step >= 0 ? static_cast<std::int64_t>(ps.step_ns[step]) : t1 - t0;
}

struct Bare {
  void* lib = nullptr;
  const chunkscope_stage_descriptor* d = nullptr;
  void* inst = nullptr;
  std::vector<float> l, r;
  explicit Bare(const char* path) : l(kFrames), r(kFrames) {
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    auto entry = lib ? reinterpret_cast<chunkscope_stage_entry_fn>(dlsym(lib, CHUNKSCOPE_STAGE_ENTRY)) : nullptr;
    d = entry ? entry(CHUNKSCOPE_STAGE_ABI_VERSION) : nullptr;
    chunkscope_stage_param p{"ratio", "4"};
    chunkscope_stage_config cfg{sizeof cfg, 48000, kFrames, kChannels, &p, 1};
    char err[256] = {};
    inst = d ? d->create(&cfg, err, sizeof err) : nullptr;
    if (!inst) {
      std::fprintf(stderr, "bench_hosted: cannot load '%s' %s\n", path, err);
      std::exit(2);
    }
  }
  // the call alone, on the planar chunk (the conversion outside the timed span)
  std::int64_t call(const std::vector<float>& in) {
    for (int f = 0; f < kFrames; ++f) {
      l[static_cast<std::size_t>(f)] = in[2 * static_cast<std::size_t>(f)];
      r[static_cast<std::size_t>(f)] = in[2 * static_cast<std::size_t>(f) + 1];
    }
    float* ch[2] = {l.data(), r.data()};
    const std::int64_t t0 = now_ns();
    (void)d->process(inst, ch, kFrames);
    return now_ns() - t0;
  }
};

// A malloc+free pair of 64 bytes, 64 times, through the binary's allocator interposer (not
// armed: what every allocation outside hosted steps pays) or straight into the C library.
extern "C" void* __libc_malloc(std::size_t);
extern "C" void __libc_free(void*);
std::int64_t heap_pairs(bool interposed) {
  void* volatile p;
  const std::int64_t t0 = now_ns();
  for (int i = 0; i < 64; ++i) {
    if (interposed) {
      p = std::malloc(64);
      std::free(p);
    } else {
      p = __libc_malloc(64);
      __libc_free(p);
    }
  }
  return now_ns() - t0;
}

// One read of what the audit reads around each hosted call: the thread's rusage (voluntary
// switches) or its CPU clock; both are system calls.
std::int64_t one_rusage() {
  rusage ru{};
  const std::int64_t t0 = now_ns();
  getrusage(RUSAGE_THREAD, &ru);
  return now_ns() - t0;
}
std::int64_t one_cpu_clock() {
  const std::int64_t t0 = now_ns();
  (void)thread_cpu_ns();
  return now_ns() - t0;
}

// What the fault handling and the watchdog add to each hosted call, 256 times: the backend's
// step, label and chunk for the fault handler, its watch for the watchdog (the call's start
// stored before it and cleared after), and the host's mark around the foreign call itself.
std::int64_t guard_cycles(HostedWatch& watch) {
  HostedWhere& where = hosted_where();
  static const char* const kLabel = "so:bench";
  const std::int64_t t0 = now_ns();
  for (int i = 0; i < 256; ++i) {
    where.chunk.store(static_cast<std::uint64_t>(i), std::memory_order_relaxed);
    where.label.store(kLabel, std::memory_order_relaxed);
    where.step.store(2, std::memory_order_relaxed);
    watch.step.store(2, std::memory_order_relaxed);
    watch.label.store(kLabel, std::memory_order_relaxed);
    watch.call.store("process", std::memory_order_relaxed);
    watch.chunk.store(static_cast<std::uint64_t>(i), std::memory_order_relaxed);
    watch.since.store(t0 + i, std::memory_order_release);
    {
      const ForeignCall call("process");
      asm volatile("" ::: "memory");  // the call would be here
    }
    watch.since.store(0, std::memory_order_relaxed);
    where.step.store(0, std::memory_order_relaxed);
    where.chunk.store(kNoChunk, std::memory_order_relaxed);
  }
  return now_ns() - t0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_hosted COMPRESSOR.so CLEAN.so [rounds] [calls]\n");
    return 2;
  }
  const std::string comp = argv[1], clean = argv[2];
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 9;
  const int calls = argc > 4 ? std::atoi(argv[4]) : 5000;
  const std::string six = "hp:80 | lp:12k | peak:1k:gain=2 | lowshelf:200:gain=1 | highshelf:8k:gain=-1 | notch:3k";
  Chain timed(six, false, true), untimed(six, false, false);
  Chain hosted("so:" + comp + ":ratio=4", true, true);
  Chain audited("so:" + clean, true, true), unaudited("so:" + clean, true, true);
  unaudited.be.set_audit(false);
  Bare bare(comp.c_str());
  const std::vector<float> in = input();
  std::vector<float> work;
  ScopedFlushDenormals ftz;  // as the processor thread runs
  std::vector<double> on, off, step, whole, alone, aud, noaud, via, direct, ru, clk, aud_rec, on_rec, guard;
  HostedWatch watch;
  SchedRecord record;  // as an engine thread keeps it
  const bool have_record = record.open();
  for (int r = 0; r < rounds; ++r) {
    on.push_back(p50_of(calls, [&] { return call_process(timed.be, work, in, -1); }));
    off.push_back(p50_of(calls, [&] { return call_process(untimed.be, work, in, -1); }));
    step.push_back(p50_of(calls, [&] { return call_process(hosted.be, work, in, 0); }));
    whole.push_back(p50_of(calls, [&] { return call_process(hosted.be, work, in, -1); }));
    alone.push_back(p50_of(calls, [&] { return bare.call(in); }));
    aud.push_back(p50_of(calls, [&] { return call_process(audited.be, work, in, -1); }));
    noaud.push_back(p50_of(calls, [&] { return call_process(unaudited.be, work, in, -1); }));
    if (have_record) {
      SchedRecord::set_current(&record);
      aud_rec.push_back(p50_of(calls, [&] { return call_process(audited.be, work, in, -1); }));
      on_rec.push_back(p50_of(calls, [&] { return call_process(timed.be, work, in, -1); }));
      SchedRecord::set_current(nullptr);
    }
    via.push_back(p50_of(calls, [&] { return heap_pairs(true); }));
    direct.push_back(p50_of(calls, [&] { return heap_pairs(false); }));
    ru.push_back(p50_of(calls, one_rusage));
    clk.push_back(p50_of(calls, one_cpu_clock));
    guard.push_back(p50_of(calls, [&] { return guard_cycles(watch); }));
  }
  const double m_on = median(on), m_off = median(off), m_step = median(step), m_whole = median(whole);
  const double m_alone = median(alone), m_aud = median(aud), m_noaud = median(noaud);
  fmt::print("bench_hosted: {} rounds x {} calls, chunks of {} frames x {} channels f32, medians of per-round p50\n", rounds,
             calls, kFrames, kChannels);
  fmt::print("step timing   6-step chain process p50 {:.0f} ns timed, {:.0f} ns untimed: {:.1f} ns per step (target <= 100)\n",
             m_on, m_off, (m_on - m_off) / 6);
  fmt::print("hosting       compressor step p50 {:.0f} ns, bare loop {:.0f} ns: {:.3f}x (target <= 1.05); whole process() "
             "{:.0f} ns = {:.3f}x (with the planar conversions and the audit)\n",
             m_step, m_alone, m_step / m_alone, m_whole, m_whole / m_alone);
  fmt::print("audit         pass-through stage process p50 {:.0f} ns audited, {:.0f} ns not: {:.0f} ns per hosted call "
             "(target <= 500)\n",
             m_aud, m_noaud, m_aud - m_noaud);
  fmt::print("              of which system calls: getrusage p50 {:.0f} ns and the thread CPU clock p50 {:.0f} ns, "
             "each read twice per call\n",
             median(ru), median(clk));
  if (have_record)
    fmt::print("step timing, record  6-step chain process p50 {:.0f} ns timed with the record read per step: {:.1f} ns "
               "per step over untimed\n",
               median(on_rec), (median(on_rec) - m_off) / 6);
  if (have_record)
    fmt::print("audit, record pass-through stage process p50 {:.0f} ns audited from the context-switch record: {:.0f} ns "
               "per hosted call over the unaudited call (target <= 300)\n",
               median(aud_rec), median(aud_rec) - m_noaud);
  else
    fmt::print("audit, record not measured: the kernel refuses perf events here (errno {})\n", record.error());
  fmt::print("fault guard   the marks and the watchdog's watch around each hosted call: {:.2f} ns per call (256 "
             "calls p50 {:.0f} ns), against the call's p50 {:.0f} ns\n",
             median(guard) / 256, median(guard), m_noaud);
  fmt::print("interposer    64 malloc+free pairs p50 {:.0f} ns through it (not armed), {:.0f} ns straight into the C "
             "library: {:.2f} ns per pair\n",
             median(via), median(direct), (median(via) - median(direct)) / 64);
  return 0;
}
