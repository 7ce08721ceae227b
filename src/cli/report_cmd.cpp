#include "src/cli/report_cmd.hpp"

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <sstream>

#include "src/cli/signals.hpp"
#include "src/errors.hpp"
#include "src/render/cadence_report.hpp"
#include "src/io/output_file.hpp"
#include "src/render/html.hpp"
#include "src/report/columns.hpp"
#include "src/report/schema.hpp"
#include "src/report/terminal.hpp"

namespace chunkscope {

namespace fs = std::filesystem;
using nlohmann::json;

int run_report_command(const ReportCmdOptions& o) {
  const SavedReport saved = load_report_spec(o.path);
  const RunReport* run = std::get_if<RunReport>(&saved);
  // check the output place before any work
  if (!o.html.empty()) {
    check_distinct_paths({{"report", report_file_of(o.path)}}, {{"--html", o.html}});
    cli::guard_outputs({{"--html", o.html}});
    check_output_path(o.html, fmt::format("--html '{}'", o.html));
  }
  // render everything first: nothing is printed or written when the report cannot be rendered
  std::ostringstream text;
  std::string html;
  try {
    if (o.text || o.html.empty()) {
      // print_report ends with the diagnosis (an older report got one when it was read)
      if (run)
        print_report(text, *run);
      else
        print_compare(text, std::get<CompareReport>(saved));
    }
    if (!o.html.empty()) html = render_html(saved);
  } catch (const InputError& e) {
    throw InputError(fmt::format("report '{}': {}", o.path, e.what()));
  }
  if (!o.html.empty()) write_text_output(o.html, html, fmt::format("--html '{}'", o.html));
  // on a terminal the text is rendered again, fitted to its width (rendering cannot fail twice)
  if ((o.text || o.html.empty()) && report_width(std::cout) > 0) {
    if (run)
      print_report(std::cout, *run);
    else
      print_compare(std::cout, std::get<CompareReport>(saved));
  } else {
    std::cout << text.str();
  }
  if (!o.html.empty() && o.html != "-") std::cout << fmt::format("html report written to {} ({} KB)\n", o.html, (html.size() + 1023) / 1024);
  return kExitOk;
}

int run_cadence_command(const std::string& path) {
  // a compare report holds one cadence per variant: refused with its variants' names
  const RunReport run = load_run_report(path);
  std::ostringstream text;
  try {
    print_cadence(text, run);
  } catch (const InputError& e) {
    throw InputError(fmt::format("report '{}': {}", path, e.what()));
  }
  std::cout << text.str();
  return kExitOk;
}

}  // namespace chunkscope
