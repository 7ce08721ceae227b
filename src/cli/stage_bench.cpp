#include "src/cli/stage_bench.hpp"

#include <algorithm>
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
#include "src/io/output_file.hpp"
#include "src/errors.hpp"
#include "src/plan.hpp"
#include "src/backends.hpp"
#include "src/report/report.hpp"
#include "src/cli/report_cmd.hpp"
#include "rt/stats/histogram.hpp"
#include "src/io/file_stream.hpp"

namespace chunkscope {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {


// The parts of a process() call a backend reports, as the run report names them.
constexpr int kParts = 6;
const char* const kPartNames[kParts] = {"launch", "h2d", "kernel", "d2h", "sync", "calibration"};
constexpr std::int64_t ProcessStats::*kPartFields[kParts] = {&ProcessStats::launch_ns, &ProcessStats::h2d_ns,
                                                              &ProcessStats::kernel_ns, &ProcessStats::d2h_ns,
                                                              &ProcessStats::sync_ns, &ProcessStats::calib_ns};

// Stage names of a run that cannot be replayed alone.
const char* const kPipelineOnly[] = {"source", "queue_in", "queue_out", "sink", "end-to-end", "latency"};

// Caps on the input kept in memory for the timed calls (chunks cycle through it).
constexpr std::size_t kPoolMaxChunks = 256;
constexpr std::size_t kPoolMaxBytes = std::size_t{32} << 20;

std::string hex16(std::uint64_t v) { return fmt::format("{:016x}", v); }

// ------------------------------------------------------------------ report fields
// Every accessor names the report and the field in its error: one line, InputError.
class Fields {
 public:
  explicit Fields(std::string label) : label_(std::move(label)) {}
  const std::string& label() const { return label_; }

  [[noreturn]] void bad(const std::string& what) const {
    throw InputError(fmt::format("report '{}': {}", label_, what));
  }
  const json& member(const json& o, const char* key, const std::string& path) const {
    if (!o.is_object() || !o.contains(key)) bad(fmt::format("{} is missing", path));
    return o[key];
  }
  long long integer(const json& o, const char* key, const std::string& path, long long lo, long long hi) const {
    const json& v = member(o, key, path);
    if (!v.is_number_integer()) bad(fmt::format("{} is not an integer", path));
    const long long x = v.get<long long>();
    if (x < lo || x > hi) bad(fmt::format("{} = {} is out of range {}..{}", path, x, lo, hi));
    return x;
  }
  double number(const json& o, const char* key, const std::string& path) const {
    const json& v = member(o, key, path);
    if (!v.is_number()) bad(fmt::format("{} is not a number", path));
    return v.get<double>();
  }
  std::string string(const json& o, const char* key, const std::string& path) const {
    const json& v = member(o, key, path);
    if (!v.is_string()) bad(fmt::format("{} is not a string", path));
    return v.get<std::string>();
  }
  bool boolean(const json& o, const char* key, const std::string& path) const {
    const json& v = member(o, key, path);
    if (!v.is_boolean()) bad(fmt::format("{} is not true or false", path));
    return v.get<bool>();
  }

