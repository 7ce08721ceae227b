#include "src/session/stream_session.hpp"

#include "src/io/audio_file.hpp"

#include "rt/cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <cerrno>
#include <cstring>
#include <pthread.h>
#include <sched.h>
#include <set>
#include <sndfile.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <utility>

#include "src/machine_load.hpp"

#include "src/chain_spec.hpp"
#include "src/environment.hpp"
#include "src/errors.hpp"
#include "src/io/file_stream.hpp"
#include "src/io/output_file.hpp"
#include "src/metrics/server.hpp"
#include "src/report/schema.hpp"
#include "src/report/terminal.hpp"
#include "src/report/trace.hpp"
#include "src/render/html.hpp"

namespace chunkscope {

namespace fs = std::filesystem;

std::int64_t parse_margin_ns(const std::string& text, std::int64_t chunk_ns) {
  std::int64_t m = 0;
  if (!text.empty() && text.back() == '%') {
    const double pct = parse_number(text.substr(0, text.size() - 1), "--margin");
    if (pct < 0) throw InputError(fmt::format("--margin: {} is negative", text));
    m = static_cast<std::int64_t>(std::llround(pct / 100.0 * static_cast<double>(chunk_ns)));
  } else {
    // a bare number is neither: say both ways of writing it
    bool bare = !text.empty();
    try {
      (void)parse_number(text, "--margin");
    } catch (const InputError&) {
      bare = false;
    }
    if (bare)
      throw InputError(fmt::format("--margin: '{0}' needs a unit: '{0}%' (a share of D) or a time such as '{0}ms'", text));
    m = parse_duration_ns(text, "--margin");
  }
  if (m >= chunk_ns)
    throw InputError(fmt::format("--margin: {} ({:.3f} ms) is not below the chunk duration D = {:.3f} ms: no budget left",
                                 text, m / 1e6, chunk_ns / 1e6));
  return m;
}

namespace {

// Checks an output location before streaming starts, so a bad path fails at once; nothing is
// created. A file inside `made_dir` (the report folder, created when the reports are written)
// is covered by that folder's check.
void check_writable_file(const std::string& path, const char* flag, const std::string& made_dir = "") {
  if (path.empty()) return;
  const fs::path parent = fs::path(path).parent_path();
  if (!made_dir.empty() && parent.lexically_normal() == fs::path(made_dir).lexically_normal()) return;
  check_output_path(path, fmt::format("{} '{}'", flag, path));
}

void check_writable_dir(const std::string& dir, const char* flag) {
  if (!dir.empty()) check_output_folder(dir, fmt::format("{} '{}'", flag, dir));
}

// D and the margin at `rate` and `speed`, and the budget `budget_chunks` x D - margin.
void set_timing(StreamSetup& su, const StreamOptions& opt, int budget_chunks) {
  const double eff_speed = su.max_speed ? 1.0 : su.speed;
  su.chunk_ns = static_cast<std::int64_t>(std::llround(opt.chunk * 1e9 / (su.rate * eff_speed)));
  su.margin_ns = parse_margin_ns(opt.margin, su.chunk_ns);
  su.budget_ns = budget_chunks * su.chunk_ns - su.margin_ns;
}

// The workload's backend fields from a prepared backend and the choice that made it: name,
// mode, state values, GPU timing, short-chunk policy, counters.
void describe_backend(Workload& w, const Backend& backend, const BackendChoice& choice) {
  w.backend = backend.name();
  w.mode = backend.mode();
  if (const auto* cpu = dynamic_cast<const CpuBackend*>(&backend)) {
    w.cpu_isa = cpu_isa_name(cpu->isa());
    w.cpu_layout = cascade_layout_name(cpu->layout());
    w.hosted_audit = cpu->hosted_audit();
    w.hosted_latency.clear();
    for (std::size_t i = 0; i < w.hosted_audit.size(); ++i) w.hosted_latency.push_back(cpu->hosted_latency(i));
  }
  w.state_values = backend.state_values();
  w.gpu_timing = choice.backend == BackendKind::cuda && choice.cuda.gpu_timing;
  w.short_chunk = short_chunk_name(choice.cuda.recapture_on_shape_change);
  w.counters = backend.counters();
}

// The report's step labels, for the trace's step slices: none when process is one built-in
// step (its slice would repeat the process slice).
std::vector<std::string> step_names(const RunReport& report) {
  std::vector<std::string> names;
  if (!report.has_step_rows()) return names;
  for (const auto& st : report.steps) names.push_back(st.label);
  return names;
}

void write_report_files(const RunReport& report, const RunStats& stats, const Engine& engine, const EngineResult& er,
                        const ReportPaths& paths);

// The terminal report (unless quiet) and the files in `paths`, listed when they go to a folder.
void write_reports(const RunReport& report, const RunStats& stats, const Engine& engine, const EngineResult& er,
                   const ReportPaths& paths, bool quiet) {
  if (!quiet) print_report(std::cout, report);
  write_report_files(report, stats, engine, er, paths);
  if (paths.dir.empty()) return;
  // --report-dir: say what is there (on stderr: stdout may carry a report)
  std::string list;
  for (const auto& f : {paths.json, paths.html, paths.trace})
    if (!f.empty() && f != "-") list += (list.empty() ? "" : ", ") + f;
  if (!paths.hgrm.empty()) list += fmt::format("{}{}/ ({} .hgrm files)", list.empty() ? "" : ", ", paths.hgrm, hgrm_file_names().size());
  std::cerr << "chunkscope: wrote " << list << "\n";
}

// The report files in `paths`.
void write_report_files(const RunReport& report, const RunStats& stats, const Engine& engine, const EngineResult& er,
                        const ReportPaths& paths) {
  if (!paths.dir.empty()) create_output_folder(paths.dir, fmt::format("--report-dir '{}'", paths.dir));
  if (!paths.json.empty()) write_report_file(paths.json, report, fmt::format("--json '{}'", paths.json));
  if (!paths.hgrm.empty()) {
    create_output_folder(paths.hgrm, fmt::format("--hgrm '{}'", paths.hgrm));
    write_hgrm_files(paths.hgrm, stats);
  }
  if (!paths.html.empty())
    write_text_output(paths.html, render_html(report), fmt::format("--report-dir '{}'", paths.dir));
  if (!paths.trace.empty())
    write_trace_file(paths.trace, engine.trace(), trace_threads(er),
                     {engine.config().trace_capacity, report.counts.emitted, step_names(report)},
                     fmt::format("--trace '{}'", paths.trace));
}

// One line for a stage failure, with the backend's own error text when it has one.
std::string describe_failure(Status st, const Backend& backend) {
  const std::string extra = backend.last_error();
  return extra.empty() ? describe(st) : fmt::format("{} ({})", describe(st), extra);
}

}  // namespace

ReportPaths report_paths(const StreamOptions& opt) {
  ReportPaths p{opt.json_path, opt.hgrm_dir, opt.trace_path, "", opt.report_dir};
  if (!opt.report_dir.empty()) {
    if (opt.report_html) p.html = (fs::path(opt.report_dir) / "report.html").string();
    if (p.json.empty()) p.json = (fs::path(opt.report_dir) / "report.json").string();
    if (p.hgrm.empty()) p.hgrm = (fs::path(opt.report_dir) / "hgrm").string();
    if (p.trace.empty()) p.trace = (fs::path(opt.report_dir) / "trace.json").string();
  }
  return p;
}

ReportPaths resolve_report_paths(const StreamOptions& opt) {
  const ReportPaths p = report_paths(opt);
  check_writable_dir(opt.report_dir, "--report-dir");
  check_writable_file(p.json, "--json", opt.report_dir);
  check_writable_file(p.trace, "--trace", opt.report_dir);
  check_writable_dir(p.hgrm, "--hgrm");
  return p;
}

std::vector<PathRole> stream_inputs(const std::string& input, const StreamOptions& opt) {
  std::vector<PathRole> in{{"input", input}};
  for (const auto& f : chain_files(opt.chain)) in.push_back({"sos file", f});
  return in;
}

std::vector<PathRole> stream_outputs(const StreamOptions& opt) {
  const ReportPaths p = report_paths(opt);
  const char* dir_flag = "--report-dir";
  std::vector<PathRole> out{{"--output", opt.output},
                            {opt.json_path.empty() ? dir_flag : "--json", p.json},
                            {opt.trace_path.empty() ? dir_flag : "--trace", p.trace},
                            {dir_flag, p.html}};
  if (!p.hgrm.empty())
    for (const auto& name : hgrm_file_names())
      out.push_back({opt.hgrm_dir.empty() ? dir_flag : "--hgrm", (fs::path(p.hgrm) / name).string()});
  return out;
}

void check_stream_options(const StreamOptions& opt) {
  check_chunk_frames(opt.chunk);
  if (opt.queue_depth < 1 || opt.queue_depth > 4096)
    throw InputError(fmt::format("--queue-depth: {} is out of range 1..4096", opt.queue_depth));
  if (opt.warmup < 0 || opt.warmup > 100'000'000)
    throw InputError(fmt::format("--warmup: {} is out of range 0..100000000", opt.warmup));
  if (opt.series_limit > kMaxSeriesLimit)
    throw InputError(fmt::format("--series-limit: {} is out of range 0..{}", opt.series_limit, kMaxSeriesLimit));
  (void)baseline_ns(opt);
  if (!opt.metrics_listen.empty()) (void)metrics::parse_listen_address(opt.metrics_listen);
  (void)metrics_hold_ns(opt);
  if (opt.rt_priority < 1 || opt.rt_priority > 99)
    throw InputError(fmt::format("--rt-priority: {} is out of range 1..99", opt.rt_priority));
  const ThreadPolicy pol = thread_policy(opt);
  if (!opt.cpus.empty()) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
      std::string list;
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &allowed)) list += (list.empty() ? "" : ",") + std::to_string(c);
      for (int c : parse_cpu_list(opt.cpus, CPU_SETSIZE))
        if (!CPU_ISSET(c, &allowed))
          throw InputError(fmt::format("--cpus: CPU {} is not among the CPUs this process may use ({})", c, list));
    }
  }
  (void)parse_output_subtype(opt.output_format);
  if (opt.output_format != StreamOptions{}.output_format && opt.output.empty())
    throw InputError(fmt::format("--output-format: {} needs --output (there is no file to write)", opt.output_format));
  if (opt.streams < 1 || opt.streams > kMaxStreams)
    throw InputError(fmt::format("--streams: {} is out of range 1..{}", opt.streams, kMaxStreams));
  if (opt.batch) {
    if (opt.streams < 2)
      throw InputError(fmt::format("--batch: needs --streams 2 or more (--streams {} has nothing to batch)", opt.streams));
    if (opt.stagger_given && opt.stagger)
      throw InputError("--stagger on: --batch processes every stream's chunk of a period together, so their schedules "
                       "are aligned; drop --stagger");
  }
  if (opt.streams > 1) {
    if (!opt.output.empty())
      throw InputError(fmt::format("--output: one file cannot hold {} streams (drop --output, or use --streams 1)",
                                   opt.streams));
    if (opt.rt && opt.wait == WaitMode::spin)
      throw InputError(fmt::format("--wait: spin under --rt with --streams {} would need a CPU of its own for every "
                                   "engine thread of every stream: use --wait hybrid",
                                   opt.streams));
  }
  if (opt.rt && opt.wait == WaitMode::spin) {
    // a SCHED_FIFO thread that spins never lets another thread of its priority run on its CPU
    const std::vector<int> used = opt.inline_process ? std::vector<int>{pol.cpus[0], pol.cpus[2]}
                                                     : std::vector<int>{pol.cpus[0], pol.cpus[1], pol.cpus[2]};
    bool own = true;
    for (std::size_t i = 0; i < used.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (used[i] < 0 || used[i] == used[j]) own = false;
    if (used[0] < 0) own = false;
    if (!own)
      throw InputError(fmt::format(
          "--wait: spin under --rt needs a CPU of its own for each of the {} engine threads (a real-time thread that "
          "spins never lets another run on its CPU): give --cpus with {} CPUs, or use --wait hybrid",
          used.size(), used.size()));
  }
}

