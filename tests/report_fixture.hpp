#pragma once
// Crafted run reports (chunkscope.report/1) for the report-tool tests: a plausible run of N
// chunks with a per-chunk series, and the summary figures computed exactly from it, so
// tests can tweak one figure and check what the renderers and the diagnosis make of it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "src/report/diagnosis.hpp"
#include "src/report/schema.hpp"
#include <string>
#include <vector>

namespace fixture {

using nlohmann::json;

struct Options {
  std::size_t chunks = 2000;  // emitted chunks, warm-up included
  int warmup = 10;
  double rate = 48000;
  int frames = 256;
  int channels = 2;
  bool paced = true;
  double margin_share = 0.2;
  double process_ns = 20000;  // typical process time (CPU); with gpu_parts the parts' sum
  double process_spread = 0.1;
  std::string command = "synth", chain = "hp:80:4 | lp:12000:8", backend = "cpu", mode = "fused", dtype = "f32";
  bool fused = true;
  bool gpu_parts = false;
  double launch_ns = 8000, h2d_ns = 3000, kernel_ns = 12000, d2h_ns = 3000, sync_ns = 1000;
  std::vector<std::size_t> spikes;  // chunk indices whose process time gets spike_ns more
  double spike_ns = 0;
  std::vector<std::int64_t> drop_seqs;  // sequence numbers skipped (dropped)
  bool series = true;
};

// Deterministic uniform numbers in [0, 1).
struct Lcg {
  std::uint64_t s = 0x9e3779b97f4a7c15ull;
  double operator()() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(s >> 11) / 9007199254740992.0;
  }
};

inline json hist_of(std::vector<std::int64_t> v) {
  json h;
  h["count"] = v.size();
  if (v.empty()) return h;
  std::sort(v.begin(), v.end());
  auto rank = [&](double p) {
    auto r = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size()) * (1 - 1e-12)));
    return v[std::clamp<std::size_t>(r, 1, v.size()) - 1];
  };
  double sum = 0;
  for (auto x : v) sum += static_cast<double>(x);
  h["min"] = v.front();
  h["p50"] = rank(50);
  h["p90"] = rank(90);
  h["p95"] = rank(95);
  h["p99"] = rank(99);
  h["p99_9"] = rank(99.9);
  h["max"] = v.back();
  h["mean"] = sum / static_cast<double>(v.size());
  return h;
}

