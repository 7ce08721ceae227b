#include "src/render/sections.hpp"

#include <fmt/format.h>

#include <cmath>

#include "src/render/plot.hpp"
#include "src/report/format.hpp"

namespace chunkscope::render {

RunTiming timing_of(const RunReport& r) {
  RunTiming t;
  t.D = static_cast<double>(r.timing.chunk_ns);
  t.B = static_cast<double>(r.timing.budget_ns);
  t.m = r.workload.margin_ns > 0 ? static_cast<double>(r.workload.margin_ns) : t.D - t.B;
  t.paced = r.timing.paced;
  return t;
}

std::string verdict_box(const RunReport& r) {
  const auto& safe = r.verdict.realtime_safe;
  const char* cls = safe ? (*safe ? "ok" : "bad") : "none";
  std::string s = fmt::format("<div class=\"verdict {}\"><b>Verdict:</b> {}</div>", cls,
                              esc(r.verdict.text.empty() ? "no verdict in this report" : r.verdict.text));
  if (!r.complete())
    s += fmt::format("<p class=\"note\">Run {}: {}</p>", run_state_name(r.state), esc(r.reason.empty() ? "-" : r.reason));
  return s;
}

std::string headroom_line(const RunReport& r) {
  if (!r.headroom) return "";
  return fmt::format("<p>Headroom B − L: p95 {}, p99 {}, max {}.</p>", ft(static_cast<double>(r.headroom->p95)),
                     ft(static_cast<double>(r.headroom->p99)), ft(static_cast<double>(r.headroom->max)));
}

namespace {

std::string g(double v) { return fmt::format("{:g}", v); }

std::vector<std::pair<std::string, std::string>> workload_rows(const RunReport& r) {
  const ReportWorkload& w = r.workload;
  const RunTiming t = timing_of(r);
  const Counts& k = r.counts;
  return {
      {"command", esc(w.command)},
      {"source → sink", esc(w.source) + " → " + esc(w.sink)},
      {"chain", "<code>" + esc(w.chain) + "</code>"},
      {"backend", fmt::format("{} ({}), {}, {} dispatch(es) per chunk planned, {} sections per sample", esc(w.backend),
                              esc(w.mode), dtype_name(w.dtype), w.dispatches_per_chunk_planned, w.sections_per_sample)},
      {"stream", fmt::format("{} Hz, {} ch, chunk {} frames", g(w.rate), w.channels, w.chunk_frames)},
      {"timing", fmt::format("D {}, margin {} = {}, budget B {}, {}", ft(t.D), esc(w.margin_text.empty() ? "-" : w.margin_text),
                             ft(t.m), ft(t.B), t.paced ? "paced (absolute schedule)" : "--speed max (no schedule)")},
      {"run", fmt::format("speed {}, warm-up {} chunks, queue depth {}, media {} s", w.speed ? g(*w.speed) : "max",
                          w.warmup_chunks, w.queue_depth, g(w.media_seconds))},
      {"chunks", fmt::format("{} produced, {} emitted, {} counted, {} warm-up, {} dropped, {} missed", k.produced, k.emitted,
                             k.counted, k.warmup, k.drops, k.misses)},
      {"measured", fmt::format("{} dispatches and {} launches per chunk", g(r.dispatches_per_chunk), g(r.launches_per_chunk))},
  };
}

std::vector<std::pair<std::string, std::string>> environment_rows(const RunReport& r) {
  const Environment& e = r.environment.host;
  const auto& gpu = r.environment.gpu;
  return {
      {"chunkscope", esc(e.version) + " (" + esc(e.commit) + ")"},
      {"cpu", fmt::format("{}, {} logical CPUs", esc(e.cpu), e.logical_cpus)},
      {"os", esc(e.os)},
      {"build", esc(e.compiler) + ", " + esc(e.build) + ", CUDA built: " + (e.cuda_built ? "yes" : "no")},
      {"gpu",
       gpu ? fmt::format("{}, driver {}, compute capability {}", esc(gpu->name), esc(gpu->driver), esc(gpu->compute_capability))
           : std::string("-")},
      {"method",
       fmt::format("{}; {}; latency from {}", esc(r.method.clock), esc(r.method.percentiles), esc(r.method.latency_from))},
  };
}

std::string hist_row(const std::string& name, const HistSummary& h) {
  std::string s = "<tr><td>" + esc(name) + "</td>";
  if (!h.has_data()) return s + "<td class=\"n\">0</td><td colspan=\"8\">-</td></tr>";
  s += fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td>", h.count, ft(static_cast<double>(h.min)));
  for (int i = 0; i < kPctCount; ++i) s += "<td class=\"n\">" + ft(static_cast<double>(at(h, static_cast<Pct>(i)))) + "</td>";
  return s + fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>", ft(static_cast<double>(h.max)), ft(h.mean));
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}
bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

std::string plain_number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 1000) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3g}", v);
}

}  // namespace

