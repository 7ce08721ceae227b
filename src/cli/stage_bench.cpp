#include "src/cli/stage_bench.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gpu.hpp"
#include "rt/backend.hpp"
#include "rt/checksum.hpp"
#include "rt/clock.hpp"
#include "rt/denormals.hpp"
#include "rt/run_stats.hpp"
#include "src/cli/signals.hpp"
#include "src/io/output_file.hpp"
#include "src/errors.hpp"
#include "src/plan.hpp"
#include "src/backends.hpp"
#include "src/report/build.hpp"
#include "src/report/format.hpp"
#include "src/report/schema.hpp"
#include "rt/stats/histogram.hpp"
#include "src/io/file_stream.hpp"

namespace chunkscope {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {


// The parts of a process() call a backend reports, in the order of Part (part_key() names them).
constexpr int kParts = kPartCount;
constexpr std::int64_t ProcessStats::*kPartFields[kParts] = {&ProcessStats::launch_ns, &ProcessStats::h2d_ns,
                                                              &ProcessStats::kernel_ns, &ProcessStats::d2h_ns,
                                                              &ProcessStats::sync_ns, &ProcessStats::calib_ns};

// Stage names of a run that cannot be replayed alone: every stage but process, and the
// end-to-end path.
bool pipeline_only(const std::string& name) {
  for (int i = 0; i < kStageCount; ++i)
    if (static_cast<Stage>(i) != Stage::process && name == stage_key(static_cast<Stage>(i))) return true;
  return name == "end-to-end" || name == "latency";
}

// Caps on the input kept in memory for the timed calls (chunks cycle through it).
constexpr std::size_t kPoolMaxChunks = 256;
constexpr std::size_t kPoolMaxBytes = std::size_t{32} << 20;

// ------------------------------------------------------------------ what the run recorded
// The run report and what stage-bench needs of it, checked: every refusal is one line
// naming the report and the field (InputError).
struct Subject {
  std::string label;  // RUN.json or COMPARE.json#variant
  RunReport report;
  Signature sig;
  bool have_checksums = false;
  std::vector<std::uint64_t> ck_in, ck_out;
};

[[noreturn]] void bad(const std::string& label, const std::string& what) {
  throw InputError(fmt::format("report '{}': {}", label, what));
}

std::uint64_t parse_hex64(const std::string& label, const std::string& s, const std::string& path) {
  if (s.empty() || s.size() > 16 || s.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    bad(label, fmt::format("{} '{}' is not a 64-bit hex value", path, s));
  return std::stoull(s, nullptr, 16);
}

void check_options(const StageBenchOptions& o) {
  if (o.report.empty()) throw InputError("stage-bench: a run report (RUN.json) is required");
  if (o.stage != stage_key(Stage::process)) {
    if (pipeline_only(o.stage))
      throw InputError(fmt::format(
            "--stage: '{}' cannot run alone: queues, the sink and the end-to-end path exist only inside the pipeline, "
            "and the source is read here only to regenerate the input (supported: process)",
            o.stage));
    throw InputError(fmt::format("--stage: '{}' is not a stage that can be benched alone (supported: process)", o.stage));
  }
  static_cast<void>(step_timeout_ns(o.step_timeout, 1, 48000));  // refused here when it is not one
  if (o.iterations < 1) throw InputError(fmt::format("--iterations: {} must be 1 or more", o.iterations));
  if (o.iterations > 100'000'000) throw InputError(fmt::format("--iterations: {} is above 100000000", o.iterations));
  if (o.warmup < 0) throw InputError(fmt::format("--warmup: {} is negative", o.warmup));
  if (o.warmup > 100'000'000) throw InputError(fmt::format("--warmup: {} is above 100000000", o.warmup));
  if (!o.json.empty()) {
    check_distinct_paths({{"report", report_file_of(o.report)}}, {{"--json", o.json}});
    cli::guard_outputs({{"--json", o.json}});
    check_output_path(o.json, fmt::format("--json '{}'", o.json));
  }
}

Subject load_subject(const std::string& spec) {
  Subject s;
  s.label = spec;
  s.report = load_run_report(spec);
  const ReportWorkload& w = s.report.workload;
  if (w.command == "probe")
    bad(s.label, fmt::format("a probe's report (the callback of '{}'): its processing is the application's own code, "
                             "which stage-bench cannot rebuild",
                             w.chain));
  if (!w.signature)
    bad(s.label, "no workload.signature: the report predates stage signatures; rerun the stream with this version of "
                 "chunkscope to record one");
  s.sig = *w.signature;
  const Signature& g = s.sig;
  if (s.report.streams && s.report.streams->batched())
    bad(s.label, fmt::format("a --batch run ({} streams of {} channel(s) in one chunk of {}): stage-bench replays one "
                             "stream's input; rerun one stream without --streams and --batch and bench that report",
                             s.report.streams->count, w.channels, g.channels));
  if (g.frames < 1 || g.frames > kMaxChunkFrames)
    bad(s.label, fmt::format("workload.signature.frames = {} is out of range 1..{}", g.frames, kMaxChunkFrames));
  if (g.channels < 1 || g.channels > kMaxChannels)
    bad(s.label, fmt::format("workload.signature.channels = {} is out of range 1..{}", g.channels, kMaxChannels));
  if (!(g.rate >= 1000 && g.rate <= 768000))
    bad(s.label, fmt::format("workload.signature.rate = {} Hz is out of range 1000..768000", g.rate));
  if (g.backend != "cpu" && g.backend != "cuda")
    bad(s.label, fmt::format("workload.signature.backend '{}' is not cpu or cuda", g.backend));
  if (g.short_chunk != "eager" && g.short_chunk != "recapture")
    bad(s.label, fmt::format("workload.signature.short_chunk '{}' is not eager or recapture", g.short_chunk));
  if (g.chain.empty()) bad(s.label, "workload.signature.chain is empty: the run had no processing stage, nothing to bench");
  if (w.input.kind == InputDesc::Kind::none)
    bad(s.label, "no workload.input: the report predates replayable inputs; rerun the stream with this version of "
                 "chunkscope");
  if (w.input.kind == InputDesc::Kind::synth) {
    if (w.input.rate != g.rate)
      bad(s.label, fmt::format("workload.input.rate {} Hz differs from workload.signature.rate {} Hz", w.input.rate, g.rate));
    if (w.input.channels != g.channels)
      bad(s.label, fmt::format("workload.input.channels {} differs from workload.signature.channels {}", w.input.channels,
                               g.channels));
    if (w.input.frames < 1) bad(s.label, fmt::format("workload.input.frames = {} is not above 0", w.input.frames));
  }
  const Checksums& ck = s.report.checksums;
  if (!ck.input.empty()) {
    if (ck.algorithm != "fnv1a64")
      bad(s.label, fmt::format("checksums.algorithm '{}' is not supported (fnv1a64)", ck.algorithm));
    s.have_checksums = true;
    for (std::size_t k = 0; k < ck.input.size(); ++k) {
      s.ck_in.push_back(parse_hex64(s.label, ck.input[k], fmt::format("checksums.input[{}]", k)));
      s.ck_out.push_back(parse_hex64(s.label, ck.output[k], fmt::format("checksums.output[{}]", k)));
    }
  } else {
    s.have_checksums = true;  // recorded, but zero chunks (e.g. --warmup 0)
  }
  return s;
}

// ------------------------------------------------------------------ the harness
struct Harness {
  Plan plan;
  std::unique_ptr<Backend> backend;
};

[[noreturn]] void mismatch(const std::string& label, const char* field, const std::string& run, const std::string& harness) {
  throw RuntimeFailure(fmt::format(
      "report '{}': signature mismatch on {}: the run recorded {}, the harness here has {}; refusing to time a "
      "different stage",
      label, field, run, harness));
}

// The plan and backend rebuilt from the signature; refused unless they are the stage the
// run measured.
Harness build_harness(const Subject& s) {
  const Signature& g = s.sig;
  Harness h;
  try {
    h.plan = plan_chain(g.chain, g.rate, g.fused);
  } catch (const InputError& e) {
    bad(s.label, fmt::format("workload.signature.chain: {}", e.what()));
  }
  BackendChoice choice;
  choice.backend = parse_backend_kind(g.backend, "workload.signature.backend");
  if (g.backend == "cuda") {
    if (g.mode != "eager" && g.mode != "graph")
      bad(s.label, fmt::format("workload.signature.mode '{}' is not eager or graph (backend cuda)", g.mode));
    choice.cuda.mode = g.mode == "graph" ? CudaOptions::Mode::graph : CudaOptions::Mode::eager;
    choice.cuda.gpu_timing = g.gpu_timing;
    choice.cuda.recapture_on_shape_change = g.short_chunk == "recapture";
  }
  if (g.backend == "cpu" && !g.cpu_isa.empty()) {  // the kernels the run used, or none
    CpuIsa isa = CpuIsa::scalar;
    if (!parse_cpu_isa(g.cpu_isa.c_str(), &isa))
      bad(s.label, fmt::format("workload.signature.cpu_isa '{}' is not scalar, sse4, avx2 or avx512", g.cpu_isa));
    choice.cpu_isa = isa;
  }
  ProcessSpec spec{g.rate, g.channels, g.frames, g.dtype};
  const auto& mode = s.report.workload.run_mode;
  spec.flush_denormals = !mode || mode->ftz;  // as the run processed
  try {
    h.backend = make_backend(choice, h.plan, spec);
  } catch (const RuntimeFailure& e) {
    throw RuntimeFailure(fmt::format("report '{}': cannot rebuild the {} backend here: {}", s.label, g.backend, e.what()));
  }
  const Backend& b = *h.backend;
  if (g.backend != b.name()) mismatch(s.label, "backend", "'" + g.backend + "'", fmt::format("'{}'", b.name()));
  if (g.mode != b.mode()) mismatch(s.label, "mode", "'" + g.mode + "'", fmt::format("'{}'", b.mode()));
  if (g.state_values != b.state_values())
    mismatch(s.label, "state_values", std::to_string(g.state_values), std::to_string(b.state_values()));
  const auto planned = static_cast<std::size_t>(s.report.workload.dispatches_per_chunk_planned);
  if (planned != h.plan.dispatches())
    mismatch(s.label, "dispatches_per_chunk_planned", std::to_string(planned), std::to_string(h.plan.dispatches()));
  return h;
}

// ------------------------------------------------------------------ the input
struct Input {
  std::unique_ptr<ChunkSource> source;
  std::string desc;
  bool live = false;  // a device run: not replayable
};

Input open_input(const Subject& s) {
  const Signature& g = s.sig;
  const InputDesc& in = s.report.workload.input;
  Input r;
  if (in.kind == InputDesc::Kind::file) {
    std::error_code ec;
    if (!fs::exists(in.path, ec))
      bad(s.label, fmt::format("input file '{}' (workload.input.path) is gone: relative paths are taken from the current "
                               "folder, as the run recorded them",
                               in.path));
    auto fsrc = std::make_unique<FileSource>(in.path, g.dtype);
    if (fsrc->info().rate != g.rate)
      mismatch(s.label, "rate", fmt::format("{} Hz", g.rate), fmt::format("{} Hz in '{}'", fsrc->info().rate, in.path));
    if (fsrc->info().channels != g.channels)
      mismatch(s.label, "channels", std::to_string(g.channels), fmt::format("{} in '{}'", fsrc->info().channels, in.path));
    r.desc = fmt::format("file {}", in.path);
    r.source = std::move(fsrc);
    return r;
  }
  SynthSpec sp;
  if (in.kind == InputDesc::Kind::synth) {
    try {
      sp = parse_synth(in.signal, g.rate);
    } catch (const InputError& e) {
      bad(s.label, fmt::format("workload.input.signal: {}", e.what()));
    }
    sp.frames = in.frames;
    r.desc = fmt::format("synth {}", in.signal);
  } else {
    sp = parse_synth("noise", g.rate);
    sp.frames = static_cast<std::int64_t>(kPoolMaxChunks) * g.frames;  // enough noise for the chunks kept for timing
    r.desc = fmt::format("live device{} (not replayable): synthetic noise of the same shape",
                         in.device_name.empty() ? "" : " '" + in.device_name + "'");
    r.live = true;
  }
  sp.channels = g.channels;
  r.source = std::make_unique<SynthSource>(sp, g.dtype);
  return r;
}

// ------------------------------------------------------------------ replaying the recorded chunks
// Chunks 0..K-1 run in order through the fresh backend, their input and output hashed and
// compared with the run's; the first chunks are kept for the timed calls.
struct Replay {
  std::size_t K = 0, matched = 0, read_chunks = 0, short_chunks = 0;
  std::optional<std::size_t> first_bad;
  std::string bad_side, bad_expected, bad_got;
  std::vector<unsigned char> pool;  // kept chunks, each chunk_bytes long
  std::vector<int> pool_frames;
  std::vector<std::size_t> order;   // the kept chunks the timed calls cycle through
};

Replay replay_recorded(const Subject& s, Backend& backend, Input& input) {
  const Signature& g = s.sig;
  const std::size_t frame_bytes = static_cast<std::size_t>(g.channels) * dtype_size(g.dtype);
  const std::size_t chunk_bytes = static_cast<std::size_t>(g.frames) * frame_bytes;
  const std::size_t pool_max = std::max<std::size_t>(1, std::min(kPoolMaxChunks, kPoolMaxBytes / chunk_bytes));
  Replay r;
  r.K = !input.live && s.have_checksums ? s.ck_in.size() : 0;
  auto note_mismatch = [&](std::size_t k, const char* side, const std::string& expected, const std::string& got) {
    if (r.first_bad) return;
    r.first_bad = k;
    r.bad_side = side;
    r.bad_expected = expected;
    r.bad_got = got;
  };
  std::vector<unsigned char> buf(chunk_bytes);
  for (std::size_t seq = 0;; ++seq) {
    if (seq >= r.K && r.pool_frames.size() >= pool_max) break;
    int n = 0;
    const Status st = input.source->fill(buf.data(), g.frames, &n);
    if (st == Status::end_of_stream || (ok(st) && n == 0)) break;
    if (!ok(st))
      throw InputError(fmt::format("report '{}': input '{}': reading chunk {} failed ({})", s.label, input.desc, seq,
                                   describe(st)));
    ++r.read_chunks;
    if (n < g.frames) ++r.short_chunks;
    const std::size_t bytes = static_cast<std::size_t>(n) * frame_bytes;
    if (r.pool_frames.size() < pool_max) {
      r.pool.insert(r.pool.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(bytes));
      r.pool.resize(r.pool.size() + (chunk_bytes - bytes));
      r.pool_frames.push_back(n);
    }
    if (seq >= r.K) continue;
    const std::uint64_t hin = fnv1a64(buf.data(), bytes);
    const bool in_ok = hin == s.ck_in[seq];
    if (!in_ok) note_mismatch(seq, "input", hex64(s.ck_in[seq]), hex64(hin));
    ProcessStats ps{};
    const Status ps_st = backend.process({buf.data(), n, g.channels, g.dtype, seq}, &ps);
    if (!ok(ps_st))
      throw RuntimeFailure(fmt::format("report '{}': process() failed on chunk {}: {}{}{}", s.label, seq, describe(ps_st),
                                       *backend.last_error() ? ": " : "", backend.last_error()));
    const std::uint64_t hout = fnv1a64(buf.data(), bytes);
    const bool out_ok = hout == s.ck_out[seq];
    if (in_ok && !out_ok) note_mismatch(seq, "output", hex64(s.ck_out[seq]), hex64(hout));
    if (in_ok && out_ok) ++r.matched;
  }
  if (r.read_chunks < r.K && !r.first_bad)
    note_mismatch(r.read_chunks, "input", fmt::format("{} chunks", r.K), fmt::format("the input ended after {} chunks", r.read_chunks));
  if (r.pool_frames.empty())
    throw InputError(fmt::format("report '{}': input '{}' holds no samples: nothing to time", s.label, input.desc));
  // the timed calls cycle through the full chunks kept (all kept chunks when none is full)
  for (std::size_t i = 0; i < r.pool_frames.size(); ++i)
    if (r.pool_frames[i] == g.frames) r.order.push_back(i);
  if (r.order.empty())
    for (std::size_t i = 0; i < r.pool_frames.size(); ++i) r.order.push_back(i);
  return r;
}

// ------------------------------------------------------------------ timing alone
struct IsoTiming {
  HistSummary total;
  std::array<std::optional<HistSummary>, kParts> parts;
  std::vector<HistSummary> steps;  // each timed step of the plan, isolated (CPU backend)
};

IsoTiming time_alone(const Subject& s, Backend& backend, const Replay& rp, const StageBenchOptions& o) {
  const Signature& g = s.sig;
  const std::size_t frame_bytes = static_cast<std::size_t>(g.channels) * dtype_size(g.dtype);
  const std::size_t chunk_bytes = static_cast<std::size_t>(g.frames) * frame_bytes;
  stats::LogHistogram iso;
  std::vector<stats::LogHistogram> parts(kParts);
  std::vector<stats::LogHistogram> steps(static_cast<std::size_t>(kMaxTimedSteps));
  std::size_t steps_seen = 0;
  std::vector<unsigned char> work(chunk_bytes);
  backend.reset();
  Status fail = Status::ok;
  long long failed_at = -1;
  const long long total_calls = o.warmup + o.iterations;
  std::size_t pos = 0;
  for (long long i = 0; i < total_calls; ++i) {  // no allocation in this loop
    const std::size_t slot = rp.order[pos];
    pos = pos + 1 == rp.order.size() ? 0 : pos + 1;
    const int n = rp.pool_frames[slot];
    std::memcpy(work.data(), rp.pool.data() + slot * chunk_bytes, static_cast<std::size_t>(n) * frame_bytes);
    ProcessStats ps{};
    const std::int64_t t0 = now_ns();
    const Status st = backend.process({work.data(), n, g.channels, g.dtype, static_cast<std::uint64_t>(i)}, &ps);
    const std::int64_t t1 = now_ns();
    if (!ok(st)) {
      fail = st;
      failed_at = i;
      break;
    }
    if (i < o.warmup) continue;
    iso.record(static_cast<std::uint64_t>(std::max<std::int64_t>(0, t1 - t0)));
    for (int p = 0; p < kParts; ++p)
      if (ps.*kPartFields[p] > 0) parts[static_cast<std::size_t>(p)].record(static_cast<std::uint64_t>(ps.*kPartFields[p]));
    steps_seen = std::max<std::size_t>(steps_seen, ps.steps);
    for (std::size_t k = 0; k < ps.steps && k < steps.size(); ++k) steps[k].record(ps.step_ns[k]);
  }
  if (!ok(fail))
    throw RuntimeFailure(fmt::format("report '{}': process() failed on timed call {}: {}{}{}", s.label, failed_at,
                                     describe(fail), *backend.last_error() ? ": " : "", backend.last_error()));
  IsoTiming t;
  t.total = summarize(iso);
  for (int p = 0; p < kParts; ++p)
    if (parts[static_cast<std::size_t>(p)].count() > 0) t.parts[static_cast<std::size_t>(p)] = summarize(parts[static_cast<std::size_t>(p)]);
  for (std::size_t k = 0; k < steps_seen && k < steps.size(); ++k) t.steps.push_back(summarize(steps[k]));
  return t;
}

// ------------------------------------------------------------------ the comparison and its text
constexpr Pct kCmpPcts[] = {Pct::p50, Pct::p95, Pct::p99};
constexpr int kCmp = 4;  // p50, p95, p99, max
const char* const kCmpKeys[kCmp] = {"p50", "p95", "p99", "max"};

std::optional<double> cmp_value(const HistSummary& h, int k) {
  if (!h.has_data()) return std::nullopt;
  return k < 3 ? static_cast<double>(at(h, kCmpPcts[k])) : static_cast<double>(h.max);
}

std::string cell(const std::optional<double>& v) { return v ? fmt_time(*v) : std::string("-"); }
std::string cell_time(const HistSummary& h, int k) { return cell(cmp_value(h, k)); }
std::string signed_time(double ns) { return (ns > 0 ? "+" : ns < 0 ? "-" : "") + fmt_time(std::fabs(ns)); }
std::optional<double> p95_of(const HistSummary& h) { return cmp_value(h, 1); }

struct Comparison {
  std::array<std::optional<double>, kCmp> diff, ratio;
  std::optional<double> budget;
  std::string ck_text, sentence;
  bool ck_failed = false;
};

std::string checksum_text(const Subject& s, const Input& in, const Replay& rp, bool* failed) {
  *failed = false;
  if (in.live) return "not comparable (live device input)";
  if (rp.K == 0)
    return s.report.checksums.input.empty() ? "not comparable (the run recorded 0 chunks)" : "not comparable";
  if (!rp.first_bad)
    return fmt::format("{} of {} chunks match (fnv1a64 of input and output, state carried from prepare)", rp.matched, rp.K);
  *failed = true;
  if (rp.bad_side == "input")
    return fmt::format("{} of {} chunks match; input differs at chunk {} (run {}, here {}): the regenerated input is "
                       "not the run's (changed since the run?)",
                       rp.matched, rp.K, *rp.first_bad, rp.bad_expected, rp.bad_got);
  return fmt::format("{} of {} chunks match; first mismatch at chunk {}: output {} here, the run recorded {}", rp.matched,
                     rp.K, *rp.first_bad, rp.bad_got, rp.bad_expected);
}

Comparison compare_with_run(const Subject& s, const Input& in, const Replay& rp, const IsoTiming& t) {
  Comparison c;
  const HistSummary& pipe = s.report.stage(Stage::process);
  for (int k = 0; k < kCmp; ++k) {
    const auto a = cmp_value(t.total, k), b = cmp_value(pipe, k);
    if (a && b) c.diff[static_cast<std::size_t>(k)] = *b - *a;
    if (a && b && *a > 0) c.ratio[static_cast<std::size_t>(k)] = *b / *a;
  }
  if (s.report.timing.paced && s.report.timing.budget_ns > 0) c.budget = static_cast<double>(s.report.timing.budget_ns);
  c.ck_text = checksum_text(s, in, rp, &c.ck_failed);
  const double d50 = c.diff[0].value_or(0.0);
  if (!c.diff[1]) {
    c.sentence = "The run counted no processed chunks: there is no in-pipeline time to compare with.";
  } else if (*c.diff[1] > 0) {
    c.sentence = fmt::format(
        "In the pipeline the same computation took {} {} at p50 and {} more at p95 ({:.2f}x at p95): that is what "
        "the pipeline adds (waits, cache and CPU contention with the source and sink threads, preemption), not the "
        "stage itself.",
        fmt_time(std::fabs(d50)), d50 >= 0 ? "more" : "less", fmt_time(*c.diff[1]), c.ratio[1].value_or(0.0));
  } else {
    c.sentence = fmt::format(
        "In the pipeline the stage was no slower than alone at p95 ({} vs {}): the pipeline adds nothing measurable to "
        "it; the run's latency is hand-over and waits outside the stage.",
        cell_time(pipe, 1), cell_time(t.total, 1));
  }
  if (c.budget)
    if (const auto p95 = p95_of(pipe)) {
      const double pct = 100.0 * *p95 / *c.budget;
      c.sentence += fmt::format(" In the run the stage's p95 is {}% of the {} budget.",
                                pct < 1 ? fmt::format("{:.2f}", pct) : fmt::format("{:.1f}", pct), fmt_time(*c.budget));
    }
  return c;
}

void print_result(const Subject& s, const Harness& h, const Input& in, const Replay& rp, const IsoTiming& t,
                  const Comparison& c, const StageBenchOptions& o) {
  const Signature& g = s.sig;
  const RunReport& r = s.report;
  std::string out;
  auto line = [&out](const std::string& x) {
    out += x;
    out += '\n';
  };
  line(fmt::format("chunkscope stage-bench '{}': stage process, {} timed calls after {} warm-up", s.label, o.iterations,
                   o.warmup));
  line(fmt::format("signature  chain '{}': {} dispatch(es) per chunk, on {} ({}), {}", g.chain, h.plan.dispatches(),
                   g.backend, g.mode, dtype_name(g.dtype)));
  line(fmt::format("           {} Hz, {} ch, chunk {} frames, {} state values: the harness matches", g.rate, g.channels,
                   g.frames, g.state_values));
  line(fmt::format("input      {}: {} chunk(s) read, {} cycled through for timing", in.desc, rp.read_chunks, rp.order.size()));
  line(fmt::format("checksum   {}", c.ck_text));
  line("");
  line(fmt::format("{:<18} {:>10} {:>10} {:>10} {:>10} {:>10}", "process", "p50", "p95", "p99", "max", "count"));
  auto row = [&](const std::string& name, const HistSummary& x) {
    line(fmt::format("{:<18} {:>10} {:>10} {:>10} {:>10} {:>10}", name, cell_time(x, 0), cell_time(x, 1), cell_time(x, 2),
                     cell_time(x, 3), x.count));
  };
  row("isolated", t.total);
  row("in-pipeline", r.stage(Stage::process));
  std::string cells;
  for (int k = 0; k < kCmp; ++k) cells += fmt::format(" {:>10}", c.diff[static_cast<std::size_t>(k)] ? signed_time(*c.diff[static_cast<std::size_t>(k)]) : "-");
  line(fmt::format("{:<18}{}", "difference", cells));
  cells.clear();
  for (int k = 0; k < kCmp; ++k)
    cells += fmt::format(" {:>10}", c.ratio[static_cast<std::size_t>(k)] ? fmt::format("{:.2f}x", *c.ratio[static_cast<std::size_t>(k)]) : "-");
  line(fmt::format("{:<18}{}", "ratio", cells));
  for (int p = 0; p < kParts; ++p) {
    const auto& a = t.parts[static_cast<std::size_t>(p)];
    const auto& b = r.process_parts[static_cast<std::size_t>(p)];
    if (!a && !b) continue;
    row(fmt::format("  {} iso", part_key(static_cast<Part>(p))), a.value_or(HistSummary{}));
    row(fmt::format("  {} run", part_key(static_cast<Part>(p))), b.value_or(HistSummary{}));
  }
  // each planned step alone beside its time in the run (reports with step rows)
  if (t.steps.size() > 1 || (!t.steps.empty() && !r.steps.empty() && r.steps[0].hosted()))
    for (std::size_t k = 0; k < t.steps.size(); ++k) {
      const std::string label = k < r.steps.size() ? r.steps[k].label : std::to_string(k + 1);
      row(fmt::format("  step {} iso", k + 1), t.steps[k]);
      row(fmt::format("  step {} run", k + 1), k < r.steps.size() ? r.steps[k].wall : HistSummary{});
      line(fmt::format("    ({})", label));
    }
  line("");
  line(fmt::format("context    in the run: end-to-end p95 {}, queue_in p95 {}, queue_out p95 {}{}", cell_time(r.latency, 1),
                   cell_time(r.stage(Stage::wait_in), 1), cell_time(r.stage(Stage::wait_out), 1),
                   c.budget ? fmt::format(", budget {}", fmt_time(*c.budget)) : std::string()));
  line(fmt::format("pipeline   {}", c.sentence));
  std::cout << out << std::flush;
}

// The chunkscope.stagebench/1 document (its keys are this command's own schema).
json result_json(const Subject& s, const Harness& h, const Input& in, const Replay& rp, const IsoTiming& t,
                 const Comparison& c, const StageBenchOptions& o) {
  const RunReport& r = s.report;
  auto opt_num = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  auto with_parts = [&](const HistSummary& total, auto&& part_of) {
    json j = to_json(total);
    json parts = json::object();
    for (int p = 0; p < kParts; ++p)
      if (const auto& x = part_of(p)) parts[part_key(static_cast<Part>(p))] = to_json(*x);
    j["parts"] = parts;
    return j;
  };
  json j;
  j["schema"] = kStageBenchSchema;
  j["report"] = s.label;
  j["stage"] = o.stage;
  j["iterations"] = o.iterations;
  j["warmup"] = o.warmup;
  j["signature"] = to_json(s.sig);
  j["harness"] = {{"backend", h.backend->name()},
                  {"mode", h.backend->mode()},
                  {"state_values", h.backend->state_values()},
                  {"dispatches_per_chunk", h.plan.dispatches()},
                  {"matches", true}};
  const char* kind = in.live ? "device" : r.workload.input.kind == InputDesc::Kind::file ? "file" : "synth";
  j["input"] = {{"kind", kind},
                {"description", in.desc},
                {"chunks_read", rp.read_chunks},
                {"short_chunks", rp.short_chunks},
                {"timing_chunks", rp.order.size()}};
  json ck;
  ck["algorithm"] = "fnv1a64";
  ck["compared"] = rp.K > 0;
  ck["chunks"] = rp.K;
  ck["matched"] = rp.matched;
  ck["first_mismatch"] = rp.first_bad ? json(*rp.first_bad) : json(nullptr);
  ck["side"] = rp.first_bad ? json(rp.bad_side) : json(nullptr);
  if (rp.first_bad) {
    ck["expected"] = rp.bad_expected;
    ck["got"] = rp.bad_got;
  }
  ck["text"] = c.ck_text;
  j["checksum"] = ck;
  j["isolated"] = with_parts(t.total, [&](int p) -> const std::optional<HistSummary>& { return t.parts[static_cast<std::size_t>(p)]; });
  j["in_pipeline"] = with_parts(r.stage(Stage::process),
                                [&](int p) -> const std::optional<HistSummary>& { return r.process_parts[static_cast<std::size_t>(p)]; });
  json diff = json::object(), ratio = json::object();
  for (int k = 0; k < kCmp; ++k) {
    diff[kCmpKeys[k]] = opt_num(c.diff[static_cast<std::size_t>(k)]);
    ratio[kCmpKeys[k]] = opt_num(c.ratio[static_cast<std::size_t>(k)]);
  }
  j["difference"] = diff;
  j["ratio"] = ratio;
  json steps = json::array();
  for (std::size_t k = 0; k < t.steps.size(); ++k) {
    json e{{"index", k + 1}, {"isolated", to_json(t.steps[k])}};
    if (k < r.steps.size()) {
      e["label"] = r.steps[k].label;
      e["in_pipeline"] = to_json(r.steps[k].wall);
    }
    steps.push_back(std::move(e));
  }
  j["steps"] = steps;
  j["context"] = {{"latency_p95_ns", opt_num(p95_of(r.latency))},
                  {"queue_in_p95_ns", opt_num(p95_of(r.stage(Stage::wait_in)))},
                  {"queue_out_p95_ns", opt_num(p95_of(r.stage(Stage::wait_out)))},
                  {"budget_ns", opt_num(c.budget)}};
  j["text"] = c.sentence;
  return j;
}

}  // namespace

int run_stage_bench(const StageBenchOptions& o) {
  check_options(o);
  const Subject s = load_subject(o.report);
  if (!o.json.empty()) check_distinct_paths({{"the run's input", s.report.workload.input.path}}, {{"--json", o.json}});
  Harness h = build_harness(s);
  Input in = open_input(s);
  Replay rp;
  IsoTiming t;
  {
    const cli::HostedWatchdog watchdog(h.backend->hosted_watch(),
                                       step_timeout_ns(o.step_timeout, s.sig.frames, s.sig.rate),
                                       fmt::format("report '{}'", s.label));
    ScopedFlushDenormals ftz;  // as on the engine's processor thread
    rp = replay_recorded(s, *h.backend, in);
    t = time_alone(s, *h.backend, rp, o);
  }
  const Comparison c = compare_with_run(s, in, rp, t);
  print_result(s, h, in, rp, t, c, o);
  if (!o.json.empty()) write_json_file(o.json, result_json(s, h, in, rp, t, c, o), fmt::format("--json '{}'", o.json));
  if (c.ck_failed) {
    std::cerr << fmt::format("chunkscope: report '{}': checksum: {}\n", one_line(s.label), one_line(c.ck_text));
    return kExitRuntime;
  }
  return kExitOk;
}

}  // namespace chunkscope
