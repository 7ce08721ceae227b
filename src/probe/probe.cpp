// The probe library (include/chunkscope/probe.h): an application's callback, measured as a
// run.
//
// Design: the callback side writes each block's record straight into a slot of a
// preallocated single-producer/single-consumer ring (begin() claims the slot, section
// calls add into it, end() stamps it and publishes it with one release store); nothing
// else happens there. A reader thread drains the ring every few milliseconds into the
// same RunStats a chunkscope run feeds from its sink thread, so the live metrics, the
// report, the verdict and the diagnosis are the CLI's own. A block is one chunk whose
// stages all collapse into processing: it is scheduled, starts and is handed over at the
// callback's entry, and is emitted at its end; its latency is the callback's own time,
// against the deadline D - margin. A full ring loses the block's record (counted; the
// report is then marked incomplete) rather than wait.
//
// One block at a time: begin() takes the handle's `owner` word with one compare-exchange
// (the calling thread's token for none); a begin that finds another thread's block open
// is counted (concurrent_begins) and dropped, and that thread's section and end calls are
// ignored, so a record is only ever written by the thread holding it, and the ring keeps
// one producer. end() hands `owner` back with a release store.
//
// The handle outlives close(): close() frees the body (ring, statistics, reader, server)
// and keeps the handle, a few hundred bytes, in a list that is never freed, with `owner`
// at kClosed and `closed` set. xrun and device_latency touch only the handle, so a call
// racing close() or after it reads valid memory, and close() has nothing to wait for.
#include "chunkscope/probe.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <pthread.h>

#include "rt/clock.hpp"
#include "rt/denormals.hpp"
#include "rt/run_stats.hpp"
#include "src/environment.hpp"
#include "src/errors.hpp"
#include "src/io/output_file.hpp"
#include "src/metrics/exporter.hpp"
#include "src/options.hpp"
#include "src/machine_load.hpp"
#include "src/render/html.hpp"
#include "src/report/build.hpp"
#include "src/report/schema.hpp"
#include "src/report/trace.hpp"
#include "src/session/stream_session.hpp"

