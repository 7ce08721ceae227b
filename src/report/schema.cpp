#include "src/report/schema.hpp"
#include "src/report/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <variant>

#include "src/chain_spec.hpp"
#include "src/errors.hpp"
#include "src/io/input_file.hpp"
#include "src/io/output_file.hpp"
#include "src/report/diagnosis.hpp"

namespace chunkscope {

using nlohmann::json;
namespace fs = std::filesystem;

// ================================================================ names of enum values

namespace {

constexpr const char* kStageKeys[kStageCount] = {"source", "queue_in", "process", "queue_out", "sink"};
constexpr const char* kPartKeys[kPartCount] = {"launch", "h2d", "kernel", "d2h", "sync", "calibration"};
constexpr const char* kSeriesPartKeys[5] = {"launch", "h2d", "kernel", "d2h", "sync"};

json owner_counts(const std::array<std::uint64_t, kOwnerCount>& a) {
  json j;
  for (int i = 0; i < kOwnerCount; ++i) j[owner_key(static_cast<Owner>(i))] = a[static_cast<std::size_t>(i)];
  return j;
}

}  // namespace

// ================================================================ writing

json to_json(const HistSummary& h) {
  json j;
  j["count"] = h.count;
  if (h.count == 0) return j;
  j["min"] = h.min;
  j["p50"] = h.p50;
  j["p90"] = h.p90;
  j["p95"] = h.p95;
  j["p99"] = h.p99;
  j["p99_9"] = h.p99_9;
  j["max"] = h.max;
  j["mean"] = h.mean;
  return j;
}

json to_json(const std::vector<Finding>& findings) {
  json a = json::array();
  for (const auto& f : findings) {
    json ev = json::object();
    for (const auto& [k, v] : f.evidence) ev[k] = v;
    a.push_back({{"rule", f.rule},
                 {"severity", severity_name(f.severity)},
                 {"finding", f.text},
                 {"evidence", ev},
                 {"confidence", confidence_name(f.confidence)},
                 {"next", f.next}});
  }
  return a;
}

namespace {

json input_json(const InputDesc& in) {
  switch (in.kind) {
    case InputDesc::Kind::file: return {{"kind", "file"}, {"path", in.path}};
    case InputDesc::Kind::synth:
      return {{"kind", "synth"}, {"signal", in.signal}, {"rate", in.rate}, {"channels", in.channels}, {"frames", in.frames}};
    case InputDesc::Kind::device: return {{"kind", "device"}, {"name", in.device_name}, {"host_api", in.host_api}};
    case InputDesc::Kind::none: break;
  }
  return json::object();
}

}  // namespace

json to_json(const Signature& s) {
  json j = {{"frames", s.frames},         {"channels", s.channels},         {"rate", s.rate},
            {"dtype", dtype_name(s.dtype)}, {"chain", s.chain},             {"fused", s.fused},
            {"backend", s.backend},       {"mode", s.mode},                 {"state_values", s.state_values},
            {"gpu_timing", s.gpu_timing}, {"short_chunk", s.short_chunk}};
  if (!s.cpu_isa.empty()) j["cpu_isa"] = s.cpu_isa;
  if (!s.cpu_layout.empty()) j["cpu_layout"] = s.cpu_layout;
  return j;
}

namespace {

json workload_json(const ReportWorkload& w, bool common_only) {
  json wl;
  wl["command"] = w.command;
  wl["source"] = w.source;
  wl["sink"] = w.sink;
  wl["chain"] = w.chain;
  if (!common_only) {
    wl["fused"] = w.fused;
    wl["dispatches_per_chunk_planned"] = w.dispatches_per_chunk_planned;
    wl["backend"] = w.backend;
    wl["mode"] = w.mode;
  }
  wl["sections_per_sample"] = w.sections_per_sample;
  wl["filter_stages"] = w.filter_stages;
  wl["rate"] = w.rate;
  wl["channels"] = w.channels;
  wl["chunk_frames"] = w.chunk_frames;
  wl["dtype"] = dtype_name(w.dtype);
  wl["warmup_chunks"] = w.warmup_chunks;
  wl["speed"] = w.speed ? json(*w.speed) : json("max");
  wl["margin"] = {{"text", w.margin_text}, {"ns", w.margin_ns}};
  wl["queue_depth"] = w.queue_depth;
  wl["pool_chunks"] = w.pool_chunks;
  wl["short_last_chunk"] = "passed through";
  wl["media_seconds"] = w.media_seconds;
  wl["input"] = input_json(w.input);
  if (!common_only) {
    if (w.run_mode)
      wl["run_mode"] = {{"wait", w.run_mode->wait},
                        {"rt", w.run_mode->rt},
                        {"rt_priority", w.run_mode->rt_priority},
                        {"cpus", w.run_mode->cpus},
                        {"inline", w.run_mode->inline_process},
                        {"ftz", w.run_mode->ftz}};
    if (w.signature) wl["signature"] = to_json(*w.signature);
    if (!w.variant.empty()) {
      wl["variant"] = w.variant;
      wl["rounds"] = w.rounds;
    }
  }
  return wl;
}

json environment_json(const ReportEnvironment& e) {
  const Environment& h = e.host;
  json j = {{"version", h.version}, {"commit", h.commit},     {"cpu", h.cpu},     {"logical_cpus", h.logical_cpus},
            {"os", h.os},           {"compiler", h.compiler}, {"build", h.build}, {"cuda_built", h.cuda_built}};
  if (e.gpu)
    j["gpu"] = {{"name", e.gpu->name}, {"driver", e.gpu->driver}, {"compute_capability", e.gpu->compute_capability}};
  return j;
}

json timing_json(const Timing& t) {
  return {{"chunk_ns", t.chunk_ns}, {"budget_ns", t.budget_ns}, {"paced", t.paced}};
}

// A column of the series: 64-bit stamps or 32-bit durations and flags.
using SeriesColumn = std::variant<const std::vector<std::int64_t>*, const std::vector<std::int32_t>*>;

// The series' columns, in the order they are filled; the document holds them under their
// keys (sorted, as every object).
std::vector<std::pair<std::string, SeriesColumn>> series_columns(const Series& s) {
  std::vector<std::pair<std::string, SeriesColumn>> cols = {
      {"seq", &s.seq}, {"sched_ns", &s.sched_ns}, {"emit_ns", &s.emit_ns}, {"latency_ns", &s.latency_ns},
      {"period_ns", &s.period_ns}};
  for (int k = 0; k < kStageCount; ++k)
    cols.emplace_back(std::string(kStageKeys[k]) + "_ns", &s.stage_ns[static_cast<std::size_t>(k)]);
  for (int k = 0; k < 5; ++k)
    cols.emplace_back(std::string(kSeriesPartKeys[k]) + "_ns", &s.part_ns[static_cast<std::size_t>(k)]);
  cols.emplace_back("flags", &s.flags);
  cols.emplace_back("source_wake_ns", &s.source_wake_ns);
  return cols;
}

// The series without its columns.
json series_head(const Series& s) {
  return {{"count", s.size()}, {"capacity", s.capacity}, {"truncated", s.truncated}, {"not_kept", s.not_kept}};
}

json series_json(const Series& s) {
  json j = series_head(s);
  json cols = json::object();
  for (const auto& [key, col] : series_columns(s)) std::visit([&, k = key](const auto* c) { cols[k] = *c; }, col);
  j["columns"] = std::move(cols);
  return j;
}

json device_json(const DeviceSection& d) {
  json xl = json::array();
  for (const auto& x : d.xrun_list) xl.push_back({{"callback", x.callback}, {"at_s", x.at_s}, {"flags", x.flags}});
  return {{"input", d.input},
          {"output", d.output},
          {"host_api", d.host_api},
          {"duplex", d.duplex},
          {"latency_chunks", d.latency_chunks},
          {"budget_rule", d.budget_rule},
          {"reported_input_latency_s", d.reported_input_latency_s},
          {"reported_output_latency_s", d.reported_output_latency_s},
          {"stream_rate", d.stream_rate},
          {"callbacks", d.callbacks},
          {"callback_period", to_json(d.callback_period)},
          {"xruns", d.xruns},
          {"input_overflows", d.input_overflows},
          {"output_underflows", d.output_underflows},
          {"priming", d.priming},
          {"xrun_list", xl},
          {"underruns", d.underruns},
          {"late_chunks", d.late_chunks},
          {"underrun_seqs", d.underrun_seqs}};
}

json baseline_json(const BaselineSummary& b) {
  return {{"period_ns", b.period_ns}, {"duration_ns", b.duration_ns}, {"wake", to_json(b.wake)}, {"handoff", to_json(b.handoff)}};
}

json load_json(const MachineLoad& l) {
  return {{"load1", l.load1}, {"runnable", l.runnable}, {"cpus_online", l.cpus_online}};
}

json platform_json(const PlatformSection& p) {
  json j = json::object();
  if (p.before) j["baseline_before"] = baseline_json(*p.before);
  if (p.after) j["baseline_after"] = baseline_json(*p.after);
  json th = json::array();
  for (const auto& t : p.threads)
    th.push_back({{"thread", t.thread},
                  {"tid", t.tid},
                  {"voluntary_switches", t.voluntary},
                  {"involuntary_switches", t.involuntary},
                  {"cpu_ns", t.cpu_ns}});
  j["threads"] = th;
  if (p.load_before) j["load_before"] = load_json(*p.load_before);
  if (p.load_after) j["load_after"] = load_json(*p.load_after);
  if (p.busy_share) j["busy_share"] = *p.busy_share;
  if (p.steal_share) j["steal_share"] = *p.steal_share;
  return j;
}

json streams_json(const StreamsSection& s) {
  auto opt = [](const auto& o) { return o ? json(*o) : json(nullptr); };
  json per = json::array();
  for (const auto& f : s.streams) {
    json e = {{"stream", f.stream},
              {"offset_ns", f.offset_ns},
              {"state", run_state_name(f.state)},
              {"counted", f.counted},
              {"misses", f.misses},
              {"stall_events", f.stalls},
              {"drops", f.drops},
              {"latency", to_json(f.latency)},
              {"process", to_json(f.process)},
              {"headroom_p95_ns", opt(f.headroom_p95_ns)},
              {"realtime_safe", opt(f.realtime_safe)}};
    if (f.owner) e["owner"] = owner_key(*f.owner);
    per.push_back(std::move(e));
  }
  return {{"count", s.count},
          {"stagger", s.staggered},
          {"offset_step_ns", s.offset_step_ns},
          {"mode", s.mode},
          {"worst", s.worst},
          {"blame", opt(s.blame)},
          {"per_stream", std::move(per)},
          {"pooled",
           {{"counted", s.counted},
            {"misses", s.misses},
            {"stall_events", s.stalls},
            {"drops", s.drops},
            {"latency", to_json(s.latency)},
            {"process", to_json(s.process)},
            {"headroom_p95_ns", opt(s.headroom_p95_ns)},
            {"realtime_safe", opt(s.realtime_safe)}}}};
}

}  // namespace

namespace {

// A run report without its series: everything but the per-chunk columns, a document whose
// size does not grow with the number of chunks.
// The audit's counters, each described once for the writer and the reader.
struct AuditCount {
  const char* key;
  std::uint64_t StepAudit::*member;
};
constexpr AuditCount kAuditCounts[] = {
    {"calls", &StepAudit::calls},
    {"allocations", &StepAudit::allocations},
    {"frees", &StepAudit::frees},
    {"blocking_calls", &StepAudit::blocking_calls},
    {"voluntary_switches", &StepAudit::voluntary_switches},
    {"nonfinite_samples", &StepAudit::nonfinite},
    {"subnormal_samples", &StepAudit::subnormal},
    {"paging_calls", &StepAudit::paging_calls},
    {"major_faults", &StepAudit::major_faults},
};
struct AuditFirst {
  const char* key;
  std::optional<std::uint64_t> StepAudit::*member;
};
constexpr AuditFirst kAuditFirsts[] = {
    {"first_alloc_seq", &StepAudit::first_alloc},
    {"first_block_seq", &StepAudit::first_block},
    {"first_nonfinite_seq", &StepAudit::first_nonfinite},
    {"first_paging_seq", &StepAudit::first_paging},
};

json audit_json(const StepAudit& a) {
  json j;
  for (const auto& c : kAuditCounts) j[c.key] = a.*c.member;
  for (const auto& f : kAuditFirsts)
    if (a.*f.member) j[f.key] = *(a.*f.member);
  j["allocations_counted"] = a.allocations_counted;
  j["blocked_ns"] = a.blocked_ns;
  j["paging_ns"] = a.paging_ns;
  j["realtime_safe"] = !a.unsafe();
  return j;
}

json steps_json(const RunReport& r) {
  json a = json::array();
  for (const auto& st : r.steps) {
    json e{{"index", st.index}, {"kind", st.kind},     {"label", st.label}, {"stages", st.stages},
           {"wall", to_json(st.wall)}, {"share", st.share}, {"misses", st.misses}};
    if (st.cpu) e["cpu"] = to_json(*st.cpu);
    if (st.hosted()) {
      e["declared_latency_frames"] = st.declared_latency_frames;
      e["converted_from_f64"] = st.converted_from_f64;
    }
    if (st.audit) e["audit"] = audit_json(*st.audit);
    a.push_back(std::move(e));
  }
  return {{"list", a}, {"outside_mean_ns", r.steps_outside_mean_ns}, {"declared_latency_frames", r.declared_latency_frames}};
}

json run_head(const RunReport& r) {
  json j;
  j["schema"] = kReportSchema;
  j["state"] = run_state_name(r.state);
  j["complete"] = r.complete();
  if (!r.complete() || !r.reason.empty()) j["reason"] = r.reason;
  if (r.state == RunState::interrupted || r.not_processed > 0) j["not_processed"] = r.not_processed;
  j["workload"] = workload_json(r.workload, false);
  j["environment"] = environment_json(r.environment);
  j["method"] = {{"clock", r.method.clock},
                 {"percentiles", r.method.percentiles},
                 {"relative_error", r.method.relative_error},
                 {"latency_from", r.method.latency_from}};
  j["timing"] = timing_json(r.timing);

  const Counts& c = r.counts;
  json counts;
  counts["produced"] = c.produced;
  counts["emitted"] = c.emitted;
  counts["warmup"] = c.warmup;
  counts["counted"] = c.counted;
  counts["short"] = c.short_chunks;
  counts["frames_emitted"] = c.frames_emitted;
  counts["drops"] = c.drops;
  counts["drops_pool_empty"] = c.drops_pool_empty;
  counts["drops_queue_full"] = c.drops_queue_full;
  counts["drop_seqs"] = c.drop_seqs;
  counts["drop_seqs_truncated"] = c.drop_seqs_truncated;
  counts["misses"] = c.misses;
  json blame;
  for (int i = 0; i < kStageCount; ++i) blame[kStageKeys[i]] = c.miss_blame[static_cast<std::size_t>(i)];
  counts["miss_blame"] = blame;
  json ml = json::array();
  for (const auto& m : c.miss_list) {
    json e = {{"seq", m.seq}, {"latency_ns", m.latency_ns}, {"blame", kStageKeys[static_cast<int>(m.blame)]}, {"at_s", m.at_s}};
    if (m.owner) e["owner"] = owner_key(*m.owner);
    if (m.cause) {
      e["cause"] = cause_key(*m.cause);
      e["cause_ns"] = m.cause_ns;
    }
    if (m.step) {
      e["step"] = *m.step;
      e["step_ns"] = m.step_ns;
    }
    ml.push_back(std::move(e));
  }
  counts["miss_list"] = ml;
  if (c.miss_owner) counts["miss_owner"] = owner_counts(*c.miss_owner);
  if (c.stalls) {
    counts["stalls"] = *c.stalls;
    counts["stall_owner"] = owner_counts(c.stall_owner);
    json sl = json::array();
    for (const auto& e : c.stall_list)
      sl.push_back({{"first_seq", e.first_seq},
                    {"last_seq", e.last_seq},
                    {"chunks", e.chunks},
                    {"start_s", e.start_s},
                    {"length_ns", e.length_ns},
                    {"worst_over_ns", e.worst_over_ns},
                    {"owner", owner_key(e.owner)},
                    {"cause", cause_key(e.cause)},
                    {"cause_ns", e.cause_ns}});
    counts["stall_list"] = sl;
    counts["stall_list_truncated"] = c.stall_list_truncated;
  }
  j["counts"] = counts;

  json stages;
  for (int i = 0; i < kStageCount; ++i) stages[kStageKeys[i]] = to_json(r.stages[static_cast<std::size_t>(i)]);
  j["stages"] = stages;
  json parts = json::object();
  for (int i = 0; i < kPartCount; ++i)
    if (r.process_parts[static_cast<std::size_t>(i)]) parts[kPartKeys[i]] = to_json(*r.process_parts[static_cast<std::size_t>(i)]);
  j["process_parts"] = parts;
  if (r.source_wake && r.source_read)
    j["source_parts"] = {{"wake", to_json(*r.source_wake)}, {"read", to_json(*r.source_read)}};
  j["latency"] = to_json(r.latency);
  j["engine_overhead"] = to_json(r.engine_overhead);
  j["dispatches_per_chunk"] = r.dispatches_per_chunk;
  j["launches_per_chunk"] = r.launches_per_chunk;
  if (r.headroom) j["headroom"] = {{"p95", r.headroom->p95}, {"p99", r.headroom->p99}, {"max", r.headroom->max}};

  json v;
  v["realtime_safe"] = r.verdict.realtime_safe ? json(*r.verdict.realtime_safe) : json(nullptr);
  if (r.verdict.blame) v["blame"] = kStageKeys[static_cast<int>(*r.verdict.blame)];
  if (r.verdict.owner) v["owner"] = owner_key(*r.verdict.owner);
  v["text"] = r.verdict.text;
  j["verdict"] = v;

  const Cadence& cd = r.cadence;
  j["cadence"] = {{"period", to_json(cd.period)},
                  {"jitter_p95_ns", cd.jitter_p95_ns ? json(*cd.jitter_p95_ns) : json(nullptr)},
                  {"drift_ppm", cd.drift_ppm ? json(*cd.drift_ppm) : json(nullptr)},
                  {"longest_gap", {{"ns", cd.longest_gap.ns}, {"seq", cd.longest_gap.seq}, {"at_s", cd.longest_gap.at_s}}},
                  {"period_ratio_p95", cd.period_ratio_p95}};  // read from older reports' cadence.realtime_factor too
  if (cd.steady) {
    j["cadence"]["steady"] = *cd.steady;
    j["cadence"]["dry_after_ns"] = cd.dry_after_ns;
    j["cadence"]["dry_chunks"] = cd.dry_chunks;
    j["cadence"]["dry_worst_ns"] = cd.dry_worst_ns;
    j["cadence"]["dry_first_seq"] = cd.dry_first_seq;
  }
  j["throughput"] = {{"wall_seconds", r.throughput.wall_seconds},
                     {"media_seconds", r.throughput.media_seconds},
                     {"speed_factor", r.throughput.speed_factor},
                     {"realtime_factor", r.throughput.speed_factor},
                     {"chunks_per_second", r.throughput.chunks_per_second}};
  j["queues"] = {{"depth", r.queues.depth},
                 {"in_high_water", r.queues.in_high_water},
                 {"out_high_water", r.queues.out_high_water}};
  j["warmup"] = to_json(r.warmup);
  const BackendCounters& bc = r.backend_counters;
  j["backend_counters"] = {{"chunks", bc.chunks},
                           {"kernel_launches", bc.kernel_launches},
                           {"graph_launches", bc.graph_launches},
                           {"graph_captures", bc.graph_captures},
                           {"graph_recaptures", bc.graph_recaptures},
                           {"eager_fallbacks", bc.eager_fallbacks},
                           {"shape_changes", bc.shape_changes}};
  j["checksums"] = {{"algorithm", r.checksums.algorithm},
                    {"chunks", r.checksums.input.size()},
                    {"input", r.checksums.input},
                    {"output", r.checksums.output}};
  if (r.device) j["device"] = device_json(*r.device);
  if (r.platform) j["platform"] = platform_json(*r.platform);
  if (r.streams) j["streams"] = streams_json(*r.streams);
  if (!r.steps.empty()) j["steps"] = steps_json(r);
  j["diagnosis"] = to_json(r.diagnosis);
  return j;
}

// A compare report whose variants lack their run reports.
json compare_head(const CompareReport& r);

}  // namespace

json to_json(const ReportEnvironment& e) { return environment_json(e); }

json to_json(const RunReport& r) {
  json j = run_head(r);
  j["series"] = series_json(r.series);
  return j;
}

json to_json(const CompareReport& r) {
  json out = compare_head(r);
  auto& variants = out["variants"];
  for (std::size_t i = 0; i < r.variants.size(); ++i)
    if (r.variants[i].report) variants[i]["report"] = to_json(*r.variants[i].report);
  return out;
}

namespace {

json compare_head(const CompareReport& r) {
  json out;
  out["schema"] = kCompareSchema;
  out["rounds"] = r.rounds;
  out["rounds_completed"] = r.rounds_completed;
  out["order"] = r.order;
  out["state"] = run_state_name(r.state);
  json variants = json::array();
  for (const auto& v : r.variants) {
    json e{{"name", v.name}, {"available", v.available}};
    if (!v.available) e["reason"] = v.reason;
    variants.push_back(std::move(e));
  }
  out["variants"] = std::move(variants);
  out["baseline"] = r.baseline;
  out["environment"] = environment_json(r.environment);
  out["workload"] = workload_json(r.workload, true);
  out["timing"] = timing_json(r.timing);
  auto opt_num = [](const auto& o) { return o ? json(*o) : json(nullptr); };
  json table = json::array();
  for (const auto& row : r.table)
    table.push_back({{"variant", row.variant},
                     {"stage", row.stage},
                     {"p50", row.p50},
                     {"p95", row.p95},
                     {"p99", row.p99},
                     {"ratio_p50", opt_num(row.ratio_p50)},
                     {"ratio_p95", opt_num(row.ratio_p95)},
                     {"ratio_p99", opt_num(row.ratio_p99)}});
  out["table"] = table;
  json summary = json::array();
  for (const auto& s : r.summary) {
    summary.push_back({{"variant", s.variant},
                       {"state", run_state_name(s.state)},
                       {"latency_p95_ns", opt_num(s.latency_p95_ns)},
                       {"process_p50_ns", opt_num(s.process_p50_ns)},
                       {"process_p95_ns", opt_num(s.process_p95_ns)},
                       {"headroom_p95_ns", opt_num(s.headroom_p95_ns)},
                       {"launches_per_chunk", s.launches_per_chunk},
                       {"dispatches_per_chunk", s.dispatches_per_chunk},
                       {"launch_p50_ns", opt_num(s.launch_p50_ns)},
                       {"gpu_p50_ns", opt_num(s.gpu_p50_ns)},
                       {"misses", s.misses},
                       {"drops", s.drops},
                       {"realtime_safe", opt_num(s.realtime_safe)},
                       {"ratio_latency_p95", opt_num(s.ratio_latency_p95)},
                       {"ratio_process_p50", opt_num(s.ratio_process_p50)},
                       {"verdict_events", s.verdict_events},
                       {"verdict_events_of", s.verdict_events_of}});
    if (s.owner) summary.back()["owner"] = owner_key(*s.owner);
  }
  out["summary"] = summary;
  // across rounds: each variant's rounds and spreads, the calls against the baseline, the rule
  json per_round = json::array();
  for (const auto& v : r.per_round) {
    json rounds = json::array();
    for (const auto& rd : v.rounds)
      rounds.push_back({{"round", rd.round},
                        {"position", rd.position},
                        {"complete", rd.complete},
                        {"counted", rd.counted},
                        {"latency_p50_ns", opt_num(rd.latency_p50_ns)},
                        {"latency_p95_ns", opt_num(rd.latency_p95_ns)},
                        {"process_p50_ns", opt_num(rd.process_p50_ns)},
                        {"process_p95_ns", opt_num(rd.process_p95_ns)},
                        {"misses", rd.misses},
                        {"drops", rd.drops}});
    json spread = json::object();
    for (const auto& sp : v.spread)
      spread[CompareRound::figure_key(sp.figure)] = {
          {"rounds", sp.rounds}, {"min", sp.min}, {"median", sp.median}, {"max", sp.max}};
    per_round.push_back({{"variant", v.variant}, {"rounds", rounds}, {"spread", spread}});
  }
  out["per_round"] = per_round;
  json differences = json::array();
  for (const auto& c : r.differences)
    differences.push_back({{"variant", c.variant},
                           {"figure", CompareRound::figure_key(c.figure)},
                           {"call", CompareCall::call_name(c.call)},
                           {"reason", c.reason},
                           {"rounds", c.rounds},
                           {"baseline_rounds", c.baseline_rounds},
                           {"ranges_overlap", c.ranges_overlap},
                           {"higher", c.higher},
                           {"ratio_of_medians", opt_num(c.ratio_of_medians)},
                           {"interval_low", opt_num(c.interval_low)},
                           {"interval_high", opt_num(c.interval_high)}});
  out["differences"] = differences;
  out["difference_rule"] = {{"min_rounds", r.rule.min_rounds},
                            {"resamples", r.rule.resamples},
                            {"confidence", r.rule.confidence},
                            {"seed", r.rule.seed}};
  return out;
}

// ---------------------------------------------------------------- streaming
//
// The text json::dump(2) gives, written piece by piece: the small sections are dumped from
// their json values (re-indented to where they sit), the series columns number by number
// and the variants' run reports one after the other, so writing a report needs memory for
// its head only, whatever the number of chunks.

using LateMember = std::pair<std::string, std::function<void(std::ostream&, int)>>;

void put_indent(std::ostream& o, int depth) {
  static const std::string spaces(256, ' ');
  for (int n = 2 * depth; n > 0; n -= static_cast<int>(spaces.size()))
    o.write(spaces.data(), std::min<std::streamsize>(n, static_cast<std::streamsize>(spaces.size())));
}

// `v` as dump(2) writes it at `depth` levels in: the line breaks of pretty-printing are the
// only raw newlines in the text (a string's newline is escaped), each gets the indent.
void put_value(std::ostream& o, const json& v, int depth) {
  const std::string text = v.dump(2);
  std::size_t from = 0;
  for (std::size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1) {
    o.write(text.data() + from, static_cast<std::streamsize>(nl + 1 - from));
    put_indent(o, depth);
  }
  o.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
}

void put_key(std::ostream& o, const std::string& key, int depth) {
  put_indent(o, depth);
  o << json(key).dump() << ": ";
}

// The object `head` with the members of `late` merged in at their places in key order (the
// order of json's objects), each late member written by its function at its depth.
void put_object(std::ostream& o, const json& head, std::vector<LateMember> late, int depth) {
  std::sort(late.begin(), late.end(), [](const LateMember& a, const LateMember& b) { return a.first < b.first; });
  if (head.empty() && late.empty()) {
    o << "{}";
    return;
  }
  o << "{\n";
  auto l = late.begin();
  bool first = true;
  auto next = [&] {
    if (!first) o << ",\n";
    first = false;
  };
  for (auto it = head.begin(); it != head.end(); ++it) {
    for (; l != late.end() && l->first < it.key(); ++l) {
      next();
      put_key(o, l->first, depth + 1);
      l->second(o, depth + 1);
    }
    next();
    put_key(o, it.key(), depth + 1);
    put_value(o, it.value(), depth + 1);
  }
  for (; l != late.end(); ++l) {
    next();
    put_key(o, l->first, depth + 1);
    l->second(o, depth + 1);
  }
  o << "\n";
  put_indent(o, depth);
  o << "}";
}

// An array of integers as dump(2) writes it: one number a line.
template <typename Int>
void put_int_array(std::ostream& o, const std::vector<Int>& v, int depth) {
  if (v.empty()) {
    o << "[]";
    return;
  }
  const std::string lead = std::string(",\n") + std::string(static_cast<std::size_t>(2 * (depth + 1)), ' ');
  std::string block = "[" + lead.substr(1);
  block.reserve(1u << 14);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) block += lead;
    const fmt::format_int n(v[i]);
    block.append(n.data(), n.size());
    if (block.size() >= (1u << 14) - 64) {
      o.write(block.data(), static_cast<std::streamsize>(block.size()));
      block.clear();
    }
  }
  o.write(block.data(), static_cast<std::streamsize>(block.size()));
  o << "\n";
  put_indent(o, depth);
  o << "]";
}