void prepare_run_modes(const StreamOptions& opt) {
  const ThreadPolicy pol = thread_policy(opt);
  const bool pinned = std::any_of(pol.cpus.begin(), pol.cpus.end(), [](int c) { return c >= 0; });
  if (!opt.rt && !pinned) return;
  // the engine threads' policy, tried on a thread of its own so that nothing streams when
  // the system refuses it
  std::string refused;
  std::thread probe([&] {
    for (int i = 0; i < 3 && refused.empty(); ++i) {
      if (pol.rt_priority > 0) {
        sched_param sp{};
        sp.sched_priority = pol.rt_priority;
        if (const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp); rc != 0) {
          refused = fmt::format("--rt: SCHED_FIFO at priority {} was refused: {}{}", pol.rt_priority, std::strerror(rc),
                                rc == EPERM ? fmt::format(" (needs CAP_SYS_NICE or an rtprio limit of at least {}: "
                                                          "ulimit -r; a container may refuse real-time scheduling)",
                                                          pol.rt_priority)
                                            : std::string());
          return;
        }
      }
      const int cpu = pol.cpus[static_cast<std::size_t>(i)];
      if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); rc != 0) {
          refused = fmt::format("--cpus: pinning a thread to CPU {} was refused: {}", cpu, std::strerror(rc));
          return;
        }
      }
    }
  });
  probe.join();
  if (!refused.empty()) throw RuntimeFailure(refused);
  if (opt.rt && mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    const int e = errno;
    rlimit lim{};
    std::string limit = "unknown";
    if (getrlimit(RLIMIT_MEMLOCK, &lim) == 0)
      limit = lim.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : fmt::format("{} kB", lim.rlim_cur / 1024);
    throw RuntimeFailure(fmt::format(
        "--rt: locking the process's memory (mlockall) was refused: {} (needs CAP_IPC_LOCK or a memlock limit, "
        "ulimit -l, above the process's size; the limit is {})",
        std::strerror(e), limit));
  }
}

