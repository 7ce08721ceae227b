#pragma once
// Tolerant reading of saved reports (chunkscope.report/1, chunkscope.compare/1): older
// reports lack keys that newer ones have, so every read names a path and says what to do
// when it is missing. Not real-time.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chunkscope::rj {

using nlohmann::json;

/// The value at `path` (object keys), or nullptr when any step is missing. Not RT safe.
inline const json* find(const json& j, std::initializer_list<std::string_view> path) {
  const json* p = &j;
  for (auto k : path) {
    if (!p->is_object()) return nullptr;
    auto it = p->find(std::string(k));
    if (it == p->end()) return nullptr;
    p = &*it;
  }
  return p;
}

/// A number at `path`, or nothing (missing, null or not a number). Not RT safe.
inline std::optional<double> num(const json& j, std::initializer_list<std::string_view> path) {
  const json* p = find(j, path);
  if (!p || !p->is_number()) return std::nullopt;
  return p->get<double>();
}

inline double num_or(const json& j, std::initializer_list<std::string_view> path, double def) {
  return num(j, path).value_or(def);
}

inline std::string str_or(const json& j, std::initializer_list<std::string_view> path, const std::string& def) {
  const json* p = find(j, path);
  if (!p || !p->is_string()) return def;
  return p->get<std::string>();
}

inline std::optional<bool> boolean(const json& j, std::initializer_list<std::string_view> path) {
  const json* p = find(j, path);
  if (!p || !p->is_boolean()) return std::nullopt;
  return p->get<bool>();
}

/// A histogram object with data (count > 0 and the percentile keys), or nullptr.
inline const json* hist(const json& j, std::initializer_list<std::string_view> path) {
  const json* h = find(j, path);
  if (!h || !h->is_object()) return nullptr;
  auto c = h->find("count");
  if (c == h->end() || !c->is_number() || c->get<double>() <= 0) return nullptr;
  if (!h->contains("p50") || !(*h)["p50"].is_number()) return nullptr;
  return h;
}

/// Percentile key of a histogram (`p50`, `p95`, ...), or nothing.
inline std::optional<double> hv(const json* h, const char* key) {
  if (!h) return std::nullopt;
  auto it = h->find(key);
  if (it == h->end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

/// One integer column of the per-chunk series, or an empty vector.
inline std::vector<std::int64_t> column(const json& report, const char* name) {
  std::vector<std::int64_t> v;
  const json* c = find(report, {"series", "columns", name});
  if (!c || !c->is_array()) return v;
  v.reserve(c->size());
  for (const auto& x : *c) v.push_back(x.is_number() ? x.get<std::int64_t>() : 0);
  return v;
}

/// True when the report carries a per-chunk series with at least one chunk.
inline bool has_series(const json& report) {
  const json* c = find(report, {"series", "columns", "latency_ns"});
  return c && c->is_array() && !c->empty();
}

inline constexpr std::int64_t kFlagShort = 1, kFlagWarmup = 2, kFlagMiss = 4;

/// Nearest-rank percentile of a sorted vector (p in 0..100). Not RT safe.
inline double rank_percentile(const std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double n = static_cast<double>(sorted.size());
  auto r = static_cast<std::size_t>(std::ceil(p / 100.0 * n * (1 - 1e-12)));
  r = std::clamp<std::size_t>(r, 1, sorted.size());
  return static_cast<double>(sorted[r - 1]);
}

/// One output period of the series: the chunk that ended it, P and that chunk's emit time.
struct PeriodPoint {
  std::int64_t seq, period_ns, emit_ns;
};

/// The output periods between consecutive counted chunks of the series (warm-up chunks and
/// the first chunk after them left out, as in the report's period histogram). Not RT safe.
inline std::vector<PeriodPoint> counted_periods(const json& report) {
  std::vector<PeriodPoint> out;
  const auto period = column(report, "period_ns");
  if (period.empty()) return out;
  const auto flags = column(report, "flags");
  const auto seq = column(report, "seq");
  const auto emit = column(report, "emit_ns");
  auto warm = [&](std::size_t i) { return i < flags.size() && (flags[i] & kFlagWarmup) != 0; };
  out.reserve(period.size());
  for (std::size_t i = 1; i < period.size(); ++i) {
    if (warm(i) || warm(i - 1) || period[i] <= 0) continue;
    out.push_back({i < seq.size() ? seq[i] : static_cast<std::int64_t>(i), period[i], i < emit.size() ? emit[i] : 0});
  }
  return out;
}

}  // namespace chunkscope::rj
