#pragma once
// The JSON schemas of saved reports, chunkscope.report/1 and chunkscope.compare/1: the
// typed model (src/report/model.hpp) is written to JSON and read back here, both through
// the one description of each struct in src/report/schema_fields.hpp (the only place a
// key is spelt). Reading is tolerant of what older reports lack (a missing
// optional field keeps its default) and strict about what is there: a missing required
// section or a value of the wrong type or out of range is refused with one line naming
// the field. Not real-time.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <variant>

#include "src/report/model.hpp"

namespace chunkscope {

inline constexpr const char* kReportSchema = "chunkscope.report/1";
inline constexpr const char* kCompareSchema = "chunkscope.compare/1";

nlohmann::json to_json(const HistSummary& h);
nlohmann::json to_json(const std::vector<Finding>& findings);
nlohmann::json to_json(const Signature& s);
/// The whole document as a json value: for tests and for readers that embed it. A long
/// run's series makes this large (millions of nodes); files are written with write_json.
nlohmann::json to_json(const RunReport& r);
/// The environment block every report opens with (also the sweep's).
nlohmann::json to_json(const ReportEnvironment& e);
nlohmann::json to_json(const CompareReport& r);

/// Writes the document to `o` as it is built, without holding it: the same text as
/// to_json(r).dump(2) (keys in alphabetical order, two-space indent, no final newline),
/// with the series columns written number by number and, for a comparison, each variant's
/// run report in turn. Memory beyond `r` does not grow with the number of chunks.
void write_json(std::ostream& o, const RunReport& r);
void write_json(std::ostream& o, const CompareReport& r);
/// write_json and a final newline into `path` through an OutputTarget (a regular file is
/// written beside it and renamed into place). `label` names the output in errors
/// ("--json 'r.json'"). Throws InputError / RuntimeFailure.
void write_report_file(const std::string& path, const RunReport& r, const std::string& label);
void write_report_file(const std::string& path, const CompareReport& r, const std::string& label);

/// A run report from its JSON. Throws InputError "field 'a.b': what is wrong" for a
/// missing required field or a mistyped value. An older report without a diagnosis gets
/// one now (diagnose() over what it holds).
RunReport run_report_from_json(const nlohmann::json& j);
/// A compare report from its JSON; each variant's report is read as a run report (field
/// names in errors start with "variants[i].report."). Throws InputError.
CompareReport compare_report_from_json(const nlohmann::json& j);

using SavedReport = std::variant<RunReport, CompareReport>;

/// A saved report of either schema. Throws InputError (exit 2) with one line naming the
/// file: missing, a folder, too large, empty, not JSON, truncated JSON, larger than kReportFileLimit (src/io/input_file.hpp), a document that is
/// not a chunkscope report (naming the schema found), or a field that is missing or
/// mistyped.
SavedReport load_saved_report(const std::string& path);

/// What `spec` names: FILE (a run or a compare report), or COMPARE.json#VARIANT (that
/// variant's run report). Throws InputError naming the file, and the variant when it is
/// not in the comparison or did not run (listing those that did).
SavedReport load_report_spec(const std::string& spec);

/// The file a report spec reads: FILE itself, or COMPARE.json for COMPARE.json#VARIANT (a
/// file whose name holds '#' is taken whole when it exists).
std::string report_file_of(const std::string& spec);

/// The run report `spec` names (FILE or COMPARE.json#VARIANT). A compare report without a
/// variant is refused with the list of its variants. Throws InputError.
RunReport load_run_report(const std::string& spec);

}  // namespace chunkscope