void put_series(std::ostream& o, const Series& s, int depth) {
  std::vector<LateMember> cols;
  for (const auto& [key, col] : series_columns(s))
    cols.emplace_back(key, [col = col](std::ostream& os, int d) {
      std::visit([&](const auto* c) { put_int_array(os, *c, d); }, col);
    });
  put_object(o, series_head(s), {{"columns", [&](std::ostream& os, int d) { put_object(os, json::object(), cols, d); }}},
             depth);
}

void put_run(std::ostream& o, const RunReport& r, int depth) {
  put_object(o, run_head(r), {{"series", [&](std::ostream& os, int d) { put_series(os, r.series, d); }}}, depth);
}

void put_compare(std::ostream& o, const CompareReport& r, int depth) {
  json head = compare_head(r);
  json variants = std::move(head["variants"]);
  head.erase("variants");
  auto put_variants = [&](std::ostream& os, int d) {
    if (variants.empty()) {
      os << "[]";
      return;
    }
    os << "[\n";
    for (std::size_t i = 0; i < variants.size(); ++i) {
      if (i > 0) os << ",\n";
      put_indent(os, d + 1);
      std::vector<LateMember> late;
      if (const auto& rep = r.variants[i].report)
        late.emplace_back("report", [&](std::ostream& s2, int d2) { put_run(s2, *rep, d2); });
      put_object(os, variants[i], std::move(late), d + 1);
    }
    os << "\n";
    put_indent(os, d);
    os << "]";
  };
  put_object(o, head, {{"variants", put_variants}}, depth);
}

}  // namespace

