#pragma once
// Exceptions of the non-real-time layer. Each carries one line of text that names the
// input and says what is wrong; the CLI prints it and maps the class to an exit code
// (docs/profiler.md, "Exit codes").
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace chunkscope {

inline constexpr int kExitOk = 0;
inline constexpr int kExitMiss = 1;     // ran, but --fail-on-miss found the budget broken
inline constexpr int kExitUsage = 2;    // bad usage or input
inline constexpr int kExitRuntime = 3;  // device or runtime failure
inline constexpr int kExitStageCrash = 4;  // a hosted stage's code crashed (a fatal signal inside it)

/// Bad usage or input (exit code 2).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Device or runtime failure (exit code 3).
class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An input file that ends before the length its header states. A RuntimeFailure when a
/// stream is under way (the report is kept, marked incomplete); `process` reports it as
/// bad input.
class TruncatedInput : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

/// `text` as one line: a newline, tab or other control character that came from user input
/// (a chain spec, a path) is written as an escape (`\n`, `\t`, `\xNN`), so every message the
/// CLI prints stays on one line.
inline std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace chunkscope