StreamSetup setup_stream(const std::string& command, const std::string& input, const StreamOptions& opt) {
  check_stream_options(opt);
  StreamSetup su;
  su.command = command;
  su.input = input;
  if (opt.speed == "max") {
    su.max_speed = true;
  } else {
    su.speed = parse_number(opt.speed, "--speed");
    if (!(su.speed > 0)) throw InputError(fmt::format("--speed: {} must be above 0 (or 'max')", opt.speed));
    if (su.speed > 1000) throw InputError(fmt::format("--speed: {} is above 1000 (use 'max')", opt.speed));
  }
  if (command == "replay") {
    FileSource fsrc(input, opt.dtype);
    su.rate = fsrc.info().rate;
    su.channels = fsrc.info().channels;
    su.in_format = fsrc.info().format;
    su.total_frames = fsrc.total_frames();
    if (opt.input_limit_ns > 0) {
      su.frame_limit = static_cast<std::int64_t>(std::llround(static_cast<double>(opt.input_limit_ns) * 1e-9 * su.rate));
      su.total_frames = std::min(su.total_frames, su.frame_limit);
    }
    if (opt.expect_rate > 0 && opt.expect_rate != su.rate)
      throw InputError(fmt::format("--rate: {} Hz does not match '{}' ({} Hz)", opt.expect_rate, input, su.rate));
    if (opt.expect_channels > 0 && opt.expect_channels != su.channels)
      throw InputError(
          fmt::format("--channels: {} does not match '{}' ({} channels)", opt.expect_channels, input, su.channels));
    if (su.channels > kMaxChannels)
      throw InputError(fmt::format("input '{}': {} channels, at most {} are supported", input, su.channels, kMaxChannels));
    su.input_desc.kind = InputDesc::Kind::file;
    // absolute: stage-bench replays the input from wherever the report is read
    std::error_code ec;
    const fs::path abs = fs::absolute(input, ec);
    su.input_desc.path = ec ? input : abs.lexically_normal().string();
  } else {
    if (!(opt.rate >= 1000 && opt.rate <= 768000))
      throw InputError(fmt::format("--rate: {} Hz is out of range 1000..768000", opt.rate));
    if (opt.channels < 1 || opt.channels > kMaxChannels)
      throw InputError(fmt::format("--channels: {} is out of range 1..{}", opt.channels, kMaxChannels));
    const SynthSpec sp = parse_synth(opt.signal, opt.rate);
    const auto dur = parse_duration_ns(opt.duration, "--duration");
    if (dur <= 0) throw InputError("--duration: must be above 0");
    su.rate = opt.rate;
    su.channels = opt.channels;
    su.in_format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
    su.total_frames = static_cast<std::int64_t>(std::llround(static_cast<double>(dur) * 1e-9 * opt.rate));
    su.input_desc.kind = InputDesc::Kind::synth;
    su.input_desc.signal = sp.text;
    su.input_desc.rate = su.rate;
    su.input_desc.channels = su.channels;
    su.input_desc.frames = su.total_frames;
  }
  if (opt.batch && static_cast<long long>(su.channels) * opt.streams > kMaxBatchChannels)
    throw InputError(fmt::format("--batch: {} streams x {} channels = {} channels in one chunk, above the {} a chunk "
                                 "can hold (fewer streams, or drop --batch)",
                                 opt.streams, su.channels, su.channels * opt.streams, kMaxBatchChannels));
  su.expected_chunks = (su.total_frames + opt.chunk - 1) / opt.chunk;
  su.plan = plan_for(su, opt, opt.fuse);
  set_timing(su, opt, 1);
  prepare_run_modes(opt);
  return su;
}