void write_json(std::ostream& o, const RunReport& r) { put_run(o, r, 0); }

void write_json(std::ostream& o, const CompareReport& r) { put_compare(o, r, 0); }

void write_report_file(const std::string& path, const RunReport& r, const std::string& label) {
  write_streamed_output(path, label, [&](std::ostream& o) {
    write_json(o, r);
    o << '\n';
  });
}

void write_report_file(const std::string& path, const CompareReport& r, const std::string& label) {
  write_streamed_output(path, label, [&](std::ostream& o) {
    write_json(o, r);
    o << '\n';
  });
}

// ================================================================ reading

namespace {

// A JSON node and the dotted path that leads to it, for error lines.
class Node {
 public:
  Node(const json& j, std::string path) : j_(&j), path_(std::move(path)) {}

  const json& raw() const { return *j_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("field '{}': {}", path_.empty() ? "(top level)" : path_, what));
  }

  std::string child_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  bool has(const char* key) const { return j_->is_object() && j_->contains(key) && !(*j_)[key].is_null(); }

  /// The object at `key`; missing or not an object is an error.
  Node obj(const char* key) const {
    if (!j_->is_object()) fail("expected an object");
    auto it = j_->find(key);
    if (it == j_->end() || it->is_null()) Node(*j_, child_path(key)).fail("missing");
    Node n(*it, child_path(key));
    if (!it->is_object()) n.fail(fmt::format("expected an object, found {}", it->type_name()));
    return n;
  }
  /// The object at `key`, or nothing when missing or null.
  std::optional<Node> opt_obj(const char* key) const {
    if (!has(key)) return std::nullopt;
    return obj(key);
  }
  /// The array at `key`; missing gives an empty array node when `required` is false.
  std::optional<Node> arr(const char* key, bool required = false) const {
    if (!has(key)) {
      if (required) Node(*j_, child_path(key)).fail("missing");
      return std::nullopt;
    }
    const json& a = (*j_)[key];
    Node n(a, child_path(key));
    if (!a.is_array()) n.fail(fmt::format("expected an array, found {}", a.type_name()));
    return n;
  }
  Node elem(std::size_t i) const { return Node((*j_)[i], fmt::format("{}[{}]", path_, i)); }
  std::size_t size() const { return j_->size(); }

