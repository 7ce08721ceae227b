#include "src/cli/report_cmd.hpp"

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <sstream>

#include "src/cli/compare_cmd.hpp"
#include "src/report/diagnosis.hpp"
#include "src/errors.hpp"
#include "src/io/input_file.hpp"
#include "src/io/output_file.hpp"
#include "src/render/cadence_report.hpp"
#include "src/render/html.hpp"
#include "src/report/report.hpp"

namespace chunkscope {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Sections print_report reads from every run report.
constexpr const char* kRunSections[] = {"workload", "environment", "method",  "timing",          "counts",
                                        "stages",   "latency",     "verdict", "cadence",         "throughput",
                                        "queues",   "engine_overhead"};

std::string schema_hint() { return "expected chunkscope.report/1 or chunkscope.compare/1"; }

}  // namespace

json load_report_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(fmt::format("report '{}': no such file", path));
  if (fs::is_directory(path, ec)) throw InputError(fmt::format("report '{}': is a folder, not a report file", path));
  const std::string text = read_text_file_bounded(path, kReportFileLimit, fmt::format("report '{}'", path));
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(fmt::format("report '{}': empty file, not JSON", path));
  json r;
  try {
    r = json::parse(text);
  } catch (const json::parse_error& e) {
    if (e.byte >= text.size())
      throw InputError(fmt::format("report '{}': truncated JSON (the document ends unfinished after {} bytes)", path,
                                   text.size()));
    throw InputError(fmt::format("report '{}': not JSON (parse error at byte {})", path, e.byte));
  } catch (const json::exception& e) {  // a number beyond double range (1e400)
    throw InputError(fmt::format("report '{}': not readable JSON ({})", path, e.what()));
  }
  if (!r.is_object())
    throw InputError(fmt::format("report '{}': JSON but not a chunkscope report (a top-level {}, not an object)", path,
                                 r.type_name()));
  const auto it = r.find("schema");
  if (it == r.end()) throw InputError(fmt::format("report '{}': JSON but not a chunkscope report (no \"schema\" key; {})", path, schema_hint()));
  const std::string schema = it->is_string() ? it->get<std::string>() : it->dump();
  if (schema == kReportSchema) {
    for (const char* s : kRunSections)
      if (!r.contains(s) || !r[s].is_object())
        throw InputError(fmt::format("report '{}': {} without its \"{}\" section (damaged or cut short)", path, schema, s));
    return r;
  }
  if (schema == kCompareSchema) {
    if (!r.contains("variants") || !r["variants"].is_array())
      throw InputError(fmt::format("report '{}': {} without its \"variants\" array (damaged or cut short)", path, schema));
    return r;
  }
  throw InputError(fmt::format("report '{}': JSON but not a chunkscope report (schema '{}'; {})", path, schema, schema_hint()));
}

int run_report_command(const ReportCmdOptions& o) {
  const json r = load_report_file(o.path);
  const bool run = r["schema"] == kReportSchema;
  // check the output place before any work
  if (!o.html.empty()) {
    check_distinct_paths({{"report", o.path}}, {{"--html", o.html}});
    check_output_path(o.html, fmt::format("--html '{}'", o.html));
  }
  // render everything first: nothing is printed or written when the report cannot be rendered
  std::ostringstream text;
  std::string html;
  try {
    if (o.text || o.html.empty()) {
      if (run) {
        // print_report ends with the diagnosis the report carries; an older report gets one now
        print_report(text, r);
        if (!r.contains("diagnosis") || !r["diagnosis"].is_array()) {
          text << "\n";
          print_diagnosis(text, diagnose(r));
        }
      } else {
        print_compare(text, r);
      }
    }
    if (!o.html.empty()) html = render_html(r);
  } catch (const InputError& e) {
    throw InputError(fmt::format("report '{}': {}", o.path, e.what()));
  } catch (const json::exception& e) {
    throw InputError(fmt::format("report '{}': a key is missing or has the wrong type ({})", o.path, e.what()));
  }
  if (!o.html.empty()) write_text_output(o.html, html, fmt::format("--html '{}'", o.html));
  std::cout << text.str();
  if (!o.html.empty() && o.html != "-") std::cout << fmt::format("html report written to {} ({} KB)\n", o.html, (html.size() + 1023) / 1024);
  return kExitOk;
}

int run_cadence_command(const std::string& path) {
  const json r = load_report_file(path);
  std::ostringstream text;
  try {
    print_cadence(text, r);
  } catch (const InputError& e) {
    throw InputError(fmt::format("report '{}': {}", path, e.what()));
  } catch (const json::exception& e) {
    throw InputError(fmt::format("report '{}': a key is missing or has the wrong type ({})", path, e.what()));
  }
  std::cout << text.str();
  return kExitOk;
}

}  // namespace chunkscope
