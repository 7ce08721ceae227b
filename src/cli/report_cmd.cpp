#include "src/cli/report_cmd.hpp"

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <sstream>

#include "src/report/diagnosis.hpp"
#include "src/errors.hpp"
#include "src/render/cadence_report.hpp"
#include "src/render/html.hpp"
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
    const fs::path p(o.html);
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw InputError(fmt::format("--html '{}': folder '{}' does not exist", o.html, dir.string()));
    if (fs::is_directory(p, ec)) throw InputError(fmt::format("--html '{}': is a folder", o.html));
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
  } catch (const json::exception& e) {
    throw InputError(fmt::format("report '{}': a key is missing or has the wrong type ({})", o.path, e.what()));
  }
  if (!o.html.empty()) {
    const std::string tmp = o.html + ".partial";
    {
      std::ofstream out(tmp, std::ios::binary);
      if (!out) throw InputError(fmt::format("--html '{}': cannot write", o.html));
      out << html;
      if (!out) {
        out.close();
        std::remove(tmp.c_str());
        throw RuntimeFailure(fmt::format("--html '{}': write failed", o.html));
      }
    }
    if (std::rename(tmp.c_str(), o.html.c_str()) != 0) {
      std::remove(tmp.c_str());
      throw RuntimeFailure(fmt::format("--html '{}': cannot move into place", o.html));
    }
  }
  std::cout << text.str();
  if (!o.html.empty()) std::cout << fmt::format("html report written to {} ({} KB)\n", o.html, (html.size() + 1023) / 1024);
  return kExitOk;
}

int run_cadence_command(const std::string& path) {
  const SavedReport saved = load_report_spec(path);
  const RunReport* run = std::get_if<RunReport>(&saved);
  if (!run)
    throw InputError(fmt::format("report '{}': a compare report has no single cadence; name one variant as {}#VARIANT", path,
                                 path));
  std::ostringstream text;
  try {
    print_cadence(text, *run);
  } catch (const InputError& e) {
    throw InputError(fmt::format("report '{}': {}", path, e.what()));
  } catch (const json::exception& e) {
    throw InputError(fmt::format("report '{}': a key is missing or has the wrong type ({})", path, e.what()));
  }
  std::cout << text.str();
  return kExitOk;
}

}  // namespace chunkscope