 private:
  std::string label_;
};

// ------------------------------------------------------------------ loading
std::string variant_names(const json& doc) {
  std::string names;
  if (doc.contains("variants") && doc["variants"].is_array())
    for (const auto& v : doc["variants"]) {
      if (!v.is_object() || !v.contains("name") || !v["name"].is_string()) continue;
      if (!names.empty()) names += ", ";
      names += v["name"].get<std::string>();
    }
  return names.empty() ? std::string("none") : names;
}

// Loads RUN.json, or COMPARE.json#variant (the run report a compare report embeds).
// *label gets the name used in messages.
json load_run_report(const std::string& spec, std::string* label) {
  std::string path = spec, variant;
  std::error_code ec;
  const auto hash = spec.rfind('#');
  if (hash != std::string::npos && !fs::exists(spec, ec)) {
    path = spec.substr(0, hash);
    variant = spec.substr(hash + 1);
  }
  json doc = load_report_file(path);  // one line naming the file for anything unreadable
  *label = path;
  const std::string schema = doc["schema"].get<std::string>();
  if (schema == "chunkscope.compare/1") {
    if (variant.empty())
      throw InputError(fmt::format(
          "report '{}': a compare report; pick a variant: stage-bench works on a run report, and a compare report "
          "embeds one per variant under variants[i].report: use '{}#NAME' (variants: {})",
          path, path, variant_names(doc)));
    const json* found = nullptr;
    if (doc.contains("variants") && doc["variants"].is_array())
      for (const auto& v : doc["variants"])
        if (v.is_object() && v.contains("name") && v["name"] == variant) found = &v;
    if (!found)
      throw InputError(fmt::format("report '{}': no variant '{}' (variants: {})", path, variant, variant_names(doc)));
    if (found->contains("available") && (*found)["available"] == false)
      throw InputError(fmt::format("report '{}': variant '{}' did not run ({}): there is no run report to bench", path,
                                   variant,
                                   found->contains("reason") && (*found)["reason"].is_string()
                                       ? (*found)["reason"].get<std::string>()
                                       : std::string("no reason recorded")));
    if (!found->contains("report") || !(*found)["report"].is_object())
      throw InputError(fmt::format("report '{}': variant '{}' holds no run report (variants[i].report)", path, variant));
    *label = fmt::format("{}#{}", path, variant);
    json run = (*found)["report"];
    if (!run.contains("schema") || run["schema"] != kReportSchema)
      throw InputError(fmt::format("report '{}': the embedded report is not {}", *label, kReportSchema));
    return run;
  }
  if (schema != kReportSchema)
    throw InputError(fmt::format("report '{}': schema '{}' is not a run report ({})", path, schema, kReportSchema));
  if (!variant.empty())
    throw InputError(fmt::format("report '{}': '#{}' selects a variant, but this is a run report, not a compare report",
                                 path, variant));
  return doc;
}

// ------------------------------------------------------------------ what the run recorded
struct Signature {
  int frames = 0, channels = 0;
  double rate = 0;
  DType dtype = DType::f32;
  std::string chain;
  bool fused = true;
  std::string backend, mode;
  long long state_values = 0;
  bool gpu_timing = true;
  std::string short_chunk = "eager";
};

Signature read_signature(const Fields& F, const json& r) {
  const json& wl = F.member(r, "workload", "workload");
  if (!wl.is_object() || !wl.contains("signature"))
    F.bad("no workload.signature: the report predates stage signatures; rerun the stream with this version of "
          "chunkscope to record one");
  const json& s = wl["signature"];
  if (!s.is_object()) F.bad("workload.signature is not an object");
  Signature g;
  g.frames = static_cast<int>(F.integer(s, "frames", "workload.signature.frames", 1, kMaxChunkFrames));
  g.channels = static_cast<int>(F.integer(s, "channels", "workload.signature.channels", 1, kMaxChannels));
  g.rate = F.number(s, "rate", "workload.signature.rate");
  if (!(g.rate >= 1000 && g.rate <= 768000))
    F.bad(fmt::format("workload.signature.rate = {} Hz is out of range 1000..768000", g.rate));
  const std::string dt = F.string(s, "dtype", "workload.signature.dtype");
  if (dt == "f32")
    g.dtype = DType::f32;
  else if (dt == "f64")
    g.dtype = DType::f64;
  else
    F.bad(fmt::format("workload.signature.dtype '{}' is not f32 or f64", dt));
  g.chain = F.string(s, "chain", "workload.signature.chain");
  g.fused = F.boolean(s, "fused", "workload.signature.fused");
  g.backend = F.string(s, "backend", "workload.signature.backend");
  if (g.backend != "cpu" && g.backend != "cuda")
    F.bad(fmt::format("workload.signature.backend '{}' is not cpu or cuda", g.backend));
  g.mode = F.string(s, "mode", "workload.signature.mode");
  g.state_values = F.integer(s, "state_values", "workload.signature.state_values", 0, (1LL << 40));
  g.gpu_timing = s.contains("gpu_timing") ? F.boolean(s, "gpu_timing", "workload.signature.gpu_timing") : true;
  if (s.contains("short_chunk")) {
    g.short_chunk = F.string(s, "short_chunk", "workload.signature.short_chunk");
    if (g.short_chunk != "eager" && g.short_chunk != "recapture")
      F.bad(fmt::format("workload.signature.short_chunk '{}' is not eager or recapture", g.short_chunk));
  }
  return g;
}

struct InputSpec {
  std::string kind;  // file, synth, device
  std::string path, signal, device;
  double rate = 0;
  int channels = 0;
  long long frames = 0;
};

InputSpec read_input(const Fields& F, const json& r, const Signature& g) {
  const json& wl = r["workload"];
  if (!wl.contains("input"))
    F.bad("no workload.input: the report predates replayable inputs; rerun the stream with this version of "
          "chunkscope");
  const json& in = wl["input"];
  InputSpec s;
  s.kind = F.string(in, "kind", "workload.input.kind");
  if (s.kind == "file") {
    s.path = F.string(in, "path", "workload.input.path");
  } else if (s.kind == "synth") {
    s.signal = F.string(in, "signal", "workload.input.signal");
    s.rate = F.number(in, "rate", "workload.input.rate");
    s.channels = static_cast<int>(F.integer(in, "channels", "workload.input.channels", 1, kMaxChannels));
    s.frames = F.integer(in, "frames", "workload.input.frames", 1, (1LL << 50));
    if (s.rate != g.rate)
      F.bad(fmt::format("workload.input.rate {} Hz differs from workload.signature.rate {} Hz", s.rate, g.rate));
    if (s.channels != g.channels)
      F.bad(fmt::format("workload.input.channels {} differs from workload.signature.channels {}", s.channels,
                        g.channels));
  } else if (s.kind == "device") {
    if (in.contains("name") && in["name"].is_string()) s.device = in["name"].get<std::string>();
  } else {
    F.bad(fmt::format("workload.input.kind '{}' is not file, synth or device", s.kind));
  }
  return s;
}

struct Recorded {
  bool present = false;
  std::size_t chunks = 0;
  std::vector<std::uint64_t> in, out;
};

std::uint64_t parse_hex16(const Fields& F, const json& v, const std::string& path) {
  if (!v.is_string()) F.bad(fmt::format("{} is not a hex string", path));
  const std::string s = v.get<std::string>();
  if (s.empty() || s.size() > 16 || s.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    F.bad(fmt::format("{} '{}' is not a 64-bit hex value", path, s));
  return std::stoull(s, nullptr, 16);
}

Recorded read_checksums(const Fields& F, const json& r) {
  Recorded c;
  if (!r.contains("checksums")) return c;
  const json& ck = r["checksums"];
  const std::string algo = F.string(ck, "algorithm", "checksums.algorithm");
  if (algo != "fnv1a64") F.bad(fmt::format("checksums.algorithm '{}' is not supported (fnv1a64)", algo));
  c.present = true;
  c.chunks = static_cast<std::size_t>(F.integer(ck, "chunks", "checksums.chunks", 0, 1 << 20));
  const json& in = F.member(ck, "input", "checksums.input");
  const json& out = F.member(ck, "output", "checksums.output");
  if (!in.is_array() || in.size() < c.chunks)
    F.bad(fmt::format("checksums.input does not hold checksums.chunks = {} values", c.chunks));
  if (!out.is_array() || out.size() < c.chunks)
    F.bad(fmt::format("checksums.output does not hold checksums.chunks = {} values", c.chunks));
  for (std::size_t k = 0; k < c.chunks; ++k) {
    c.in.push_back(parse_hex16(F, in[k], fmt::format("checksums.input[{}]", k)));
    c.out.push_back(parse_hex16(F, out[k], fmt::format("checksums.output[{}]", k)));
  }
  return c;
}

// ------------------------------------------------------------------ harness check
[[noreturn]] void mismatch(const Fields& F, const char* field, const std::string& run, const std::string& harness) {
  throw RuntimeFailure(fmt::format(
      "report '{}': signature mismatch on {}: the run recorded {}, the harness here has {}; refusing to time a "
      "different stage",
      F.label(), field, run, harness));
}

// ------------------------------------------------------------------ result text
std::string cell_time(const json& h, const char* key) {
  if (!h.is_object() || !h.contains(key) || !h[key].is_number()) return "-";
  return fmt_time(h[key].get<double>());
}

std::optional<double> hval(const json& h, const char* key) {
  if (!h.is_object() || !h.contains(key) || !h[key].is_number()) return std::nullopt;
  return h[key].get<double>();
}

std::string signed_time(double ns) { return (ns > 0 ? "+" : ns < 0 ? "-" : "") + fmt_time(std::fabs(ns)); }

}  // namespace

static int run_stage_bench_checked(const StageBenchOptions& o);

int run_stage_bench(const StageBenchOptions& o) {
  try {
    return run_stage_bench_checked(o);
  } catch (const nlohmann::json::exception& e) {
    // a hand-edited or foreign report: a key with the wrong type or missing where needed
    throw InputError(fmt::format("report '{}': a key is missing or has the wrong type ({})", o.report, e.what()));
  }
}

static int run_stage_bench_checked(const StageBenchOptions& o) {
  // ---- options
  if (o.report.empty()) throw InputError("stage-bench: a run report (RUN.json) is required");
  if (o.stage != "process") {
    for (const char* s : kPipelineOnly)
      if (o.stage == s)
        throw InputError(fmt::format(
            "--stage: '{}' cannot run alone: queues, the sink and the end-to-end path exist only inside the pipeline, "
            "and the source is read here only to regenerate the input (supported: process)",
            o.stage));
    throw InputError(fmt::format("--stage: '{}' is not a stage that can be benched alone (supported: process)", o.stage));
  }
  if (o.iterations < 1) throw InputError(fmt::format("--iterations: {} must be 1 or more", o.iterations));
  if (o.iterations > 100'000'000) throw InputError(fmt::format("--iterations: {} is above 100000000", o.iterations));
  if (o.warmup < 0) throw InputError(fmt::format("--warmup: {} is negative", o.warmup));
  if (o.warmup > 100'000'000) throw InputError(fmt::format("--warmup: {} is above 100000000", o.warmup));
  if (!o.json.empty()) {
    std::error_code ec;  // COMPARE.json#variant reads COMPARE.json
    const auto hash = o.report.rfind('#');
    const bool variant = hash != std::string::npos && !fs::exists(o.report, ec);
    check_distinct_paths({{"report", variant ? o.report.substr(0, hash) : o.report}}, {{"--json", o.json}});
    check_output_path(o.json, fmt::format("--json '{}'", o.json));
  }

  // ---- the run
  std::string label;
  const json report = load_run_report(o.report, &label);
  const Fields F(label);
  const Signature g = read_signature(F, report);
  const InputSpec input = read_input(F, report, g);
  check_distinct_paths({{"the run's input", input.path}}, {{"--json", o.json}});
  const Recorded rec = read_checksums(F, report);
  const long long planned =
      F.integer(report["workload"], "dispatches_per_chunk_planned", "workload.dispatches_per_chunk_planned", 0, 1 << 20);
  if (g.chain.empty()) F.bad("workload.signature.chain is empty: the run had no processing stage, nothing to bench");

  // ---- the harness: plan and backend rebuilt from the signature
  Plan plan;
  try {
    plan = plan_chain(g.chain, g.rate, g.fused);
  } catch (const InputError& e) {
    F.bad(fmt::format("workload.signature.chain: {}", e.what()));
  }
  BackendChoice choice;
  choice.backend = g.backend;
  if (g.backend == "cuda") {
    if (g.mode != "eager" && g.mode != "graph")
      F.bad(fmt::format("workload.signature.mode '{}' is not eager or graph (backend cuda)", g.mode));
    choice.cuda.mode = g.mode == "graph" ? CudaOptions::Mode::graph : CudaOptions::Mode::eager;
    choice.cuda.gpu_timing = g.gpu_timing;
    choice.cuda.recapture_on_shape_change = g.short_chunk == "recapture";
  }
  const ProcessSpec spec{g.rate, g.channels, g.frames, g.dtype};
  std::unique_ptr<Backend> backend;
  try {
    backend = make_backend(choice, plan, spec);
  } catch (const RuntimeFailure& e) {
    throw RuntimeFailure(fmt::format("report '{}': cannot rebuild the {} backend here: {}", label, g.backend, e.what()));
  }
  // the harness must be the stage the run measured, before anything is timed
  if (g.backend != backend->name()) mismatch(F, "backend", "'" + g.backend + "'", fmt::format("'{}'", backend->name()));
  if (g.mode != backend->mode()) mismatch(F, "mode", "'" + g.mode + "'", fmt::format("'{}'", backend->mode()));
  if (static_cast<std::size_t>(g.state_values) != backend->state_values())
    mismatch(F, "state_values", std::to_string(g.state_values), std::to_string(backend->state_values()));
  if (static_cast<std::size_t>(planned) != plan.dispatches())
    mismatch(F, "dispatches_per_chunk_planned", std::to_string(planned), std::to_string(plan.dispatches()));

  // ---- the input
  std::unique_ptr<ChunkSource> source;
  std::string input_desc;
  if (input.kind == "file") {
    std::error_code ec;
    if (!fs::exists(input.path, ec))
      F.bad(fmt::format("input file '{}' (workload.input.path) is gone: relative paths are taken from the current "
                        "folder, as the run recorded them",
                        input.path));
    auto fsrc = std::make_unique<FileSource>(input.path, g.dtype);
    if (fsrc->info().rate != g.rate)
      mismatch(F, "rate", fmt::format("{} Hz", g.rate), fmt::format("{} Hz in '{}'", fsrc->info().rate, input.path));
    if (fsrc->info().channels != g.channels)
      mismatch(F, "channels", std::to_string(g.channels),
               fmt::format("{} in '{}'", fsrc->info().channels, input.path));
    input_desc = fmt::format("file {}", input.path);
    source = std::move(fsrc);
  } else {
    SynthSpec sp;
    if (input.kind == "synth") {
      try {
        sp = parse_synth(input.signal, g.rate);
      } catch (const InputError& e) {
        F.bad(fmt::format("workload.input.signal: {}", e.what()));
      }
      sp.frames = input.frames;
      input_desc = fmt::format("synth {}", input.signal);
    } else {
      sp = parse_synth("noise", g.rate);
      // enough noise for the chunks kept for timing
      sp.frames = static_cast<std::int64_t>(kPoolMaxChunks) * g.frames;
      input_desc = fmt::format("live device{} (not replayable): synthetic noise of the same shape",
                               input.device.empty() ? "" : " '" + input.device + "'");
    }
    sp.channels = g.channels;
    source = std::make_unique<SynthSource>(sp, g.dtype);
  }

  // ---- replay the recorded chunks in order, checking input and output; keep chunks for timing
  std::optional<ScopedFlushDenormals> ftz;  // as on the engine's processor thread, until timing ends
  ftz.emplace();
  const std::size_t frame_bytes = static_cast<std::size_t>(g.channels) * dtype_size(g.dtype);
  const std::size_t chunk_bytes = static_cast<std::size_t>(g.frames) * frame_bytes;
  const std::size_t pool_max = std::max<std::size_t>(1, std::min(kPoolMaxChunks, kPoolMaxBytes / chunk_bytes));
  const bool comparable = input.kind != "device" && rec.present && rec.chunks > 0;
  const std::size_t K = comparable ? rec.chunks : 0;
  std::vector<unsigned char> buf(chunk_bytes);
  std::vector<unsigned char> pool;
  std::vector<int> pool_frames;
  std::size_t matched = 0, read_chunks = 0, short_chunks = 0;
  std::optional<std::size_t> first_bad;
  std::string bad_side, bad_expected, bad_got;
  auto note_mismatch = [&](std::size_t k, const char* side, const std::string& expected, const std::string& got) {
    if (first_bad) return;
    first_bad = k;
    bad_side = side;
    bad_expected = expected;
    bad_got = got;
  };
  for (std::size_t seq = 0;; ++seq) {
    if (seq >= K && pool_frames.size() >= pool_max) break;
    int n = 0;
    const Status st = source->fill(buf.data(), g.frames, &n);
    if (st == Status::end_of_stream || (ok(st) && n == 0)) break;
    if (!ok(st))
      throw InputError(fmt::format("report '{}': input '{}': reading chunk {} failed ({})", label, input_desc, seq,
                                   describe(st)));
    ++read_chunks;
    if (n < g.frames) ++short_chunks;
    const std::size_t bytes = static_cast<std::size_t>(n) * frame_bytes;
    if (pool_frames.size() < pool_max) {
      pool.insert(pool.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(bytes));
      pool.resize(pool.size() + (chunk_bytes - bytes));  // every slot is chunk_bytes long
      pool_frames.push_back(n);
    }
    if (seq < K) {
      const std::uint64_t hin = fnv1a64(buf.data(), bytes);
      const bool in_ok = hin == rec.in[seq];
      if (!in_ok) note_mismatch(seq, "input", hex16(rec.in[seq]), hex16(hin));
      ProcessStats ps{};
      const Status ps_st = backend->process({buf.data(), n, g.channels, g.dtype}, &ps);
      if (!ok(ps_st))
        throw RuntimeFailure(fmt::format("report '{}': process() failed on chunk {}: {}{}{}", label, seq,
                                         describe(ps_st), *backend->last_error() ? ": " : "", backend->last_error()));
      const std::uint64_t hout = fnv1a64(buf.data(), bytes);
      const bool out_ok = hout == rec.out[seq];
      if (in_ok && !out_ok) note_mismatch(seq, "output", hex16(rec.out[seq]), hex16(hout));
      if (in_ok && out_ok) ++matched;
    }
  }
  if (comparable && read_chunks < K && !first_bad)
    note_mismatch(read_chunks, "input", fmt::format("{} chunks", K), fmt::format("the input ended after {} chunks", read_chunks));
  if (pool_frames.empty())
    throw InputError(fmt::format("report '{}': input '{}' holds no samples: nothing to time", label, input_desc));

  // the timed calls cycle through the full chunks kept (all kept chunks when none is full)
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < pool_frames.size(); ++i)
    if (pool_frames[i] == g.frames) order.push_back(i);
  if (order.empty())
    for (std::size_t i = 0; i < pool_frames.size(); ++i) order.push_back(i);

