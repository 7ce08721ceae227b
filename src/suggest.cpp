#include "src/suggest.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace chunkscope {

namespace {

std::string lowered(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Adds `name` to `out` unless it is there already or `out` is full.
void add(std::vector<std::string>& out, const std::string& name, std::size_t most) {
  if (out.size() < most && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
}

}  // namespace

std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::vector<std::string> suggestions(const std::string& given, const std::vector<std::string>& names,
                                     std::size_t most) {
  std::vector<std::string> out;
  const std::string g = lowered(given);
  if (g.empty() || most == 0) return out;
  for (const auto& n : names)
    if (n != given && lowered(n) == g) add(out, n, most);
  std::vector<std::string> containing;
  for (const auto& n : names)
    if (n != given && lowered(n).find(g) != std::string::npos) containing.push_back(n);
  std::sort(containing.begin(), containing.end());
  for (const auto& n : containing) add(out, n, most);
  const std::size_t limit = std::max<std::size_t>(2, g.size() / 4);
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const auto& n : names)
    if (n != given)
      if (const std::size_t d = edit_distance(g, lowered(n)); d <= limit) near.emplace_back(d, n);
  std::sort(near.begin(), near.end());
  for (const auto& [d, n] : near) add(out, n, most);
  return out;
}

std::string did_you_mean(const std::string& given, const std::vector<std::string>& names, std::size_t most) {
  const auto s = suggestions(given, names, most);
  if (s.empty()) return "";
  std::string list;
  for (const auto& n : s) list += fmt::format("{}'{}'", list.empty() ? "" : ", ", n);
  return s.size() == 1 ? fmt::format("; did you mean {}?", list) : fmt::format("; did you mean one of {}?", list);
}

}  // namespace chunkscope
