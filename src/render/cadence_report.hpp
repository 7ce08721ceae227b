#pragma once
// The cadence report of a run on its own: the output period's distribution as a text
// histogram, jitter, drift, the longest gaps, late outputs and a verdict against D and the
// margin; for a monitor run, the device's callback period too. Not real-time.
#include <nlohmann/json.hpp>
#include <ostream>

namespace chunkscope {

/// Prints the cadence report of a run report (chunkscope.report/1). Throws InputError when
/// the document holds no cadence data (a compare report: pick one variant's report).
/// Not RT safe: allocates.
void print_cadence(std::ostream& os, const nlohmann::json& run_report);

}  // namespace chunkscope