  // ---- time the stage alone
  stats::LogHistogram iso;
  std::vector<stats::LogHistogram> parts(kParts);
  std::vector<unsigned char> work(chunk_bytes);
  backend->reset();
  Status fail = Status::ok;
  long long failed_at = -1;
  const long long total_calls = o.warmup + o.iterations;
  std::size_t pos = 0;
  for (long long i = 0; i < total_calls; ++i) {  // no allocation in this loop
    const std::size_t slot = order[pos];
    pos = pos + 1 == order.size() ? 0 : pos + 1;
    const int n = pool_frames[slot];
    std::memcpy(work.data(), pool.data() + slot * chunk_bytes, static_cast<std::size_t>(n) * frame_bytes);
    ProcessStats ps{};
    const std::int64_t t0 = now_ns();
    const Status st = backend->process({work.data(), n, g.channels, g.dtype}, &ps);
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
  }
  ftz.reset();
  if (!ok(fail))
    throw RuntimeFailure(fmt::format("report '{}': process() failed on timed call {}: {}{}{}", label, failed_at,
                                     describe(fail), *backend->last_error() ? ": " : "", backend->last_error()));

  // ---- compare with the run
  const json iso_j = histogram_json(iso);
  json iso_parts = json::object();
  for (int p = 0; p < kParts; ++p)
    if (parts[static_cast<std::size_t>(p)].count() > 0) iso_parts[kPartNames[p]] = histogram_json(parts[static_cast<std::size_t>(p)]);
  const json empty_hist = json{{"count", 0}};
  const json& stages = report.contains("stages") && report["stages"].is_object() ? report["stages"] : empty_hist;
  const json pipe_j = stages.contains("process") && stages["process"].is_object() ? stages["process"] : empty_hist;
  const json pipe_parts = report.contains("process_parts") && report["process_parts"].is_object() ? report["process_parts"]
                                                                                               : json::object();
  const json lat = report.contains("latency") ? report["latency"] : empty_hist;
  const json qin = stages.contains("queue_in") ? stages["queue_in"] : empty_hist;
  const json qout = stages.contains("queue_out") ? stages["queue_out"] : empty_hist;
  std::optional<double> budget;
  if (report.contains("timing") && report["timing"].is_object() && report["timing"].value("paced", false) &&
      report["timing"].contains("budget_ns") && report["timing"]["budget_ns"].is_number())
    budget = report["timing"]["budget_ns"].get<double>();