StreamSetup setup_device_stream(const StreamOptions& opt, double rate, int channels, int budget_chunks,
                                std::int64_t duration_ns, InputDesc input_desc) {
  check_stream_options(opt);
  if (opt.dtype != DType::f32) throw InputError("--dtype: monitor runs in f32 (PortAudio delivers float32 samples)");
  StreamSetup su;
  su.command = "monitor";
  su.rate = rate;
  su.channels = channels;
  su.total_frames = -1;
  // per-chunk points: as many as the duration needs (plus slack), else up to --series-limit
  if (duration_ns > 0)
    su.expected_chunks = static_cast<std::int64_t>(static_cast<double>(duration_ns) * 1e-9 * rate / opt.chunk) + 64;
  su.input_desc = std::move(input_desc);
  su.plan = plan_for(su, opt, opt.fuse);
  set_timing(su, opt, budget_chunks);
  prepare_run_modes(opt);
  return su;
}

Plan plan_for(const StreamSetup& su, const StreamOptions& opt, bool fuse) {
  if (!su.plan.spec.empty() && su.plan.fused == fuse) return su.plan;
  if (opt.chain.empty()) {
    Plan plan;
    plan.rate = su.rate;
    plan.fused = fuse;
    return plan;
  }
  return plan_chain(opt.chain, su.rate, fuse);
}

