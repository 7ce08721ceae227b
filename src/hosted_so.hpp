#pragma once
// `so:` stages: the user's own code behind include/chunkscope/stage.h, loaded with dlopen
// and checked before anything runs. Not real-time.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rt/hosted.hpp"

namespace chunkscope {

/// Loads the stage library at `path`, checks its entry point, ABI version, descriptor and
/// the `params` against the parameters it lists, and returns the factory that makes its
/// instances. Throws InputError naming `where` and the library: not found, not a shared
/// object, no entry symbol, a descriptor missing or too new, an unknown parameter.
std::shared_ptr<const HostedFactory> load_so_stage(const std::string& path,
                                                   const std::vector<std::pair<std::string, std::string>>& params,
                                                   const std::string& where);

}  // namespace chunkscope
