#pragma once
// Diagnosis: rules over the measured figures of a run report (chunkscope.report/1) that
// say what limits the run, with the numbers behind each finding, how sure the rule is and
// the smallest next experiment. Not real-time.
//
// Design: every rule reads only what the report holds and stays silent when a figure it
// needs is missing (older reports, --speed max runs without deadlines, monitor runs, CPU
// runs without process parts), so a finding always rests on numbers that are in the
// report. docs/profiler.md "Diagnosis" lists the rules and their thresholds.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace chunkscope {

/// The findings for a run report: a JSON array of objects
/// {"rule", "severity" ("warning" | "info" | "ok"), "finding", "evidence" {name: number},
///  "confidence" ("high" | "medium" | "low"), "next"}, most important first. Empty when no
/// rule fires. Not RT safe: allocates.
nlohmann::json diagnose(const nlohmann::json& run_report);

/// The terminal section: a "diagnosis" header line, then each finding with its evidence
/// and next experiment. Not RT safe.
void print_diagnosis(std::ostream& os, const nlohmann::json& findings);

/// The command line that would repeat the run a report describes (best effort, from its
/// workload), e.g. "chunkscope synth --signal noise --duration 1s --chain 'lp:8000:4'".
/// Not RT safe.
std::string rerun_command(const nlohmann::json& run_report);

}  // namespace chunkscope
