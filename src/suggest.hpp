#pragma once
// What a mistyped name was most likely meant to be, for one-line refusals: a plugin, a
// control, a stage kind, a command-line flag. Not real-time.
#include <cstddef>
#include <string>
#include <vector>

namespace chunkscope {

/// The edit distance of a and b: insertions, deletions, substitutions and swaps of two
/// neighbours each count 1 (optimal string alignment).
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The names in `names` that `given` most likely meant, best first, at most `most`:
/// those equal to it but for case, then those that contain it (case ignored), then those
/// within a few edits of it (case ignored; at most 2, or a quarter of its length when longer).
std::vector<std::string> suggestions(const std::string& given, const std::vector<std::string>& names,
                                     std::size_t most = 5);

/// "; did you mean 'a'?" or "; did you mean one of 'a', 'b'?" for `suggestions(...)`, ""
/// when there are none.
std::string did_you_mean(const std::string& given, const std::vector<std::string>& names, std::size_t most = 5);

}  // namespace chunkscope
