#include "src/report/report.hpp"

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "kernels/gpu.hpp"
#include "src/report/diagnosis.hpp"
#include "src/errors.hpp"
#include "src/report/hgrm.hpp"
#include "src/io/output_file.hpp"

namespace chunkscope {

using nlohmann::json;

std::string fmt_time(double ns) {
  const double a = std::fabs(ns);
  if (a >= 1e9) return fmt::format("{:.3f} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (a >= 1e3) return fmt::format("{:.1f} µs", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

namespace {

constexpr double kPcts[] = {50, 90, 95, 99, 99.9};
const char* kPctKeys[] = {"p50", "p90", "p95", "p99", "p99_9"};

}  // namespace

json build_report(const Workload& w, const Plan& plan, const Environment& env, const RunStats& st,
                  const EngineResult& er, const RunOutcome& outcome) {
  const auto& cfg = st.config();
  json r;
  r["schema"] = kReportSchema;
  r["state"] = outcome.state;
  r["complete"] = outcome.state == "complete";
  if (!outcome.reason.empty()) r["reason"] = outcome.reason;

  json wl;
  wl["command"] = w.command;
  wl["source"] = w.source;
  wl["sink"] = w.sink;
  wl["chain"] = plan.spec;
  wl["fused"] = plan.fused;
  wl["dispatches_per_chunk_planned"] = plan.dispatches();
  wl["sections_per_sample"] = plan.total_sections();
  wl["backend"] = w.backend;
  wl["mode"] = w.mode;
  wl["rate"] = w.rate;
  wl["channels"] = w.channels;
  wl["chunk_frames"] = w.chunk_frames;
  wl["dtype"] = dtype_name(w.dtype);
  wl["warmup_chunks"] = w.warmup;
  wl["speed"] = w.max_speed ? json("max") : json(w.speed);
  wl["margin"] = {{"text", w.margin_text}, {"ns", w.margin_ns}};
  wl["queue_depth"] = w.queue_depth;
  wl["pool_chunks"] = er.pool_chunks;
  wl["short_last_chunk"] = "passed through";
  wl["media_seconds"] = w.media_seconds;
  wl["input"] = w.input;
  wl["signature"] = {{"frames", w.chunk_frames},   {"channels", w.channels},
                     {"rate", w.rate},             {"dtype", dtype_name(w.dtype)},
                     {"chain", plan.spec},         {"fused", plan.fused},
                     {"backend", w.backend},       {"mode", w.mode},
                     {"state_values", w.state_values}, {"gpu_timing", w.gpu_timing},
                     {"short_chunk", w.short_chunk}};
  r["workload"] = wl;
  r["environment"] = to_json(env);
  r["method"] = {{"clock", "CLOCK_MONOTONIC"},
                 {"percentiles", "log-linear histogram (HdrHistogram layout), exact min/max/count/mean"},
                 {"relative_error", st.latency.relative_error_bound()},
                 {"latency_from", w.max_speed ? "hand-over by the source (no schedule at --speed max)"
                                              : "scheduled arrival t0 + k*D (coordinated omission not hidden)"}};
  r["timing"] = {{"chunk_ns", cfg.chunk_ns}, {"budget_ns", cfg.budget_ns}, {"paced", cfg.paced}};

  json counts;
  counts["produced"] = er.produced;
  counts["emitted"] = st.warmup_chunks + st.chunks;
  counts["warmup"] = st.warmup_chunks;
  counts["counted"] = st.chunks;
  counts["short"] = st.short_chunks;
  counts["frames_emitted"] = st.frames;
  counts["drops"] = er.drops;
  counts["drops_pool_empty"] = er.drops_pool;
  counts["drops_queue_full"] = er.drops_queue;
  counts["drop_seqs"] = er.drop_seqs;
  counts["drop_seqs_truncated"] = er.drops > er.drop_seqs.size();
  counts["misses"] = st.misses;
  json blame;
  for (int i = 0; i < kStageCount; ++i) blame[stage_key(static_cast<Stage>(i))] = st.miss_blame[static_cast<std::size_t>(i)];
  counts["miss_blame"] = blame;
  json ml = json::array();
  for (const auto& m : st.miss_list)
    ml.push_back({{"seq", m.seq}, {"latency_ns", m.latency_ns}, {"blame", stage_key(m.blame)},
                  {"at_s", static_cast<double>(m.emit_ns - st.first_sched) / 1e9}});
  counts["miss_list"] = ml;
  r["counts"] = counts;

  json stages;
  for (int i = 0; i < kStageCount; ++i) stages[stage_key(static_cast<Stage>(i))] = histogram_json(st.stage[static_cast<std::size_t>(i)]);
  r["stages"] = stages;
  json parts = json::object();
  for (int i = 0; i < kPartCount; ++i)
    if (st.part[static_cast<std::size_t>(i)].count() > 0)
      parts[part_key(static_cast<Part>(i))] = histogram_json(st.part[static_cast<std::size_t>(i)]);
  r["process_parts"] = parts;
  r["latency"] = histogram_json(st.latency);
  r["engine_overhead"] = histogram_json(st.overhead);
  r["dispatches_per_chunk"] = st.chunks ? static_cast<double>(st.dispatches) / static_cast<double>(st.chunks) : 0.0;
  r["launches_per_chunk"] = st.chunks ? static_cast<double>(st.launches) / static_cast<double>(st.chunks) : 0.0;

  json verdict;
  if (cfg.paced && st.latency.count() > 0) {
    const auto B = cfg.budget_ns;
    const auto l95 = static_cast<std::int64_t>(st.latency.value_at_percentile(95));
    const auto l99 = static_cast<std::int64_t>(st.latency.value_at_percentile(99));
    const auto lmax = static_cast<std::int64_t>(st.latency.max());
    r["headroom"] = {{"p95", B - l95}, {"p99", B - l99}, {"max", B - lmax}};
    // the stage to blame: most misses, else the largest p95
    int blame_i = 0;
    std::uint64_t most = 0;
    for (int i = 0; i < kStageCount; ++i)
      if (st.miss_blame[static_cast<std::size_t>(i)] > most) {
        most = st.miss_blame[static_cast<std::size_t>(i)];
        blame_i = i;
      }
    if (most == 0) {
      // no misses: the largest p95 under the same charging rule (a queue wait counts for
      // the stage the chunk waited for)
      auto p95 = [&](Stage s) { return st.stage[static_cast<std::size_t>(s)].value_at_percentile(95); };
      const std::uint64_t charged[3] = {p95(Stage::source), p95(Stage::wait_in) + p95(Stage::process),
                                        p95(Stage::wait_out) + p95(Stage::sink)};
      const Stage who[3] = {Stage::source, Stage::process, Stage::sink};
      std::uint64_t big = 0;
      for (int i = 0; i < 3; ++i)
        if (charged[i] >= big) {
          big = charged[i];
          blame_i = static_cast<int>(who[i]);
        }
    }
    const std::string blame_s = stage_key(static_cast<Stage>(blame_i));
    const bool safe = B - l95 >= 0 && st.misses == 0 && er.drops == 0;
    std::string text;
    if (safe)
      text = fmt::format("p95 headroom {} of {} budget: real-time safe", fmt_time(double(B - l95)), fmt_time(double(B)));
    else if (B - l95 >= 0)
      text = fmt::format("p95 headroom {} of {} budget, but {} deadline miss(es) and {} drop(s): not safe, {} to blame",
                         fmt_time(double(B - l95)), fmt_time(double(B)), st.misses, er.drops, blame_s);
    else
      text = fmt::format("p95 latency {} exceeds the {} budget by {}: not real-time, {} to blame", fmt_time(double(l95)),
                         fmt_time(double(B)), fmt_time(double(l95 - B)), blame_s);
    verdict = {{"realtime_safe", safe}, {"blame", blame_s}, {"text", text}};
  } else {
    const double wall = static_cast<double>(er.end_ns - er.start_ns) / 1e9;
    const double media = static_cast<double>(st.frames) / w.rate;
    const double factor = wall > 0 ? media / wall : 0;
    verdict = {{"realtime_safe", nullptr},
               {"text", fmt::format("throughput {:.1f}x real time ({:.3f} s of media in {:.3f} s)", factor, media, wall)}};
  }
  r["verdict"] = verdict;

  json cad;
  cad["period"] = histogram_json(st.period);
  cad["jitter_p95_ns"] = !cfg.paced ? json(nullptr) : json(st.jitter.count() ? st.jitter.value_at_percentile(95) : 0);
  // without a schedule there is no clock to drift from
  cad["drift_ppm"] = cfg.paced ? json(st.drift_ppm()) : json(nullptr);
  cad["longest_gap"] = {{"ns", st.longest_gap_ns},
                        {"seq", st.longest_gap_seq},
                        {"at_s", static_cast<double>(st.longest_gap_at - st.first_sched) / 1e9}};
  // D at speed 1 for the factor at --speed max (no schedule), else the paced D
  const double d_ns = static_cast<double>(cfg.chunk_ns);
  cad["realtime_factor"] = st.period.count() && d_ns > 0 ? static_cast<double>(st.period.value_at_percentile(95)) / d_ns : 0.0;
  r["cadence"] = cad;

  const double wall = static_cast<double>(er.end_ns - er.start_ns) / 1e9;
  const double media = w.rate > 0 ? static_cast<double>(st.frames) / w.rate : 0;
  r["throughput"] = {{"wall_seconds", wall},
                     {"media_seconds", media},
                     {"speed_factor", wall > 0 ? media / wall : 0.0},
                     {"chunks_per_second", wall > 0 ? static_cast<double>(st.chunks + st.warmup_chunks) / wall : 0.0}};
  r["queues"] = {{"depth", w.queue_depth}, {"in_high_water", er.q_in_high_water}, {"out_high_water", er.q_out_high_water}};
  r["warmup"] = histogram_json(st.warmup_latency);
  r["backend_counters"] = {{"chunks", w.counters.chunks},
                           {"kernel_launches", w.counters.kernel_launches},
                           {"graph_launches", w.counters.graph_launches},
                           {"graph_captures", w.counters.graph_captures},
                           {"graph_recaptures", w.counters.graph_recaptures},
                           {"eager_fallbacks", w.counters.eager_fallbacks},
                           {"shape_changes", w.counters.shape_changes}};
  json ci = json::array(), co = json::array();
  for (std::size_t i = 0; i < er.checksummed && i < er.input_checksums.size(); ++i) {
    ci.push_back(hex64(er.input_checksums[i]));
    co.push_back(hex64(er.output_checksums[i]));
  }
  r["checksums"] = {{"algorithm", "fnv1a64"}, {"chunks", ci.size()}, {"input", ci}, {"output", co}};
  r["series"] = series_json(st);
  if (w.backend == "cuda") {
    const GpuInfo g = probe_gpu();
    r["environment"]["gpu"] = {{"name", g.name},
                               {"driver", g.driver},
                               {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)}};
  }
  r["diagnosis"] = diagnose(r);
  return r;
}

json histogram_json(const stats::LogHistogram& h) {
  json j;
  j["count"] = h.count();
  if (h.count() == 0) return j;
  j["min"] = h.min();
  for (int i = 0; i < 5; ++i) j[kPctKeys[i]] = h.value_at_percentile(kPcts[i]);
  j["max"] = h.max();
  j["mean"] = h.mean();
  return j;
}

std::string hex64(std::uint64_t v) { return fmt::format("{:016x}", v); }

json series_json(const RunStats& st) {
  const auto& pts = st.series;
  const std::int64_t origin = pts.empty() ? 0 : pts.front().sched;
  std::vector<std::uint64_t> seq;
  std::vector<std::int64_t> sched, emit, lat, period;
  std::vector<std::int32_t> stage[kStageCount], part[5];
  std::vector<std::uint32_t> flags;
  seq.reserve(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    seq.push_back(p.seq);
    sched.push_back(p.sched - origin);
    emit.push_back(p.emit - origin);
    lat.push_back(p.emit - p.sched);
    // 0 for the first point and where a new segment starts (compare rounds restart seq)
    period.push_back(i == 0 || p.seq <= pts[i - 1].seq ? 0 : p.emit - pts[i - 1].emit);
    for (int k = 0; k < kStageCount; ++k) stage[k].push_back(p.stage[k]);
    for (int k = 0; k < 5; ++k) part[k].push_back(p.part[k]);
    flags.push_back(p.flags);
  }
  json cols;
  cols["seq"] = seq;
  cols["sched_ns"] = sched;
  cols["emit_ns"] = emit;
  cols["latency_ns"] = lat;
  cols["period_ns"] = period;
  for (int k = 0; k < kStageCount; ++k) cols[std::string(stage_key(static_cast<Stage>(k))) + "_ns"] = stage[k];
  for (int k = 0; k < 5; ++k) cols[std::string(part_key(static_cast<Part>(k))) + "_ns"] = part[k];
  cols["flags"] = flags;
  return {{"count", pts.size()},
          {"capacity", st.series.capacity()},
          {"truncated", st.series_dropped > 0},
          {"not_kept", st.series_dropped},
          {"columns", cols}};
}

bool budget_broken(const json& r) {
  if (r.contains("headroom") && r.at("headroom").at("p95").get<std::int64_t>() < 0) return true;
  return r.at("counts").at("misses").get<std::uint64_t>() > 0 || r.at("counts").at("drops").get<std::uint64_t>() > 0;
}

void print_report(std::ostream& os, const json& r) {
  const auto& w = r.at("workload");
  const auto& e = r.at("environment");
  const auto& t = r.at("timing");
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("chunkscope {} ({}) {}", e.at("version").get<std::string>(), e.at("commit").get<std::string>(),
                   w.at("command").get<std::string>()));
  line(fmt::format("workload   {} -> sink {}", w.at("source").get<std::string>(), w.at("sink").get<std::string>()));
  line(fmt::format("           chain '{}': {} dispatch(es) per chunk, {} sections, on {} ({}), {}",
                   w.at("chain").get<std::string>(), w.at("dispatches_per_chunk_planned").get<int>(),
                   w.at("sections_per_sample").get<int>(), w.at("backend").get<std::string>(), w.at("mode").get<std::string>(),
                   w.at("dtype").get<std::string>()));
  const double D = t.at("chunk_ns").get<double>();
  line(fmt::format("           {} Hz, {} ch, chunk {} frames = D {}, margin {} = {}, budget B {}", w.at("rate").get<double>(),
                   w.at("channels").get<int>(), w.at("chunk_frames").get<int>(), fmt_time(D),
                   w.at("margin").at("text").get<std::string>(), fmt_time(w.at("margin").at("ns").get<double>()),
                   fmt_time(t.at("budget_ns").get<double>())));
  line(fmt::format("           speed {}, warm-up {} chunks (reported apart), queue depth {}, pool {} chunks",
                   w.at("speed").is_string() ? std::string("max (as fast as possible, no schedule)")
                                          : fmt::format("{}x (paced, absolute schedule)", w.at("speed").get<double>()),
                   w.at("warmup_chunks").get<int>(), w.at("queue_depth").get<int>(), w.at("pool_chunks").get<int>()));
  line(fmt::format("environment {}, {} logical CPUs, {}, {} {}", e.at("cpu").get<std::string>(), e.at("logical_cpus").get<int>(),
                   e.at("os").get<std::string>(), e.at("compiler").get<std::string>(), e.at("build").get<std::string>()));
  if (e.contains("gpu") && e.at("gpu").is_object())
    line(fmt::format("gpu        {} (compute {}), {}", e.at("gpu").value("name", std::string("?")),
                     e.at("gpu").value("compute_capability", std::string("?")), e.at("gpu").value("driver", std::string("?"))));
  line(fmt::format("method     log-linear histograms (relative error <= {:.3f}%, exact min/max), CLOCK_MONOTONIC, "
                   "latency from {}",
                   r.at("method").at("relative_error").get<double>() * 100, r.at("method").at("latency_from").get<std::string>()));
  if (r.at("state") != "complete")
    line(fmt::format("RUN {}: {}", r.at("state").get<std::string>() == "interrupted" ? "INTERRUPTED" : "INCOMPLETE",
                     r.value("reason", std::string("-"))));
  line("");
  line(fmt::format("{:<12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}", "stage", "p50", "p90", "p95", "p99", "p99.9",
                   "max", "mean"));
  auto row = [&](const std::string& name, const json& h) {
    if (h.at("count").get<std::uint64_t>() == 0) {
      line(fmt::format("{:<12} {:>10}", name, "-"));
      return;
    }
    line(fmt::format("{:<12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}", name, fmt_time(h.at("p50").get<double>()),
                     fmt_time(h.at("p90").get<double>()), fmt_time(h.at("p95").get<double>()), fmt_time(h.at("p99").get<double>()),
                     fmt_time(h.at("p99_9").get<double>()), fmt_time(h.at("max").get<double>()),
                     fmt_time(h.at("mean").get<double>())));
  };
  for (const char* s : {"source", "queue_in", "process", "queue_out", "sink"}) row(s, r.at("stages")[s]);
  for (auto it = r.at("process_parts").begin(); it != r.at("process_parts").end(); ++it) row("  " + it.key(), it.value());
  row("end-to-end", r.at("latency"));
  row("overhead", r.at("engine_overhead"));
  row("period", r.at("cadence").at("period"));
  line("");
  line(fmt::format("headline   {}", r.at("verdict").at("text").get<std::string>()));
  if (r.contains("headroom"))
    line(fmt::format("headroom   p95 {}, p99 {}, max {}", fmt_time(r.at("headroom").at("p95").get<double>()),
                     fmt_time(r.at("headroom").at("p99").get<double>()), fmt_time(r.at("headroom").at("max").get<double>())));
  const auto& c = r.at("cadence");
  if (c.at("period").at("count").get<std::uint64_t>() == 0)
    line("cadence    - (fewer than two counted chunks)");
  else
    line(fmt::format("cadence    jitter p95 {}, drift {}, longest gap {} (chunk {} at {:.3f} s), real-time factor {:.3f}",
                     c.at("jitter_p95_ns").is_null() ? std::string("- (no schedule)") : fmt_time(c.at("jitter_p95_ns").get<double>()),
                     c.at("drift_ppm").is_null() ? std::string("- (no schedule)") : fmt::format("{:+.1f} ppm", c.at("drift_ppm").get<double>()),
                     fmt_time(c.at("longest_gap").at("ns").get<double>()), c.at("longest_gap").at("seq").get<std::uint64_t>(),
                     c.at("longest_gap").at("at_s").get<double>(), c.at("realtime_factor").get<double>()));
  const auto& k = r.at("counts");
  std::string blame;
  for (auto it = k.at("miss_blame").begin(); it != k.at("miss_blame").end(); ++it)
    if (it.value().get<std::uint64_t>() > 0) blame += fmt::format("{}{} {}", blame.empty() ? "" : ", ", it.key(), it.value().get<std::uint64_t>());
  const auto counted = k.at("counted").get<std::uint64_t>();
  line(fmt::format("misses     {} of {} counted chunks ({:.2f}%){}", k.at("misses").get<std::uint64_t>(), counted,
                   counted ? 100.0 * k.at("misses").get<double>() / double(counted) : 0.0,
                   blame.empty() ? "" : ", blamed on " + blame));
  std::string seqs;
  for (std::size_t i = 0; i < k.at("drop_seqs").size() && i < 10; ++i) seqs += fmt::format(" {}", k.at("drop_seqs")[i].get<std::uint64_t>());
  line(fmt::format("drops      {} (pool empty {}, queue full {}){}", k.at("drops").get<std::uint64_t>(),
                   k.at("drops_pool_empty").get<std::uint64_t>(), k.at("drops_queue_full").get<std::uint64_t>(),
                   seqs.empty() ? "" : ", chunks" + seqs + (k.at("drop_seqs").size() > 10 ? " ..." : "")));
  line(fmt::format("chunks     {} produced, {} emitted, {} warm-up, {} short (passed through); queue high water in {} / out {}",
                   k.at("produced").get<std::uint64_t>(), k.at("emitted").get<std::uint64_t>(), k.at("warmup").get<std::uint64_t>(),
                   k.at("short").get<std::uint64_t>(), r.at("queues").at("in_high_water").get<std::uint64_t>(),
                   r.at("queues").at("out_high_water").get<std::uint64_t>()));
  const auto& tp = r.at("throughput");
  line(fmt::format("throughput {:.3f} s of media in {:.3f} s wall ({:.2f}x), {:.0f} chunks/s, {:.2f} dispatches per chunk",
                   tp.at("media_seconds").get<double>(), tp.at("wall_seconds").get<double>(), tp.at("speed_factor").get<double>(),
                   tp.at("chunks_per_second").get<double>(), r.at("dispatches_per_chunk").get<double>()));
  if (r.contains("backend_counters") && w.value("backend", std::string()) == "cuda") {
    const auto& bc = r.at("backend_counters");
    line(fmt::format("gpu work   {:.2f} launches per chunk ({} kernel launches, {} graph launches); graph captures {}, "
                     "re-captures {}, eager fallbacks {}, shape changes {}",
                     r.at("launches_per_chunk").get<double>(), bc.value("kernel_launches", 0ull),
                     bc.value("graph_launches", 0ull), bc.value("graph_captures", 0ull),
                     bc.value("graph_recaptures", 0ull), bc.value("eager_fallbacks", 0ull),
                     bc.value("shape_changes", 0ull)));
  }
  if (counted < 100)
    line(fmt::format("note       only {} counted chunks: p99 and p99.9 rest on fewer than 100 samples", counted));
  os << out;
  if (r.contains("diagnosis") && r.at("diagnosis").is_array()) {
    os << "\n";
    print_diagnosis(os, r.at("diagnosis"));
  }
}

std::vector<std::string> hgrm_file_names() {
  std::vector<std::string> names;
  for (int i = 0; i < kStageCount; ++i) names.push_back(std::string(stage_key(static_cast<Stage>(i))) + ".hgrm");
  names.push_back("end_to_end.hgrm");
  names.push_back("period.hgrm");
  return names;
}

void write_hgrm_files(const std::string& dir, const RunStats& st) {
  const auto names = hgrm_file_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& h = i < kStageCount ? st.stage[i] : i == kStageCount ? st.latency : st.period;
    std::ostringstream o;
    stats::write_hgrm(o, h, 1000.0);
    const std::string path = dir + "/" + names[i];
    write_text_output(path, o.str(), fmt::format("--hgrm '{}': {}", dir, path));
  }
}

