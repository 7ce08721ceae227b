#pragma once
// Every command's options and their defaults, held once. The command line registers its
// flags from these structs and shows these defaults in --help; anything that prints a
// command for the user to run (rerun hints) builds it from the same structs and leaves out
// what equals the default. No command-line library here, so the rest of the library can use
// the defaults too. Not real-time.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rt/backend.hpp"
#include "rt/baseline_probe.hpp"
#include "src/backends.hpp"

namespace chunkscope {

// ---------------------------------------------------------------- the structs

/// `chunkscope chain SPEC`
struct ChainOptions {
  std::string spec;
  double rate = 48000;
  bool fuse = true;
  bool json = false;
  std::vector<double> freqs;  // response points in Hz; empty: kDefaultResponseFreqs
  int channels = 2;           // hosted stages are made for a chunk of this many channels
};

/// The response points of `chain` when --freqs is not given.
inline const std::vector<double> kDefaultResponseFreqs{20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000};

/// `chunkscope process IN OUT`
struct ProcessOptions {
  std::string chain;
  int chunk = 256;  // as every stream command
  DType dtype = DType::f32;
  bool fuse = true;
  BackendChoice backend;  // --backend, --mode
  std::string output_format = "auto";  // the output's sample type: auto, float, double, pcm16, pcm24, pcm32
};

/// The grid of `chunkscope bench`.
struct BenchOptions {
  std::vector<int> channels{1, 2, 8, 32};
  std::vector<int> sections{2, 6, 16};
  std::vector<int> chunks{64, 256, 1024, 4096};
  std::vector<DType> dtypes{DType::f32};
  std::vector<bool> fused{true, false};
  std::vector<std::optional<CpuIsa>> isas{std::nullopt};  // --isa; nullopt: the widest here
  double seconds_per_repeat = 0.01;
  int repeats = 5;
  double rate = 48000;
};

/// `chunkscope bench`: the grid, and what the command adds.
struct BenchCommandOptions {
  BenchOptions grid;
  std::string json_path;  // also write the rows here
  bool quick = false;     // seconds_per_repeat = kBenchQuickSecondsPerRepeat
};
inline constexpr double kBenchQuickSecondsPerRepeat = 0.002;

/// The stream options of replay, synth, monitor and compare.
struct StreamOptions {
  std::string input;          // replay: the file
  std::string chain;          // empty: no processing stages
  int chunk = 256;
  DType dtype = DType::f32;
  bool fuse = true;
  int queue_depth = 8;
  std::string speed = "1";    // a positive factor or "max"
  long long warmup = 10;
  std::string margin = "20%";
  std::string output;         // file sink; empty: null sink
  std::string output_format = "auto";  // its sample type: auto, float, double, pcm16, pcm24, pcm32
  std::string json_path, hgrm_dir, trace_path, report_dir;
  bool report_html = true;  // --report-dir writes report.html too (--no-html: not)
  bool fail_on_miss = false;
  bool fail_on_unsafe = false;  // exit 1 when a hosted step's audit found heap calls, blocking or NaN/Inf
  bool quiet = false;         // no terminal report
  std::size_t trace_capacity = 100000;  // --trace-limit: the trace keeps the last N chunks to reach the sink
  std::size_t series_limit = 1u << 20;  // per-chunk points kept in the report (0: none)
  BackendChoice backend;      // --backend, --mode, --gpu-timing, --short-chunk
  // replay: expected rate/channels (0: take the file's)
  double expect_rate = 0;
  int expect_channels = 0;
  // synth
  std::string signal = "sine:440";
  std::string duration = "5s";
  int channels = 2;
  double rate = 48000;
  // Run modes (docs/profiler.md, "Run modes")
  std::string baseline = "500ms";  // platform baseline measured before and after a paced run, each this long; "0": none
  bool rt = false;                 // SCHED_FIFO for the engine threads, memory locked (mlockall)
  int rt_priority = kDefaultRtPriority;  // the SCHED_FIFO priority under --rt, 1..99
  std::string cpus;                // "0,1", "0-1": source, processor, sink pinned round-robin over the list; "": none
  WaitMode wait = WaitMode::block;  // how the source paces and the consumers wait for their queues
  bool inline_process = false;     // process on the source's thread (the device callback for monitor)
  bool switch_record = true;       // blame from each engine thread's context-switch record; off: the wall-clock rules
  // a hosted call that has not returned after this long ends the run (docs/profiler.md, "When
  // hosted code fails"): "auto" (the larger of 2 s and 100 chunk durations), "off", or a duration
  std::string step_timeout = "auto";
  bool ftz = true;                 // process with denormals flushed (FTZ/DAZ), as real-time hosts do; --ftz off: not
  // Live metrics (docs/profiler.md, "Live metrics"): replay, synth, monitor
  std::string metrics_listen;      // ADDR:PORT served over HTTP for Prometheus; "": none
  std::string metrics_hold = "0";  // keep serving this long after the run ends
  // Several streams at once (docs/profiler.md, "Many streams"): replay, synth, compare
  int streams = 1;                 // independent streams of the chain, 1..kMaxStreams
  std::int64_t input_limit_ns = 0;  // replay: stream only this much of the file (sweep's --duration); 0: all of it
  bool stagger = true;             // their schedules offset evenly over one chunk period
  bool stagger_given = false;      // --stagger was on the command line
  // --batch: every stream's chunk of a period gathered into one chunk of streams x channels,
  // processed in one call (one launch per period on the GPU); the streams are aligned
  bool batch = false;
};

/// The largest --streams.
inline constexpr int kMaxStreams = 256;
/// The most channels a --batch chunk holds (streams x each stream's channels).
inline constexpr int kMaxBatchChannels = kMaxChunkChannels;

/// The largest --series-limit.
inline constexpr std::size_t kMaxSeriesLimit = std::size_t{1} << 26;
/// The largest --trace-limit (a chunk record is 288 bytes: 4.8 GB of records).
inline constexpr std::size_t kMaxTraceLimit = std::size_t{1} << 24;

/// `chunkscope monitor`: a live device through the chain.
struct MonitorOptions {
  StreamOptions stream;      // chain, chunk, margin, warm-up, queue depth, report files
  std::string input;         // index or name substring; "" = default input
  std::string output;        // index, name substring, "none"; "" = default output
  double rate = 0;           // 0: the input device's default rate
  int channels = 2;
  std::string duration;      // "" = until SIGINT/SIGTERM
  bool live = false;
  int latency_chunks = 2;
};

/// `chunkscope compare`: the same input through several variants.
struct CompareOptions {
  StreamOptions stream;      // chain, chunk, dtype, speed, warm-up, margin, synth signal...
  std::string input;         // a file, or empty with --synth
  bool synth_given = false;
  std::string variants = "cpu:fused,cpu:unfused,cuda:eager,cuda:graph";
  int rounds = 3;
  std::string json_path;
  bool quiet = false;
};

/// `chunkscope sweep`: a grid of chunk sizes x stream counts (x variants), a short paced
/// run of several streams per cell.
struct SweepOptions {
  StreamOptions stream;       // chain, dtype, margin, warm-up, queue depth, run modes, synthetic input
  std::string input;          // a file, or empty with --synth
  bool synth_given = false;
  std::vector<int> chunks = {128, 256, 512};
  std::vector<int> streams = {1, 2, 4};
  std::string variants;       // "": one variant, from --backend, --mode and --no-fuse
  std::string cell = "3s";    // each cell's length of audio (--duration): 512 frames count 200 chunks
  std::string json_path, html_path;
};

/// The most cells a sweep runs.
inline constexpr int kMaxSweepCells = 1000;

// ---------------------------------------------------------------- option words

/// "on" / "off" (--gpu-timing).
const char* on_off(bool on);
/// Parses "on" / "off". Throws InputError: "--gpu-timing: 'maybe' is not on or off".
bool parse_on_off(const std::string& s, const char* what);
/// "eager" / "recapture" (--short-chunk; true: recapture).
const char* short_chunk_name(bool recapture);
/// Parses "eager" / "recapture" into recapture. Throws InputError naming `what`.
bool parse_short_chunk(const std::string& s, const char* what = "--short-chunk");

/// Parses "block" / "spin" / "hybrid". Throws InputError: "--wait: 'fast' is not block, spin or hybrid".
WaitMode parse_wait_mode(const std::string& s, const char* what = "--wait");

/// The largest --metrics-hold.
inline constexpr std::int64_t kMaxMetricsHoldNs = 86'400'000'000'000;
/// --metrics-hold in ns (0: none). Throws InputError naming --metrics-hold, also when it is
/// given without --metrics-listen.
std::int64_t metrics_hold_ns(const StreamOptions& o);

/// The largest --baseline.
inline constexpr std::int64_t kMaxBaselineNs = 60'000'000'000;
/// --baseline in ns (0: none). Throws InputError naming --baseline.
std::int64_t baseline_ns(const StreamOptions& o);

/// Parses a CPU list: numbers and ranges separated by commas ("0,2", "0-3", "1,3-4"), in
/// the order given, each CPU once. `cpus_on_machine` (> 0) bounds them. Throws InputError
/// naming `what`: "--cpus: CPU 7 does not exist (this machine has 2)".
/// --step-timeout as nanoseconds for a stream of `chunk_frames` at `rate`: "auto" (the larger
/// of 2 s and 100 chunk durations), "off" (0), or a duration ("5s", "500ms"); InputError otherwise.
std::int64_t step_timeout_ns(const std::string& text, int chunk_frames, double rate);

std::vector<int> parse_cpu_list(const std::string& text, int cpus_on_machine, const char* what = "--cpus");

/// The engine threads' policy the options ask for: SCHED_FIFO at rt_priority under --rt,
/// and source, processor, sink pinned round-robin over the --cpus list (with --inline,
/// which has no processor thread, source and sink; the processor's slot is the sink's CPU).
/// The list is checked against this machine; throws InputError.
ThreadPolicy thread_policy(const StreamOptions& o);

// ---------------------------------------------------------------- command lines

/// `s` as one shell word: as is when it holds only letters, digits and . / _ - : = % ,
/// else in single quotes.
std::string shell_quote(const std::string& s);

/// The command line that runs `command` ("replay" or "synth") with `o`, every option equal
/// to its default left out, e.g. "chunkscope synth --signal noise --chain 'lp:8000:4'".
/// A replay without an input prints FILE in its place.
std::string stream_command_line(const std::string& command, const StreamOptions& o);

/// The command line of `chunkscope monitor` with `o`, defaults left out.
std::string monitor_command_line(const MonitorOptions& o);

/// The flags of a `command` run ("replay", "synth" or "monitor") that shape its experiment,
/// each only where it differs from the default, as words "--flag" or "--flag=value": the
/// input's (synth), the chain, chunk, backend, pacing, margin, queue, warm-up, baseline and
/// run mode, and the streams. Where outputs go (--json, --report-dir, --output...) is left
/// out, so a rerun does not overwrite the run's own files. The report keeps them
/// (`workload.args`) and every rerun hint starts from them.
std::vector<std::string> experiment_args(const std::string& command, const StreamOptions& o);

/// How commands printed for the user name the program: as it was invoked when that was a
/// path ("./build/chunkscope", "/usr/bin/chunkscope"), else "chunkscope" (found on PATH).
/// The command line sets it from argv[0] before it parses.
void set_program_name(const std::string& argv0);
const std::string& program_name();

}  // namespace chunkscope
