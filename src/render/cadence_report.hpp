#pragma once
// The cadence report of a run on its own: the output period's distribution as a text
// histogram, jitter, drift, the longest gaps, late outputs and a verdict against D and the
// margin; for a monitor run, the device's callback period too. Not real-time.
#include <ostream>

#include "src/report/model.hpp"

namespace chunkscope {

/// Prints the cadence report of a run. A run with fewer than two counted chunks has no
/// period and says so; a report without a per-chunk series gets the summary figures and
/// says what needs the series. (A comparison holds one cadence per variant: the caller
/// picks one variant's report.) Not real-time: allocates.
void print_cadence(std::ostream& os, const RunReport& run_report);

}  // namespace chunkscope