  // -- this node's value
  double number() const {
    if (!j_->is_number()) fail(fmt::format("expected a number, found {}", j_->type_name()));
    const double v = j_->get<double>();
    if (!std::isfinite(v)) fail("not a finite number");
    return v;
  }
  std::int64_t integer() const {
    if (j_->is_number_integer()) {
      if (j_->is_number_unsigned() && j_->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(fmt::format("{} is out of range", j_->dump()));
      return j_->get<std::int64_t>();
    }
    const double v = number();
    if (std::fabs(v) > 9.2e18) fail(fmt::format("{} is out of range", j_->dump()));
    return static_cast<std::int64_t>(std::llround(v));
  }
  std::uint64_t count() const {
    if (j_->is_number_unsigned()) return j_->get<std::uint64_t>();
    const std::int64_t v = integer();
    if (v < 0) fail(fmt::format("expected a count (0 or more), found {}", v));
    return static_cast<std::uint64_t>(v);
  }
  std::string string() const {
    if (!j_->is_string()) fail(fmt::format("expected a string, found {}", j_->type_name()));
    return j_->get<std::string>();
  }
  bool boolean() const {
    if (!j_->is_boolean()) fail(fmt::format("expected true or false, found {}", j_->type_name()));
    return j_->get<bool>();
  }

  // -- a member's value: missing or null keeps the default; present and mistyped is an error
  /// The member at `key`; a null node (named by its path) when there is none, so that
  /// reading it fails with the field's name instead of reading past the object.
  Node at(const char* key) const {
    static const json kNull;
    if (j_->is_object()) {
      const auto it = j_->find(key);
      if (it != j_->end()) return Node(*it, child_path(key));
    }
    return Node(kNull, child_path(key));
  }
  double num(const char* key, double def) const { return has(key) ? at(key).number() : def; }
  std::int64_t i64(const char* key, std::int64_t def) const { return has(key) ? at(key).integer() : def; }
  std::uint64_t u64(const char* key, std::uint64_t def) const { return has(key) ? at(key).count() : def; }
  int i32(const char* key, int def) const {
    if (!has(key)) return def;
    const std::int64_t v = at(key).integer();
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      at(key).fail(fmt::format("{} is out of range", v));
    return static_cast<int>(v);
  }
  std::string str(const char* key, const std::string& def) const { return has(key) ? at(key).string() : def; }
  bool flag(const char* key, bool def) const { return has(key) ? at(key).boolean() : def; }
  // -- a required member: every report of the schema's first version has it
  void need(const char* key) const {
    if (!j_->is_object() || !j_->contains(key)) at_missing(key);
  }
  [[noreturn]] void at_missing(const char* key) const { Node(*j_, child_path(key)).fail("missing"); }
  std::uint64_t req_u64(const char* key) const {
    need(key);
    return u64(key, 0);
  }
  double req_f(const char* key) const {
    need(key);
    return num(key, 0);
  }
  std::string req_str(const char* key) const {
    need(key);
    return str(key, "");
  }
  int req_i32(const char* key) const {
    need(key);
    return i32(key, 0);
  }
  bool req_flag(const char* key) const {
    need(key);
    return flag(key, false);
  }
  std::int64_t req_i64(const char* key) const {
    if (!has(key)) at(key).fail("missing");
    return at(key).integer();
  }

 private:
  const json* j_;
  std::string path_;
};

HistSummary read_hist(const Node& n) {
  HistSummary h;
  h.count = n.u64("count", 0);
  if (h.count == 0) return h;
  // every histogram holds durations: none is below 0
  auto t = [&](const char* key, std::optional<std::int64_t> def) {
    const std::int64_t v = def && !n.has(key) ? *def : n.req_i64(key);
    if (v < 0) n.at(key).fail(fmt::format("{} ns is not a time (below 0)", v));
    return v;
  };
  h.min = t("min", std::nullopt);
  h.p50 = t("p50", std::nullopt);
  h.p90 = t("p90", h.p50);
  h.p95 = t("p95", std::nullopt);
  h.p99 = t("p99", h.p95);
  h.p99_9 = t("p99_9", h.p99);
  h.max = t("max", std::nullopt);
  h.mean = n.num("mean", static_cast<double>(h.p50));
  return h;
}

HistSummary req_hist(const Node& parent, const char* key) { return read_hist(parent.obj(key)); }

Owner read_owner(const Node& n) {
  const std::string s = n.string();
  for (int i = 0; i < kOwnerCount; ++i)
    if (s == owner_key(static_cast<Owner>(i))) return static_cast<Owner>(i);
  n.fail(fmt::format("'{}' is not an owner (chain, platform, io, consumer)", s));
}

Cause read_cause(const Node& n) {
  const std::string s = n.string();
  for (int i = 0; i < kCauseCount; ++i)
    if (s == cause_key(static_cast<Cause>(i))) return static_cast<Cause>(i);
  n.fail(fmt::format("'{}' is not a cause of latency (source_wake, source_read, processor_busy, handoff_in, process, "
                     "process_descheduled, sink_busy, handoff_out, sink_write)",
                     s));
}

std::array<std::uint64_t, kOwnerCount> read_owner_counts(const Node& n) {
  std::array<std::uint64_t, kOwnerCount> a{};
  for (int i = 0; i < kOwnerCount; ++i) a[static_cast<std::size_t>(i)] = n.u64(owner_key(static_cast<Owner>(i)), 0);
  return a;
}

// a duration: an integer, not below 0
std::int64_t read_ns(const Node& parent, const char* key) {
  const std::int64_t v = parent.req_i64(key);
  if (v < 0) parent.at(key).fail(fmt::format("{} ns is not a time (below 0)", v));
  return v;
}

BaselineSummary read_baseline(const Node& n) {
  BaselineSummary b;
  b.period_ns = read_ns(n, "period_ns");
  b.duration_ns = read_ns(n, "duration_ns");
  b.wake = req_hist(n, "wake");
  b.handoff = req_hist(n, "handoff");
  return b;
}

MachineLoad read_load(const Node& n) {
  MachineLoad l;
  l.load1 = n.num("load1", 0);
  l.runnable = n.i32("runnable", 0);
  l.cpus_online = n.i32("cpus_online", 0);
  return l;
}

double read_share(const Node& parent, const char* key) {
  const double v = parent.at(key).number();
  if (v < 0 || v > 1) parent.at(key).fail(fmt::format("{} is not a share (0 to 1)", v));
  return v;
}

PlatformSection read_platform(const Node& n) {
  PlatformSection p;
  if (auto b = n.opt_obj("baseline_before")) p.before = read_baseline(*b);
  if (auto b = n.opt_obj("baseline_after")) p.after = read_baseline(*b);
  if (auto th = n.arr("threads"))
    for (std::size_t i = 0; i < th->size(); ++i) {
      const Node t = th->elem(i);
      if (!t.raw().is_object()) t.fail(fmt::format("expected an object, found {}", t.raw().type_name()));
      ThreadRecord r;
      r.thread = t.req_str("thread");
      r.tid = t.i32("tid", 0);
      r.voluntary = static_cast<std::int64_t>(t.u64("voluntary_switches", 0));
      r.involuntary = static_cast<std::int64_t>(t.u64("involuntary_switches", 0));
      r.cpu_ns = t.has("cpu_ns") ? read_ns(t, "cpu_ns") : 0;
      p.threads.push_back(r);
    }
  if (auto l = n.opt_obj("load_before")) p.load_before = read_load(*l);
  if (auto l = n.opt_obj("load_after")) p.load_after = read_load(*l);
  if (n.has("busy_share")) p.busy_share = read_share(n, "busy_share");
  if (n.has("steal_share")) p.steal_share = read_share(n, "steal_share");
  return p;
}

Stage read_stage(const Node& n) {
  const std::string s = n.string();
  for (int i = 0; i < kStageCount; ++i)
    if (s == kStageKeys[i]) return static_cast<Stage>(i);
  n.fail(fmt::format("'{}' is not a stage (source, queue_in, process, queue_out, sink)", s));
}

DType read_dtype(const Node& parent, const char* key) {
  const std::string s = parent.str(key, "f32");
  if (s == "f32") return DType::f32;
  if (s == "f64") return DType::f64;
  parent.at(key).fail(fmt::format("'{}' is not f32 or f64", s));
}

RunState read_state(const Node& parent, const char* key) {
  const std::string s = parent.str(key, "complete");
  if (s == "complete") return RunState::complete;
  if (s == "interrupted") return RunState::interrupted;
  if (s == "incomplete") return RunState::incomplete;
  parent.at(key).fail(fmt::format("'{}' is not complete, interrupted or incomplete", s));
}

std::optional<bool> read_opt_flag(const Node& n, const char* key) {
  if (!n.has(key)) return std::nullopt;
  return n.at(key).boolean();
}

StreamsSection read_streams(const Node& n) {
  StreamsSection s;
  s.count = n.req_i32("count");
  if (s.count < 1) n.at("count").fail(fmt::format("{} is not a stream count (1 or more)", s.count));
  s.staggered = n.flag("stagger", true);
  s.offset_step_ns = read_ns(n, "offset_step_ns");
  s.mode = n.str("mode", "independent");
  if (s.mode != "independent" && s.mode != "batched")
    n.at("mode").fail(fmt::format("'{}' is not a streams mode (independent or batched)", s.mode));
  auto per = n.arr("per_stream", true);
  if (static_cast<int>(per->size()) != s.count)
    per->fail(fmt::format("has {} streams but count is {}", per->size(), s.count));
  for (std::size_t i = 0; i < per->size(); ++i) {
    const Node e = per->elem(i);
    if (!e.raw().is_object()) e.fail(fmt::format("expected an object, found {}", e.raw().type_name()));
    StreamFigures f;
    f.stream = e.req_i32("stream");
    if (f.stream != static_cast<int>(i)) e.at("stream").fail(fmt::format("{} is not stream {} (in order)", f.stream, i));
    f.offset_ns = read_ns(e, "offset_ns");
    f.state = read_state(e, "state");
    f.counted = e.u64("counted", 0);
    f.misses = e.u64("misses", 0);
    f.stalls = e.u64("stall_events", f.misses);
    f.drops = e.u64("drops", 0);
    if (auto h = e.opt_obj("latency")) f.latency = read_hist(*h);
    if (auto h = e.opt_obj("process")) f.process = read_hist(*h);
    if (e.has("headroom_p95_ns")) f.headroom_p95_ns = e.at("headroom_p95_ns").integer();
    f.realtime_safe = read_opt_flag(e, "realtime_safe");
    if (e.has("owner")) f.owner = read_owner(e.at("owner"));
    s.streams.push_back(f);
  }
  auto index = [&](const char* key) {
    const int v = n.req_i32(key);
    if (v < 0 || v >= s.count) n.at(key).fail(fmt::format("{} is not one of the {} streams", v, s.count));
    return v;
  };
  s.worst = index("worst");
  if (n.has("blame")) s.blame = index("blame");
  const Node p = n.obj("pooled");
  s.counted = p.u64("counted", 0);
  s.misses = p.u64("misses", 0);
  s.stalls = p.u64("stall_events", s.misses);
  s.drops = p.u64("drops", 0);
  if (auto h = p.opt_obj("latency")) s.latency = read_hist(*h);
  if (auto h = p.opt_obj("process")) s.process = read_hist(*h);
  if (p.has("headroom_p95_ns")) s.headroom_p95_ns = p.at("headroom_p95_ns").integer();
  s.realtime_safe = read_opt_flag(p, "realtime_safe");
  return s;
}

std::vector<std::int64_t> read_ints(const Node& parent, const char* key) {
  std::vector<std::int64_t> v;
  auto a = parent.arr(key);
  if (!a) return v;
  v.reserve(a->size());
  for (std::size_t i = 0; i < a->size(); ++i) v.push_back(a->elem(i).integer());
  return v;
}

std::vector<std::uint64_t> read_counts(const Node& parent, const char* key) {
  std::vector<std::uint64_t> v;
  auto a = parent.arr(key);
  if (!a) return v;
  v.reserve(a->size());
  for (std::size_t i = 0; i < a->size(); ++i) v.push_back(a->elem(i).count());
  return v;
}

std::vector<std::string> read_strings(const Node& parent, const char* key) {
  std::vector<std::string> v;
  auto a = parent.arr(key);
  if (!a) return v;
  for (std::size_t i = 0; i < a->size(); ++i) v.push_back(a->elem(i).string());
  return v;
}

InputDesc read_input(const Node& n) {
  InputDesc in;
  const std::string kind = n.str("kind", "");
  if (kind == "file") {
    in.kind = InputDesc::Kind::file;
    in.path = n.str("path", "");
  } else if (kind == "synth") {
    in.kind = InputDesc::Kind::synth;
    in.signal = n.str("signal", "");
    in.rate = n.num("rate", 0);
    in.channels = n.i32("channels", 0);
    in.frames = n.i64("frames", 0);
  } else if (kind == "device") {
    in.kind = InputDesc::Kind::device;
    in.device_name = n.str("name", "");
    in.host_api = n.str("host_api", "");
  } else if (!kind.empty()) {
    n.at("kind").fail(fmt::format("'{}' is not file, synth or device", kind));
  }
  return in;
}

ReportWorkload read_workload(const Node& n, bool run) {
  ReportWorkload w;
  if (run)
    for (const char* k : {"command", "source", "sink", "chain", "fused", "dispatches_per_chunk_planned", "sections_per_sample",
                          "backend", "mode", "rate", "channels", "chunk_frames", "dtype", "warmup_chunks", "speed", "margin",
                          "queue_depth", "pool_chunks", "media_seconds"})
      n.need(k);
  w.command = n.str("command", "");
  w.source = n.str("source", "");
  w.sink = n.str("sink", "");
  w.chain = n.str("chain", "");
  w.fused = n.flag("fused", true);
  w.dispatches_per_chunk_planned = n.i32("dispatches_per_chunk_planned", 0);
  w.sections_per_sample = n.i32("sections_per_sample", 0);
  if (n.has("filter_stages")) {
    w.filter_stages = n.i32("filter_stages", 0);
  } else if (!w.chain.empty()) {
    // an older report: count the filters of its chain with the chain parser itself
    try {
      for (const auto& st : parse_chain(w.chain).stages)
        if (is_iir(st.kind)) ++w.filter_stages;
    } catch (const InputError&) {
      w.filter_stages = 0;
    }
  }
  w.backend = n.str("backend", "cpu");
  w.mode = n.str("mode", "");
  w.rate = n.num("rate", 0);
  if (w.rate < 0) n.at("rate").fail(fmt::format("{} is below 0", w.rate));
  w.channels = n.i32("channels", 0);
  w.chunk_frames = n.i32("chunk_frames", 0);
  w.dtype = read_dtype(n, "dtype");
  w.warmup_chunks = n.u64("warmup_chunks", 0);
  if (n.has("speed")) {
    const Node s = n.at("speed");
    if (s.raw().is_string()) {
      if (s.string() != "max") s.fail(fmt::format("'{}' is not a number or \"max\"", s.string()));
    } else {
      w.speed = s.number();
    }
  } else {
    w.speed = 1.0;
  }
  if (auto m = n.opt_obj("margin")) {
    w.margin_text = m->str("text", "");
    w.margin_ns = m->i64("ns", 0);
  }
  w.queue_depth = n.i32("queue_depth", 0);
  w.pool_chunks = n.i32("pool_chunks", 0);
  w.media_seconds = n.num("media_seconds", 0);
  if (auto in = n.opt_obj("input")) w.input = read_input(*in);
  if (auto sg = n.opt_obj("signature")) {
    Signature s;
    s.frames = sg->i32("frames", w.chunk_frames);
    s.channels = sg->i32("channels", w.channels);
    s.rate = sg->num("rate", w.rate);
    s.dtype = read_dtype(*sg, "dtype");
    s.chain = sg->str("chain", w.chain);
    s.fused = sg->flag("fused", w.fused);
    s.backend = sg->str("backend", w.backend);
    s.mode = sg->str("mode", w.mode);
    s.cpu_isa = sg->str("cpu_isa", "");
    s.cpu_layout = sg->str("cpu_layout", "");
    s.state_values = sg->u64("state_values", 0);
    s.gpu_timing = sg->flag("gpu_timing", false);
    s.short_chunk = sg->str("short_chunk", "eager");
    w.signature = s;
  }
  if (auto rm = n.opt_obj("run_mode")) {
    RunMode m;
    m.wait = rm->str("wait", "block");
    if (m.wait != "block" && m.wait != "spin" && m.wait != "hybrid")
      rm->at("wait").fail(fmt::format("'{}' is not block, spin or hybrid", m.wait));
    m.rt = rm->flag("rt", false);
    m.rt_priority = rm->i32("rt_priority", 0);
    m.cpus = rm->str("cpus", "");
    m.inline_process = rm->flag("inline", false);
    m.ftz = rm->flag("ftz", true);
    w.run_mode = m;
  }
  w.variant = n.str("variant", "");
  w.rounds = n.i32("rounds", 0);
  return w;
}

ReportEnvironment read_environment(const Node& n) {
  ReportEnvironment e;
  e.host.version = n.str("version", "?");
  e.host.commit = n.str("commit", "?");
  e.host.cpu = n.str("cpu", "?");
  e.host.os = n.str("os", "?");
  e.host.compiler = n.str("compiler", "?");
  e.host.build = n.str("build", "?");
  e.host.logical_cpus = n.i32("logical_cpus", 0);
  e.host.cuda_built = n.flag("cuda_built", false);
  if (auto g = n.opt_obj("gpu")) {
    GpuEnvironment gpu;
    gpu.name = g->str("name", "?");
    gpu.driver = g->str("driver", "?");
    gpu.compute_capability = g->str("compute_capability", "?");
    e.gpu = gpu;
  }
  return e;
}

Timing read_timing(const Node& n) {
  Timing t;
  t.chunk_ns = n.req_i64("chunk_ns");
  t.budget_ns = n.req_i64("budget_ns");
  t.paced = n.flag("paced", true);
  return t;
}

Series read_series(const Node& n) {
  Series s;
  s.capacity = n.u64("capacity", 0);
  s.truncated = n.flag("truncated", false);
  s.not_kept = n.u64("not_kept", 0);
  const auto cn = n.opt_obj("columns");
  if (!cn) return s;
  s.latency_ns = read_ints(*cn, "latency_ns");
  const std::size_t len = s.latency_ns.size();
  // every column has one value per point; an older report may lack a column (zeros)
  auto column = [&](const char* key) {
    auto v = read_ints(*cn, key);
    if (v.empty()) v.assign(len, 0);
    if (v.size() != len)
      cn->at(key).fail(fmt::format("has {} values but latency_ns has {}", v.size(), len));
    return v;
  };
  s.seq = column("seq");
  if (!cn->has("seq"))
    for (std::size_t i = 0; i < len; ++i) s.seq[i] = static_cast<std::int64_t>(i);
  s.sched_ns = column("sched_ns");
  s.emit_ns = column("emit_ns");
  s.period_ns = column("period_ns");
  // durations and flags are kept in 32 bits: what was recorded is clamped to 0..2^31-1
  auto column32 = [&](const std::string& key) {
    const auto wide = column(key.c_str());
    std::vector<std::int32_t> v(wide.size());
    for (std::size_t i = 0; i < wide.size(); ++i) {
      if (wide[i] < 0 || wide[i] > std::numeric_limits<std::int32_t>::max())
        cn->at(key.c_str()).elem(i).fail(fmt::format("{} is out of range 0..2147483647", wide[i]));
      v[i] = static_cast<std::int32_t>(wide[i]);
    }
    return v;
  };
  for (int k = 0; k < kStageCount; ++k) s.stage_ns[static_cast<std::size_t>(k)] = column32(std::string(kStageKeys[k]) + "_ns");
  for (int k = 0; k < 5; ++k) s.part_ns[static_cast<std::size_t>(k)] = column32(std::string(kSeriesPartKeys[k]) + "_ns");
  s.flags = column32("flags");
  s.source_wake_ns = column32("source_wake_ns");
  return s;
}

DeviceSection read_device(const Node& n) {
  DeviceSection d;
  d.input = n.str("input", "");
  d.output = n.str("output", "none");
  d.host_api = n.str("host_api", "");
  d.duplex = n.flag("duplex", false);
  d.latency_chunks = n.i32("latency_chunks", 0);
  d.budget_rule = n.str("budget_rule", "");
  d.reported_input_latency_s = n.num("reported_input_latency_s", 0);
  d.reported_output_latency_s = n.num("reported_output_latency_s", 0);
  d.stream_rate = n.num("stream_rate", 0);
  d.callbacks = n.u64("callbacks", 0);
  // older reports kept min, p50, p95, p99 and max of the callback period only
  if (auto cb = n.opt_obj("callback_period")) d.callback_period = read_hist(*cb);
  d.xruns = n.u64("xruns", 0);
  d.input_overflows = n.u64("input_overflows", 0);
  d.output_underflows = n.u64("output_underflows", 0);
  d.priming = n.u64("priming", 0);
  if (auto xl = n.arr("xrun_list"))
    for (std::size_t i = 0; i < xl->size(); ++i) {
      const Node x = xl->elem(i);
      if (!x.raw().is_object()) x.fail(fmt::format("expected an object, found {}", x.raw().type_name()));
      d.xrun_list.push_back({x.u64("callback", 0), x.num("at_s", 0), x.u64("flags", 0)});
    }
  d.underruns = n.u64("underruns", 0);
  d.late_chunks = n.u64("late_chunks", 0);
  d.underrun_seqs = read_counts(n, "underrun_seqs");
  return d;
}

std::vector<Finding> read_findings(const Node& a) {
  std::vector<Finding> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Node f = a.elem(i);
    if (!f.raw().is_object()) f.fail(fmt::format("expected an object, found {}", f.raw().type_name()));
    Finding x;
    x.rule = f.str("rule", "?");
    const std::string sev = f.str("severity", "info");
    if (sev == "warning")
      x.severity = Finding::Severity::warning;
    else if (sev == "ok")
      x.severity = Finding::Severity::ok;
    else if (sev == "info")
      x.severity = Finding::Severity::info;
    else
      f.at("severity").fail(fmt::format("'{}' is not warning, info or ok", sev));
    const std::string conf = f.str("confidence", "medium");
    if (conf == "high")
      x.confidence = Finding::Confidence::high;
    else if (conf == "medium")
      x.confidence = Finding::Confidence::medium;
    else if (conf == "low")
      x.confidence = Finding::Confidence::low;
    else
      f.at("confidence").fail(fmt::format("'{}' is not high, medium or low", conf));
    x.text = f.str("finding", "");
    x.next = f.str("next", "");
    if (auto ev = f.opt_obj("evidence"))
      for (auto it = ev->raw().begin(); it != ev->raw().end(); ++it)
        x.evidence.emplace_back(it.key(), Node(it.value(), ev->child_path(it.key())).number());
    out.push_back(std::move(x));
  }
  return out;
}

