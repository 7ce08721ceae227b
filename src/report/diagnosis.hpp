#pragma once
// Diagnosis: rules over the measured figures of a run report that say what limits the run,
// with the numbers behind each finding, how sure the rule is and the smallest next
// experiment. Not real-time.
//
// Design: every rule reads only what the typed report holds and stays silent when a figure
// it needs is missing (older reports, --speed max runs without deadlines, monitor runs, CPU
// runs without process parts), so a finding always rests on numbers that are in the
// report. It runs once, when the report builder has filled every section (the device
// section of a monitor run included). docs/profiler.md "Diagnosis" lists the rules and
// their thresholds.
#include <ostream>
#include <string>
#include <vector>

#include "src/report/model.hpp"

namespace chunkscope {

/// The findings for a run report, most important first (warnings, then info, then ok).
/// Empty when no rule fires. Not real-time: allocates.
std::vector<Finding> diagnose(const RunReport& run_report);

/// The terminal section: a "diagnosis" header line, then each finding with its evidence
/// and next experiment. Not real-time.
void print_diagnosis(std::ostream& os, const std::vector<Finding>& findings);

/// The command line that would repeat the run a report describes (from its workload;
/// options equal to their defaults are left out), e.g.
/// "chunkscope synth --signal noise --duration 1s --chain 'lp:8000:4'". Not real-time.
std::string rerun_command(const RunReport& run_report);

}  // namespace chunkscope
