#include "rt/engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <readerwriterqueue/readerwriterqueue.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <chrono>
#include <semaphore>
#include <thread>

#include "rt/alt_stack.hpp"
#include "rt/checksum.hpp"
#include "rt/clock.hpp"
#include "rt/denormals.hpp"
#include "rt/hosted.hpp"
#include "rt/run_stats.hpp"

namespace chunkscope {

namespace {
constexpr std::uint32_t kChunkFailed = 1u << 31;  // processing failed: the sink skips it
constexpr std::int64_t kStartSlackNs = 2'000'000;  // first chunk is scheduled this far ahead
constexpr std::uint64_t kBlockWaitUs = 2'000;        // a blocked consumer looks at the done flags this often

inline int this_tid() noexcept { return static_cast<int>(syscall(SYS_gettid)); }
}  // namespace

struct Engine::Impl {
  using Queue = moodycamel::BlockingReaderWriterQueue<Chunk*>;
  ChunkPool pool;
  std::unique_ptr<Queue> free_list, q_in, q_out;
  std::vector<unsigned char> scratch;  // where a dropped chunk's samples are read
  std::vector<ChunkRecord> trace;
  std::uint64_t emitted = 0;
  Backend* backend = nullptr;
  ChunkSource* source = nullptr;
  ChunkSink* sink = nullptr;
  RunStats* stats = nullptr;
  std::atomic<bool> source_done{false}, processor_done{false};
  std::atomic<bool> policy_refused{false};
  EngineResult result;
  EngineConfig cfg;
  std::atomic<bool>* stop = nullptr;
  const std::atomic<bool>* external_stop = nullptr;
  bool ck_on = false;            // checksums still being recorded (the processing side's)
  std::size_t bytes_per_frame = 0;
  bool ran = false;
  // a thread was left in a hosted call that did not return: this Impl is kept for the
  // process's life; atomic for a supervising thread
  std::atomic<bool> gave_up{false};
  // released when the source or the processing is done, so a watching run() wakes at once
  // (a futex wake, no lock) instead of at its next poll
  std::counting_semaphore<(1 << 20)> ended{0};
  // device mode (push/pull run on the audio callback thread)
  std::uint64_t push_seq = 0;
  std::int64_t push_media = 0;
  Chunk* push_spare = nullptr;
  // pull(): the next chunk in output order, taken from q_out and not yet due. Taking it with
  // try_dequeue (the queue's semaphore acquires) before reading it makes the processor's
  // writes to it visible to the callback's thread, to the memory model and to TSan alike.
  Chunk* pull_next = nullptr;
  std::atomic<std::uint64_t> drops_live{0}, underruns_live{0};
  std::size_t depth = 8;
  int latency_chunks = 2;
  bool external_sink = false;
  SchedRecord records[3];  // source, processor, sink: each opened and read by its own thread
  // a device callback's thread: named by its first callback, its record opened by a
  // supervising thread (attach_callback_record) and then read by the callback alone
  std::atomic<int> callback_tid{0};
  SchedRecord callback_record;
  std::atomic<SchedRecord*> callback_rec{nullptr};
  bool callback_attached = false;
  std::int64_t last_proc_start = 0, last_proc_end = 0;  // the processing thread's previous chunk

  void note_drop(std::uint64_t seq, bool pool_empty) noexcept {
    ++result.drops;
    (pool_empty ? result.drops_pool : result.drops_queue)++;
    if (result.drop_seqs.size() < result.drop_seqs.capacity()) result.drop_seqs.push_back(seq);
    drops_live.store(result.drops, std::memory_order_relaxed);
  }
  void emit(Chunk* c) noexcept {
    stats->add(c->rec);
    if (!trace.empty()) trace[emitted % trace.size()] = c->rec;
    ++emitted;
  }
  /// [no-alloc, no-block]
  bool stop_requested() const noexcept {
    return stop->load(std::memory_order_relaxed) ||
           (external_stop && external_stop->load(std::memory_order_relaxed));
  }
  /// An engine thread's start: its policy (a refusal stops the run), its context-switch
  /// record (opened before the loop: one system call and a mapping, no heap), and its usage
  /// so far. [no-alloc, no-block]
  ThreadUsage start_thread(int index) noexcept {
    ensure_alt_stack();  // a fault handler runs even when hosted code overflowed this stack
    if (!ok(apply_thread_policy(cfg.policy, index))) {
      policy_refused.store(true, std::memory_order_relaxed);
      stop->store(true, std::memory_order_relaxed);
    }
    SchedRecord& rec = records[index];
    auto& out = result.switch_records[index];
    out.kept = cfg.switch_record && rec.open();
    out.refused_errno = cfg.switch_record ? rec.error() : 0;
    SchedRecord::set_current(out.kept ? &rec : nullptr);
    return thread_usage_now();
  }
  /// An engine thread's end: its record's totals, then closed. [no-alloc, no-block]
  void end_thread(int index) noexcept {
    SchedRecord& rec = records[index];
    if (rec.active()) result.switch_records[index].totals = rec.totals();
    rec.close();
    SchedRecord::set_current(nullptr);
  }

