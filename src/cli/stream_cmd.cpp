#include "src/cli/stream_cmd.hpp"

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <sndfile.h>
#include <unistd.h>

#include "rt/cpu_backend.hpp"
#include "rt/engine.hpp"
#include "src/chain_spec.hpp"
#include "src/io/output_file.hpp"
#include "src/environment.hpp"
#include "src/errors.hpp"
#include "src/plan.hpp"
#include "src/backends.hpp"
#include "src/report/report.hpp"
#include "rt/run_stats.hpp"
#include "src/io/file_stream.hpp"

namespace chunkscope {

namespace fs = std::filesystem;

std::int64_t parse_margin_ns(const std::string& text, std::int64_t chunk_ns) {
  std::int64_t m = 0;
  if (!text.empty() && text.back() == '%') {
    const double pct = parse_number(text.substr(0, text.size() - 1), "--margin");
    if (pct < 0) throw InputError(fmt::format("--margin: {} is negative", text));
    m = static_cast<std::int64_t>(std::llround(pct / 100.0 * static_cast<double>(chunk_ns)));
  } else {
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

}  // namespace

ReportPaths report_paths(const StreamOptions& opt) {
  ReportPaths p{opt.json_path, opt.hgrm_dir, opt.trace_path, opt.report_dir};
  if (!opt.report_dir.empty()) {
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
                            {opt.trace_path.empty() ? dir_flag : "--trace", p.trace}};
  if (!p.hgrm.empty())
    for (const auto& name : hgrm_file_names())
      out.push_back({opt.hgrm_dir.empty() ? dir_flag : "--hgrm", (fs::path(p.hgrm) / name).string()});
  return out;
}

void write_reports(const nlohmann::json& report, const RunStats& stats, const Engine& engine, const EngineResult& er,
                   const ReportPaths& paths, bool quiet) {
  if (!quiet) print_report(std::cout, report);
  if (!paths.dir.empty()) create_output_folder(paths.dir, fmt::format("--report-dir '{}'", paths.dir));
  if (!paths.json.empty()) write_json_file(paths.json, report, fmt::format("--json '{}'", paths.json));
  if (!paths.hgrm.empty()) {
    create_output_folder(paths.hgrm, fmt::format("--hgrm '{}'", paths.hgrm));
    write_hgrm_files(paths.hgrm, stats);
  }
  if (!paths.trace.empty())
    write_json_file(paths.trace, build_trace(engine.trace(), er.start_ns), fmt::format("--trace '{}'", paths.trace));
}

StreamSetup setup_stream(const std::string& command, const std::string& input, const StreamOptions& opt) {
  check_chunk_frames(opt.chunk);
  if (opt.queue_depth < 1 || opt.queue_depth > 4096)
    throw InputError(fmt::format("--queue-depth: {} is out of range 1..4096", opt.queue_depth));
  if (opt.warmup < 0 || opt.warmup > 100'000'000)
    throw InputError(fmt::format("--warmup: {} is out of range 0..100000000", opt.warmup));
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
    if (opt.expect_rate > 0 && opt.expect_rate != su.rate)
      throw InputError(fmt::format("--rate: {} Hz does not match '{}' ({} Hz)", opt.expect_rate, input, su.rate));
    if (opt.expect_channels > 0 && opt.expect_channels != su.channels)
      throw InputError(
          fmt::format("--channels: {} does not match '{}' ({} channels)", opt.expect_channels, input, su.channels));
    if (su.channels > kMaxChannels)
      throw InputError(fmt::format("input '{}': {} channels, at most {} are supported", input, su.channels, kMaxChannels));
    su.input_desc = {{"kind", "file"}, {"path", input}};
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
    su.input_desc = {{"kind", "synth"}, {"signal", sp.text}, {"rate", su.rate}, {"channels", su.channels},
                     {"frames", su.total_frames}};
  }
  su.plan = plan_for(su, opt, opt.fuse);
  const double eff_speed = su.max_speed ? 1.0 : su.speed;
  su.chunk_ns = static_cast<std::int64_t>(std::llround(opt.chunk * 1e9 / (su.rate * eff_speed)));
  su.margin_ns = parse_margin_ns(opt.margin, su.chunk_ns);
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

std::unique_ptr<ChunkSource> open_source(const StreamSetup& su, const StreamOptions& opt) {
  if (su.command == "replay") return std::make_unique<FileSource>(su.input, opt.dtype);
  SynthSpec sp = parse_synth(opt.signal, opt.rate);
  sp.channels = su.channels;
  sp.frames = su.total_frames;
  return std::make_unique<SynthSource>(sp, opt.dtype);
}

RunStatsConfig stats_config(const StreamSetup& su, const StreamOptions& opt, int rounds) {
  RunStatsConfig sc;
  sc.chunk_ns = su.chunk_ns;
  sc.budget_ns = su.chunk_ns - su.margin_ns;
  sc.paced = !su.max_speed;
  sc.warmup = static_cast<std::uint64_t>(opt.warmup);
  sc.media_ns_per_frame = 1e9 / (su.rate * (su.max_speed ? 1.0 : su.speed));
  const auto expected = static_cast<std::size_t>((su.total_frames + opt.chunk - 1) / opt.chunk);
  sc.series_capacity = std::min(opt.series_limit, expected * static_cast<std::size_t>(std::max(1, rounds)));
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
  return ec;
}

Workload make_workload(const StreamSetup& su, const StreamOptions& opt, const Backend& backend,
                       const ChunkSource& source, const ChunkSink& sink) {
  Workload w;
  w.command = su.command;
  w.source = source.describe();
  w.sink = sink.describe();
  w.rate = su.rate;
  w.channels = su.channels;
  w.chunk_frames = opt.chunk;
  w.dtype = opt.dtype;
  w.warmup = static_cast<std::uint64_t>(opt.warmup);
  w.max_speed = su.max_speed;
  w.speed = su.speed;
  w.margin_text = opt.margin;
  w.margin_ns = su.margin_ns;
  w.queue_depth = opt.queue_depth;
  w.media_seconds = static_cast<double>(su.total_frames) / su.rate;
  w.input = su.input_desc;
  describe_backend(w, backend, opt.backend);
  return w;
}

void describe_backend(Workload& w, const Backend& backend, const BackendChoice& choice) {
  w.backend = backend.name();
  w.mode = backend.mode();
  w.state_values = backend.state_values();
  w.gpu_timing = w.backend == "cuda" && choice.cuda.gpu_timing;
  w.short_chunk = choice.cuda.recapture_on_shape_change ? "recapture" : "eager";
  w.counters = backend.counters();
}

/// One line for a stage failure, with the backend's own error text when it has one.
std::string describe_failure(Status st, const Backend& backend) {
  const std::string extra = backend.last_error();
  return extra.empty() ? describe(st) : fmt::format("{} ({})", describe(st), extra);
}

int run_stream(const std::string& command, const std::string& input, const StreamOptions& opt,
               const std::atomic<bool>* stop_flag) {
  const StreamSetup su = setup_stream(command, input, opt);
  check_distinct_paths(stream_inputs(input, opt), stream_outputs(opt));
  const ReportPaths paths = resolve_report_paths(opt);
  auto source = open_source(su, opt);
  FileSource* file_src = dynamic_cast<FileSource*>(source.get());

  // ---- sink
  std::unique_ptr<ChunkSink> sink;
  FileSink* file_sink = nullptr;
  if (!opt.output.empty()) {
    const int fmt_out = output_format_for(opt.output, su.in_format, su.channels, su.rate);
    auto s = std::make_unique<FileSink>(opt.output, fmt_out, su.rate, su.channels, opt.dtype);
    file_sink = s.get();
    sink = std::move(s);
  } else {
    sink = std::make_unique<NullSink>();
  }

  // ---- prepare
  const EngineConfig ec = engine_config(su, opt, paths.trace.empty() ? 0 : opt.trace_capacity);
  auto backend = make_backend(opt.backend, su.plan, ec.spec);
  RunStats stats;
  stats.prepare(stats_config(su, opt));
  Engine engine;
  if (!ok(engine.prepare(ec, *backend, *source, *sink, stats)))
    throw RuntimeFailure("engine: prepare failed (invalid configuration)");
  engine.watch_stop_flag(stop_flag);

  // ---- run
  const EngineResult er = engine.run();

  RunOutcome outcome;
  int exit_code = kExitOk;
  if (er.status == Status::interrupted && ok(er.process_status) && ok(er.sink_status)) {
    outcome.state = "interrupted";
    outcome.reason = "stopped by a signal; the chunks in flight were finished";
  } else if (!ok(er.source_status) && er.source_status != Status::end_of_stream) {
    outcome.state = "incomplete";
    outcome.reason = file_src && file_src->truncated()
                         ? fmt::format("input '{}' ended after {} of {} frames", input, file_src->delivered(),
                                       file_src->total_frames())
                         : fmt::format("source failed: {}", describe(er.source_status));
    exit_code = kExitRuntime;
  } else if (!ok(er.process_status)) {
    outcome.state = "incomplete";
    outcome.reason = fmt::format("processing failed: {}", describe_failure(er.process_status, *backend));
    exit_code = kExitRuntime;
  } else if (!ok(er.sink_status)) {
    outcome.state = "incomplete";
    outcome.reason = fmt::format("sink '{}' failed: {}", sink->describe(), describe(er.sink_status));
    exit_code = kExitRuntime;
  }
  if (file_sink && outcome.state == "complete") file_sink->commit();
  if (file_sink && outcome.state == "complete" && er.drops > 0)
    std::cerr << fmt::format("chunkscope: warning: {} dropped chunk(s) are missing from '{}' (it is {} frames short)\n",
                             er.drops, opt.output, static_cast<std::int64_t>(er.drops) * opt.chunk);

  const Workload w = make_workload(su, opt, *backend, *source, *sink);
  const auto report = build_report(w, su.plan, probe_environment(), stats, er, outcome);

  write_reports(report, stats, engine, er, paths, opt.quiet);
  if (exit_code != kExitOk) {
    std::cerr << "chunkscope: " << outcome.reason << " (report marked incomplete)\n";
    return exit_code;
  }
  if (opt.fail_on_miss && budget_broken(report)) return kExitMiss;
  return kExitOk;
}

}  // namespace chunkscope