namespace chunkscope::probe {
namespace {

thread_local std::string t_error;  // the calling thread's last open()/close() failure

// A configuration, checked and resolved.
struct Settings {
  std::string name = "app";
  double rate = 0;
  int block = 0, channels = 0;
  std::string margin_text;
  std::int64_t chunk_ns = 0, margin_ns = 0, budget_ns = 0;
  std::vector<std::string> sections;
  std::string json, dir, listen;
  std::uint64_t warmup = 0;
  double baseline_s = 0;
  bool cpu_time = false;
  std::size_t ring = 0;  // a power of two
};

std::string text_of(const char* s, const char* fallback) { return s && *s ? std::string(s) : std::string(fallback); }

void need(bool ok, const char* field, const std::string& what) {
  if (!ok) throw InputError(fmt::format("chunkscope_probe_config.{}: {}", field, what));
}

// Explicit sizes up to 2^20 records (288 bytes each); the default, 2 s of blocks, at least
// 1024 and at most 65536.
constexpr int kMaxRing = 1 << 20;

std::size_t ring_size(const chunkscope_probe_config& c, double rate, int block) {
  const double two_seconds = std::clamp(2 * rate / block, 1024.0, 65536.0);
  const double want = c.ring_blocks > 0 ? c.ring_blocks : two_seconds;
  std::size_t n = 1;
  while (static_cast<double>(n) < want) n <<= 1;
  return n;
}

void check_sections(const chunkscope_probe_config& c, Settings& s) {
  need(c.section_count >= 0 && c.section_count <= CHUNKSCOPE_PROBE_MAX_SECTIONS, "section_count",
       fmt::format("{} is not 0 to {}", c.section_count, CHUNKSCOPE_PROBE_MAX_SECTIONS));
  need(c.section_count == 0 || c.sections, "sections", "NULL with a section_count above 0");
  for (int i = 0; i < c.section_count; ++i) {
    const std::string n = text_of(c.sections[i], "");
    need(!n.empty(), "sections", fmt::format("section {} has no name", i));
    need(std::find(s.sections.begin(), s.sections.end(), n) == s.sections.end(), "sections",
         fmt::format("'{}' is named twice", n));
    s.sections.push_back(n);
  }
}

void check_outputs(Settings& s) {
  if (!s.json.empty()) check_output_path(s.json, fmt::format("chunkscope_probe_config.json_path '{}'", s.json));
  if (!s.dir.empty()) check_output_folder(s.dir, fmt::format("chunkscope_probe_config.report_dir '{}'", s.dir));
  if (!s.listen.empty()) (void)metrics::parse_listen_address(s.listen, "chunkscope_probe_config.metrics_listen");
}

// The first version's configuration: every field up to ring_blocks. A later library reads
// an application's smaller struct over its own defaults; fields are only ever added at the end.
constexpr std::size_t kConfigV1Size = offsetof(chunkscope_probe_config, ring_blocks) + sizeof(int);

chunkscope_probe_config read_config(const chunkscope_probe_config* given) {
  need(given != nullptr, "size", "the configuration is NULL");
  need(given->size >= kConfigV1Size, "size",
       fmt::format("{} bytes, less than the first version's {}: call chunkscope_probe_config_init", given->size, kConfigV1Size));
  chunkscope_probe_config c;
  chunkscope_probe_config_init(&c);
  std::memcpy(&c, given, std::min<std::size_t>(given->size, sizeof c));
  c.size = sizeof c;
  return c;
}

Settings check_config(const chunkscope_probe_config* given) {
  const chunkscope_probe_config conf = read_config(given);
  const chunkscope_probe_config* c = &conf;
  Settings s;
  s.name = text_of(c->name, "app");
  need(std::isfinite(c->rate) && c->rate >= 1000 && c->rate <= 1536000, "rate", fmt::format("{} is not 1000 to 1536000 Hz", c->rate));
  need(c->block_frames >= 1 && c->block_frames <= 1 << 20, "block_frames", fmt::format("{} is not 1 to 1048576", c->block_frames));
  need(c->channels >= 1 && c->channels <= 1024, "channels", fmt::format("{} is not 1 to 1024", c->channels));
  need(c->warmup_blocks >= 0, "warmup_blocks", fmt::format("{} is negative", c->warmup_blocks));
  need(std::isfinite(c->baseline_seconds) && c->baseline_seconds >= 0 && c->baseline_seconds <= 60, "baseline_seconds",
       fmt::format("{} is not 0 to 60", c->baseline_seconds));
  need(c->ring_blocks >= 0 && c->ring_blocks <= kMaxRing, "ring_blocks", fmt::format("{} is not 0 to {}", c->ring_blocks, kMaxRing));
  s.rate = c->rate;
  s.block = c->block_frames;
  s.channels = c->channels;
  s.chunk_ns = static_cast<std::int64_t>(std::llround(1e9 * s.block / s.rate));
  s.margin_text = text_of(c->margin, StreamOptions{}.margin.c_str());
  try {
    s.margin_ns = parse_margin_ns(s.margin_text, s.chunk_ns);
  } catch (const InputError& e) {
    need(false, "margin", e.what());
  }
  s.budget_ns = s.chunk_ns - s.margin_ns;
  check_sections(*c, s);
  s.json = text_of(c->json_path, "");
  s.dir = text_of(c->report_dir, "");
  s.listen = text_of(c->metrics_listen, "");
  s.warmup = static_cast<std::uint64_t>(c->warmup_blocks);
  s.baseline_s = c->baseline_seconds;
  s.cpu_time = c->cpu_time != 0;
  s.ring = ring_size(*c, s.rate, s.block);
  check_outputs(s);
  return s;
}

RunStatsConfig stats_config(const Settings& s) {
  RunStatsConfig sc;
  sc.chunk_ns = s.chunk_ns;
  sc.budget_ns = s.budget_ns;
  sc.dry_after_ns = s.budget_ns + s.margin_ns;
  sc.paced = true;
  sc.warmup = s.warmup;
  sc.media_ns_per_frame = 1e9 / s.rate;
  sc.steps = static_cast<int>(s.sections.size());
  sc.series_capacity = StreamOptions{}.series_limit;
  return sc;
}

}  // namespace
}  // namespace chunkscope::probe