  /// Takes the next chunk from `q`, waiting the way cfg.wait says: block on the queue's
  /// semaphore, spin on try_dequeue, or spin kHybridSpinNs then block. Returns false once
  /// `finished()` holds (the producer is done and the queue is empty). [no-alloc, blocks]
  template <class Finished>
  bool take(Queue& q, Chunk*& c, Finished finished) noexcept {
    if (cfg.wait != WaitMode::block) {
      const bool hybrid = cfg.wait == WaitMode::hybrid;
      const std::int64_t until = hybrid ? now_ns() + kHybridSpinNs : 0;
      for (;;) {
        if (q.try_dequeue(c)) return true;
        if (finished()) return false;
        if (hybrid && now_ns() >= until) break;
        cpu_relax();
      }
    }
    for (;;) {
      if (q.wait_dequeue_timed(c, kBlockWaitUs)) return true;
      if (finished()) return false;
    }
  }

  /// Stage `stage` of chunk `r`, [a, b], split by the calling thread's record. [no-alloc, no-block]
  static void note_off(SchedRecord& rec, ChunkRecord& r, int stage, std::int64_t a, std::int64_t b,
                       std::uint32_t flag) noexcept {
    const OffCpu off = rec.off_between(a, b);
    r.off_preempted_ns[stage] = static_cast<std::uint32_t>(std::clamp<std::int64_t>(off.preempted_ns, 0, 0xffffffffLL));
    r.off_blocked_ns[stage] = static_cast<std::uint32_t>(std::clamp<std::int64_t>(off.blocked_ns, 0, 0xffffffffLL));
    r.flags |= flag;
  }

  /// Chunk `r`'s processing split by the processing thread's record: on the CPU (proc_cpu_ns),
  /// preempted and blocked inside [proc_start, proc_end], and the time the thread was not
  /// working on earlier chunks while `r` waited for them. [no-alloc, no-block]
  void split_from_record(SchedRecord& rec, ChunkRecord& r) noexcept {
    auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(std::clamp<std::int64_t>(v, 0, 0xffffffffLL)); };
    const OffCpu wait = rec.off_between(r.ready, r.proc_start);
    r.off_preempted_ns[1] = u32(wait.preempted_ns);
    r.off_blocked_ns[1] = u32(wait.blocked_ns);
    const OffCpu in = rec.off_between(r.proc_start, r.proc_end);
    r.off_preempted_ns[2] = u32(in.preempted_ns);
    r.off_blocked_ns[2] = u32(in.blocked_ns);
    r.proc_cpu_ns = u32(r.proc_end - r.proc_start - in.total());
    // while r waited for earlier chunks, the thread was off the CPU: preempted (the platform's),
    // or blocked in its own wait for a chunk, asleep while r was queued (the platform's
    // wake-up); only a block inside the earlier chunk's processing was the chain's work
    if (last_proc_end > r.ready) {
      const std::int64_t end = std::min(last_proc_end, r.dequeue);
      const OffCpu all = rec.off_between(r.ready, end);
      const OffCpu in_last = rec.off_between(std::max(r.ready, last_proc_start), end);
      r.busy_off_ns = u32(all.total() - in_last.blocked_ns);
    } else {
      r.busy_off_ns = 0;
    }
    r.flags |= kChunkSwitchRecord;
  }

