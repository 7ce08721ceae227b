/* chunkscope probe: profile the audio callback of your own application.
 *
 * Open a probe with the stream's rate, block size and channels before the audio starts;
 * in the callback mark each block's start and end (and, optionally, named sections inside
 * it); close it after the audio has stopped to write the run report: the same
 * chunkscope.report/1 document a chunkscope run writes (workload.command "probe"), which
 * `chunkscope report`, `cadence`, the HTML page and the .hgrm files read unchanged.
 *
 * Calls made from the callback (begin, end, section_begin, section_end, xrun,
 * device_latency) are [no-alloc, no-block]: wait-free, no lock, no I/O; the only system
 * call is the monotonic clock where the C library reads it without one (the vDSO, as on
 * Linux with a TSC clock source), plus the thread CPU clock when cpu_time is on, which is a
 * system call. begin, end and the section calls must come from one thread at a time (the
 * callback's); xrun and device_latency may come from any thread. A reader thread of the
 * probe drains the block records into the statistics; open() starts it, close() joins it.
 *
 * Threads. A block belongs to the thread whose begin opened it, until its end. A begin from
 * another thread while that block is open is detected (one compare-exchange), dropped and
 * counted: the report says "N concurrent begin(s) dropped ... (concurrent_begins)" in its
 * `reason` and is marked incomplete; that thread's section and end calls are ignored and
 * no record is ever written by two threads. The callback may move between threads from one
 * block to the next (one at a time).
 *
 * Close. close() frees everything but the handle itself: a few hundred bytes kept for the
 * life of the process, so the pointer stays valid memory. Exactly what is safe:
 *   - xrun and device_latency, from any thread, before, during and after close(): one that
 *     close() has not begun before is counted; one racing close()'s start may or may not be
 *     in the report; from the moment close() begins they are no-ops.
 *   - begin, the section calls and end after close() returned: no-ops.
 *   - begin, the section calls and end while close() runs: NOT safe (a block they open or
 *     write may be freed under them); close() after the last callback has returned.
 *   - close() twice: the second returns CHUNKSCOPE_PROBE_BAD_CONFIG ("already closed").
 *   - a block still open when close() begins: its record is lost, counted out of order.
 *
 * A NULL probe makes the callback-side calls no-ops. Link: pkg-config chunkscope-probe, or CMake find_package(chunkscope) and the target
 * chunkscope::probe. docs/profiler.md, "Profiling your own application".
 */
#ifndef CHUNKSCOPE_PROBE_H
#define CHUNKSCOPE_PROBE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CHUNKSCOPE_PROBE_API __attribute__((visibility("default")))
#else
#define CHUNKSCOPE_PROBE_API
#endif

#define CHUNKSCOPE_PROBE_MAX_SECTIONS 16

/* Results of open() and close(): the chunkscope command's exit codes. */
#define CHUNKSCOPE_PROBE_OK 0
#define CHUNKSCOPE_PROBE_BAD_CONFIG 2 /* a configuration value is wrong (the message names it) */
#define CHUNKSCOPE_PROBE_FAILED 3     /* a report could not be written, the server could not listen */

typedef struct chunkscope_probe chunkscope_probe;

typedef struct chunkscope_probe_config {
  uint32_t size;             /* sizeof(chunkscope_probe_config); set by chunkscope_probe_config_init */
  const char* name;          /* the application, as the report names the run (default "app") */
  double rate;               /* frames per second of the stream */
  int block_frames;          /* frames per callback: the period whose duration D is the deadline */
  int channels;              /* channels the callback processes */
  const char* margin;        /* kept back from D for transport: "20%" or "1.5ms" (default "20%") */
  const char* const* sections; /* names of the sections timed inside a block (steps of the report) */
  int section_count;         /* 0 .. CHUNKSCOPE_PROBE_MAX_SECTIONS */
  const char* json_path;     /* the report's JSON file, written by close() (NULL: none) */
  const char* report_dir;    /* report.json, report.html and hgrm/ written here by close() (NULL: none) */
  const char* metrics_listen; /* "ADDR:PORT": live Prometheus metrics while the probe is open (NULL: none) */
  int64_t warmup_blocks;     /* the first blocks, reported apart (default 10, as the CLI's --warmup) */
  double baseline_seconds;   /* open() measures the platform's wake-up and hand-off for this long (default 0: none) */
  int cpu_time;              /* 1: also read the callback thread's CPU time per block, so that time
                                descheduled is blamed on the platform (two thread CPU clock reads per
                                block: system calls, about 1.4 us each on a VM) */
  int ring_blocks;           /* block records the callback can get ahead of the reader, up to 1048576
                                (default: 2 s of blocks, 1024 to 65536) */
  /* fields are only ever added here, at the end: `size` tells the library which the application knew */
} chunkscope_probe_config;

/* Fills `config` with the defaults (rate, block_frames and channels 0: they must be set). */
CHUNKSCOPE_PROBE_API void chunkscope_probe_config_init(chunkscope_probe_config* config);

