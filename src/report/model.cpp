#include "src/report/model.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "src/report/format.hpp"

namespace chunkscope {

double pct_value(Pct p) noexcept {
  switch (p) {
    case Pct::p50: return 50;
    case Pct::p90: return 90;
    case Pct::p95: return 95;
    case Pct::p99: return 99;
    case Pct::p99_9: return 99.9;
    case Pct::count: break;
  }
  return 50;
}

const char* pct_label(Pct p) noexcept {
  switch (p) {
    case Pct::p50: return "p50";
    case Pct::p90: return "p90";
    case Pct::p95: return "p95";
    case Pct::p99: return "p99";
    case Pct::p99_9: return "p99.9";
    case Pct::count: break;
  }
  return "?";
}

std::int64_t at(const HistSummary& h, Pct p) noexcept {
  switch (p) {
    case Pct::p50: return h.p50;
    case Pct::p90: return h.p90;
    case Pct::p95: return h.p95;
    case Pct::p99: return h.p99;
    case Pct::p99_9: return h.p99_9;
    case Pct::count: break;
  }
  return h.p50;
}

const char* run_state_name(RunState s) noexcept {
  switch (s) {
    case RunState::complete: return "complete";
    case RunState::interrupted: return "interrupted";
    case RunState::incomplete: return "incomplete";
  }
  return "?";
}

namespace {
const char* cause_words(Cause c) noexcept {
  switch (c) {
    case Cause::source_wake: return "the source woke up {} late";
    case Cause::source_read: return "the source's read took {}";
    case Cause::processor_busy: return "chunks waited {} for a processor busy with earlier chunks";
    case Cause::handoff_in: return "the hand-off to the processor took {}";
    case Cause::process: return "processing took {}";
    case Cause::process_descheduled: return "the processing thread was off the CPU for {}";
    case Cause::sink_busy: return "chunks waited {} for a sink busy with earlier chunks";
    case Cause::handoff_out: return "the hand-off to the sink took {}";
    case Cause::sink_write: return "the sink's write took {}";
    case Cause::count: break;
  }
  return "{}";
}
}  // namespace

std::string describe_cause(Cause c, std::int64_t ns) {
  return fmt::format(fmt::runtime(cause_words(c)), fmt_time(static_cast<double>(ns)));
}

const char* compare_figure_label(CompareFigure f) noexcept {
  switch (f) {
    case CompareFigure::latency_p50: return "e2e p50";
    case CompareFigure::latency_p95: return "e2e p95";
    case CompareFigure::process_p50: return "process p50";
    case CompareFigure::process_p95: return "process p95";
    case CompareFigure::misses: return "misses";
    case CompareFigure::drops: return "drops";
    case CompareFigure::count: break;
  }
  return "?";
}

const char* severity_name(Finding::Severity s) noexcept {
  switch (s) {
    case Finding::Severity::warning: return "warning";
    case Finding::Severity::info: return "info";
    case Finding::Severity::ok: return "ok";
  }
  return "?";
}

const char* confidence_name(Finding::Confidence c) noexcept {
  switch (c) {
    case Finding::Confidence::high: return "high";
    case Finding::Confidence::medium: return "medium";
    case Finding::Confidence::low: return "low";
  }
  return "?";
}

namespace {
std::optional<std::int64_t> larger_p99(const std::optional<BaselineSummary>& a, const std::optional<BaselineSummary>& b,
                                       HistSummary BaselineSummary::*h) {
  std::optional<std::int64_t> v;
  for (const auto* s : {&a, &b})
    if (*s && ((**s).*h).has_data()) v = std::max(v.value_or(0), ((**s).*h).p99);
  return v;
}
}  // namespace

std::optional<std::int64_t> PlatformSection::wake_p99() const noexcept {
  return larger_p99(before, after, &BaselineSummary::wake);
}
std::optional<std::int64_t> PlatformSection::handoff_p99() const noexcept {
  return larger_p99(before, after, &BaselineSummary::handoff);
}

std::string StreamsSection::schedule_words(bool paced) const {
  if (!paced) return "unpaced (--speed max): no schedules";
  return staggered ? fmt::format("schedules staggered by {}", fmt_time(static_cast<double>(offset_step_ns)))
                   : std::string("schedules aligned (--stagger off)");
}

const char* verdict_word(const std::optional<bool>& safe, std::uint64_t needed) noexcept {
  if (safe) return *safe ? "safe" : "NOT safe";
  return needed > 0 ? "cannot judge" : "-";
}

std::string cannot_judge_words(std::uint64_t counted, std::uint64_t needed) {
  return fmt::format("cannot judge ({} chunks, need {})", counted, needed);
}

std::string RunReport::after_latency_note() const {
  if (!stage_after_latency(Stage::wait_out)) return "";
  return fmt::format("* after L: full duplex, L ends when the chunk is ready to play; queue_out is its wait for the "
                     "output callback {} callback(s) after its input (the chosen pipeline depth), sink that callback's copy",
                     device->latency_chunks);
}

std::string CompareSummary::verdict_words() const {
  if (!realtime_safe && needed_chunks > 0) return cannot_judge_words(counted, needed_chunks);
  if (!realtime_safe) return "throughput only";
  if (*realtime_safe) return "real-time safe";
  std::string s = "NOT safe";
  if (verdict_events > 0) {
    s += " (" + std::to_string(verdict_events) + " " + verdict_events_of;
    if (owner) s += std::string(", ") + owner_key(*owner);
    s += ")";
  }
  return s;
}

std::string CompareCall::word() const {
  if (call != Call::difference) return call_name(call);
  if (CompareRound::figure_is_time(figure)) return higher ? "slower" : "faster";
  return higher ? "more" : "fewer";
}

const CompareCall* CompareReport::call_of(const std::string& variant, CompareFigure f) const noexcept {
  for (const auto& d : differences)
    if (d.variant == variant && d.figure == f) return &d;
  return nullptr;
}

const CompareVariant* CompareReport::find(const std::string& name) const noexcept {
  for (const auto& v : variants)
    if (v.name == name) return &v;
  return nullptr;
}

double OutputLevels::peak_dbfs() const {
  return peak > 0 ? 20.0 * std::log10(peak) : -std::numeric_limits<double>::infinity();
}

std::string cpu_kernels_text(const ReportWorkload& w) {
  if (!w.signature || w.signature->cpu_isa.empty()) return "";
  return ", " + w.signature->cpu_isa + (w.signature->cpu_layout.empty() ? "" : " " + w.signature->cpu_layout) +
         " kernels";
}

}  // namespace chunkscope