  /// Processes chunk `c` taken from its queue at `taken` (inline: when the source finished
  /// it) and queues it for the sink: the checksums of the first chunks, the stamps around
  /// process(), the CPU time the thread spent in it, the backend's figures. A stop request
  /// sends a chunk back unprocessed. `ftz`: flush denormals around process() (a thread
  /// that is not the processor's). [no-alloc, no-block] As far as the backend's process() is.
  void process_chunk(Chunk* c, std::int64_t taken, bool ftz) noexcept {
    ChunkRecord& r = c->rec;
    if (!(r.flags & kChunkFailed) && stop_requested()) {
      // stopping: a queued chunk goes back to the pool unprocessed, so the run ends
      // within one chunk's processing instead of working through the queue
      r.flags |= kChunkFailed;
      ++result.not_processed;
    }
    if (!(r.flags & kChunkFailed)) {
      r.dequeue = taken;
      ProcessStats ps{};
      // checksums of the first chunks, in order; a gap (drop) ends the record
      const std::size_t ck_cap = result.input_checksums.size();
      const bool ck = ck_on && r.seq == result.checksummed && result.checksummed < ck_cap;
      if (ck_on && !ck) ck_on = false;
      const std::size_t bytes = static_cast<std::size_t>(r.frames) * bytes_per_frame;
      if (ck) result.input_checksums[result.checksummed] = fnv1a64(c->data, bytes);
      Status st = result.process_status;
      // the thread's context-switch record when it keeps one (no system call), else the CPU
      // clock, read outside [proc_start, proc_end]: its cost is the engine's
      SchedRecord* rec = SchedRecord::current();
      const std::int64_t cpu0 = rec ? 0 : thread_cpu_ns();
      r.proc_start = now_ns();
      if (ok(st)) {
        const AudioView view{c->data, static_cast<int>(r.frames), cfg.spec.channels, cfg.spec.dtype, r.seq};
        if (ftz) {
          ScopedFlushDenormals flush(cfg.spec.flush_denormals);
          st = backend->process(view, &ps);
        } else {
          st = backend->process(view, &ps);
        }
      }
      r.proc_end = now_ns();
      if (rec)
        split_from_record(*rec, r);
      else
        r.proc_cpu_ns = static_cast<std::uint32_t>(std::clamp<std::int64_t>(thread_cpu_ns() - cpu0, 0, 0xffffffffLL));
      last_proc_start = r.proc_start;
      last_proc_end = r.proc_end;
      if (ck && ok(st)) result.output_checksums[result.checksummed++] = fnv1a64(c->data, bytes);
      if (ck && !ok(st)) ck_on = false;
      r.launch_ns = ps.launch_ns;
      r.h2d_ns = ps.h2d_ns;
      r.kernel_ns = ps.kernel_ns;
      r.d2h_ns = ps.d2h_ns;
      r.sync_ns = ps.sync_ns;
      r.calib_ns = ps.calib_ns;
      r.dispatches = ps.dispatches;
      r.launches = ps.launches;
      r.steps = ps.steps;
      r.hosted_blocked_ns = static_cast<std::uint32_t>(std::clamp<std::int64_t>(ps.hosted_blocked_ns, 0, 0xffffffffLL));
      std::copy(std::begin(ps.step_ns), std::end(ps.step_ns), std::begin(r.step_ns));
      std::copy(std::begin(ps.step_cpu_ns), std::end(ps.step_cpu_ns), std::begin(r.step_cpu_ns));
      std::copy(std::begin(ps.step_preempt_ns), std::end(ps.step_preempt_ns), std::begin(r.step_preempt_ns));
      if (!ok(st)) {
        result.process_status = st;
        r.flags |= kChunkFailed;
        stop->store(true, std::memory_order_relaxed);
      }
    }
    const std::size_t d = q_out->size_approx() + 1;  // depth once this one is in
    r.q_out_depth = static_cast<std::uint16_t>(d);
    if (d > result.q_out_high_water) result.q_out_high_water = d;
    q_out->try_enqueue(c);  // capacity exceeds the pool: never fails
  }

  // ---------------------------------------------------------------- source thread
  /// The source thread's place in the stream: the next chunk's number and media frame, and
  /// a chunk taken but not handed on (it goes back to the pool when the loop ends).
  struct SourceCursor {
    std::uint64_t seq = 0;
    std::int64_t media = 0;
    Chunk* spare = nullptr;
  };
  /// The source's pace, from the run's copy of the config.
  struct Pace {
    bool paced;  // false: as fast as possible, no schedule
    WaitMode wait;
    int max_frames;
    std::size_t depth;
    long double chunk_ns;  // one chunk's period at the run's speed
  };

