#pragma once
#include <algorithm>
// The fields of chunkscope.report/1 and chunkscope.compare/1: one description per struct
// of the model (src/report/model.hpp), read by both the writer and the reader of
// src/report/schema.cpp (see src/report/fields.hpp for how). A key is spelt here and
// nowhere else. Not real-time.
#include "src/report/fields.hpp"
#include "src/report/model.hpp"

namespace chunkscope::fields {

inline constexpr const char* kReportSchemaName = "chunkscope.report/1";
inline constexpr const char* kCompareSchemaName = "chunkscope.compare/1";

/// What an older report's missing text fields read as.
inline const std::string kUnknownText = "?";

// ================================================================ enums

template <>
struct EnumWords<RunState> {
  static constexpr int count = 3;
  static constexpr const char* noun = "";
  static const char* word(RunState s) { return run_state_name(s); }
};
template <>
struct EnumWords<DType> {
  static constexpr int count = 2;
  static constexpr const char* noun = "";
  static const char* word(DType d) { return dtype_name(d); }
};
template <>
struct EnumWords<Stage> {
  static constexpr int count = kStageCount;
  static constexpr const char* noun = "a stage";
  static const char* word(Stage s) { return stage_key(s); }
};
template <>
struct EnumWords<Owner> {
  static constexpr int count = kOwnerCount;
  static constexpr const char* noun = "an owner";
  static const char* word(Owner o) { return owner_key(o); }
};
template <>
struct EnumWords<Cause> {
  static constexpr int count = kCauseCount;
  static constexpr const char* noun = "a cause of latency";
  static const char* word(Cause c) { return cause_key(c); }
};
template <>
struct EnumWords<Finding::Severity> {
  static constexpr int count = 3;
  static constexpr const char* noun = "";
  static const char* word(Finding::Severity s) { return severity_name(s); }
};
template <>
struct EnumWords<Finding::Confidence> {
  static constexpr int count = 3;
  static constexpr const char* noun = "";
  static const char* word(Finding::Confidence c) { return confidence_name(c); }
};
template <>
struct EnumWords<InputDesc::Kind> {
  static constexpr int count = 4;
  static constexpr const char* noun = "";
  static const char* word(InputDesc::Kind k) {
    constexpr const char* words[] = {"", "file", "synth", "device"};
    return words[static_cast<int>(k)];
  }
};
template <>
struct EnumWords<CompareFigure> {
  static constexpr int count = kCompareFigureCount;
  static constexpr const char* noun = "a figure";
  static const char* word(CompareFigure f) { return CompareRound::figure_key(f); }
};
template <>
struct EnumWords<CompareCall::Call> {
  static constexpr int count = 3;
  static constexpr const char* noun = "";
  static const char* word(CompareCall::Call c) { return CompareCall::call_name(c); }
};

inline const char* stage_word(int i) { return stage_key(static_cast<Stage>(i)); }
inline const char* part_word(int i) { return part_key(static_cast<Part>(i)); }

inline constexpr Rules kRequired{.required = true};
inline constexpr Rules kDuration{.duration = true};
inline constexpr Rules kRequiredDuration{.required = true, .duration = true};
/// An optional written as null when empty (readers of the first reports expect the key).
inline constexpr Rules kNullable{.null_when_empty = true};

// ================================================================ codecs

using OwnerCounts = std::array<std::uint64_t, kOwnerCount>;
using Evidence = std::vector<std::pair<std::string, double>>;

/// Counts per owner, as an object keyed by owner.
template <>
struct Codec<OwnerCounts> {
  static json put(const OwnerCounts& a);
  static void get(const Node& n, OwnerCounts& a);
};
/// A finding's evidence: an object of numbers, in name order.
template <>
struct Codec<Evidence> {
  static json put(const Evidence& e);
  static void get(const Node& n, Evidence& e);
};
/// The per-chunk columns: written column by column by the streaming writer.
template <>
struct Codec<Series> {
  static json put(const Series& s);
  static void get(const Node& n, Series& s);
};
/// A variant's spreads, as an object keyed by figure.
template <>
struct Codec<std::vector<CompareSpread>> {
  static json put(const std::vector<CompareSpread>& v);
  static void get(const Node& n, std::vector<CompareSpread>& v);
};

// ================================================================ small blocks

template <>
struct Fields<HistSummary> {
  template <typename IO, typename S>
  static void each(IO& io, S& h) {
    io("count", h.count);
    const bool any = h.count > 0;  // an empty histogram is its count alone
    const Rules first{.required = any, .duration = true, .write = any};
    const Rules later{.duration = true, .write = any};  // absent from the first reports
    io("min", h.min, first);
    io("p50", h.p50, first);
    io("p90", h.p90, later, &h.p50);
    io("p95", h.p95, first);
    io("p99", h.p99, later, &h.p95);
    io("p99_9", h.p99_9, later, &h.p99);
    io("max", h.max, first);
    io("mean", h.mean, {.write = any}, &h.p50);
  }
};

template <>
struct Fields<InputDesc> {
  template <typename IO, typename S>
  static void each(IO& io, S& in) {
    using K = InputDesc::Kind;
    io("kind", in.kind, {.write = in.kind != K::none});
    io("path", in.path, {.write = in.kind == K::file});
    io("signal", in.signal, {.write = in.kind == K::synth});
    io("rate", in.rate, {.write = in.kind == K::synth});
    io("channels", in.channels, {.write = in.kind == K::synth});
    io("frames", in.frames, {.write = in.kind == K::synth});
    io("name", in.device_name, {.write = in.kind == K::device});
    io("host_api", in.host_api, {.write = in.kind == K::device});
  }
};

template <>
struct Fields<Signature> {
  template <typename IO, typename S>
  static void each(IO& io, S& s) {
    io("frames", s.frames);
    io("channels", s.channels);
    io("rate", s.rate);
    io("dtype", s.dtype);
    io("chain", s.chain);
    io("fused", s.fused);
    io("backend", s.backend);
    io("mode", s.mode);
    io("cpu_isa", s.cpu_isa, {.write = !s.cpu_isa.empty()});
    io("cpu_layout", s.cpu_layout, {.write = !s.cpu_layout.empty()});
    io("state_values", s.state_values);
    io("gpu_timing", s.gpu_timing);
    io("short_chunk", s.short_chunk);
  }
};

template <>
struct Fields<RunMode> {
  template <typename IO, typename S>
  static void each(IO& io, S& m) {
    io("wait", m.wait);
    io("rt", m.rt);
    io("rt_priority", m.rt_priority);
    io("cpus", m.cpus);
    io("inline", m.inline_process);
    io("ftz", m.ftz);
  }
  static void after_read(const Node& n, RunMode& m);
};

/// A workload's speed: a number, or "max" for as fast as possible (nullopt); the first
/// reports, without it, ran in real time.
inline const std::optional<double> kRealTimeSpeed = 1.0;
json put_speed(const std::optional<double>& speed);
void get_speed(const Node& n, std::optional<double>& speed);

/// A run's workload; a comparison's (`run` false) holds what its variants share only.
template <typename IO, typename S>
void describe_workload(IO& io, S& w, bool run) {
  const Rules need{.required = run};
  const Rules run_only{.required = run, .write = run};
  io("command", w.command, need);
  io("source", w.source, need);
  io("sink", w.sink, need);
  io("chain", w.chain, need);
  io("fused", w.fused, run_only);
  io("dispatches_per_chunk_planned", w.dispatches_per_chunk_planned, run_only);
  io("backend", w.backend, run_only);
  io("mode", w.mode, run_only);
  io("sections_per_sample", w.sections_per_sample, need);
  io("filter_stages", w.filter_stages);
  io("rate", w.rate, {.required = run, .non_negative = true});
  io("channels", w.channels, need);
  io("chunk_frames", w.chunk_frames, need);
  io("dtype", w.dtype, need);
  io("warmup_chunks", w.warmup_chunks, need);
  io.custom("speed", w.speed, put_speed, get_speed, need, &kRealTimeSpeed);
  io.object("margin", [&](auto& o) {
    o("text", w.margin_text);
    o("ns", w.margin_ns);
  }, need);
  io("queue_depth", w.queue_depth, need);
  io("pool_chunks", w.pool_chunks, need);
  io.derived("short_last_chunk", std::string("passed through"));
  io("media_seconds", w.media_seconds, need);
  io("input", w.input);
  io("run_mode", w.run_mode, {.write = run});
  io("args", w.args, {.write = run && !w.args.empty()});
  // an older signature lacks what the workload says too
  Signature seed;
  seed.frames = w.chunk_frames;
  seed.channels = w.channels;
  seed.rate = w.rate;
  seed.chain = w.chain;
  seed.fused = w.fused;
  seed.backend = w.backend;
  seed.mode = w.mode;
  io("signature", w.signature, {.write = run}, &seed);
  io("variant", w.variant, {.write = run && !w.variant.empty()});
  io("rounds", w.rounds, {.write = run && !w.variant.empty()});
}

template <>
struct Fields<OutputLevels> {
  template <typename IO, typename S>
  static void each(IO& io, S& o) {
    io("path", o.path, kRequired);
    io("integer", o.integer, kRequired);
    io("samples", o.samples, kRequired);
    io("over_full_scale", o.over_full_scale, kRequired);
    io("peak", o.peak, {.required = true, .non_negative = true});
  }
};

template <>
struct Fields<ReportWorkload> {
  template <typename IO, typename S>
  static void each(IO& io, S& w) {
    describe_workload(io, w, true);
  }
  static void after_read(const Node& n, ReportWorkload& w);
};

template <>
struct Fields<GpuEnvironment> {
  template <typename IO, typename S>
  static void each(IO& io, S& g) {
    io("name", g.name, {}, &kUnknownText);
    io("driver", g.driver, {}, &kUnknownText);
    io("compute_capability", g.compute_capability, {}, &kUnknownText);
  }
};

template <>
struct Fields<ReportEnvironment> {
  template <typename IO, typename S>
  static void each(IO& io, S& e) {
    io("version", e.host.version, {}, &kUnknownText);
    io("commit", e.host.commit, {}, &kUnknownText);
    io("cpu", e.host.cpu, {}, &kUnknownText);
    io("os", e.host.os, {}, &kUnknownText);
    io("compiler", e.host.compiler, {}, &kUnknownText);
    io("build", e.host.build, {}, &kUnknownText);
    io("logical_cpus", e.host.logical_cpus);
    io("cuda_built", e.host.cuda_built);
    io("gpu", e.gpu);
  }
};

template <>
struct Fields<Method> {
  template <typename IO, typename S>
  static void each(IO& io, S& m) {
    io("clock", m.clock, kRequired);
    io("percentiles", m.percentiles, kRequired);
    io("relative_error", m.relative_error, kRequired);
    io("latency_from", m.latency_from, kRequired);
    io("blame_from", m.blame_from);
  }
};

template <>
struct Fields<Timing> {
  template <typename IO, typename S>
  static void each(IO& io, S& t) {
    io("chunk_ns", t.chunk_ns, kRequired);
    io("budget_ns", t.budget_ns, kRequired);
    io("paced", t.paced);
  }
};

// ================================================================ counts

template <>
struct Fields<MissRecord> {
  template <typename IO, typename S>
  static void each(IO& io, S& m) {
    io("seq", m.seq);
    io("latency_ns", m.latency_ns);
    io("blame", m.blame);
    io("at_s", m.at_s);
    io("owner", m.owner);
    io("cause", m.cause);
    io("cause_ns", m.cause_ns, {.duration = true, .write = m.cause.has_value()});
    io("step", m.step);  // 1-based
    io("step_ns", m.step_ns, {.duration = true, .write = m.step.has_value()});
    io("preempted_ns", m.preempted_ns, kDuration);
  }
  static void after_read(const Node& n, MissRecord& m);
};

template <>
struct Fields<StallRecord> {
  template <typename IO, typename S>
  static void each(IO& io, S& s) {
    io("first_seq", s.first_seq, kRequired);
    io("last_seq", s.last_seq, kRequired);
    io("chunks", s.chunks, kRequired);
    io("start_s", s.start_s);
    io("length_ns", s.length_ns, kRequiredDuration);
    io("worst_over_ns", s.worst_over_ns, kRequiredDuration);
    io("owner", s.owner, kRequired);
    io("cause", s.cause, kRequired);
    io("cause_ns", s.cause_ns, kRequiredDuration);
  }
};

template <>
struct Fields<Counts> {
  template <typename IO, typename S>
  static void each(IO& io, S& c) {
    io("produced", c.produced, kRequired);
    io("emitted", c.emitted, kRequired);
    io("warmup", c.warmup, kRequired);
    io("counted", c.counted, kRequired);
    io("short", c.short_chunks, kRequired);
    io("frames_emitted", c.frames_emitted, kRequired);
    io("drops", c.drops, kRequired);
    io("drops_pool_empty", c.drops_pool_empty, kRequired);
    io("drops_queue_full", c.drops_queue_full, kRequired);
    io("drop_seqs", c.drop_seqs, kRequired);
    io("drop_seqs_truncated", c.drop_seqs_truncated);
    io("misses", c.misses, kRequired);
    io.keyed("miss_blame", c.miss_blame, stage_word, kRequired);
    io("miss_list", c.miss_list, kRequired);
    io("miss_owner", c.miss_owner);
    io("platform_unexplained", c.platform_unexplained);
    const bool stalls = c.stalls.has_value();  // the stall fields came together
    io("stalls", c.stalls);
    io("stall_owner", c.stall_owner, {.write = stalls});
    io("stall_list", c.stall_list, {.write = stalls});
    io("stall_list_truncated", c.stall_list_truncated, {.write = stalls});
  }
};

// ================================================================ verdict and cadence

template <>
struct Fields<Headroom> {
  template <typename IO, typename S>
  static void each(IO& io, S& h) {
    io("p95", h.p95, kRequired);
    io("p99", h.p99);
    io("max", h.max);
  }
};

template <>
struct Fields<Verdict> {
  template <typename IO, typename S>
  static void each(IO& io, S& v) {
    io("realtime_safe", v.realtime_safe, {.required = true, .null_when_empty = true});  // null: no deadline verdict
    io("needed_chunks", v.needed_chunks, {.write = v.needed_chunks > 0});  // too few chunks to judge
    io("blame", v.blame);
    io("owner", v.owner);
    io("text", v.text, kRequired);
  }
};

template <>
struct Fields<LongestGap> {
  template <typename IO, typename S>
  static void each(IO& io, S& g) {
    io("ns", g.ns, kRequired);
    io("seq", g.seq, kRequired);
    io("at_s", g.at_s, kRequired);
  }
};

template <>
struct Fields<Cadence> {
  template <typename IO, typename S>
  static void each(IO& io, S& c) {
    io("period", c.period, kRequired);
    io("jitter_p95_ns", c.jitter_p95_ns, kNullable);
    io("drift_ppm", c.drift_ppm, {.required = true, .null_when_empty = true});  // null without a schedule
    io("longest_gap", c.longest_gap, kRequired);
    io("period_ratio_p95", c.period_ratio_p95, {.required = true, .old_key = "realtime_factor"});
    const bool steady = c.steady.has_value();  // the dry-spell fields came with it
    io("steady", c.steady);
    io("dry_after_ns", c.dry_after_ns, {.required = steady, .duration = true, .write = steady});
    io("dry_chunks", c.dry_chunks, {.required = steady, .write = steady});
    io("dry_worst_ns", c.dry_worst_ns, {.required = steady, .duration = true, .write = steady});
    io("dry_first_seq", c.dry_first_seq, {.write = steady});
  }
};

template <>
struct Fields<Throughput> {
  template <typename IO, typename S>
  static void each(IO& io, S& t) {
    io("wall_seconds", t.wall_seconds, kRequired);
    io("media_seconds", t.media_seconds, kRequired);
    io("speed_factor", t.speed_factor, kRequired);
    io.derived("realtime_factor", t.speed_factor);  // its first name, for readers of older reports
    io("chunks_per_second", t.chunks_per_second, kRequired);
  }
};

template <>
struct Fields<Queues> {
  template <typename IO, typename S>
  static void each(IO& io, S& q) {
    io("depth", q.depth, kRequired);
    io("in_high_water", q.in_high_water, kRequired);
    io("out_high_water", q.out_high_water, kRequired);
  }
};

template <>
struct Fields<BackendCounters> {
  template <typename IO, typename S>
  static void each(IO& io, S& b) {
    io("chunks", b.chunks);
    io("kernel_launches", b.kernel_launches);
    io("graph_launches", b.graph_launches);
    io("graph_captures", b.graph_captures);
    io("graph_recaptures", b.graph_recaptures);
    io("eager_fallbacks", b.eager_fallbacks);
    io("shape_changes", b.shape_changes);
  }
};

template <>
struct Fields<Checksums> {
  template <typename IO, typename S>
  static void each(IO& io, S& c) {
    io("algorithm", c.algorithm);
    io.derived("chunks", c.input.size());
    io("input", c.input);
    io("output", c.output);
  }
  static void after_read(const Node& n, Checksums& c);
};

// ================================================================ sections

template <>
struct Fields<XrunRecord> {
  template <typename IO, typename S>
  static void each(IO& io, S& x) {
    io("callback", x.callback);
    io("at_s", x.at_s);
    io("flags", x.flags);
  }
};

template <>
struct Fields<DeviceSection> {
  template <typename IO, typename S>
  static void each(IO& io, S& d) {
    static const std::string kNone = "none";
    io("input", d.input);
    io("output", d.output, {}, &kNone);
    io("host_api", d.host_api);
    io("duplex", d.duplex);
    io("latency_chunks", d.latency_chunks);
    io("budget_rule", d.budget_rule);
    io("reported_input_latency_s", d.reported_input_latency_s);
    io("reported_output_latency_s", d.reported_output_latency_s);
    io("stream_rate", d.stream_rate);
    io("callbacks", d.callbacks);
    io("callback_period", d.callback_period);
    io("xruns", d.xruns);
    io("input_overflows", d.input_overflows);
    io("output_underflows", d.output_underflows);
    io("priming", d.priming);
    io("xrun_list", d.xrun_list);
    io("underruns", d.underruns);
    io("late_chunks", d.late_chunks);
    io("underrun_seqs", d.underrun_seqs);
  }
};

template <>
struct Fields<BaselineSummary> {
  template <typename IO, typename S>
  static void each(IO& io, S& b) {
    io("period_ns", b.period_ns, kRequiredDuration);
    io("duration_ns", b.duration_ns, kRequiredDuration);
    io("wake", b.wake, kRequired);
    io("handoff", b.handoff, kRequired);
  }
};

template <>
struct Fields<ThreadRecord> {
  template <typename IO, typename S>
  static void each(IO& io, S& t) {
    io("thread", t.thread, kRequired);
    io("tid", t.tid);
    io("voluntary_switches", t.voluntary, {.non_negative = true});
    io("involuntary_switches", t.involuntary, {.non_negative = true});
    io("cpu_ns", t.cpu_ns, kDuration);
    io("preempted_ns", t.preempted_ns, kDuration);
    io("blocked_ns", t.blocked_ns, kDuration);
  }
};

template <>
struct Fields<MachineLoad> {
  template <typename IO, typename S>
  static void each(IO& io, S& l) {
    io("load1", l.load1);
    io("runnable", l.runnable);
    io("cpus_online", l.cpus_online);
  }
};

template <>
struct Fields<PlatformSection> {
  template <typename IO, typename S>
  static void each(IO& io, S& p) {
    io("baseline_before", p.before);
    io("baseline_after", p.after);
    io("threads", p.threads);
    io("load_before", p.load_before);
    io("load_after", p.load_after);
    io("busy_share", p.busy_share, {.share = true});
    io("steal_share", p.steal_share, {.share = true});
  }
};

template <>
struct Fields<StreamFigures> {
  template <typename IO, typename S>
  static void each(IO& io, S& f) {
    io("stream", f.stream, kRequired);
    io("offset_ns", f.offset_ns, kRequiredDuration);
    io("state", f.state);
    io("counted", f.counted);
    io("misses", f.misses);
    io("stall_events", f.stalls, {}, &f.misses);  // older reports counted misses only
    io("drops", f.drops);
    io("latency", f.latency);
    io("process", f.process);
    io("headroom_p95_ns", f.headroom_p95_ns, kNullable);
    io("realtime_safe", f.realtime_safe, kNullable);
    io("needed_chunks", f.needed_chunks, {.write = f.needed_chunks > 0});
    io("owner", f.owner);
  }
};

template <>
struct Fields<StreamsSection> {
  template <typename IO, typename S>
  static void each(IO& io, S& s) {
    io("count", s.count, kRequired);
    io("stagger", s.staggered);
    io("offset_step_ns", s.offset_step_ns, kRequiredDuration);
    io("mode", s.mode);
    io("per_stream", s.streams, kRequired);
    io("worst", s.worst, kRequired);
    io("blame", s.blame, kNullable);
    io.object("pooled", [&](auto& o) {
      o("counted", s.counted);
      o("misses", s.misses);
      o("stall_events", s.stalls, {}, &s.misses);
      o("drops", s.drops);
      o("latency", s.latency);
      o("process", s.process);
      o("headroom_p95_ns", s.headroom_p95_ns, kNullable);
      o("realtime_safe", s.realtime_safe, kNullable);
      o("needed_chunks", s.needed_chunks, {.write = s.needed_chunks > 0});
    }, kRequired);
  }
  static void after_read(const Node& n, StreamsSection& s);
};

// ================================================================ steps and findings

template <>
struct Fields<StepAudit> {
  template <typename IO, typename S>
  static void each(IO& io, S& a) {
    io("calls", a.calls);
    io("allocations", a.allocations);
    io("frees", a.frees);
    io("blocking_calls", a.blocking_calls);
    io("voluntary_switches", a.voluntary_switches);
    io("nonfinite_samples", a.nonfinite);
    io("subnormal_samples", a.subnormal);
    io("paging_calls", a.paging_calls);
    io("major_faults", a.major_faults);
    io("first_alloc_seq", a.first_alloc);
    io("first_block_seq", a.first_block);
    io("first_nonfinite_seq", a.first_nonfinite);
    io("first_paging_seq", a.first_paging);
    io("allocations_counted", a.allocations_counted);
    io("blocked_ns", a.blocked_ns, kDuration);
    io("preempted_ns", a.preempted_ns, kDuration);
    io("paging_ns", a.paging_ns, kDuration);
    io.derived("realtime_safe", !a.unsafe());
  }
};

template <>
struct Fields<StepRecord> {
  template <typename IO, typename S>
  static void each(IO& io, S& st) {
    io("index", st.index, kRequired);  // 1-based, in plan order
    io("kind", st.kind, kRequired);
    io("label", st.label);
    io("stages", st.stages);
    io("wall", st.wall, kRequired);
    io("cpu", st.cpu);
    io("preempted", st.preempted);
    io("share", st.share);
    io("misses", st.misses);
    io("declared_latency_frames", st.declared_latency_frames, {.write = st.hosted()});
    io("converted_from_f64", st.converted_from_f64, {.write = st.hosted()});
    io("audit", st.audit);
  }
  static void after_read(const Node& n, StepRecord& st);
};

template <>
struct Fields<Finding> {
  template <typename IO, typename S>
  static void each(IO& io, S& f) {
    io("rule", f.rule, {}, &kUnknownText);
    io("severity", f.severity);
    io("finding", f.text);
    io("evidence", f.evidence);
    io("confidence", f.confidence);
    io("next", f.next);
  }
};

// ================================================================ the run report

template <>
struct Fields<StageOffCpu> {
  template <typename IO, typename S>
  static void each(IO& io, S& o) {
    io("preempted", o.preempted, kRequired);
    io("blocked", o.blocked, kRequired);
  }
};

template <>
struct Fields<StuckStep> {
  template <typename IO, typename S>
  static void each(IO& io, S& t) {
    io("step", t.step, kRequired);
    io("label", t.label, kRequired);
    io("call", t.call, kRequired);
    io("chunk", t.chunk);
    io("stuck_ns", t.stuck_ns, kDuration);
    io("timeout_ns", t.timeout_ns, kDuration);
  }
};

// How the command ended: read by the terminal report of the run itself, never written.
template <>
struct Fields<ExitPolicy> {
  template <typename IO, typename S>
  static void each(IO& io, S& e) {
    io("fail_on_miss", e.fail_on_miss, kRequired);
    io("fail_on_unsafe", e.fail_on_unsafe, kRequired);
  }
};

template <>
struct Fields<RunReport> {
  template <typename IO, typename S>
  static void each(IO& io, S& r) {
    io.derived("schema", std::string(kReportSchemaName));
    io("state", r.state);
    io.derived("complete", r.complete());
    io("reason", r.reason, {.write = !r.complete() || !r.reason.empty()});
    io("not_processed", r.not_processed, {.write = r.state == RunState::interrupted || r.not_processed > 0});
    io("workload", r.workload, kRequired);
    io("environment", r.environment, kRequired);
    io("method", r.method, kRequired);
    io("timing", r.timing, kRequired);
    io("counts", r.counts, kRequired);
    io.keyed("stages", r.stages, stage_word, kRequired);
    io.keyed("process_parts", r.process_parts, part_word);
    io.keyed("off_cpu", r.off_cpu, stage_word,
             {.write = std::any_of(r.off_cpu.begin(), r.off_cpu.end(), [](const auto& o) { return o.has_value(); })});
    io.object("source_parts", [&](auto& o) {
      o("wake", r.source_wake, kRequired);
      o("read", r.source_read, kRequired);
    }, {.write = r.source_wake && r.source_read});
    io.object("process_split", [&](auto& o) {
      o("on_cpu", r.process_on_cpu, kRequired);
      o("preempted", r.process_preempted, kRequired);
      o("blocked", r.process_blocked, kRequired);
    }, {.write = r.process_on_cpu && r.process_preempted && r.process_blocked});
    io("latency", r.latency, kRequired);
    io("engine_overhead", r.engine_overhead, kRequired);
    io("warmup", r.warmup, kRequired);
    io("dispatches_per_chunk", r.dispatches_per_chunk, kRequired);
    io("launches_per_chunk", r.launches_per_chunk, kRequired);
    io("headroom", r.headroom);
    io("verdict", r.verdict, kRequired);
    io("cadence", r.cadence, kRequired);
    io("throughput", r.throughput, kRequired);
    io("queues", r.queues, kRequired);
    io("backend_counters", r.backend_counters);
    io("checksums", r.checksums);
    io("series", r.series, {.write = false});  // the streaming writer writes it last, column by column
    io("device", r.device);
    io("platform", r.platform);
    io("output", r.output);
    io("streams", r.streams);
    io.object("steps", [&](auto& o) {
      o("list", r.steps, kRequired);
      o("outside_mean_ns", r.steps_outside_mean_ns, kDuration);
      o("declared_latency_frames", r.declared_latency_frames);
    }, {.write = !r.steps.empty()});
    io("stuck", r.stuck);
    io("diagnosis", r.diagnosis);
    io("exit_policy", r.exit_policy, {.write = false});
  }
  static void after_read(const Node& n, RunReport& r);
};

// ================================================================ the compare report

template <>
struct Fields<CompareVariant> {
  template <typename IO, typename S>
  static void each(IO& io, S& v) {
    io("name", v.name, kRequired);
    io("available", v.available);
    io("reason", v.reason, {.write = !v.available});
    io("report", v.report, {.write = false});  // written by the streaming writer, variant by variant
  }
  static void after_read(const Node& n, CompareVariant& v);
};

template <>
struct Fields<CompareRow> {
  template <typename IO, typename S>
  static void each(IO& io, S& row) {
    io("variant", row.variant, kRequired);
    io("stage", row.stage, kRequired);
    io("p50", row.p50, kRequired);
    io("p95", row.p95, kRequired);
    io("p99", row.p99, kRequired);
    io("ratio_p50", row.ratio_p50, kNullable);
    io("ratio_p95", row.ratio_p95, kNullable);
    io("ratio_p99", row.ratio_p99, kNullable);
  }
};

template <>
struct Fields<CompareSummary> {
  template <typename IO, typename S>
  static void each(IO& io, S& s) {
    constexpr Rules need_or_null{.required = true, .null_when_empty = true};
    io("variant", s.variant, kRequired);
    io("state", s.state, kRequired);
    io("latency_p95_ns", s.latency_p95_ns, need_or_null);
    io("process_p50_ns", s.process_p50_ns, need_or_null);
    io("process_p95_ns", s.process_p95_ns, need_or_null);
    io("headroom_p95_ns", s.headroom_p95_ns, need_or_null);
    io("launches_per_chunk", s.launches_per_chunk, kRequired);
    io("dispatches_per_chunk", s.dispatches_per_chunk, kRequired);
    io("launch_p50_ns", s.launch_p50_ns, need_or_null);
    io("gpu_p50_ns", s.gpu_p50_ns, need_or_null);
    io("misses", s.misses, kRequired);
    io("drops", s.drops, kRequired);
    io("realtime_safe", s.realtime_safe, need_or_null);
    io("counted", s.counted);
    io("needed_chunks", s.needed_chunks, {.write = s.needed_chunks > 0});
    io("ratio_latency_p95", s.ratio_latency_p95, need_or_null);
    io("ratio_process_p50", s.ratio_process_p50, need_or_null);
    io("verdict_events", s.verdict_events, {}, &s.misses);  // older files counted the misses
    io("verdict_events_of", s.verdict_events_of);
    io("owner", s.owner);
  }
};

template <>
struct Fields<CompareRound> {
  template <typename IO, typename S>
  static void each(IO& io, S& rd) {
    io("round", rd.round, kRequired);
    io("position", rd.position);
    io("complete", rd.complete);
    io("counted", rd.counted, kRequired);
    constexpr Rules time{.duration = true, .null_when_empty = true};
    io("latency_p50_ns", rd.latency_p50_ns, time);
    io("latency_p95_ns", rd.latency_p95_ns, time);
    io("process_p50_ns", rd.process_p50_ns, time);
    io("process_p95_ns", rd.process_p95_ns, time);
    io("misses", rd.misses, kRequired);
    io("drops", rd.drops, kRequired);
  }
};

template <>
struct Fields<CompareRounds> {
  template <typename IO, typename S>
  static void each(IO& io, S& v) {
    io("variant", v.variant, kRequired);
    io("rounds", v.rounds, kRequired);
    io("spread", v.spread);
  }
};

template <>
struct Fields<CompareCall> {
  template <typename IO, typename S>
  static void each(IO& io, S& c) {
    io("variant", c.variant, kRequired);
    io("figure", c.figure, kRequired);
    io("call", c.call, kRequired);
    io("reason", c.reason);
    io("rounds", c.rounds);
    io("baseline_rounds", c.baseline_rounds);
    io("ranges_overlap", c.ranges_overlap);
    io("higher", c.higher);
    io("ratio_of_medians", c.ratio_of_medians, kNullable);
    io("interval_low", c.interval_low, kNullable);
    io("interval_high", c.interval_high, kNullable);
  }
};

template <>
struct Fields<CompareRule> {
  template <typename IO, typename S>
  static void each(IO& io, S& r) {
    io("min_rounds", r.min_rounds);
    io("resamples", r.resamples);
    io("confidence", r.confidence);
    io("seed", r.seed);
  }
  static void after_read(const Node& n, CompareRule& r);
};

/// How the rounds were ordered, in words (the first files held no words: ignored).
void get_order(const Node& n, std::string& order);

template <>
struct Fields<CompareReport> {
  template <typename IO, typename S>
  static void each(IO& io, S& c) {
    io.derived("schema", std::string(kCompareSchemaName));
    io("rounds", c.rounds);
    io("rounds_completed", c.rounds_completed, {}, &c.rounds);
    io.custom("order", c.order, [](const std::string& o) { return json(o); }, get_order);
    io("state", c.state);
    io("variants", c.variants, kRequired);
    io("baseline", c.baseline);
    // a comparison's own sections summarise its variants' reports: only the variants are
    // required (a document cut down to them still renders and benches)
    io("environment", c.environment);
    io.object("workload", [&](auto& o) { describe_workload(o, c.workload, false); });
    io("timing", c.timing);
    io("table", c.table);
    io("summary", c.summary);
    // across rounds: later than the first compare files (older files keep the defaults)
    io("per_round", c.per_round);
    io("differences", c.differences);
    io("difference_rule", c.rule);
  }
};

}  // namespace chunkscope::fields