StreamSetup batched_setup(const StreamSetup& su, int n) {
  StreamSetup b = su;
  b.batch = su.batch * n;
  b.channels = su.channels * n;
  return b;
}

std::unique_ptr<ChunkSource> open_source(const StreamSetup& su, const StreamOptions& opt) {
  if (su.batch > 1) {
    StreamSetup one = su;
    one.batch = 1;
    one.channels = su.stream_channels();
    std::vector<std::unique_ptr<ChunkSource>> parts;
    for (int k = 0; k < su.batch; ++k) parts.push_back(open_source(one, opt));
    return std::make_unique<BatchSource>(std::move(parts), one.channels, opt.chunk, opt.dtype);
  }
  if (su.command == "replay") return std::make_unique<FileSource>(su.input, opt.dtype, su.frame_limit);
  SynthSpec sp = parse_synth(opt.signal, opt.rate);
  sp.channels = su.channels;
  sp.frames = su.total_frames;
  return std::make_unique<SynthSource>(sp, opt.dtype);
}

std::string stuck_reason(const StuckCall& s) {
  const std::string chunk = s.chunk == ~std::uint64_t{0} ? "" : fmt::format(" while processing chunk {}", s.chunk);
  return fmt::format("step {}, {}, had not returned from {}() after {:.1f} s{} (--step-timeout {:g}s)", s.step,
                     s.label ? s.label : "hosted code", s.call ? s.call : "process", static_cast<double>(s.for_ns) / 1e9,
                     chunk, static_cast<double>(s.timeout_ns) / 1e9);
}