  /// Fills a chunk each period (paced) or as fast as the pool allows, and hands it to the
  /// processor or, inline, processes it itself. `run_cfg`: the run's copy of the config, not
  /// `cfg`: schedule_start() may have moved the start since prepare(). [no-alloc] As far as
  /// fill() and process() are.
  void source_loop(const EngineConfig& run_cfg) noexcept {
    // Linux lets a sleeping thread wake up to 50 us late by default; the schedule wants
    // the wake-up on time.
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    result.source_tid = this_tid();
    if (run_cfg.inline_process) result.processor_tid = result.source_tid;
    const ThreadUsage u0 = start_thread(0);
    const bool paced = !run_cfg.max_speed;
    const Pace p{paced, run_cfg.wait, run_cfg.spec.max_frames, static_cast<std::size_t>(run_cfg.queue_depth),
                 static_cast<long double>(run_cfg.spec.max_frames) * 1e9L /
                     (static_cast<long double>(run_cfg.spec.rate) * (paced ? run_cfg.speed : 1.0))};
    const std::int64_t t0 =
        paced && run_cfg.start_at_ns > 0 ? run_cfg.start_at_ns : now_ns() + (paced ? kStartSlackNs : 0);
    result.start_ns = t0;
    SourceCursor s;
    // inline, the source thread is the producer of the processor->sink queue
    Queue& q_next = run_cfg.inline_process ? *q_out : *q_in;
    for (;;) {
      if (stop_requested()) {
        result.status = Status::interrupted;
        break;
      }
      std::int64_t sched = 0, woke = 0;
      if (paced) {
        sched = t0 + static_cast<std::int64_t>(std::llround(static_cast<long double>(s.seq) * p.chunk_ns));
        wait_until_ns(sched, p.wait);
        woke = now_ns();
      }
      Chunk* c = next_free(s, paced);
      if (!c) {
        if (!paced) continue;  // stop requested while waiting
        if (!drop_unpooled(s, p.max_frames)) break;
        continue;
      }
      if (!paced) sched = woke = now_ns();
      int n = 0;
      if (!fill_chunk(c, s, p.max_frames, sched, woke, n)) break;
      if (run_cfg.inline_process) {
        // no source->processor queue: processing starts the moment the chunk is ready
        process_chunk(c, c->rec.ready, true);
      } else {
        queue_chunk(c, s, p);
      }
      ++s.seq;
      s.media += n;
    }
    result.produced = s.seq;
    // the spare chunk goes back to the pool through the path to the sink, marked failed
    if (s.spare) {
      s.spare->rec = ChunkRecord{};
      s.spare->rec.flags = kChunkFailed;
      q_next.try_enqueue(s.spare);
    }
    result.source_usage = usage_delta(u0, thread_usage_now());
    end_thread(0);
    source_done.store(true, std::memory_order_release);
    if (run_cfg.inline_process) processor_done.store(true, std::memory_order_release);
    ended.release();
  }

