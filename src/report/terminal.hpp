#pragma once
// The terminal writers of the typed reports: a run's table and headline, a comparison's
// side-by-side table. Not real-time.
#include <ostream>

#include "src/report/model.hpp"

namespace chunkscope {

/// The terminal report of a run: header, stage table, headline, figures, diagnosis.
void print_report(std::ostream& os, const RunReport& r);

/// The side-by-side table of a comparison, then each variant's warnings.
void print_compare(std::ostream& os, const CompareReport& r);

/// True when --fail-on-miss should fail the run: negative p95 headroom, misses, drops, or
/// (device runs) xruns or underruns.
bool budget_broken(const RunReport& r);

}  // namespace chunkscope
