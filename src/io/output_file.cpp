#include <cstdio>
#include <fmt/format.h>
#include <fstream>

#include "src/io/output_file.hpp"
#include "src/errors.hpp"

namespace chunkscope {

using nlohmann::json;

void write_json_file(const std::string& path, const json& j) {
  const std::string tmp = path + ".partial";
  {
    std::ofstream o(tmp);
    if (!o) throw InputError(fmt::format("output '{}': cannot write", path));
    o << j.dump(2) << "\n";
    if (!o) {
      std::remove(tmp.c_str());
      throw RuntimeFailure(fmt::format("output '{}': write failed", path));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw RuntimeFailure(fmt::format("output '{}': cannot move into place", path));
  }
}

}  // namespace chunkscope