  /// The chunk to fill: the one the last period left over, else one from the pool. Paced,
  /// it does not wait for one (null: the period's chunk is dropped); as fast as possible, it
  /// waits until one comes back or a stop is requested. [no-alloc] Blocks unpaced.
  Chunk* next_free(SourceCursor& s, bool paced) noexcept {
    Chunk* c = s.spare;
    s.spare = nullptr;
    if (!c) {
      if (paced) {
        if (!free_list->try_dequeue(c)) c = nullptr;
      } else {
        while (!free_list->wait_dequeue_timed(c, 10'000)) {
          if (stop_requested()) break;
        }
      }
    }
    return c;
  }

  /// Paced, with the pool exhausted: consume the media so the stream keeps its clock, then
  /// drop. False: the stream ended or failed. [no-alloc] As far as fill() is.
  bool drop_unpooled(SourceCursor& s, int max_frames) noexcept {
    int n = 0;
    const Status st = source->fill(scratch.data(), max_frames, &n);
    if (st == Status::end_of_stream) return false;
    if (!ok(st)) {
      result.source_status = st;
      return false;
    }
    note_drop(s.seq, true);
    ++s.seq;
    s.media += n;
    return true;
  }

  /// Fills chunk `c` from the source (`n`: the frames read) and starts its record. False:
  /// the stream ended or failed, and `c` stays the spare. [no-alloc] As far as fill() is.
  bool fill_chunk(Chunk* c, SourceCursor& s, int max_frames, std::int64_t sched, std::int64_t woke, int& n) noexcept {
    const Status st = source->fill(c->data, max_frames, &n);
    if (st == Status::end_of_stream) {
      s.spare = c;
      return false;
    }
    if (!ok(st)) {
      s.spare = c;
      result.source_status = st;
      return false;
    }
    ChunkRecord& r = c->rec;
    r = ChunkRecord{};
    r.seq = s.seq;
    r.media_frame = s.media;
    r.frames = static_cast<std::uint32_t>(n);
    r.flags = n < max_frames ? static_cast<std::uint32_t>(kChunkShort) : 0u;
    r.sched = sched;
    r.woke = woke;
    r.ready = now_ns();
    if (SchedRecord* rec = SchedRecord::current()) note_off(*rec, r, 0, r.sched, r.ready, kChunkSourceRecord);
    return true;
  }

  /// Hands chunk `c` to the processor. Paced, a full queue drops it (it stays the spare).
  /// [no-alloc] Waits for room unpaced.
  void queue_chunk(Chunk* c, SourceCursor& s, const Pace& p) noexcept {
    ChunkRecord& r = c->rec;
    if (!p.paced)  // as fast as possible: wait for room rather than drop
      while (q_in->size_approx() >= p.depth && !stop_requested()) wait_until_ns(now_ns() + 20'000, p.wait);
    const std::size_t qd = q_in->size_approx() + 1;  // depth once this one is in
    r.q_in_depth = static_cast<std::uint16_t>(qd);      // written before the hand-over
    bool queued = false;
    if (p.paced) {
      queued = q_in->size_approx() < p.depth && q_in->try_enqueue(c);
      if (!queued) {
        note_drop(s.seq, false);
        s.spare = c;
      }
    } else {
      queued = q_in->try_enqueue(c);
      if (!queued) s.spare = c;
    }
    if (queued && qd > result.q_in_high_water) result.q_in_high_water = qd;
  }

  // ---------------------------------------------------------------- processor thread
  /// Processes each chunk the source queues, until the source is done and the queue is
  /// empty. [no-alloc] As far as process() is.
  void processor_loop(const EngineConfig& run_cfg) noexcept {
    ScopedFlushDenormals ftz(run_cfg.spec.flush_denormals);
    result.processor_tid = this_tid();
    const ThreadUsage u0 = start_thread(1);
    auto finished = [this]() noexcept {
      return source_done.load(std::memory_order_acquire) && q_in->size_approx() == 0;
    };
    Chunk* c = nullptr;
    while (take(*q_in, c, finished)) process_chunk(c, now_ns(), false);
    result.processor_usage = usage_delta(u0, thread_usage_now());
    end_thread(1);
    processor_done.store(true, std::memory_order_release);
    ended.release();
  }

  // ---------------------------------------------------------------- sink thread
  /// Writes each processed chunk to the sink and records it, then returns it to the pool,
  /// until processing is done and the queue is empty. [no-alloc] As far as consume() is.
  void sink_loop() noexcept {
    result.sink_tid = this_tid();
    const ThreadUsage u0 = start_thread(2);
    auto finished = [this]() noexcept {
      return processor_done.load(std::memory_order_acquire) && q_out->size_approx() == 0;
    };
    Chunk* c = nullptr;
    while (take(*q_out, c, finished)) {
      ChunkRecord& r = c->rec;
      if (!(r.flags & kChunkFailed) && ok(result.sink_status)) {
        r.sink_start = now_ns();
        const Status st = sink->consume(c->data, static_cast<int>(r.frames));
        r.emit = now_ns();
        if (SchedRecord* rec = SchedRecord::current()) {
          note_off(*rec, r, 3, r.proc_end, r.sink_start, kChunkSinkRecord);
          note_off(*rec, r, 4, r.sink_start, r.emit, kChunkSinkRecord);
        }
        if (!ok(st)) {
          result.sink_status = st;
          stop->store(true, std::memory_order_relaxed);  // Engine::request_stop()
        } else {
          emit(c);
        }
      }
      free_list->try_enqueue(c);  // capacity exceeds the pool: never fails
    }
    result.sink_usage = usage_delta(u0, thread_usage_now());
    end_thread(2);
  }

  /// Waits until `done()`, watching the backend's hosted call: true (result.stuck filled, the
  /// run stopped, processing marked done so the sink drains what it has) when a call has been
  /// under way longer than the step timeout. [blocks] The run's own thread.
  template <class Done>
  bool watch_hosted(Done done) noexcept {
    const HostedWatch* w = backend->hosted_watch();
    const std::int64_t limit = cfg.step_timeout_ns;
    const std::int64_t poll = std::clamp<std::int64_t>(limit / 10, 1'000'000, 50'000'000);
    while (!done()) {
      const std::int64_t now = now_ns();
      const std::int64_t since = w->since.load(std::memory_order_acquire);
      if (since > 0 && now - since > limit) {
        StuckCall& st = result.stuck;
        st.stuck = true;
        st.step = w->step.load(std::memory_order_relaxed);
        st.label = w->label.load(std::memory_order_relaxed);
        st.call = w->call.load(std::memory_order_relaxed);
        st.chunk = w->chunk.load(std::memory_order_relaxed);
        st.for_ns = now - since;
        st.timeout_ns = limit;
        result.process_status = Status::stage_stuck;
        gave_up.store(true, std::memory_order_release);
        stop->store(true, std::memory_order_relaxed);
        processor_done.store(true, std::memory_order_release);
        return true;
      }
      static_cast<void>(ended.try_acquire_for(std::chrono::nanoseconds(poll)));
    }
    return false;
  }

  /// The run's status once its threads are done: the first failure of the policy, the
  /// source, processing or the sink; a source that was neither stopped nor failed ended.
  void settle_status() noexcept {
    EngineResult& res = result;
    if (policy_refused.load()) res.policy_status = Status::unsupported;
    if (!ok(res.policy_status))
      res.status = res.policy_status;
    else if (!ok(res.source_status))
      res.status = res.source_status;
    else if (!ok(res.process_status))
      res.status = res.process_status;
    else if (!ok(res.sink_status))
      res.status = res.sink_status;
    if (ok(res.source_status) && res.status != Status::interrupted && ok(res.policy_status))
      res.source_status = Status::end_of_stream;
  }
};

Engine::Engine() : impl_(std::make_unique<Impl>()) {}
Engine::~Engine() {
  // a thread still inside a hosted call may return one day and touch the pool, the queues and
  // the result: they outlive the engine, for the life of the process
  if (impl_ && impl_->gave_up.load()) static_cast<void>(impl_.release());
}

Status Engine::prepare(const EngineConfig& cfg, Backend& backend, ChunkSource& source, ChunkSink& sink,
                       RunStats& stats) {
  if (cfg.queue_depth < 1 || cfg.queue_depth > 4096 || cfg.spec.max_frames < 1 ||
      cfg.spec.max_frames > kMaxChunkFrames || cfg.spec.channels < 1 || cfg.spec.channels > kMaxChunkChannels ||
      (!cfg.max_speed && !(cfg.speed > 0)))
    return Status::invalid_argument;
  cfg_ = cfg;
  if (impl_ && impl_->gave_up.load()) static_cast<void>(impl_.release());  // see ~Engine()
  impl_ = std::make_unique<Impl>();
  auto& m = *impl_;
  const std::size_t pool = 2 * static_cast<std::size_t>(cfg.queue_depth) + 2;
  m.pool.prepare(pool, cfg.spec.max_frames, cfg.spec.channels, cfg.spec.dtype);
  m.free_list = std::make_unique<Impl::Queue>(pool + 1);
  m.q_in = std::make_unique<Impl::Queue>(pool + 1);
  m.q_out = std::make_unique<Impl::Queue>(pool + 1);
  m.push_spare = m.pull_next = nullptr;  // the queues are new: nothing is held from them
  for (std::size_t i = 0; i < pool; ++i) m.free_list->try_enqueue(m.pool.at(i));
  m.scratch.assign(static_cast<std::size_t>(cfg.spec.max_frames) * static_cast<std::size_t>(cfg.spec.channels) *
                       dtype_size(cfg.spec.dtype),
                   0);
  m.trace.assign(cfg.trace_capacity, ChunkRecord{});
  m.result = EngineResult{};
  m.result.drop_seqs.reserve(cfg.drop_list_capacity);
  m.result.underrun_seqs.reserve(cfg.drop_list_capacity);
  m.result.input_checksums.assign(cfg.checksum_chunks, 0);
  m.result.output_checksums.assign(cfg.checksum_chunks, 0);
  m.depth = static_cast<std::size_t>(cfg.queue_depth);
  m.latency_chunks = std::max(1, cfg.latency_chunks);
  m.external_sink = cfg.external_sink;
  m.result.pool_chunks = pool;
  m.cfg = cfg;
  m.stop = &stop_;
  m.ck_on = cfg.checksum_chunks > 0;
  m.bytes_per_frame = static_cast<std::size_t>(cfg.spec.channels) * dtype_size(cfg.spec.dtype);
  m.backend = &backend;
  m.source = &source;
  m.sink = &sink;
  m.stats = &stats;
  stop_.store(false);
  return Status::ok;
}

EngineResult Engine::run() {
  auto& m = *impl_;
  if (!m.backend || m.ran) {
    EngineResult r;
    r.status = Status::not_prepared;
    return r;
  }
  m.ran = true;
  m.external_stop = external_stop_;
  const EngineConfig cfg = cfg_;
  const bool inline_process = cfg.inline_process;
  EngineResult& res = m.result;

  std::thread sink_thread, processor_thread, source_thread;
  if (!cfg.external_sink) sink_thread = std::thread([&m]() noexcept { m.sink_loop(); });
  if (!inline_process) processor_thread = std::thread([&m, &cfg]() noexcept { m.processor_loop(cfg); });
  if (!cfg.external_source) source_thread = std::thread([&m, &cfg]() noexcept { m.source_loop(cfg); });
  // the thread that runs the backend, watched for a hosted call that does not return; one
  // that does not is left behind (it cannot be stopped), the others end as on a stop request
  const bool watch = cfg.step_timeout_ns > 0 && m.backend->hosted_watch() != nullptr;
  std::thread& runner = inline_process ? source_thread : processor_thread;
  if (watch && runner.joinable() && m.watch_hosted([&m] { return m.processor_done.load(std::memory_order_acquire); }))
    runner.detach();
  if (source_thread.joinable()) source_thread.join();
  if (processor_thread.joinable()) processor_thread.join();
  if (inline_process && cfg.external_source) {
    // the device callback processes: the run lasts until finish_source()
    if (!watch || !m.watch_hosted([&m] { return m.source_done.load(std::memory_order_acquire); }))
      while (!m.source_done.load(std::memory_order_acquire)) sleep_until_ns(now_ns() + 1'000'000);
    m.processor_done.store(true, std::memory_order_release);
  }
  if (sink_thread.joinable()) sink_thread.join();
  res.end_ns = now_ns();
  if (cfg.external_source) {
    res.produced = m.push_seq;
    if (res.start_ns == 0) res.start_ns = res.end_ns;
    // the callbacks are over (finish_source() comes after the stream stopped, or was
    // disarmed): its record is this thread's to read now
    if (m.callback_rec.load(std::memory_order_acquire)) res.switch_records[0].totals = m.callback_record.totals();
  }
  m.settle_status();
  return res;
}

bool Engine::gave_up_on_hosted_call() const noexcept {
  return impl_ && impl_->gave_up.load(std::memory_order_acquire);
}

bool Engine::watching_hosted_call() const noexcept {
  if (!impl_ || !impl_->backend || cfg_.step_timeout_ns <= 0) return false;
  const HostedWatch* w = impl_->backend->hosted_watch();
  return w && w->since.load(std::memory_order_acquire) > 0;
}

bool Engine::attach_callback_record() noexcept {
  auto& m = *impl_;
  if (m.callback_attached) return true;
  const int tid = m.callback_tid.load(std::memory_order_acquire);
  if (tid == 0) return false;
  m.callback_attached = true;
  auto& out = m.result.switch_records[0];  // the callback is the device stream's source
  out.kept = cfg_.switch_record && m.callback_record.open(false, tid);
  out.refused_errno = cfg_.switch_record ? m.callback_record.error() : 0;
  if (out.kept) m.callback_rec.store(&m.callback_record, std::memory_order_release);
  return true;
}

Status Engine::push(const void* src, int frames, std::int64_t sched) noexcept {
  auto& m = *impl_;
  // the callback's thread, named once for attach_callback_record(); its record once attached
  if (m.push_seq == 0 && m.callback_tid.load(std::memory_order_relaxed) == 0) {
    ensure_alt_stack();  // once, on the callback's first call: a mapping and a system call
    m.callback_tid.store(this_tid(), std::memory_order_release);
  }
  SchedRecord* rec = m.callback_rec.load(std::memory_order_acquire);
  if (rec != SchedRecord::current()) SchedRecord::set_current(rec);
  if (m.result.start_ns == 0) m.result.start_ns = sched;
  const std::uint64_t seq = m.push_seq++;
  const std::int64_t media = m.push_media;
  m.push_media += frames;
  Chunk* c = m.push_spare;
  m.push_spare = nullptr;
  if (!c && !m.free_list->try_dequeue(c)) {
    m.note_drop(seq, true);
    return Status::pool_empty;
  }
  const int n = std::min(frames, cfg_.spec.max_frames);
  std::memcpy(c->data, src,
              static_cast<std::size_t>(n) * static_cast<std::size_t>(cfg_.spec.channels) * dtype_size(cfg_.spec.dtype));
  ChunkRecord& r = c->rec;
  r = ChunkRecord{};
  r.seq = seq;
  r.media_frame = media;
  r.frames = static_cast<std::uint32_t>(n);
  r.flags = n < cfg_.spec.max_frames ? static_cast<std::uint32_t>(kChunkShort) : 0u;
  r.sched = sched;
  r.woke = sched;  // the callback's hand-over is its wake-up
  r.ready = now_ns();
  if (rec) Impl::note_off(*rec, r, 0, r.sched, r.ready, kChunkSourceRecord);
  if (cfg_.inline_process) {
    // processed inside the callback, as a JACK or PipeWire client does; queued for the
    // sink thread or, full duplex, for pull()
    if (m.result.processor_tid == 0) m.result.processor_tid = this_tid();
    m.process_chunk(c, r.ready, true);
    return Status::ok;
  }
  const std::size_t qd = m.q_in->size_approx() + 1;
  r.q_in_depth = static_cast<std::uint16_t>(qd);
  if (qd > m.depth || !m.q_in->try_enqueue(c)) {
    m.push_spare = c;
    m.note_drop(seq, false);
    return Status::queue_full;
  }
  if (qd > m.result.q_in_high_water) m.result.q_in_high_water = qd;
  return Status::ok;
}

Status Engine::pull(void* dst, int frames, std::uint64_t index) noexcept {
  auto& m = *impl_;
  const std::size_t frame_bytes = static_cast<std::size_t>(cfg_.spec.channels) * dtype_size(cfg_.spec.dtype);
  const std::size_t bytes = static_cast<std::size_t>(frames) * frame_bytes;
  const auto K = static_cast<std::uint64_t>(m.latency_chunks);
  if (index < K) {  // priming: nothing can be due yet
    std::memset(dst, 0, bytes);
    return Status::ok;
  }
  const std::uint64_t want = index - K;
  Chunk* c = nullptr;
  for (;;) {
    if (!m.pull_next && !m.q_out->try_dequeue(m.pull_next)) m.pull_next = nullptr;
    c = m.pull_next;
    if (!c) break;
    if (c->rec.flags & kChunkFailed) {
      m.pull_next = nullptr;
      m.free_list->try_enqueue(c);
      continue;
    }
    if (c->rec.seq >= want) break;
    // it missed its callback: silence was played for it; count it, with its latency
    m.pull_next = nullptr;
    ++m.result.late_chunks;
    c->rec.sink_start = now_ns();
    c->rec.emit = c->rec.proc_end;
    m.emit(c);
    m.free_list->try_enqueue(c);
  }
  if (c && c->rec.seq == want) {
    m.pull_next = nullptr;
    const std::size_t got = std::min<std::size_t>(bytes, static_cast<std::size_t>(c->rec.frames) * frame_bytes);
    std::memcpy(dst, c->data, got);
    if (got < bytes) std::memset(static_cast<unsigned char*>(dst) + got, 0, bytes - got);
    // Latency of a played chunk is measured to the moment it was ready for output
    // (proc_end); the wait for its callback shows as queue_out.
    c->rec.sink_start = now_ns();
    c->rec.emit = c->rec.proc_end;
    m.emit(c);
    m.free_list->try_enqueue(c);
    return Status::ok;
  }
  std::memset(dst, 0, bytes);
  ++m.result.underruns;
  if (m.result.underrun_seqs.size() < m.result.underrun_seqs.capacity()) m.result.underrun_seqs.push_back(want);
  m.underruns_live.store(m.result.underruns, std::memory_order_relaxed);
  return Status::queue_full;
}

void Engine::finish_source() noexcept {
  impl_->source_done.store(true, std::memory_order_release);
  impl_->ended.release();
}
std::uint64_t Engine::live_drops() const noexcept { return impl_->drops_live.load(std::memory_order_relaxed); }
std::uint64_t Engine::live_underruns() const noexcept { return impl_->underruns_live.load(std::memory_order_relaxed); }
std::size_t Engine::live_queue_depth() const noexcept { return impl_->q_in->size_approx(); }

std::vector<ChunkRecord> Engine::trace() const {
  const auto& m = *impl_;
  std::vector<ChunkRecord> out;
  if (m.trace.empty()) return out;
  const std::size_t cap = m.trace.size();
  const std::size_t n = std::min<std::size_t>(cap, m.emitted);
  out.reserve(n);
  for (std::size_t i = m.emitted - n; i < m.emitted; ++i) out.push_back(m.trace[i % cap]);
  return out;
}

}  // namespace chunkscope
