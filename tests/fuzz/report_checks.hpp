#pragma once
// The checks both report targets make of a saved report that was read
// (src/report/schema.cpp): what `chunkscope report`, `report --html` and `cadence` do
// with it may refuse it with InputError but not crash, and the report written back as
// JSON reads again and writes the same text (the reader and the writer agree).
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <variant>

#include "src/errors.hpp"
#include "src/render/cadence_report.hpp"
#include "src/render/html.hpp"
#include "src/report/schema.hpp"
#include "src/report/terminal.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace fuzzutil {

template <class Report>
std::string written(const Report& r) {
  std::ostringstream o;
  chunkscope::write_json(o, r);
  return o.str();
}

inline chunkscope::SavedReport read_back(const std::string& text, bool compare) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    broken("a report written back is not JSON: %s", e.what());
  }
  try {
    if (compare) return chunkscope::compare_report_from_json(j);
    return chunkscope::run_report_from_json(j);
  } catch (const chunkscope::InputError& e) {
    broken("a report written back does not read again: %s", e.what());
  }
}

/// The writer and the reader agree: written back, the report reads again and writes the
/// same text; write_json writes what to_json(r).dump(2) holds.
inline void check_round_trip(const chunkscope::SavedReport& saved) {
  std::visit(
      [&](const auto& r) {
        using R = std::decay_t<decltype(r)>;
        constexpr bool compare = std::is_same_v<R, chunkscope::CompareReport>;
        const std::string first = written(r);
        FUZZ_CHECK(first == chunkscope::to_json(r).dump(2));
        const chunkscope::SavedReport again = read_back(first, compare);
        const std::string second = written(std::get<R>(again));
        if (first != second) {
          std::size_t at = 0;
          while (at < first.size() && at < second.size() && first[at] == second[at]) ++at;
          const std::size_t from = at > 200 ? at - 200 : 0;
          broken("a report written back writes other text the second time, at byte %zu:\n--- first\n%s\n--- second\n%s",
                 at, first.substr(from, 400).c_str(), second.substr(from, 400).c_str());
        }
      },
      saved);
}

/// What the report commands do with a report they read: print it, render it as HTML, print
/// its cadence. Each may refuse it with InputError.
inline void check_consumers(const chunkscope::SavedReport& saved) {
  std::ostringstream sink;
  try {
    if (const auto* run = std::get_if<chunkscope::RunReport>(&saved))
      chunkscope::print_report(sink, *run);
    else
      chunkscope::print_compare(sink, std::get<chunkscope::CompareReport>(saved));
  } catch (const chunkscope::InputError&) {
  }
  try {
    (void)chunkscope::render_html(saved);
  } catch (const chunkscope::InputError&) {
  }
  if (const auto* run = std::get_if<chunkscope::RunReport>(&saved)) {
    try {
      chunkscope::print_cadence(sink, *run);
    } catch (const chunkscope::InputError&) {
    }
  }
}

}  // namespace fuzzutil
