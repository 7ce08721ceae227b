#pragma once
// `chunkscope chain SPEC`: a chain designed and planned, printed as text or JSON (schema
// chunkscope.chain/1). Nothing is processed. Not real-time.
#include "src/options.hpp"

namespace chunkscope {

/// Prints the plan of o.spec at o.rate. Returns the exit code; throws InputError.
int run_chain(const ChainOptions& o);

}  // namespace chunkscope