json build_trace(const std::vector<ChunkRecord>& trace, std::int64_t origin_ns) {
  json ev = json::array();
  const char* tracks[] = {"source", "queue_in", "process", "queue_out", "sink"};
  ev.push_back({{"ph", "M"}, {"pid", 1}, {"name", "process_name"}, {"args", {{"name", "chunkscope"}}}});
  for (int i = 0; i < 5; ++i) {
    ev.push_back({{"ph", "M"}, {"pid", 1}, {"tid", i + 1}, {"name", "thread_name"}, {"args", {{"name", tracks[i]}}}});
    ev.push_back({{"ph", "M"}, {"pid", 1}, {"tid", i + 1}, {"name", "thread_sort_index"}, {"args", {{"sort_index", i}}}});
  }
  auto us = [&](std::int64_t t) { return static_cast<double>(t - origin_ns) / 1e3; };
  for (const auto& r : trace) {
    const std::int64_t b[6] = {r.sched, r.ready, r.dequeue, r.proc_end, r.sink_start, r.emit};
    const json args = {{"seq", r.seq},
                       {"frames", r.frames},
                       {"latency_us", static_cast<double>(r.emit - r.sched) / 1e3},
                       {"miss", (r.flags & kChunkMiss) != 0},
                       {"warmup", (r.flags & kChunkWarmup) != 0}};
    for (int i = 0; i < 5; ++i) {
      const double dur = std::max(0.0, static_cast<double>(b[i + 1] - b[i]) / 1e3);
      ev.push_back({{"ph", "X"}, {"pid", 1}, {"tid", i + 1}, {"name", fmt::format("chunk {}", r.seq)}, {"cat", tracks[i]},
                    {"ts", us(b[i])}, {"dur", dur}, {"args", args}});
    }
    ev.push_back({{"ph", "C"}, {"pid", 1}, {"name", "queue_in depth"}, {"ts", us(r.ready)}, {"args", {{"depth", r.q_in_depth}}}});
    ev.push_back({{"ph", "C"}, {"pid", 1}, {"name", "queue_out depth"}, {"ts", us(r.proc_end)}, {"args", {{"depth", r.q_out_depth}}}});
  }
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

}  // namespace chunkscope