StepAudit read_audit(const Node& n) {
  StepAudit a;
  for (const auto& c : kAuditCounts) a.*c.member = n.u64(c.key, 0);
  for (const auto& f : kAuditFirsts)
    if (n.has(f.key)) a.*f.member = n.u64(f.key, 0);
  a.allocations_counted = n.flag("allocations_counted", true);
  a.blocked_ns = n.has("blocked_ns") ? read_ns(n, "blocked_ns") : 0;
  a.paging_ns = n.has("paging_ns") ? read_ns(n, "paging_ns") : 0;
  return a;
}

void read_steps(const Node& n, RunReport& r) {
  r.steps_outside_mean_ns = n.has("outside_mean_ns") ? read_ns(n, "outside_mean_ns") : 0;
  r.declared_latency_frames = static_cast<std::uint32_t>(n.u64("declared_latency_frames", 0));
  const auto list = n.arr("list", true);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const Node e = list->elem(i);
    if (!e.raw().is_object()) e.fail(fmt::format("expected an object, found {}", e.raw().type_name()));
    StepRecord st;
    st.index = e.req_i32("index");
    if (st.index != static_cast<int>(i) + 1) e.at("index").fail(fmt::format("{} is not step {}", st.index, i + 1));
    st.kind = e.req_str("kind");
    if (st.kind != "cascade" && st.kind != "spin" && st.kind != "sleep" && st.kind != "hosted" && st.kind != "section")
      e.at("kind").fail(fmt::format("'{}' is not a step kind (cascade, spin, sleep, hosted or section)", st.kind));
    st.label = e.str("label", "");
    for (auto v : read_ints(e, "stages")) st.stages.push_back(static_cast<int>(v));
    st.wall = req_hist(e, "wall");
    if (auto c = e.opt_obj("cpu")) st.cpu = read_hist(*c);
    st.share = e.num("share", 0);
    st.misses = e.u64("misses", 0);
    st.declared_latency_frames = static_cast<std::uint32_t>(e.u64("declared_latency_frames", 0));
    st.converted_from_f64 = e.flag("converted_from_f64", false);
    if (auto a = e.opt_obj("audit")) st.audit = read_audit(*a);
    r.steps.push_back(std::move(st));
  }
}