std::string workload_section(const RunReport& r) {
  return "<h2>Workload</h2>" + kv_table(workload_rows(r)) + "<h2>Environment and method</h2>" + kv_table(environment_rows(r));
}

std::string stage_table(const RunReport& r) {
  std::string s = "<table><tr><th>stage</th><th class=\"n\">count</th><th class=\"n\">min</th>";
  for (int i = 0; i < kPctCount; ++i) s += fmt::format("<th class=\"n\">{}</th>", pct_label(static_cast<Pct>(i)));
  s += "<th class=\"n\">max</th><th class=\"n\">mean</th></tr>";
  for (int i = 0; i < kStageCount; ++i) s += hist_row(stage_key(static_cast<Stage>(i)), r.stage(static_cast<Stage>(i)));
  for (int i = 0; i < kPartCount; ++i)
    if (const auto& h = r.part(static_cast<Part>(i))) s += hist_row(std::string("  ") + part_key(static_cast<Part>(i)), *h);
  s += hist_row("end-to-end", r.latency);
  s += hist_row("overhead", r.engine_overhead);
  s += hist_row("period", r.cadence.period);
  s += "</table>";
  const std::uint64_t counted = r.counts.counted;
  if (counted > 0 && counted < 100)
    s += fmt::format("<p class=\"note\">Only {} counted chunks: p99 and p99.9 rest on fewer than 100 samples.</p>", counted);
  return s;
}

std::string evidence_value(const std::string& name, double v) {
  if (ends_with(name, "_ns")) return fmt_time(v);
  if (contains(name, "share") || name == "duty_cycle") {
    const double pct = v * 100;
    return std::fabs(pct) >= 10 || pct == 0 ? fmt::format("{:.1f}%", pct) : fmt::format("{:.3g}%", pct);
  }
  if (ends_with(name, "_ppm")) return fmt::format("{:+.1f} ppm", v);
  if (contains(name, "seconds")) return fmt::format("{:.3f} s", v);
  if (contains(name, "_over_") || contains(name, "factor") || contains(name, "ratio")) return fmt::format("{:.2f}×", v);
  return plain_number(v);
}

std::string diagnosis_section(const std::vector<Finding>& findings) {
  std::string s = "<h2>Diagnosis</h2>";
  if (findings.empty()) return s + "<p>No rule fired: nothing in the measured figures points at a limit.</p>";
  for (const auto& f : findings) {
    const char* sev = severity_name(f.severity);
    s += fmt::format("<div class=\"finding {}\"><b>{}</b><span class=\"conf\">{} · confidence {}</span><p>{}</p>", sev,
                     esc(f.rule), sev, confidence_name(f.confidence), esc(f.text));
    if (!f.evidence.empty()) {
      s += "<table class=\"evidence\">";
      for (const auto& [k, v] : f.evidence)
        s += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td></tr>", esc(k), esc(evidence_value(k, v)));
      s += "</table>";
    }
    s += fmt::format("<p>Next: {}</p></div>", esc(f.next.empty() ? "-" : f.next));
  }
  return s;
}

}  // namespace chunkscope::render
