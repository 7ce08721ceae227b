#pragma once
// `chunkscope report` and `chunkscope cadence`: render a saved report again (terminal text,
// a self-contained HTML page, the cadence report). Not real-time.
#include <nlohmann/json.hpp>
#include <string>

namespace chunkscope {

struct ReportCmdOptions {
  std::string path;  // the saved report (chunkscope.report/1 or chunkscope.compare/1), or COMPARE.json#VARIANT
  std::string html;  // write the HTML page here ("" = none)
  bool text = false; // print the terminal report (also when no --html is given)
};

/// `chunkscope report RUN.json [--html FILE] [--text]`. Returns the exit code; throws
/// InputError / RuntimeFailure. Nothing is printed or written when the report cannot be
/// rendered; the HTML is written through an OutputTarget (a temporary file renamed into
/// place; a device, FIFO or "-" directly).
int run_report_command(const ReportCmdOptions& o);

/// `chunkscope cadence RUN.json` (or COMPARE.json#VARIANT). Returns the exit code; throws InputError.
int run_cadence_command(const std::string& path);

}  // namespace chunkscope