RunReport read_run(const Node& n) {
  RunReport r;
  r.state = read_state(n, "state");
  r.reason = n.str("reason", "");
  r.not_processed = n.u64("not_processed", 0);
  r.workload = read_workload(n.obj("workload"), true);
  r.environment = read_environment(n.obj("environment"));
  const Node m = n.obj("method");
  r.method.clock = m.req_str("clock");
  r.method.percentiles = m.req_str("percentiles");
  r.method.relative_error = m.req_f("relative_error");
  r.method.latency_from = m.req_str("latency_from");
  r.timing = read_timing(n.obj("timing"));

  const Node c = n.obj("counts");
  Counts& k = r.counts;
  k.produced = c.req_u64("produced");
  k.emitted = c.req_u64("emitted");
  k.warmup = c.req_u64("warmup");
  k.counted = c.req_u64("counted");
  k.short_chunks = c.req_u64("short");
  k.frames_emitted = c.req_u64("frames_emitted");
  k.drops = c.req_u64("drops");
  k.drops_pool_empty = c.req_u64("drops_pool_empty");
  k.drops_queue_full = c.req_u64("drops_queue_full");
  c.need("drop_seqs");
  k.drop_seqs = read_counts(c, "drop_seqs");
  k.drop_seqs_truncated = c.flag("drop_seqs_truncated", false);
  k.misses = c.req_u64("misses");
  const Node b = c.obj("miss_blame");
  for (int i = 0; i < kStageCount; ++i) k.miss_blame[static_cast<std::size_t>(i)] = b.u64(kStageKeys[i], 0);
  c.need("miss_list");
  if (auto ml = c.arr("miss_list"))
    for (std::size_t i = 0; i < ml->size(); ++i) {
      const Node e = ml->elem(i);
      if (!e.raw().is_object()) e.fail(fmt::format("expected an object, found {}", e.raw().type_name()));
      MissRecord mr;
      mr.seq = e.u64("seq", 0);
      mr.latency_ns = e.i64("latency_ns", 0);
      mr.blame = e.has("blame") ? read_stage(e.at("blame")) : Stage::process;
      mr.at_s = e.num("at_s", 0);
      if (e.has("owner")) mr.owner = read_owner(e.at("owner"));
      if (e.has("cause")) {
        mr.cause = read_cause(e.at("cause"));
        mr.cause_ns = e.has("cause_ns") ? read_ns(e, "cause_ns") : 0;
      }
      if (e.has("step")) {
        mr.step = e.i32("step", 0);
        if (*mr.step < 1) e.at("step").fail(fmt::format("{} is not a step (steps count from 1)", *mr.step));
        mr.step_ns = e.has("step_ns") ? read_ns(e, "step_ns") : 0;
      }
      k.miss_list.push_back(mr);
    }
  if (auto mo = c.opt_obj("miss_owner")) k.miss_owner = read_owner_counts(*mo);
  if (c.has("stalls")) {
    k.stalls = c.u64("stalls", 0);
    if (auto so = c.opt_obj("stall_owner")) k.stall_owner = read_owner_counts(*so);
    if (auto sl = c.arr("stall_list"))
      for (std::size_t i = 0; i < sl->size(); ++i) {
        const Node e = sl->elem(i);
        if (!e.raw().is_object()) e.fail(fmt::format("expected an object, found {}", e.raw().type_name()));
        StallRecord sr;
        sr.first_seq = e.req_u64("first_seq");
        sr.last_seq = e.req_u64("last_seq");
        sr.chunks = e.req_u64("chunks");
        sr.start_s = e.num("start_s", 0);
        sr.length_ns = read_ns(e, "length_ns");
        sr.worst_over_ns = read_ns(e, "worst_over_ns");
        e.need("owner");
        sr.owner = read_owner(e.at("owner"));
        e.need("cause");
        sr.cause = read_cause(e.at("cause"));
        sr.cause_ns = read_ns(e, "cause_ns");
        k.stall_list.push_back(sr);
      }
    k.stall_list_truncated = c.flag("stall_list_truncated", false);
  }

  const Node st = n.obj("stages");
  for (int i = 0; i < kStageCount; ++i) r.stages[static_cast<std::size_t>(i)] = req_hist(st, kStageKeys[i]);
  if (auto pp = n.opt_obj("process_parts"))
    for (int i = 0; i < kPartCount; ++i)
      if (pp->has(kPartKeys[i])) r.process_parts[static_cast<std::size_t>(i)] = req_hist(*pp, kPartKeys[i]);
  if (auto sp = n.opt_obj("source_parts")) {
    r.source_wake = req_hist(*sp, "wake");
    r.source_read = req_hist(*sp, "read");
  }
  r.latency = req_hist(n, "latency");
  r.engine_overhead = req_hist(n, "engine_overhead");
  r.warmup = req_hist(n, "warmup");
  r.dispatches_per_chunk = n.req_f("dispatches_per_chunk");
  r.launches_per_chunk = n.req_f("launches_per_chunk");
  if (auto h = n.opt_obj("headroom")) r.headroom = Headroom{h->req_i64("p95"), h->i64("p99", 0), h->i64("max", 0)};

  const Node v = n.obj("verdict");
  v.need("realtime_safe");  // null without a deadline verdict
  if (v.has("realtime_safe")) r.verdict.realtime_safe = v.at("realtime_safe").boolean();
  if (v.has("blame")) r.verdict.blame = read_stage(v.at("blame"));
  if (v.has("owner")) r.verdict.owner = read_owner(v.at("owner"));
  r.verdict.text = v.req_str("text");

  const Node cd = n.obj("cadence");
  r.cadence.period = req_hist(cd, "period");
  if (cd.has("jitter_p95_ns")) r.cadence.jitter_p95_ns = cd.at("jitter_p95_ns").integer();
  cd.need("drift_ppm");  // null without a schedule
  if (cd.has("drift_ppm")) r.cadence.drift_ppm = cd.at("drift_ppm").number();
  const Node g = cd.obj("longest_gap");
  r.cadence.longest_gap = {g.req_i64("ns"), g.req_u64("seq"), g.req_f("at_s")};
  // period_ratio_p95 was first written as realtime_factor
  r.cadence.period_ratio_p95 = cd.has("period_ratio_p95") ? cd.num("period_ratio_p95", 0) : cd.req_f("realtime_factor");
  if (cd.has("steady")) {
    r.cadence.steady = cd.flag("steady", true);
    r.cadence.dry_after_ns = read_ns(cd, "dry_after_ns");
    r.cadence.dry_chunks = cd.req_u64("dry_chunks");
    r.cadence.dry_worst_ns = read_ns(cd, "dry_worst_ns");
    r.cadence.dry_first_seq = cd.u64("dry_first_seq", 0);
  }

  const Node tp = n.obj("throughput");
  r.throughput = {tp.req_f("wall_seconds"), tp.req_f("media_seconds"), tp.req_f("speed_factor"),
                  tp.req_f("chunks_per_second")};
  const Node q = n.obj("queues");
  r.queues = {q.req_i32("depth"), q.req_u64("in_high_water"), q.req_u64("out_high_water")};

  if (auto bc = n.opt_obj("backend_counters")) {
    BackendCounters& bcs = r.backend_counters;
    bcs.chunks = bc->u64("chunks", 0);
    bcs.kernel_launches = bc->u64("kernel_launches", 0);
    bcs.graph_launches = bc->u64("graph_launches", 0);
    bcs.graph_captures = bc->u64("graph_captures", 0);
    bcs.graph_recaptures = bc->u64("graph_recaptures", 0);
    bcs.eager_fallbacks = bc->u64("eager_fallbacks", 0);
    bcs.shape_changes = bc->u64("shape_changes", 0);
  }
  if (auto cs = n.opt_obj("checksums")) {
    r.checksums.algorithm = cs->str("algorithm", "fnv1a64");
    r.checksums.input = read_strings(*cs, "input");
    r.checksums.output = read_strings(*cs, "output");
    if (r.checksums.input.size() != r.checksums.output.size())
      cs->at("output").fail(fmt::format("has {} checksums but input has {}", r.checksums.output.size(),
                                        r.checksums.input.size()));
  }
  if (auto se = n.opt_obj("series")) r.series = read_series(*se);
  if (auto d = n.opt_obj("device")) r.device = read_device(*d);
  if (auto pl = n.opt_obj("platform")) r.platform = read_platform(*pl);
  if (auto sm = n.opt_obj("streams")) r.streams = read_streams(*sm);
  if (auto sp = n.opt_obj("steps")) read_steps(*sp, r);
  if (auto dg = n.arr("diagnosis"))
    r.diagnosis = read_findings(*dg);
  else
    r.diagnosis = diagnose(r);  // an older report: diagnose what it holds now
  return r;
}

