// Fuzzes the saved-report reader as the report, cadence, compare and stage-bench commands
// call it: load_saved_report(), load_report_spec() and load_run_report()
// (src/report/schema.cpp), on a file of arbitrary bytes, and what the report commands do
// with a report that reads (print it, render its HTML page, print its cadence).
//
// Contract: any file either reads or throws InputError; nothing else escapes (not a JSON
// library exception either), nothing crashes, hangs or runs into undefined behaviour.
// Invariants of a report that reads:
//  - written back with write_json it reads again and writes the same text, which is what
//    to_json(r).dump(2) holds (report_checks.hpp);
//  - FILE#VARIANT gives each variant of a comparison that ran and refuses those that did
//    not; load_run_report gives a run report and refuses a comparison.
#include <cstdint>
#include <string>
#include <variant>

#include "src/errors.hpp"
#include "src/report/schema.hpp"
#include "tests/fuzz/fuzz_util.hpp"
#include "tests/fuzz/report_checks.hpp"

using namespace chunkscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzzutil::MemFile file;
  file.set(fuzzutil::as_text(data, size));

  SavedReport saved;
  try {
    saved = load_saved_report(file.path());
  } catch (const InputError& e) {
    FUZZ_CHECK(*e.what() != '\0');
    // the other entry points refuse it too
    bool refused = false;
    try {
      (void)load_report_spec(file.path());
    } catch (const InputError&) {
      refused = true;
    }
    FUZZ_CHECK(refused);
    return 0;
  }

  if (const auto* cmp = std::get_if<CompareReport>(&saved)) {
    bool run_refused = false;
    try {
      (void)load_run_report(file.path());
    } catch (const InputError&) {
      run_refused = true;
    }
    FUZZ_CHECK(run_refused);
    for (const auto& v : cmp->variants) {
      if (v.name.find('\0') != std::string::npos) continue;
      const CompareVariant* first = cmp->find(v.name);  // the first of that name is the one picked
      try {
        const SavedReport one = load_report_spec(file.path() + "#" + v.name);
        FUZZ_CHECK(std::holds_alternative<RunReport>(one));
        FUZZ_CHECK(first->report.has_value());
      } catch (const InputError& e) {
        FUZZ_CHECK(!first->report.has_value() || v.name.empty());
      }
    }
  } else {
    (void)load_run_report(file.path());  // a run report reads as one
  }

  fuzzutil::check_round_trip(saved);
  fuzzutil::check_consumers(saved);
  return 0;
}