std::string interrupted_reason(std::uint64_t not_processed) {
  if (not_processed == 0) return "stopped by a signal; the chunks in flight were finished";
  return fmt::format(
      "stopped by a signal; {} queued chunk(s) were not processed, the chunk being processed and those already "
      "processed were finished",
      not_processed);
}

// The CPUs the run's threads may use: pinned (--cpus), the distinct CPUs the engine's
// threads are pinned to (every stream's threads share them); else this process's affinity.
int run_cpus(const StreamOptions& opt) {
  const int online = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!opt.cpus.empty()) {
    std::set<int> pinned;
    for (int c : thread_policy(opt).cpus)  // checked before the run
      if (c >= 0) pinned.insert(c);
    if (!pinned.empty()) return static_cast<int>(pinned.size());
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return online;
}

RunStatsConfig stats_config(const StreamSetup& su, const StreamOptions& opt, int rounds) {
  RunStatsConfig sc;
  sc.load_streams = opt.batch ? 1 : std::max(1, opt.streams);  // a batch's process time holds every stream's
  sc.cpus = run_cpus(opt);
  sc.chunk_ns = su.chunk_ns;
  sc.budget_ns = su.budget_ns;
  sc.dry_after_ns = su.budget_ns + su.margin_ns;  // the deadline plus the margin's worth of buffered audio
  sc.paced = !su.max_speed;
  sc.warmup = static_cast<std::uint64_t>(opt.warmup);
  sc.media_ns_per_frame = 1e9 / (su.rate * (su.max_speed ? 1.0 : su.speed));
  sc.steps = static_cast<int>(std::min<std::size_t>(su.plan.steps.size(), kMaxTimedSteps));
  sc.series_capacity = opt.series_limit;
  if (su.expected_chunks >= 0)
    sc.series_capacity = std::min(opt.series_limit, static_cast<std::size_t>(su.expected_chunks) *
                                                        static_cast<std::size_t>(std::max(1, rounds)));
  return sc;
}

EngineConfig engine_config(const StreamSetup& su, const StreamOptions& opt, std::size_t trace_capacity) {
  EngineConfig ec;
  ec.spec = ProcessSpec{su.rate, su.channels, opt.chunk, opt.dtype};
  ec.queue_depth = opt.queue_depth;
  ec.speed = su.speed;
  ec.max_speed = su.max_speed;
  ec.trace_capacity = trace_capacity;
  // Hashing a chunk costs time on the processor thread: only warm-up chunks, which the
  // statistics leave out, are checksummed.
  ec.checksum_chunks = std::min<std::size_t>(64, static_cast<std::size_t>(opt.warmup));
  ec.wait = opt.wait;
  ec.policy = thread_policy(opt);
  ec.inline_process = opt.inline_process;
  ec.spec.flush_denormals = opt.ftz;
  ec.switch_record = opt.switch_record;
  ec.step_timeout_ns = step_timeout_ns(opt.step_timeout, opt.chunk, su.rate);
  return ec;
}