  const char* const cmp_keys[] = {"p50", "p95", "p99", "max"};
  json diff = json::object(), ratio = json::object();
  for (const char* k : cmp_keys) {
    const auto a = hval(iso_j, k), b = hval(pipe_j, k);
    diff[k] = a && b ? json(*b - *a) : json(nullptr);
    ratio[k] = a && b && *a > 0 ? json(*b / *a) : json(nullptr);
  }

  // ---- checksum line
  std::string ck_text;
  bool ck_failed = false;
  if (input.kind == "device") {
    ck_text = "not comparable (live device input)";
  } else if (!rec.present) {
    ck_text = "not comparable (the report records no checksums)";
  } else if (K == 0) {
    ck_text = "not comparable (the run recorded 0 chunks)";
  } else if (!first_bad) {
    ck_text = fmt::format("{} of {} chunks match (fnv1a64 of input and output, state carried from prepare)", matched, K);
  } else if (bad_side == "input") {
    ck_failed = true;
    ck_text = fmt::format("{} of {} chunks match; input differs at chunk {} (run {}, here {}): the regenerated input is "
                          "not the run's (changed since the run?)",
                          matched, K, *first_bad, bad_expected, bad_got);
  } else {
    ck_failed = true;
    ck_text = fmt::format("{} of {} chunks match; first mismatch at chunk {}: output {} here, the run recorded {}",
                          matched, K, *first_bad, bad_got, bad_expected);
  }