std::string schema_of(const Node& n) {
  if (!n.raw().is_object())
    throw InputError(fmt::format("JSON but not a chunkscope report (a top-level {}, not an object)", n.raw().type_name()));
  if (!n.has("schema"))
    throw InputError(fmt::format("JSON but not a chunkscope report (no \"schema\" key; expected {} or {})", kReportSchema,
                                 kCompareSchema));
  const json& s = n.raw()["schema"];
  return s.is_string() ? s.get<std::string>() : s.dump();
}

}  // namespace

RunReport run_report_from_json(const json& j) {
  const Node n(j, "");
  const std::string schema = schema_of(n);
  if (schema != kReportSchema)
    throw InputError(fmt::format("schema '{}', expected {}", schema, kReportSchema));
  return read_run(n);
}

namespace {

CompareFigure read_figure(const Node& n) {
  const std::string s = n.string();
  std::string all;
  for (int f = 0; f < kCompareFigureCount; ++f) {
    if (s == CompareRound::figure_key(static_cast<CompareFigure>(f))) return static_cast<CompareFigure>(f);
    all += (f ? ", " : "") + std::string(CompareRound::figure_key(static_cast<CompareFigure>(f)));
  }
  n.fail(fmt::format("'{}' is not a figure ({})", s, all));
}

CompareCall::Call read_call(const Node& n) {
  const std::string s = n.string();
  for (auto c : {CompareCall::Call::difference, CompareCall::Call::no_clear_difference, CompareCall::Call::cannot_judge})
    if (s == CompareCall::call_name(c)) return c;
  n.fail(fmt::format("'{}' is not difference, no clear difference or cannot judge", s));
}

// per_round, differences and difference_rule: later than the first compare files, so each
// may be missing (older files keep the defaults); what is there is read strictly.
void read_compare_rounds(const Node& n, CompareReport& c) {
  auto opt_time = [](const Node& e, const char* k) -> std::optional<std::int64_t> {
    if (!e.has(k)) return std::nullopt;
    const std::int64_t v = e.at(k).integer();
    if (v < 0) e.at(k).fail(fmt::format("{} ns is not a time (below 0)", v));
    return v;
  };
  if (auto pa = n.arr("per_round"))
    for (std::size_t i = 0; i < pa->size(); ++i) {
      const Node e = pa->elem(i);
      if (!e.raw().is_object()) e.fail(fmt::format("expected an object, found {}", e.raw().type_name()));
      CompareRounds v;
      v.variant = e.req_str("variant");
      const auto ra = e.arr("rounds", true);
      for (std::size_t k = 0; k < ra->size(); ++k) {
        const Node r = ra->elem(k);
        if (!r.raw().is_object()) r.fail(fmt::format("expected an object, found {}", r.raw().type_name()));
        CompareRound rd;
        rd.round = r.req_i32("round");
        rd.position = r.i32("position", 0);
        rd.complete = r.flag("complete", true);
        rd.counted = r.req_u64("counted");
        rd.latency_p50_ns = opt_time(r, "latency_p50_ns");
        rd.latency_p95_ns = opt_time(r, "latency_p95_ns");
        rd.process_p50_ns = opt_time(r, "process_p50_ns");
        rd.process_p95_ns = opt_time(r, "process_p95_ns");
        rd.misses = r.req_u64("misses");
        rd.drops = r.req_u64("drops");
        v.rounds.push_back(rd);
      }
      if (auto sp = e.opt_obj("spread"))
        for (int f = 0; f < kCompareFigureCount; ++f) {
          const auto fig = static_cast<CompareFigure>(f);
          const char* key = CompareRound::figure_key(fig);
          if (!sp->has(key)) continue;
          const Node o = sp->obj(key);
          CompareSpread s;
          s.figure = fig;
          s.rounds = o.req_i32("rounds");
          s.min = o.req_f("min");
          s.median = o.req_f("median");
          s.max = o.req_f("max");
          if (!(s.min <= s.median && s.median <= s.max))
            o.fail(fmt::format("min {:g}, median {:g}, max {:g} are not in order", s.min, s.median, s.max));
          v.spread.push_back(s);
        }
      c.per_round.push_back(std::move(v));
    }
  if (auto da = n.arr("differences"))
    for (std::size_t i = 0; i < da->size(); ++i) {
      const Node e = da->elem(i);
      if (!e.raw().is_object()) e.fail(fmt::format("expected an object, found {}", e.raw().type_name()));
      CompareCall d;
      d.variant = e.req_str("variant");
      e.need("figure");
      d.figure = read_figure(e.at("figure"));
      e.need("call");
      d.call = read_call(e.at("call"));
      d.reason = e.str("reason", "");
      d.rounds = e.i32("rounds", 0);
      d.baseline_rounds = e.i32("baseline_rounds", 0);
      d.ranges_overlap = e.flag("ranges_overlap", true);
      d.higher = e.flag("higher", false);
      auto od = [&](const char* k) { return e.has(k) ? std::optional<double>(e.at(k).number()) : std::nullopt; };
      d.ratio_of_medians = od("ratio_of_medians");
      d.interval_low = od("interval_low");
      d.interval_high = od("interval_high");
      c.differences.push_back(std::move(d));
    }
  if (auto ru = n.opt_obj("difference_rule")) {
    c.rule.min_rounds = ru->i32("min_rounds", c.rule.min_rounds);
    c.rule.resamples = ru->i32("resamples", c.rule.resamples);
    c.rule.confidence = ru->num("confidence", c.rule.confidence);
    c.rule.seed = ru->u64("seed", c.rule.seed);
    if (!(c.rule.confidence > 0 && c.rule.confidence < 1))
      ru->at("confidence").fail(fmt::format("{:g} is not between 0 and 1", c.rule.confidence));
  }
}

}  // namespace