Workload make_workload(const StreamSetup& su, const StreamOptions& opt, const Backend& backend,
                       const ChunkSource& source, const ChunkSink& sink) {
  Workload w;
  w.command = su.command;
  w.source = source.describe();
  w.sink = sink.describe();
  w.rate = su.rate;
  w.channels = su.stream_channels();
  w.batch = su.batch;
  w.chunk_frames = opt.chunk;
  w.dtype = opt.dtype;
  w.warmup_chunks = static_cast<std::uint64_t>(opt.warmup);
  w.speed = su.max_speed ? std::nullopt : std::optional<double>(su.speed);
  w.margin_text = opt.margin;
  w.margin_ns = su.margin_ns;
  w.queue_depth = opt.queue_depth;
  w.media_seconds = static_cast<double>(su.total_frames) / su.rate;
  w.input = su.input_desc;
  describe_backend(w, backend, opt.backend);
  w.rt = opt.rt;
  w.policy = thread_policy(opt);
  w.cpus_text = opt.cpus;
  w.wait = opt.wait;
  w.inline_process = opt.inline_process;
  w.ftz = opt.ftz;
  w.args = experiment_args(su.command, opt);
  return w;
}

// ---------------------------------------------------------------- StreamSession

StreamSession::StreamSession(StreamSetup setup, const StreamOptions& opt, ReportPaths paths)
    : su_(std::move(setup)), opt_(opt), paths_(std::move(paths)) {}

EngineConfig StreamSession::engine_config() const {
  return chunkscope::engine_config(su_, opt_, paths_.trace.empty() ? 0 : opt_.trace_capacity);
}

void StreamSession::prepare(ChunkSource& source, ChunkSink& sink, const EngineConfig& ec,
                            stats::IntervalRecorder* live_latency, stats::IntervalRecorder* live_jitter,
                            const RunStats::MetricRecorders* metrics) {
  backend_ = make_backend(opt_.backend, su_.plan, ec.spec);
  stats_.prepare(stats_config(su_, opt_));
  if (live_latency || live_jitter) stats_.enable_live(live_latency, live_jitter);
  if (metrics) stats_.enable_metrics(*metrics);
  if (!ok(engine_.prepare(ec, *backend_, source, sink, stats_)))
    throw RuntimeFailure("engine: prepare failed (invalid configuration)");
  source_ = &source;
  sink_ = &sink;
}

std::optional<BaselineResult> measure_baseline(const StreamSetup& su, const StreamOptions& opt) {
  const std::int64_t len = baseline_ns(opt);
  if (su.max_speed || len <= 0) return std::nullopt;  // at --speed max there is no schedule to measure against
  BaselineConfig bc;
  bc.period_ns = su.chunk_ns;
  bc.duration_ns = len;
  bc.wait = opt.wait;
  bc.policy = thread_policy(opt);
  return measure_platform(bc);
}

std::optional<BaselineResult> StreamSession::measure_baseline() const { return chunkscope::measure_baseline(su_, opt_); }

void StreamSession::measure_before() {
  proc_before_ = read_proc_snapshot();
  baseline_before_ = measure_baseline();
  adopt_platform_tails(baseline_before_);
}

void StreamSession::adopt_platform_tails(const std::optional<BaselineResult>& b) { judge_against(stats_, b); }