namespace chunkscope::probe {

// What close() frees: the ring, the statistics, the reader and the metrics server. The
// callback's part is touched only by the thread that holds the open block (the handle's
// `owner`), one at a time; taking and handing back `owner` orders one holder's writes
// before the next holder's reads.
struct Body {
  Settings s;
  std::vector<ChunkRecord> ring;
  std::uint64_t mask = 0;
  alignas(64) std::atomic<std::uint64_t> head{0};  // records published by the callback
  alignas(64) std::atomic<std::uint64_t> tail{0};  // records the reader has taken
  // the block holder's state
  alignas(64) ChunkRecord scratch{};  // where a block goes when the ring is full
  ChunkRecord* cur = nullptr;
  std::uint64_t seq = 0;
  std::int64_t media = 0, cpu_start = 0;
  std::array<std::int64_t, CHUNKSCOPE_PROBE_MAX_SECTIONS> sec_start{};
  std::atomic<int> ftz{-1};
  std::atomic<std::int64_t> first_begin{0}, last_end{0};
  // the reader's
  RunStats stats;
  stats::LogHistogram callback_period;
  std::int64_t prev_begin = 0;
  std::uint64_t prev_seq = 0;
  std::thread reader;
  std::atomic<bool> stop{false};
  std::optional<BaselineResult> baseline;
  std::optional<ProcSnapshot> proc_before;
  std::unique_ptr<metrics::MetricsExporter> exporter;