  // ---- the sentence
  std::string sentence;
  const double d50 = diff["p50"].is_number() ? diff["p50"].get<double>() : 0.0;
  const bool have_d95 = diff["p95"].is_number();
  const double d95 = have_d95 ? diff["p95"].get<double>() : 0.0;
  if (!have_d95) {
    sentence = "The run counted no processed chunks: there is no in-pipeline time to compare with.";
  } else if (d95 > 0) {
    sentence = fmt::format(
        "In the pipeline the same computation took {} {} at p50 and {} more at p95 ({:.2f}x at p95): that is what "
        "the pipeline adds (waits, cache and CPU contention with the source and sink threads, preemption), not the "
        "stage itself.",
        fmt_time(std::fabs(d50)), d50 >= 0 ? "more" : "less", fmt_time(d95),
        ratio["p95"].is_number() ? ratio["p95"].get<double>() : 0.0);
  } else {
    sentence = fmt::format(
        "In the pipeline the stage was no slower than alone at p95 ({} vs {}): the pipeline adds nothing measurable to "
        "it; the run's latency is hand-over and waits outside the stage.",
        cell_time(pipe_j, "p95"), cell_time(iso_j, "p95"));
  }
  if (budget && *budget > 0) {
    if (const auto p95 = hval(pipe_j, "p95"))
    {
      const double pct = 100.0 * *p95 / *budget;
      sentence += fmt::format(" In the run the stage's p95 is {}% of the {} budget.",
                              pct < 1 ? fmt::format("{:.2f}", pct) : fmt::format("{:.1f}", pct), fmt_time(*budget));
    }
  }