/* Checks the configuration, measures the baseline when asked, starts the metrics server
 * when asked and the reader thread. CHUNKSCOPE_PROBE_OK and *out set, or an error code with
 * *out NULL and the reason in chunkscope_probe_last_error(). Not from the callback. */
CHUNKSCOPE_PROBE_API int chunkscope_probe_open(const chunkscope_probe_config* config, chunkscope_probe** out);

/* The calling thread's last open() or close() failure, one line ("" when none). */
CHUNKSCOPE_PROBE_API const char* chunkscope_probe_last_error(void);

/* A block starts: `frames` frames (the configured block size, or fewer for a short block).
 * While another thread's block is open: dropped and counted (concurrent_begins), and this
 * thread's section and end calls for it are ignored. After close(): a no-op.
 * [no-alloc, no-block] */
CHUNKSCOPE_PROBE_API void chunkscope_probe_begin(chunkscope_probe* probe, int frames);
/* The block is done: its record goes to the reader. [no-alloc, no-block] */
CHUNKSCOPE_PROBE_API void chunkscope_probe_end(chunkscope_probe* probe);
/* Section `index` (0-based, as configured) starts or ends inside the current block; a
 * section entered several times in one block adds up. [no-alloc, no-block] */
CHUNKSCOPE_PROBE_API void chunkscope_probe_section_begin(chunkscope_probe* probe, int index);
CHUNKSCOPE_PROBE_API void chunkscope_probe_section_end(chunkscope_probe* probe, int index);
/* The device or server reported an xrun (e.g. JACK's xrun callback). Any thread, also
 * while close() runs and after it returned (then a no-op). [no-alloc, no-block] */
CHUNKSCOPE_PROBE_API void chunkscope_probe_xrun(chunkscope_probe* probe);
/* The latency the device or server reports, in frames (kept for the report). Any thread,
 * also while close() runs and after it returned (then a no-op). [no-alloc, no-block] */
CHUNKSCOPE_PROBE_API void chunkscope_probe_device_latency(chunkscope_probe* probe, int input_frames, int output_frames);

/* After the last callback has returned: joins the reader, writes the reports asked for,
 * stops the metrics server and frees the probe but its handle (also when it fails); see
 * "Close" above for the calls that stay safe. Waits for no other thread. CHUNKSCOPE_PROBE_OK,
 * CHUNKSCOPE_PROBE_FAILED with the reason in chunkscope_probe_last_error(), or
 * CHUNKSCOPE_PROBE_BAD_CONFIG for a NULL or already closed probe. Not from the callback. */
CHUNKSCOPE_PROBE_API int chunkscope_probe_close(chunkscope_probe* probe);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* The C++ wrapper returns its scope guards by value: C++17 (guaranteed copy elision). */
#if defined(__cplusplus) && __cplusplus >= 201703L
#include <stdexcept>
#include <string>

namespace chunkscope {

/* A probe that closes itself. Probe p(cfg); in the callback: auto b = p.block(frames);
 * { auto s = p.section(0); ... }. Construction throws std::runtime_error with the reason. */
class Probe {
 public:
  explicit Probe(const chunkscope_probe_config& config) {
    if (chunkscope_probe_open(&config, &p_) != CHUNKSCOPE_PROBE_OK) throw std::runtime_error(chunkscope_probe_last_error());
  }
  ~Probe() {
    if (p_) chunkscope_probe_close(p_);
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
  /* Writes the reports now; throws std::runtime_error when they could not be written. */
  void close() {
    chunkscope_probe* p = p_;
    p_ = nullptr;
    if (p && chunkscope_probe_close(p) != CHUNKSCOPE_PROBE_OK) throw std::runtime_error(chunkscope_probe_last_error());
  }

  class Block {
   public:
    Block(chunkscope_probe* p, int frames) noexcept : p_(p) { chunkscope_probe_begin(p_, frames); }
    ~Block() { chunkscope_probe_end(p_); }
    Block(const Block&) = delete;
    Block& operator=(const Block&) = delete;

   private:
    chunkscope_probe* p_;
  };
  class Section {
   public:
    Section(chunkscope_probe* p, int index) noexcept : p_(p), i_(index) { chunkscope_probe_section_begin(p_, i_); }
    ~Section() { chunkscope_probe_section_end(p_, i_); }
    Section(const Section&) = delete;
    Section& operator=(const Section&) = delete;

   private:
    chunkscope_probe* p_;
    int i_;
  };
  /* [no-alloc, no-block] */
  [[nodiscard]] Block block(int frames) noexcept { return Block(p_, frames); }
  /* [no-alloc, no-block] */
  [[nodiscard]] Section section(int index) noexcept { return Section(p_, index); }
  /* [no-alloc, no-block] */
  void xrun() noexcept { chunkscope_probe_xrun(p_); }
  chunkscope_probe* get() const noexcept { return p_; }

 private:
  chunkscope_probe* p_ = nullptr;
};

}  // namespace chunkscope
#endif /* C++17 */

#endif /* CHUNKSCOPE_PROBE_H */
