// Fuzzes the saved-report reader field by field: run_report_from_json() and
// compare_report_from_json() (src/report/schema.cpp) on real reports (the run, paced and
// compare reports of corpus/saved_report/) with some of their values replaced. Random
// bytes seldom make a document that passes the schema check and the required sections;
// here every input is a real report with a few odd values (extreme integers, NaN,
// infinities, mistyped values, removed members, grown arrays), so the fuzzer reaches
// every field's checks and what the writers do with the values that pass them.
//
// Input: byte 0 picks the base report; then groups of 4 bytes, each one edit:
//   node (2 bytes, little endian, modulo the number of nodes in document order),
//   operation (1 byte), argument (1 byte).
// Contract and invariants: as fuzz_saved_report.cpp (report_checks.hpp).
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "src/errors.hpp"
#include "src/report/schema.hpp"
#include "tests/fuzz/fuzz_util.hpp"
#include "tests/fuzz/report_checks.hpp"

using namespace chunkscope;
using nlohmann::json;

namespace {

std::vector<json> load_bases() {
  std::vector<json> out;
  for (const char* name : {"run.json", "paced.json", "compare.json"}) {
    const std::string path = std::string(CHUNKSCOPE_SOURCE_DIR) + "/tests/fuzz/corpus/saved_report/" + name;
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      out.push_back(json::parse(ss.str()));
    } catch (const json::exception& e) {
      fuzzutil::broken("base report %s: %s", path.c_str(), e.what());
    }
  }
  return out;
}

void collect(json& j, std::vector<json*>& nodes) {
  nodes.push_back(&j);
  if (j.is_object() || j.is_array())
    for (auto& c : j) collect(c, nodes);
}

// Parent of every node, for removal: the parent and the key or index of the child.
struct Place {
  json* parent = nullptr;
  std::string key;
  std::size_t index = 0;
};

void places(json& j, std::vector<Place>& out, const Place& here) {
  out.push_back(here);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) places(it.value(), out, Place{&j, it.key(), 0});
  else if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i) places(j[i], out, Place{&j, {}, i});
}

constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
const std::int64_t kInts[] = {0, -1, 1, 2, kI64Min, kI64Max, 2147483647, 2147483648LL, -2147483648LL, -2147483649LL,
                              4294967296LL, 9007199254740993LL, 1000000000000000000LL, 65536, 65537, 1 << 20};
const double kDoubles[] = {-0.0,
                           0.5,
                           -0.5,
                           1e308,
                           -1e308,
                           5e-324,
                           9.3e18,
                           -9.3e18,
                           1.8446744073709552e19,
                           2147483647.5,
                           2147483648.0,
                           1e-9,
                           std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::max()};
const char* const kStrings[] = {"", "max", "f32", "f64", "complete", "interrupted", "incomplete", "source", "process",
                                "sink", "warning", "ok", "high", "low", "file", "synth", "device", "x",
                                "chunkscope.report/1", "chunkscope.compare/1", "cpu:fused", "cpu:unfused",
                                "lp:1k | gain:-3", "<script>&\"'", "\xc3\xa9\xe2\x80\x94"};

template <class T, std::size_t N>
const T& pick(const T (&table)[N], std::uint8_t arg) {
  return table[arg % N];
}

void edit(json& doc, std::uint16_t node, std::uint8_t op, std::uint8_t arg) {
  std::vector<Place> where;
  places(doc, where, Place{});
  const Place p = where[node % where.size()];
  json* target = nullptr;
  if (!p.parent)
    target = &doc;
  else if (p.parent->is_object())
    target = &(*p.parent)[p.key];
  else
    target = &(*p.parent)[p.index];
  switch (op % 12) {
    case 0:  // remove it
      if (!p.parent) return;
      if (p.parent->is_object())
        p.parent->erase(p.key);
      else
        p.parent->erase(p.index);
      return;
    case 1: *target = nullptr; return;
    case 2: *target = (arg & 1) != 0; return;
    case 3: *target = static_cast<std::int8_t>(arg); return;
    case 4:
      if (arg & 0x80)
        *target = std::numeric_limits<std::uint64_t>::max() - (arg & 0x7f);
      else
        *target = pick(kInts, arg);
      return;
    case 5: *target = pick(kDoubles, arg); return;
    case 6: *target = pick(kStrings, arg); return;
    case 7: *target = json::array(); return;
    case 8: *target = json::object(); return;
    case 9:  // grow: an array gets a copy of an element (or of itself), a value becomes [value]
      if (target->is_array() && !target->empty())
        target->push_back(json((*target)[arg % target->size()]));
      else if (!target->is_object())
        *target = json::array({*target});
      return;
    case 10: {  // a copy of another node
      std::vector<json*> nodes;
      collect(doc, nodes);
      const json copy = *nodes[(static_cast<std::size_t>(arg) * 2654435761u) % nodes.size()];
      *target = copy;
      return;
    }
    case 11:  // a number scaled or negated
      if (target->is_number_unsigned() || target->is_number_integer()) {
        const std::int64_t v = target->get<std::int64_t>();
        *target = (arg & 1) && v != kI64Min ? -v : v / 2 + (arg >> 1);
      } else if (target->is_number_float()) {
        *target = target->get<double>() * (static_cast<double>(arg) - 128.0);
      }
      return;
  }
}

template <class Read>
void try_read(const json& doc, Read read) {
  SavedReport saved;
  try {
    saved = read(doc);
  } catch (const InputError& e) {
    FUZZ_CHECK(*e.what() != '\0');
    return;
  }
  fuzzutil::check_round_trip(saved);
  fuzzutil::check_consumers(saved);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<json> bases = load_bases();
  if (size < 1 || size > 1 + 4 * 24) return 0;
  json doc = bases[data[0] % bases.size()];
  for (std::size_t i = 1; i + 4 <= size; i += 4)
    edit(doc, static_cast<std::uint16_t>(data[i] | (data[i + 1] << 8)), data[i + 2], data[i + 3]);
  try_read(doc, [](const json& j) -> SavedReport { return run_report_from_json(j); });
  try_read(doc, [](const json& j) -> SavedReport { return compare_report_from_json(j); });
  return 0;
}
