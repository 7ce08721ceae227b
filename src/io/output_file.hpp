#pragma once
// Helpers shared by the CLI commands.
#include <nlohmann/json.hpp>
#include <string>

namespace chunkscope {

/// Writes JSON to `path` through a temporary file renamed into place. Throws InputError /
/// RuntimeFailure.
void write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace chunkscope