CompareReport compare_report_from_json(const json& j) {
  const Node n(j, "");
  const std::string schema = schema_of(n);
  if (schema != kCompareSchema)
    throw InputError(fmt::format("schema '{}', expected {}", schema, kCompareSchema));
  CompareReport c;
  c.baseline = n.str("baseline", "");
  c.rounds = n.i32("rounds", 0);
  c.rounds_completed = n.i32("rounds_completed", c.rounds);
  if (n.has("order") && n.at("order").raw().is_string()) c.order = n.at("order").string();
  c.state = read_state(n, "state");
  const auto va = n.arr("variants", true);
  for (std::size_t i = 0; i < va->size(); ++i) {
    const Node e = va->elem(i);
    if (!e.raw().is_object()) e.fail(fmt::format("expected an object, found {}", e.raw().type_name()));
    CompareVariant v;
    if (!e.has("name")) e.at("name").fail("missing");
    v.name = e.at("name").string();
    v.available = e.flag("available", e.has("report"));
    v.reason = e.str("reason", "");
    if (e.has("report")) {
      const Node rep = e.obj("report");
      if (rep.has("schema") && rep.str("schema", "") != kReportSchema)
        rep.at("schema").fail(fmt::format("'{}' is not {}", rep.str("schema", ""), kReportSchema));
      v.report = read_run(rep);
    } else if (v.available) {
      e.at("report").fail("missing (the variant is marked available)");
    }
    c.variants.push_back(std::move(v));
  }
  // a comparison's own sections are summaries of its variants' reports: only the variants
  // are required (a document cut down to them still renders and benches)
  if (auto env = n.opt_obj("environment")) c.environment = read_environment(*env);
  if (auto wl = n.opt_obj("workload")) c.workload = read_workload(*wl, false);
  if (auto t = n.opt_obj("timing")) c.timing = read_timing(*t);
  if (auto ta = n.arr("table"))
    for (std::size_t i = 0; i < ta->size(); ++i) {
      const Node e = ta->elem(i);
      CompareRow row;
      row.variant = e.req_str("variant");
      row.stage = e.req_str("stage");
      row.p50 = e.req_i64("p50");
      row.p95 = e.req_i64("p95");
      row.p99 = e.req_i64("p99");
      if (e.has("ratio_p50")) row.ratio_p50 = e.at("ratio_p50").number();
      if (e.has("ratio_p95")) row.ratio_p95 = e.at("ratio_p95").number();
      if (e.has("ratio_p99")) row.ratio_p99 = e.at("ratio_p99").number();
      c.table.push_back(row);
    }
  if (auto sa = n.arr("summary"))
    for (std::size_t i = 0; i < sa->size(); ++i) {
      const Node e = sa->elem(i);
      CompareSummary s;
      for (const char* k : {"variant", "state", "latency_p95_ns", "process_p50_ns", "process_p95_ns", "headroom_p95_ns",
                            "launches_per_chunk", "dispatches_per_chunk", "launch_p50_ns", "gpu_p50_ns", "misses", "drops",
                            "realtime_safe", "ratio_latency_p95", "ratio_process_p50"})
        e.need(k);
      s.variant = e.str("variant", "");
      s.state = read_state(e, "state");
      auto oi = [&](const char* k) { return e.has(k) ? std::optional<std::int64_t>(e.at(k).integer()) : std::nullopt; };
      auto od = [&](const char* k) { return e.has(k) ? std::optional<double>(e.at(k).number()) : std::nullopt; };
      s.latency_p95_ns = oi("latency_p95_ns");
      s.process_p50_ns = oi("process_p50_ns");
      s.process_p95_ns = oi("process_p95_ns");
      s.headroom_p95_ns = oi("headroom_p95_ns");
      s.launches_per_chunk = e.num("launches_per_chunk", 0);
      s.dispatches_per_chunk = e.num("dispatches_per_chunk", 0);
      s.launch_p50_ns = oi("launch_p50_ns");
      s.gpu_p50_ns = oi("gpu_p50_ns");
      s.misses = e.u64("misses", 0);
      s.drops = e.u64("drops", 0);
      if (e.has("realtime_safe")) s.realtime_safe = e.at("realtime_safe").boolean();
      s.ratio_latency_p95 = od("ratio_latency_p95");
      s.ratio_process_p50 = od("ratio_process_p50");
      // later fields: an older file counted the misses
      s.verdict_events = e.u64("verdict_events", s.misses);
      s.verdict_events_of = e.str("verdict_events_of", "misses");
      if (e.has("owner")) s.owner = read_owner(e.at("owner"));
      c.summary.push_back(s);
    }
  read_compare_rounds(n, c);
  return c;
}

SavedReport load_saved_report(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw InputError(ec ? fmt::format("report '{}': cannot look at it ({})", path, ec.message())
                        : fmt::format("report '{}': no such file", path));
  if (fs::is_directory(path, ec)) throw InputError(fmt::format("report '{}': is a folder, not a report file", path));
  const std::string text = read_text_file_bounded(path, kReportFileLimit, fmt::format("report '{}'", path));
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(fmt::format("report '{}': empty file, not JSON", path));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    if (e.byte >= text.size())
      throw InputError(fmt::format("report '{}': truncated JSON (the document ends unfinished after {} bytes)", path,
                                   text.size()));
    throw InputError(fmt::format("report '{}': not JSON (parse error at byte {})", path, e.byte));
  } catch (const json::exception& e) {
    // e.g. 1e400: a number no double holds
    std::string what = e.what();
    if (const auto b = what.find("] "); b != std::string::npos) what = what.substr(b + 2);
    throw InputError(fmt::format("report '{}': a value is out of range ({})", path, what));
  }
  try {
    const Node n(j, "");
    const std::string schema = schema_of(n);
    if (schema == kReportSchema) return read_run(n);
    if (schema == kCompareSchema) return compare_report_from_json(j);
    if (schema == kSweepSchema)
      throw InputError("a sweep (chunkscope.sweep/1), not a run or compare report: `chunkscope sweep --html` writes its page");
    throw InputError(fmt::format("JSON but not a chunkscope report (schema '{}'; expected {} or {})", schema,
                                 kReportSchema, kCompareSchema));
  } catch (const InputError& e) {
    throw InputError(fmt::format("report '{}': {}", path, e.what()));
  }
}

std::string report_file_of(const std::string& spec) {
  const auto hash = spec.rfind('#');
  std::error_code ec;
  if (hash == std::string::npos || hash == 0 || fs::exists(spec, ec)) return spec;
  return spec.substr(0, hash);
}

SavedReport load_report_spec(const std::string& spec) {
  const std::string path = report_file_of(spec);
  if (path == spec) return load_saved_report(spec);
  const std::string name = spec.substr(path.size() + 1);
  SavedReport saved = load_saved_report(path);
  const auto* cmp = std::get_if<CompareReport>(&saved);
  if (!cmp) throw InputError(fmt::format("report '{}': a run report has no variants (#{} names one)", path, name));
  std::string ran;
  for (const auto& v : cmp->variants)
    if (v.report) ran += (ran.empty() ? "" : ", ") + v.name;
  const CompareVariant* v = cmp->find(name);
  if (!v) throw InputError(fmt::format("report '{}': no variant '{}' (variants that ran: {})", path, name, ran.empty() ? "none" : ran));
  if (!v->report)
    throw InputError(fmt::format("report '{}': variant '{}' did not run ({}); variants that ran: {}", path, name,
                                 v->reason.empty() ? "unavailable" : v->reason, ran.empty() ? "none" : ran));
  return *v->report;
}

RunReport load_run_report(const std::string& spec) {
  SavedReport saved = load_report_spec(spec);
  if (auto* r = std::get_if<RunReport>(&saved)) return std::move(*r);
  const auto& cmp = std::get<CompareReport>(saved);
  std::string names;
  for (const auto& v : cmp.variants)
    if (v.report) names += (names.empty() ? "" : ", ") + v.name;
  throw InputError(fmt::format("report '{}': a compare report; pick a variant as {}#VARIANT: it holds one run report per "
                               "variant under variants[i].report (variants: {})",
                               spec, spec, names.empty() ? "none ran" : names));
}

// ---------------------------------------------------------------- chunkscope.sweep/1

namespace {

json sweep_opt(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }
json sweep_opt(const std::optional<int>& v) { return v ? json(*v) : json(nullptr); }
json sweep_opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json sweep_opt(const std::optional<bool>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

json to_json(const SweepReport& r) {
  json j;
  j["schema"] = kSweepSchema;
  j["state"] = run_state_name(r.state);
  if (!r.reason.empty()) j["reason"] = r.reason;
  j["workload"] = {{"command", r.command},
                   {"source", r.source},
                   {"chain", r.chain},
                   {"rate", r.rate},
                   {"channels", r.channels},
                   {"dtype", dtype_name(r.dtype)},
                   {"margin", r.margin_text},
                   {"cell_media_seconds", r.cell_media_seconds},
                   {"baseline_ns", r.baseline_ns},
                   {"stagger", r.staggered},
                   {"batch", r.batched},
                   {"run_mode",
                    {{"wait", r.run_mode.wait},
                     {"rt", r.run_mode.rt},
                     {"rt_priority", r.run_mode.rt_priority},
                     {"cpus", r.run_mode.cpus},
                     {"inline", r.run_mode.inline_process}}}};
  j["environment"] = to_json(r.environment);
  j["grid"] = {{"chunks", r.chunks}, {"streams", r.streams}, {"variants", r.variants}};
  j["planned_seconds"] = r.planned_seconds;
  j["wall_seconds"] = r.wall_seconds;
  j["rule"] = r.rule;
  const int cpus = r.environment.host.logical_cpus;
  json cells = json::array();
  for (const auto& c : r.cells) {
    json owners = json::object();
    for (int i = 0; i < kOwnerCount; ++i) owners[owner_key(static_cast<Owner>(i))] = c.stall_owner[static_cast<std::size_t>(i)];
    json e = {{"variant", c.variant},
              {"chunk", c.chunk},
              {"streams", c.streams},
              {"state", sweep_state_name(c.state)},
              {"safe", sweep_opt(c.safe)}};
    if (!c.reason.empty()) e["reason"] = c.reason;
    if (c.state == SweepCell::State::done || c.state == SweepCell::State::interrupted ||
        c.state == SweepCell::State::incomplete) {
      e["chunk_ns"] = c.chunk_ns;
      e["budget_ns"] = c.budget_ns;
      e["headroom_p95_ns"] = sweep_opt(c.headroom_p95_ns);
      e["pooled_headroom_p95_ns"] = sweep_opt(c.pooled_headroom_p95_ns);
      e["latency"] = to_json(c.latency);
      e["process"] = to_json(c.process);
      e["counted"] = c.counted;
      e["misses"] = c.misses;
      e["stall_events"] = c.stalls;
      e["stall_owner"] = owners;
      e["drops"] = c.drops;
      e["worst"] = c.worst;
      e["blame"] = sweep_opt(c.blame);
      e["busy_share"] = sweep_opt(c.busy_share);
      e["engine_cpu_ns"] = c.engine_cpu_ns;
      e["cpu_share"] = sweep_opt(c.cpu_share(cpus));
      e["wall_seconds"] = c.wall_s;
      e["baseline_wake_p99_ns"] = sweep_opt(c.wake_p99_ns);
    }
    cells.push_back(std::move(e));
  }
  j["cells"] = std::move(cells);
  json fr = json::array();
  for (const auto& f : r.frontier) {
    json a = json::array(), b = json::array();
    for (const auto& [n, c] : f.smallest_safe_chunk) a.push_back({{"streams", n}, {"chunk", sweep_opt(c)}});
    for (const auto& [c, n] : f.largest_safe_streams) b.push_back({{"chunk", c}, {"streams", sweep_opt(n)}});
    fr.push_back({{"variant", f.variant}, {"smallest_safe_chunk", a}, {"largest_safe_streams", b}});
  }
  j["frontier"] = std::move(fr);
  return j;
}

}  // namespace chunkscope