  // ---- print
  std::string out;
  auto line = [&out](const std::string& s) {
    out += s;
    out += '\n';
  };
  line(fmt::format("chunkscope stage-bench '{}': stage process, {} timed calls after {} warm-up", label, o.iterations,
                   o.warmup));
  line(fmt::format("signature  chain '{}': {} dispatch(es) per chunk, on {} ({}), {}", g.chain, plan.dispatches(),
                   g.backend, g.mode, dtype_name(g.dtype)));
  line(fmt::format("           {} Hz, {} ch, chunk {} frames, {} state values: the harness matches", g.rate, g.channels,
                   g.frames, g.state_values));
  line(fmt::format("input      {}: {} chunk(s) read, {} cycled through for timing", input_desc, read_chunks,
                   order.size()));
  line(fmt::format("checksum   {}", ck_text));
  line("");
  line(fmt::format("{:<18} {:>10} {:>10} {:>10} {:>10} {:>10}", "process", "p50", "p95", "p99", "max", "count"));
  auto row = [&](const std::string& name, const json& h) {
    line(fmt::format("{:<18} {:>10} {:>10} {:>10} {:>10} {:>10}", name, cell_time(h, "p50"), cell_time(h, "p95"),
                     cell_time(h, "p99"), cell_time(h, "max"), h.value("count", 0ull)));
  };
  row("isolated", iso_j);
  row("in-pipeline", pipe_j);
  {
    std::string cells;
    for (const char* k : cmp_keys) cells += fmt::format(" {:>10}", diff[k].is_number() ? signed_time(diff[k].get<double>()) : "-");
    line(fmt::format("{:<18}{}", "difference", cells));
    cells.clear();
    for (const char* k : cmp_keys)
      cells += fmt::format(" {:>10}", ratio[k].is_number() ? fmt::format("{:.2f}x", ratio[k].get<double>()) : "-");
    line(fmt::format("{:<18}{}", "ratio", cells));
  }
  for (int p = 0; p < kParts; ++p) {
    const char* k = kPartNames[p];
    const bool a = iso_parts.contains(k), b = pipe_parts.contains(k);
    if (!a && !b) continue;
    row(fmt::format("  {} iso", k), a ? iso_parts[k] : empty_hist);
    row(fmt::format("  {} run", k), b ? pipe_parts[k] : empty_hist);
  }
  line("");
  line(fmt::format("context    in the run: end-to-end p95 {}, queue_in p95 {}, queue_out p95 {}{}", cell_time(lat, "p95"),
                   cell_time(qin, "p95"), cell_time(qout, "p95"),
                   budget ? fmt::format(", budget {}", fmt_time(*budget)) : std::string()));
  line(fmt::format("pipeline   {}", sentence));
  std::cout << out << std::flush;

