#pragma once
// Exceptions of the non-real-time layer. Each carries one line of text that names the
// input and says what is wrong; the CLI prints it and maps the class to an exit code
// (docs/profiler.md, "Exit codes").
#include <stdexcept>
#include <string>

namespace chunkscope {

inline constexpr int kExitOk = 0;
inline constexpr int kExitMiss = 1;     // ran, but --fail-on-miss found the budget broken
inline constexpr int kExitUsage = 2;    // bad usage or input
inline constexpr int kExitRuntime = 3;  // device or runtime failure

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

}  // namespace chunkscope
