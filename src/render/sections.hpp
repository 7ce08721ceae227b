#pragma once
// The parts of a page that the run page and the compare page share: the verdict box, the
// headroom, the workload and environment tables, the stage table and the diagnosis.
// Each returns HTML, with every text from the report escaped. Not real-time.
#include <string>
#include <vector>

#include "src/report/model.hpp"

namespace chunkscope::render {

/// D, B and the margin of a run in ns, and whether it ran on a schedule.
struct RunTiming {
  double D = 0, B = 0, m = 0;
  bool paced = false;
  bool has_budget() const { return paced && B > 0; }
};
RunTiming timing_of(const RunReport& r);

/// The verdict (green: real-time safe, red: not, grey: no deadline verdict), and a note
/// when the run did not complete.
std::string verdict_box(const RunReport& r);
/// "Headroom B − L: p95 ..., p99 ..., max ..." or "" when the report has none.
std::string headroom_line(const RunReport& r);
/// The workload, environment and method tables under their headings.
std::string workload_section(const RunReport& r);
/// The platform baseline's table (before and after: wake-up lateness and hand-off round
/// trip, with p99 against `margin` ns); "" without a baseline.
std::string baseline_table(const PlatformSection& p, double margin);
/// Count, min, percentiles, max and mean of every stage, part, the end-to-end latency,
/// the engine overhead and the output period.
std::string stage_table(const RunReport& r);
/// The planned steps inside process: share, wall and CPU time, misses, the hosted steps'
/// audit ("" without step rows).
std::string steps_section(const RunReport& r);
/// The platform baseline, the machine's load and the engine threads' context switches ("" without).
std::string platform_section(const RunReport& r);
/// A run of several streams: each stream's figures, the pooled row, the worst stream and
/// the stream to blame ("" without).
std::string streams_section(const RunReport& r);
/// The stall events with their chunks, owner and cause ("" without).
std::string stalls_section(const RunReport& r);
/// Escaped text whose `command` spans become <code> elements (a lone backtick stays as it is).
std::string with_code_spans(const std::string& text);
/// Each finding with its severity, confidence, evidence table and next experiment.
std::string diagnosis_section(const std::vector<Finding>& findings);

/// An evidence value in the unit its name gives: *_ns a time (fmt_time), *_share and
/// duty_cycle a percentage, *_ppm parts per million, *seconds* seconds, ratios
/// (*_over_*, *factor*, *ratio*) with a ×, anything else a plain number (integers
/// without a fraction or an exponent).
std::string evidence_value(const std::string& name, double v);

}  // namespace chunkscope::render