  // ---- JSON
  if (!o.json.empty()) {
    json j;
    j["schema"] = kStageBenchSchema;
    j["report"] = label;
    j["stage"] = o.stage;
    j["iterations"] = o.iterations;
    j["warmup"] = o.warmup;
    j["signature"] = report["workload"]["signature"];
    j["harness"] = {{"backend", backend->name()},
                    {"mode", backend->mode()},
                    {"state_values", backend->state_values()},
                    {"dispatches_per_chunk", plan.dispatches()},
                    {"matches", true}};
    j["input"] = {{"kind", input.kind},
                  {"description", input_desc},
                  {"chunks_read", read_chunks},
                  {"short_chunks", short_chunks},
                  {"timing_chunks", order.size()}};
    json ck;
    ck["algorithm"] = "fnv1a64";
    ck["compared"] = K > 0;
    ck["chunks"] = K;
    ck["matched"] = matched;
    ck["first_mismatch"] = first_bad ? json(*first_bad) : json(nullptr);
    ck["side"] = first_bad ? json(bad_side) : json(nullptr);
    if (first_bad) {
      ck["expected"] = bad_expected;
      ck["got"] = bad_got;
    }
    ck["text"] = ck_text;
    j["checksum"] = ck;
    json iso_out = iso_j;
    iso_out["parts"] = iso_parts;
    j["isolated"] = iso_out;
    json pipe_out = pipe_j;
    pipe_out["parts"] = pipe_parts;
    j["in_pipeline"] = pipe_out;
    j["difference"] = diff;
    j["ratio"] = ratio;
    j["context"] = {{"latency_p95_ns", hval(lat, "p95") ? json(*hval(lat, "p95")) : json(nullptr)},
                    {"queue_in_p95_ns", hval(qin, "p95") ? json(*hval(qin, "p95")) : json(nullptr)},
                    {"queue_out_p95_ns", hval(qout, "p95") ? json(*hval(qout, "p95")) : json(nullptr)},
                    {"budget_ns", budget ? json(*budget) : json(nullptr)}};
    j["text"] = sentence;
    write_json_file(o.json, j, fmt::format("--json '{}'", o.json));
  }

  if (ck_failed) {
    std::cerr << fmt::format("chunkscope: report '{}': checksum: {}\n", label, ck_text);
    return kExitRuntime;
  }
  return kExitOk;
}

}  // namespace chunkscope