void judge_against(RunStats& stats, const std::optional<BaselineResult>& b) {
  // the machine's own tails, against which a late chunk's platform waits are judged
  if (b && b->status == Status::ok && b->wake.count() > 0)
    stats.set_platform_tails(static_cast<std::int64_t>(b->wake.max()), static_cast<std::int64_t>(b->handoff.max()));
}

void StreamSession::measure_after() {
  proc_after_ = read_proc_snapshot();  // the machine over the run, not over the baseline after it
  // a stopped run ends at once: no second baseline
  if (result_.status != Status::interrupted) baseline_after_ = measure_baseline();
}

void StreamSession::adopt_measurements(const StreamSession& other) {
  baseline_before_ = other.baseline_before_;
  baseline_after_ = other.baseline_after_;
  proc_before_ = other.proc_before_;
  proc_after_ = other.proc_after_;
}

void StreamSession::run(const std::atomic<bool>* stop) {
  engine_.watch_stop_flag(stop);
  result_ = engine_.run();
}

RunOutcome StreamSession::outcome() const {
  const EngineResult& er = result_;
  RunOutcome o;
  if (!ok(er.policy_status)) {
    o.state = RunState::incomplete;
    o.reason = fmt::format("the system refused the engine threads' scheduling (--rt, --cpus): {}", describe(er.policy_status));
  } else if (er.status == Status::interrupted && ok(er.process_status) && ok(er.sink_status)) {
    o.state = RunState::interrupted;
    o.reason = interrupted_reason(er.not_processed);
  } else if (!ok(er.source_status) && er.source_status != Status::end_of_stream) {
    const auto* file = dynamic_cast<const FileSource*>(source_);
    o.state = RunState::incomplete;
    o.reason = file && file->truncated() ? fmt::format("input '{}' ended after {} of {} frames", su_.input,
                                                       file->delivered(), file->total_frames())
                                         : fmt::format("source failed: {}", describe(er.source_status));
  } else if (er.stuck.stuck) {
    o.state = RunState::incomplete;
    o.reason = stuck_reason(er.stuck);
  } else if (!ok(er.process_status)) {
    o.state = RunState::incomplete;
    o.reason = fmt::format("processing failed: {}", describe_failure(er.process_status, *backend_));
  } else if (!ok(er.sink_status)) {
    o.state = RunState::incomplete;
    o.reason = fmt::format("sink '{}' failed: {}", sink_->describe(), describe(er.sink_status));
  }
  return o;
}

Workload StreamSession::workload() const {
  Workload w = make_workload(su_, opt_, *backend_, *source_, *sink_);
  if (su_.total_frames < 0) w.media_seconds = static_cast<double>(stats_.frames) / su_.rate;  // a live device
  w.baseline_before = baseline_before_;
  w.baseline_after = baseline_after_;
  w.proc_before = proc_before_;
  w.proc_after = proc_after_;
  return w;
}

RunReport StreamSession::report(const Workload& w, const RunOutcome& outcome, std::optional<DeviceSection> device) {
  RunReport r = build_run_report(w, su_.plan, probe_environment(), stats_, result_, outcome, std::move(device));
  r.exit_policy = ExitPolicy{opt_.fail_on_miss, opt_.fail_on_unsafe};
  stats_.release_series();  // the report holds the series now; its files are written without both copies
  return r;
}

void StreamSession::write(const RunReport& report) const {
  write_reports(report, stats_, engine_, result_, paths_, opt_.quiet);
}

int StreamSession::finish(const RunReport& report, const RunOutcome& outcome, bool also_broken) const {
  if (outcome.state == RunState::incomplete) {
    std::cerr << "chunkscope: " << one_line(outcome.reason) << " (report marked incomplete)\n";
    return kExitRuntime;
  }
  if (opt_.fail_on_miss && (budget_broken(report) || also_broken)) return kExitMiss;
  if (opt_.fail_on_unsafe && report.unsafe_code()) return kExitMiss;
  return kExitOk;
}

}  // namespace chunkscope