inline json make_run_report(const Options& o = {}) {
  const auto D = static_cast<std::int64_t>(std::llround(o.frames * 1e9 / o.rate));
  const auto m = static_cast<std::int64_t>(std::llround(o.margin_share * static_cast<double>(D)));
  const std::int64_t B = D - m;
  Lcg u;
  const char* cols[] = {"seq",    "sched_ns",  "emit_ns",   "latency_ns", "period_ns", "source_ns", "queue_in_ns", "process_ns",
                        "queue_out_ns", "sink_ns", "launch_ns", "h2d_ns",  "kernel_ns", "d2h_ns",   "sync_ns",     "flags"};
  std::vector<std::vector<std::int64_t>> c(16);
  for (auto& x : c) x.reserve(o.chunks);
  std::vector<std::int64_t> st[5], parts[5], lat, over, period, warm_lat, jitter;
  std::vector<json> misses;
  std::int64_t seq = 0, prev_emit = 0, misses_n = 0;
  std::size_t di = 0;
  std::vector<std::int64_t> drops(o.drop_seqs);
  std::sort(drops.begin(), drops.end());
  double sx = 0, sy = 0, sxx = 0, sxy = 0, nreg = 0;
  std::int64_t gap_ns = 0, gap_seq = 0, gap_at = 0;
  bool prev_warm = true;
  for (std::size_t i = 0; i < o.chunks; ++i) {
    while (di < drops.size() && drops[di] == seq) {
      ++seq;
      ++di;
    }
    const bool warm = static_cast<int>(i) < o.warmup;
    const std::int64_t sched = seq * D;
    std::int64_t p[5] = {0, 0, 0, 0, 0};
    std::int64_t proc;
    if (o.gpu_parts) {
      const double base[5] = {o.launch_ns, o.h2d_ns, o.kernel_ns, o.d2h_ns, o.sync_ns};
      proc = 0;
      for (int k = 0; k < 5; ++k) {
        p[k] = static_cast<std::int64_t>(base[k] * (1 + o.process_spread * (u() - 0.5)));
        proc += p[k];
      }
    } else {
      proc = static_cast<std::int64_t>(o.process_ns * (1 + o.process_spread * (u() - 0.5)));
    }
    if (std::find(o.spikes.begin(), o.spikes.end(), i) != o.spikes.end()) proc += static_cast<std::int64_t>(o.spike_ns);
    std::int64_t s[5] = {static_cast<std::int64_t>(30000 + 20000 * u()), static_cast<std::int64_t>(3000 + 4000 * u()), proc,
                         static_cast<std::int64_t>(5000 + 10000 * u()), static_cast<std::int64_t>(500 + 500 * u())};
    std::int64_t L = 0;
    for (auto x : s) L += x;
    // chunks leave in order, as the engine's do: one behind a slow chunk waits for it
    if (i > 0 && sched + L <= prev_emit) {
      const std::int64_t wait = prev_emit + 1000 - (sched + L);
      s[3] += wait;
      L += wait;
    }
    const std::int64_t emit = sched + L;
    const std::int64_t P = i == 0 ? 0 : emit - prev_emit;
    std::int64_t flags = warm ? 2 : 0;
    if (!warm && o.paced && L > B) {
      flags |= 4;
      ++misses_n;
      misses.push_back({{"seq", seq}, {"latency_ns", L}, {"blame", "process"}, {"at_s", static_cast<double>(emit) / 1e9}});
    }
    const std::int64_t row[16] = {seq, sched, emit, L, P, s[0], s[1], s[2], s[3], s[4], p[0], p[1], p[2], p[3], p[4], flags};
    for (int k = 0; k < 16; ++k) c[static_cast<std::size_t>(k)].push_back(row[k]);
    if (warm) {
      warm_lat.push_back(L);
    } else {
      for (int k = 0; k < 5; ++k) st[k].push_back(s[k]);
      if (o.gpu_parts)
        for (int k = 0; k < 5; ++k) parts[k].push_back(p[k]);
      lat.push_back(L);
      over.push_back(L - proc);
      if (!prev_warm && i > 0) {
        period.push_back(P);
        jitter.push_back(std::llabs(P - D));
        if (P > gap_ns) {
          gap_ns = P;
          gap_seq = seq;
          gap_at = emit;
        }
      }
      const double x = static_cast<double>(sched), y = static_cast<double>(emit);
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
      nreg += 1;
    }
    prev_warm = warm;
    prev_emit = emit;
    ++seq;
  }
  const std::int64_t produced = seq;
  json r;
  r["schema"] = "chunkscope.report/1";
  r["state"] = "complete";
  r["complete"] = true;
  r["workload"] = {{"command", o.command},
                   {"source", o.command == "replay" ? "file audio/mix_stereo_48k.flac" : "synth noise"},
                   {"sink", "null"},
                   {"chain", o.chain},
                   {"fused", o.fused},
                   {"dispatches_per_chunk_planned", o.fused ? 1 : 2},
                   {"sections_per_sample", 6},
                   {"backend", o.backend},
                   {"mode", o.mode},
                   {"rate", o.rate},
                   {"channels", o.channels},
                   {"chunk_frames", o.frames},
                   {"dtype", o.dtype},
                   {"warmup_chunks", o.warmup},
                   {"speed", o.paced ? json(1.0) : json("max")},
                   {"margin", {{"text", "20%"}, {"ns", m}}},
                   {"queue_depth", 8},
                   {"pool_chunks", 18},
                   {"short_last_chunk", "passed through"},
                   {"media_seconds", static_cast<double>(produced) * static_cast<double>(D) / 1e9}};
  r["environment"] = {{"version", "0.1.0"}, {"commit", "abcdef123456"}, {"cpu", "Test CPU"}, {"logical_cpus", 4},
                      {"os", "Linux test"}, {"compiler", "gcc 12.2"}, {"build", "optimised"}, {"cuda_built", false}};
  r["method"] = {{"clock", "CLOCK_MONOTONIC"}, {"percentiles", "log-linear histogram"}, {"relative_error", 0.0009765625},
                 {"latency_from", "scheduled arrival t0 + k*D (coordinated omission not hidden)"}};
  r["timing"] = {{"chunk_ns", D}, {"budget_ns", B}, {"paced", o.paced}};
  const auto counted = static_cast<std::int64_t>(lat.size());
  r["counts"] = {{"produced", produced},
                 {"emitted", o.chunks},
                 {"warmup", std::min<std::int64_t>(o.warmup, static_cast<std::int64_t>(o.chunks))},
                 {"counted", counted},
                 {"short", 0},
                 {"frames_emitted", static_cast<std::int64_t>(o.chunks) * o.frames},
                 {"drops", drops.size()},
                 {"drops_pool_empty", 0},
                 {"drops_queue_full", drops.size()},
                 {"drop_seqs", drops},
                 {"drop_seqs_truncated", false},
                 {"misses", misses_n},
                 {"miss_blame", {{"source", 0}, {"queue_in", 0}, {"process", misses_n}, {"queue_out", 0}, {"sink", 0}}},
                 {"miss_list", misses}};
  const char* sk[] = {"source", "queue_in", "process", "queue_out", "sink"};
  for (int k = 0; k < 5; ++k) r["stages"][sk[k]] = hist_of(st[k]);
  r["process_parts"] = json::object();
  if (o.gpu_parts) {
    const char* pk[] = {"launch", "h2d", "kernel", "d2h", "sync"};
    for (int k = 0; k < 5; ++k) r["process_parts"][pk[k]] = hist_of(parts[k]);
  }
  r["latency"] = hist_of(lat);
  r["engine_overhead"] = hist_of(over);
  r["dispatches_per_chunk"] = o.fused ? 1.0 : 2.0;
  r["launches_per_chunk"] = o.backend == "cuda" ? (o.mode == "graph" ? 1.0 : 2.0) : 0.0;
  const std::int64_t l95 = r["latency"].value("p95", std::int64_t{0}), l99 = r["latency"].value("p99", std::int64_t{0}),
                     lmax = r["latency"].value("max", std::int64_t{0});
  if (o.paced && counted > 0) {
    r["headroom"] = {{"p95", B - l95}, {"p99", B - l99}, {"max", B - lmax}};
    const bool safe = B - l95 >= 0 && misses_n == 0 && drops.empty();
    r["verdict"] = {{"realtime_safe", safe}, {"blame", "process"}, {"text", safe ? "p95 headroom ok: real-time safe" : "not safe, process to blame"}};
  } else {
    r["verdict"] = {{"realtime_safe", nullptr}, {"text", "throughput 40.0x real time"}};
  }
  const double slope = nreg > 1 ? (nreg * sxy - sx * sy) / (nreg * sxx - sx * sx) : 1.0;
  r["cadence"] = {{"period", hist_of(period)},
                  {"jitter_p95_ns", o.paced ? json(hist_of(jitter).value("p95", std::int64_t{0})) : json(nullptr)},
                  {"drift_ppm", o.paced ? json((slope - 1) * 1e6) : json(nullptr)},
                  {"longest_gap", {{"ns", gap_ns}, {"seq", gap_seq}, {"at_s", static_cast<double>(gap_at) / 1e9}}},
                  {"realtime_factor", period.empty() ? 0.0 : static_cast<double>(hist_of(period)["p95"].get<std::int64_t>()) / static_cast<double>(D)}};
  const double media = static_cast<double>(o.chunks) * o.frames / o.rate;
  const double wall = o.paced ? media * 1.001 : media / 40;
  r["throughput"] = {{"wall_seconds", wall}, {"media_seconds", media}, {"speed_factor", media / wall},
                     {"chunks_per_second", static_cast<double>(o.chunks) / wall}};
  r["queues"] = {{"depth", 8}, {"in_high_water", 1}, {"out_high_water", 1}};
  r["warmup"] = hist_of(warm_lat);
  r["backend_counters"] = {{"chunks", o.chunks}, {"kernel_launches", 0}, {"graph_launches", 0}, {"graph_captures", 0},
                           {"graph_recaptures", 0}, {"eager_fallbacks", 0}, {"shape_changes", 0}};
  if (o.series) {
    json columns = json::object();
    for (int k = 0; k < 16; ++k) columns[cols[k]] = std::move(c[static_cast<std::size_t>(k)]);
    r["series"] = {{"count", o.chunks}, {"capacity", std::max<std::size_t>(o.chunks, 1u << 20)}, {"truncated", false},
                   {"columns", std::move(columns)}};
  }
  return r;
}

// The diagnosis of a report given as JSON, as JSON: the path a saved report takes (read by
// the schema module into the typed model, diagnosed, written back).
inline json diagnose(const json& r) {
  return chunkscope::to_json(chunkscope::diagnose(chunkscope::run_report_from_json(r)));
}
inline std::string rerun_command(const json& r) { return chunkscope::rerun_command(chunkscope::run_report_from_json(r)); }

}  // namespace fixture