  /// Takes every published record into the statistics. [no-alloc, no-block]
  void drain() noexcept {
    std::uint64_t t = tail.load(std::memory_order_relaxed);
    const std::uint64_t h = head.load(std::memory_order_acquire);
    for (; t != h; ++t) {
      ChunkRecord& r = ring[t & mask];
      if (prev_begin != 0 && r.seq == prev_seq + 1) callback_period.record(r.sched - prev_begin);
      prev_begin = r.sched;
      prev_seq = r.seq;
      stats.add(r);
    }
    tail.store(t, std::memory_order_release);
  }
  void read_loop() {
    const auto nap = std::chrono::nanoseconds(std::clamp<std::int64_t>(s.chunk_ns / 2, 500'000, 5'000'000));
    while (!stop.load(std::memory_order_acquire)) {
      drain();
      std::this_thread::sleep_for(nap);
    }
    drain();
  }
};

// `owner` when no block is open, and after close (no thread's token is either).
constexpr std::uintptr_t kNoBlock = 0;
constexpr std::uintptr_t kClosed = ~std::uintptr_t{0};

/// The calling thread's token: its pthread_t, read from the thread pointer (no system call,
/// never 0 or all ones). [no-alloc, no-block]
std::uintptr_t self_token() noexcept {
  static_assert(sizeof(pthread_t) <= sizeof(std::uintptr_t));
  const pthread_t t = pthread_self();
  std::uintptr_t u = 0;
  std::memcpy(&u, &t, sizeof t);
  return u;
}

}  // namespace chunkscope::probe

using namespace chunkscope;

// The handle an application holds. Design: close() frees the body and keeps this small
// block for the life of the process (retired into a list that is never freed), with `closed`
// set and `owner` at kClosed, so that a call through the handle during or after close reads
// valid memory and does nothing. Everything a call from a thread other than the block
// holder's touches lives here.
struct chunkscope_probe {
  // the callback's line
  alignas(64) std::atomic<std::uintptr_t> owner{probe::kNoBlock};  // the thread holding the open block
  std::atomic<std::int64_t> refused_open{0};  // begins refused as concurrent whose end has not come
  std::unique_ptr<probe::Body> body;          // set by open, freed by close
  std::atomic<std::uint64_t> blocks{0}, lost{0};
  // any thread's line
  alignas(64) std::atomic<bool> closed{false};
  std::atomic<std::uint64_t> xruns{0}, misuse{0}, concurrent_begins{0};
  std::atomic<int> latency_in{-1}, latency_out{-1};
  chunkscope_probe* retired_next = nullptr;
};

namespace chunkscope::probe {
namespace {

std::atomic<chunkscope_probe*> g_retired{nullptr};  // closed handles, kept for late calls

void retire(chunkscope_probe* p) noexcept {
  p->retired_next = g_retired.load(std::memory_order_relaxed);
  while (!g_retired.compare_exchange_weak(p->retired_next, p, std::memory_order_release, std::memory_order_relaxed)) {
  }
}

std::unique_ptr<chunkscope_probe> make_probe(Settings s) {
  auto p = std::make_unique<chunkscope_probe>();
  p->body = std::make_unique<Body>();
  Body& b = *p->body;
  b.s = std::move(s);
  b.ring.assign(b.s.ring, ChunkRecord{});
  b.mask = b.s.ring - 1;
  b.stats.prepare(stats_config(b.s));
  return p;
}

void start_metrics(chunkscope_probe& p) {
  Body& b = *p.body;
  if (b.s.listen.empty()) return;
  metrics::ExporterConfig ec;
  ec.listen = metrics::parse_listen_address(b.s.listen, "chunkscope_probe_config.metrics_listen");
  ec.chain = b.s.name;
  ec.chunk = b.s.block;
  ec.rate = b.s.rate;
  ec.budget_ns = b.s.budget_ns;
  ec.chunk_ns = b.s.chunk_ns;
  ec.steps = b.s.sections;
  b.exporter = std::make_unique<metrics::MetricsExporter>(ec);
  const auto rec = b.exporter->recorders(0);
  b.stats.enable_metrics(rec);
  std::optional<std::int64_t> wake;
  if (b.baseline && b.baseline->wake.count() > 0) wake = b.baseline->wake.value_at_percentile(99);
  chunkscope_probe* raw = &p;
  b.exporter->attach(0, b.stats, nullptr, "app", "callback", wake,
                     [raw] { return raw->xruns.load(std::memory_order_relaxed); });
  b.exporter->start();
}

void measure_before(Body& b) {
  b.proc_before = read_proc_snapshot();
  if (b.s.baseline_s <= 0) return;
  BaselineConfig bc;
  bc.period_ns = b.s.chunk_ns;
  bc.duration_ns = static_cast<std::int64_t>(b.s.baseline_s * 1e9);
  b.baseline = measure_platform(bc);
}

// The plan a report names: one step per section.
Plan section_plan(const Settings& s) {
  Plan plan;
  plan.rate = s.rate;
  plan.spec = s.name;
  for (const auto& n : s.sections) {
    PlanStep st;
    st.kind = PlanStep::Kind::section;
    st.name = n;
    plan.steps.push_back(std::move(st));
  }
  return plan;
}

Workload probe_workload(const Body& b) {
  const Settings& s = b.s;
  Workload w;
  w.command = "probe";
  w.source = "callback of " + s.name;
  w.sink = s.name;
  w.backend = "app";
  w.mode = "callback";
  w.rate = s.rate;
  w.channels = s.channels;
  w.chunk_frames = s.block;
  w.warmup_chunks = s.warmup;
  w.margin_text = s.margin_text;
  w.margin_ns = s.margin_ns;
  w.media_seconds = static_cast<double>(b.stats.frames) / s.rate;
  w.input.kind = InputDesc::Kind::device;
  w.input.device_name = s.name;
  w.input.host_api = "probe";
  w.inline_process = true;
  w.ftz = b.ftz.load() == 1;
  w.baseline_before = b.baseline;
  w.proc_before = b.proc_before;
  w.proc_after = read_proc_snapshot();
  return w;
}

DeviceSection probe_device(const chunkscope_probe& p) {
  const Body& b = *p.body;
  DeviceSection d;
  d.input = d.output = b.s.name;
  d.host_api = "probe";
  d.budget_rule = "a block is due before the callback's period ends: D - margin after the callback began";
  const int in = p.latency_in.load(), out = p.latency_out.load();
  if (in >= 0) d.reported_input_latency_s = in / b.s.rate;
  if (out >= 0) d.reported_output_latency_s = out / b.s.rate;
  d.stream_rate = b.s.rate;
  d.callbacks = p.blocks.load();
  d.callback_period = summarize(b.callback_period);
  d.xruns = p.xruns.load();
  return d;
}

RunOutcome probe_outcome(const chunkscope_probe& p) {
  RunOutcome o;
  const std::uint64_t lost = p.lost.load(), misuse = p.misuse.load(), concurrent = p.concurrent_begins.load();
  auto add = [&o](const std::string& why) { o.reason += (o.reason.empty() ? "" : "; ") + why; };
  if (lost > 0)
    add(fmt::format("{} block record(s) lost: the callback got {} blocks ahead of the probe's reader (raise ring_blocks)",
                    lost, p.body->s.ring));
  if (concurrent > 0)
    add(fmt::format("{} concurrent begin(s) dropped: a block begun on one thread while another thread's block was open "
                    "(concurrent_begins; begin, the section calls and end must come from one thread at a time)",
                    concurrent));
  if (misuse > 0)
    add(fmt::format("{} probe call(s) out of order ignored (an end without a begin, a begin inside a block, "
                    "a section index outside 0..{}, a section begun twice, ended unbegun or open at the block's end, "
                    "a block still open at close)",
                    misuse, static_cast<int>(p.body->s.sections.size()) - 1));
  if (!o.reason.empty()) o.state = RunState::incomplete;
  return o;
}

RunReport probe_report(const chunkscope_probe& p) {
  const Body& b = *p.body;
  EngineResult er;
  er.produced = b.seq;
  er.start_ns = b.first_begin.load();
  er.end_ns = b.last_end.load();
  return build_run_report(probe_workload(b), section_plan(b.s), probe_environment(), b.stats, er, probe_outcome(p),
                          probe_device(p));
}

void write_probe_reports(const Body& b, const RunReport& r) {
  const Settings& s = b.s;
  if (!s.json.empty()) write_report_file(s.json, r, fmt::format("json_path '{}'", s.json));
  if (s.dir.empty()) return;
  const std::string label = fmt::format("report_dir '{}'", s.dir);
  create_output_folder(s.dir, label);
  write_report_file(s.dir + "/report.json", r, label);
  write_text_output(s.dir + "/report.html", render_html(r), label);
  create_output_folder(s.dir + "/hgrm", label);
  write_hgrm_files(s.dir + "/hgrm", b.stats);
}

int fail(int code, const std::string& why) {
  t_error = one_line(why);
  return code;
}

/// A begin that found `held` in `owner`: the probe closed, a begin inside the caller's own
/// block (out of order), or another thread's block open (concurrent: dropped, and its
/// section and end calls ignored). Touches only the handle. [no-alloc, no-block]
void refuse_begin(chunkscope_probe& p, std::uintptr_t held, std::uintptr_t me) noexcept {
  if (held == kClosed) return;
  if (held == me) {
    p.misuse.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  p.concurrent_begins.fetch_add(1, std::memory_order_relaxed);
  p.refused_open.fetch_add(1, std::memory_order_relaxed);
}

/// A section or end call from a thread that holds no open block: nothing after close; part
/// of a block refused as concurrent while one is pending (an end closes one); else out of
/// order. Touches only the handle. [no-alloc, no-block]
void not_holder(chunkscope_probe& p, bool is_end) noexcept {
  if (p.owner.load(std::memory_order_relaxed) == kClosed) return;
  if (is_end) {
    if (p.refused_open.fetch_sub(1, std::memory_order_relaxed) > 0) return;
    p.refused_open.fetch_add(1, std::memory_order_relaxed);
  } else if (p.refused_open.load(std::memory_order_relaxed) > 0) {
    return;
  }
  p.misuse.fetch_add(1, std::memory_order_relaxed);
}

/// Starts the block in the ring's next slot (or the scratch record when the ring is full).
/// Only the thread that has just taken `owner`. [no-alloc, no-block]
void open_block(chunkscope_probe& p, Body& b, int frames, std::int64_t t) noexcept {
  const std::uint64_t h = b.head.load(std::memory_order_relaxed);
  if (h - b.tail.load(std::memory_order_acquire) <= b.mask) {
    b.cur = &b.ring[h & b.mask];
  } else {
    b.cur = &b.scratch;
    p.lost.fetch_add(1, std::memory_order_relaxed);
  }
  ChunkRecord& r = *b.cur;
  std::memset(&r, 0, sizeof r);
  r.seq = b.seq++;
  r.media_frame = b.media;
  r.frames = static_cast<std::uint32_t>(frames > 0 ? frames : 0);
  if (frames < b.s.block) r.flags = kChunkShort;
  r.sched = r.woke = r.ready = r.dequeue = r.proc_start = t;
  r.steps = static_cast<std::uint32_t>(b.s.sections.size());
  b.sec_start.fill(0);
  if (b.s.cpu_time) b.cpu_start = thread_cpu_ns();
  if (r.seq == 0) {
    b.first_begin.store(t, std::memory_order_relaxed);
    b.ftz.store(thread_flushes_denormals() ? 1 : 0, std::memory_order_relaxed);
  }
}

/// The body of the block the calling thread holds, or nullptr (the call then counted as
/// not_holder says). [no-alloc, no-block]
Body* held_body(chunkscope_probe& p, bool is_end) noexcept {
  if (p.owner.load(std::memory_order_relaxed) == self_token()) return p.body.get();
  not_holder(p, is_end);
  return nullptr;
}

}  // namespace
}  // namespace chunkscope::probe

// ---------------------------------------------------------------- the C API

extern "C" {

void chunkscope_probe_config_init(chunkscope_probe_config* c) {
  if (!c) return;
  std::memset(c, 0, sizeof *c);
  c->size = sizeof *c;
  c->warmup_blocks = StreamOptions{}.warmup;
}

int chunkscope_probe_open(const chunkscope_probe_config* config, chunkscope_probe** out) {
  using namespace chunkscope::probe;
  if (out) *out = nullptr;
  t_error.clear();
  try {
    if (!out) throw InputError("chunkscope_probe_open: the out pointer is NULL");
    auto p = make_probe(check_config(config));
    measure_before(*p->body);
    start_metrics(*p);
    Body* body = p->body.get();
    body->reader = std::thread([body] { body->read_loop(); });
    *out = p.release();
    return CHUNKSCOPE_PROBE_OK;
  } catch (const InputError& e) {
    return fail(CHUNKSCOPE_PROBE_BAD_CONFIG, e.what());
  } catch (const std::exception& e) {
    return fail(CHUNKSCOPE_PROBE_FAILED, e.what());
  }
}

const char* chunkscope_probe_last_error(void) { return chunkscope::probe::t_error.c_str(); }

void chunkscope_probe_begin(chunkscope_probe* p, int frames) {
  using namespace chunkscope::probe;
  if (!p) return;
  const std::int64_t t = now_ns();
  const std::uintptr_t me = self_token();
  std::uintptr_t held = kNoBlock;
  if (!p->owner.compare_exchange_strong(held, me, std::memory_order_acquire, std::memory_order_relaxed)) {
    refuse_begin(*p, held, me);
    return;
  }
  open_block(*p, *p->body, frames, t);
}

void chunkscope_probe_end(chunkscope_probe* p) {
  using namespace chunkscope::probe;
  if (!p) return;
  const std::int64_t t = now_ns();
  Body* b = held_body(*p, true);
  if (!b) return;
  ChunkRecord* r = b->cur;
  for (std::size_t i = 0; i < b->s.sections.size(); ++i)  // a section still open: its time is not counted
    if (b->sec_start[i] != 0) p->misuse.fetch_add(1, std::memory_order_relaxed);
  r->proc_end = r->sink_start = r->emit = t;
  if (b->s.cpu_time) r->proc_cpu_ns = static_cast<std::uint32_t>(std::clamp<std::int64_t>(thread_cpu_ns() - b->cpu_start, 1, 0xFFFFFFFF));
  b->media += r->frames;
  b->cur = nullptr;
  b->last_end.store(t, std::memory_order_relaxed);
  p->blocks.fetch_add(1, std::memory_order_relaxed);
  if (r != &b->scratch) b->head.store(b->head.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  p->owner.store(kNoBlock, std::memory_order_release);  // the next holder sees all of the above
}

void chunkscope_probe_section_begin(chunkscope_probe* p, int i) {
  using namespace chunkscope::probe;
  if (!p) return;
  Body* b = held_body(*p, false);
  if (!b) return;
  if (i < 0 || static_cast<std::size_t>(i) >= b->s.sections.size() || b->sec_start[static_cast<std::size_t>(i)] != 0) {
    p->misuse.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  b->sec_start[static_cast<std::size_t>(i)] = now_ns();
}

void chunkscope_probe_section_end(chunkscope_probe* p, int i) {
  using namespace chunkscope::probe;
  if (!p) return;
  const std::int64_t t = now_ns();
  Body* b = held_body(*p, false);
  if (!b) return;
  if (i < 0 || static_cast<std::size_t>(i) >= b->s.sections.size() || b->sec_start[static_cast<std::size_t>(i)] == 0) {
    p->misuse.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::int64_t& start = b->sec_start[static_cast<std::size_t>(i)];
  const std::int64_t sum = b->cur->step_ns[i] + (t - start);
  b->cur->step_ns[i] = static_cast<std::uint32_t>(std::min<std::int64_t>(sum, 0xFFFFFFFF));
  start = 0;
}

void chunkscope_probe_xrun(chunkscope_probe* p) {
  if (p && !p->closed.load(std::memory_order_acquire)) p->xruns.fetch_add(1, std::memory_order_relaxed);
}

void chunkscope_probe_device_latency(chunkscope_probe* p, int input_frames, int output_frames) {
  if (!p || p->closed.load(std::memory_order_acquire)) return;
  p->latency_in.store(input_frames, std::memory_order_relaxed);
  p->latency_out.store(output_frames, std::memory_order_relaxed);
}

int chunkscope_probe_close(chunkscope_probe* p) {
  using namespace chunkscope::probe;
  t_error.clear();
  if (!p) return fail(CHUNKSCOPE_PROBE_BAD_CONFIG, "chunkscope_probe_close: the probe is NULL");
  const std::uintptr_t held = p->owner.exchange(kClosed, std::memory_order_acq_rel);
  if (held == kClosed) return fail(CHUNKSCOPE_PROBE_BAD_CONFIG, "chunkscope_probe_close: the probe is already closed");
  p->closed.store(true, std::memory_order_release);  // xrun and device_latency are no-ops from here
  if (held != kNoBlock) p->misuse.fetch_add(1, std::memory_order_relaxed);  // a block still open: its record is lost
  Body& b = *p->body;
  b.stop.store(true, std::memory_order_release);
  int rc = CHUNKSCOPE_PROBE_OK;
  try {
    if (b.reader.joinable()) b.reader.join();
    if (b.exporter) b.exporter->finish();
    write_probe_reports(b, probe_report(*p));
  } catch (const std::exception& e) {
    rc = fail(CHUNKSCOPE_PROBE_FAILED, e.what());
  }
  p->body.reset();
  retire(p);
  return rc;
}

}  // extern "C"
