#pragma once
// `chunkscope compare`: the same input and configuration through several backend variants,
// interleaved in rounds, and one side-by-side table (schema chunkscope.compare/1). Not RT.
#include <atomic>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "src/stream_cmd.hpp"

namespace chunkscope {

inline constexpr const char* kCompareSchema = "chunkscope.compare/1";

/// Prints the side-by-side table of a compare report.
void print_compare(std::ostream& os, const nlohmann::json& compare_report);

}  // namespace chunkscope
