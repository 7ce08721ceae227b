#include "src/report/schema.hpp"
#include "src/report/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <variant>

#include "src/chain_spec.hpp"
#include "src/errors.hpp"
#include "src/io/input_file.hpp"
#include "src/io/output_file.hpp"
#include "src/report/diagnosis.hpp"
#include "src/report/schema_fields.hpp"

namespace chunkscope {

using nlohmann::json;
namespace fs = std::filesystem;
using fields::Node;

static_assert(std::string_view(kReportSchema) == fields::kReportSchemaName);
static_assert(std::string_view(kCompareSchema) == fields::kCompareSchemaName);

// ================================================================ the series' columns

namespace {

// the five parts of processing the series keeps per chunk (calibration is not one)
constexpr int kSeriesParts = 5;

// A column of the series: 64-bit stamps or 32-bit durations and flags.
using SeriesColumn = std::variant<const std::vector<std::int64_t>*, const std::vector<std::int32_t>*>;

// The series' columns, in the order they are filled; the document holds them under their
// keys (sorted, as every object).
std::vector<std::pair<std::string, SeriesColumn>> series_columns(const Series& s) {
  std::vector<std::pair<std::string, SeriesColumn>> cols = {
      {"seq", &s.seq}, {"sched_ns", &s.sched_ns}, {"emit_ns", &s.emit_ns}, {"latency_ns", &s.latency_ns},
      {"period_ns", &s.period_ns}};
  for (int k = 0; k < kStageCount; ++k)
    cols.emplace_back(std::string(stage_key(static_cast<Stage>(k))) + "_ns", &s.stage_ns[static_cast<std::size_t>(k)]);
  for (int k = 0; k < kSeriesParts; ++k)
    cols.emplace_back(std::string(part_key(static_cast<Part>(k))) + "_ns", &s.part_ns[static_cast<std::size_t>(k)]);
  cols.emplace_back("flags", &s.flags);
  cols.emplace_back("source_wake_ns", &s.source_wake_ns);
  return cols;
}

// The series without its columns.
json series_head(const Series& s) {
  return {{"count", s.size()}, {"capacity", s.capacity}, {"truncated", s.truncated}, {"not_kept", s.not_kept}};
}

json series_json(const Series& s) {
  json j = series_head(s);
  json cols = json::object();
  for (const auto& [key, col] : series_columns(s)) std::visit([&, k = key](const auto* c) { cols[k] = *c; }, col);
  j["columns"] = std::move(cols);
  return j;
}

std::vector<std::int64_t> read_ints(const Node& parent, const char* key) {
  std::vector<std::int64_t> v;
  auto a = parent.arr(key);
  if (!a) return v;
  v.reserve(a->size());
  for (std::size_t i = 0; i < a->size(); ++i) v.push_back(a->elem(i).integer());
  return v;
}

Series read_series(const Node& n) {
  Series s;
  s.capacity = n.u64("capacity", 0);
  s.truncated = n.flag("truncated", false);
  s.not_kept = n.u64("not_kept", 0);
  const auto cn = n.opt_obj("columns");
  if (!cn) return s;
  s.latency_ns = read_ints(*cn, "latency_ns");
  const std::size_t len = s.latency_ns.size();
  // every column has one value per point; an older report may lack a column (zeros)
  auto column = [&](const char* key) {
    auto v = read_ints(*cn, key);
    if (v.empty()) v.assign(len, 0);
    if (v.size() != len)
      cn->at(key).fail(fmt::format("has {} values but latency_ns has {}", v.size(), len));
    return v;
  };
  s.seq = column("seq");
  if (!cn->has("seq"))
    for (std::size_t i = 0; i < len; ++i) s.seq[i] = static_cast<std::int64_t>(i);
  s.sched_ns = column("sched_ns");
  s.emit_ns = column("emit_ns");
  s.period_ns = column("period_ns");
  // durations and flags are kept in 32 bits: what was recorded is clamped to 0..2^31-1
  auto column32 = [&](const std::string& key) {
    const auto wide = column(key.c_str());
    std::vector<std::int32_t> v(wide.size());
    for (std::size_t i = 0; i < wide.size(); ++i) {
      if (wide[i] < 0 || wide[i] > std::numeric_limits<std::int32_t>::max())
        cn->at(key.c_str()).elem(i).fail(fmt::format("{} is out of range 0..2147483647", wide[i]));
      v[i] = static_cast<std::int32_t>(wide[i]);
    }
    return v;
  };
  for (int k = 0; k < kStageCount; ++k) s.stage_ns[static_cast<std::size_t>(k)] = column32(std::string(stage_key(static_cast<Stage>(k))) + "_ns");
  for (int k = 0; k < kSeriesParts; ++k)
    s.part_ns[static_cast<std::size_t>(k)] = column32(std::string(part_key(static_cast<Part>(k))) + "_ns");
  s.flags = column32("flags");
  s.source_wake_ns = column32("source_wake_ns");
  return s;
}

}  // namespace

// ================================================================ what the descriptions leave to code

namespace fields {

json Codec<OwnerCounts>::put(const OwnerCounts& a) {
  json j = json::object();
  for (int i = 0; i < kOwnerCount; ++i) j[owner_key(static_cast<Owner>(i))] = a[static_cast<std::size_t>(i)];
  return j;
}

void Codec<OwnerCounts>::get(const Node& n, OwnerCounts& a) {
  n.object();
  for (int i = 0; i < kOwnerCount; ++i) a[static_cast<std::size_t>(i)] = n.u64(owner_key(static_cast<Owner>(i)), 0);
}

json Codec<Evidence>::put(const Evidence& e) {
  json j = json::object();
  for (const auto& [k, v] : e) j[k] = v;
  return j;
}

void Codec<Evidence>::get(const Node& n, Evidence& e) {
  n.object();
  e.clear();
  for (auto it = n.raw().begin(); it != n.raw().end(); ++it)
    e.emplace_back(it.key(), Node(it.value(), n.child_path(it.key())).number());
}

json Codec<Series>::put(const Series& s) { return series_json(s); }

void Codec<Series>::get(const Node& n, Series& s) { s = read_series(n.object()); }

json Codec<std::vector<CompareSpread>>::put(const std::vector<CompareSpread>& v) {
  json j = json::object();
  for (const auto& sp : v)
    j[CompareRound::figure_key(sp.figure)] = {{"rounds", sp.rounds}, {"min", sp.min}, {"median", sp.median}, {"max", sp.max}};
  return j;
}

void Codec<std::vector<CompareSpread>>::get(const Node& n, std::vector<CompareSpread>& v) {
  n.object();
  v.clear();
  for (int f = 0; f < kCompareFigureCount; ++f) {
    const auto fig = static_cast<CompareFigure>(f);
    const char* key = CompareRound::figure_key(fig);
    if (!n.has(key)) continue;
    Reader o(n.obj(key));
    CompareSpread s{.figure = fig};
    o("rounds", s.rounds, kRequired);
    o("min", s.min, kRequired);
    o("median", s.median, kRequired);
    o("max", s.max, kRequired);
    if (!(s.min <= s.median && s.median <= s.max))
      o.node().fail(fmt::format("min {:g}, median {:g}, max {:g} are not in order", s.min, s.median, s.max));
    v.push_back(s);
  }
}

json put_speed(const std::optional<double>& speed) { return speed ? json(*speed) : json("max"); }

void get_speed(const Node& n, std::optional<double>& speed) {
  if (n.raw().is_string()) {
    if (n.string() != "max") n.fail(fmt::format("'{}' is not a number or \"max\"", n.string()));
    speed.reset();
  } else {
    speed = n.number();
  }
}

void get_order(const Node& n, std::string& order) {
  if (n.raw().is_string()) order = n.string();
}

void Fields<RunMode>::after_read(const Node& n, RunMode& m) {
  if (m.wait != "block" && m.wait != "spin" && m.wait != "hybrid")
    n.at("wait").fail(fmt::format("'{}' is not block, spin or hybrid", m.wait));
}

void Fields<ReportWorkload>::after_read(const Node& n, ReportWorkload& w) {
  if (n.has("filter_stages") || w.chain.empty()) return;
  // an older report: count the filters of its chain with the chain parser itself
  try {
    for (const auto& st : parse_chain(w.chain).stages)
      if (is_iir(st.kind)) ++w.filter_stages;
  } catch (const InputError&) {
    w.filter_stages = 0;
  }
}

void Fields<MissRecord>::after_read(const Node& n, MissRecord& m) {
  if (m.step && *m.step < 1) n.at("step").fail(fmt::format("{} is not a step (steps count from 1)", *m.step));
}

void Fields<Checksums>::after_read(const Node& n, Checksums& c) {
  if (c.input.size() != c.output.size())
    n.at("output").fail(fmt::format("has {} checksums but input has {}", c.output.size(), c.input.size()));
}

void Fields<StreamsSection>::after_read(const Node& n, StreamsSection& s) {
  if (s.count < 1) n.at("count").fail(fmt::format("{} is not a stream count (1 or more)", s.count));
  if (!s.batched() && s.mode != "independent")
    n.at("mode").fail(fmt::format("'{}' is not a streams mode (independent or batched)", s.mode));
  const Node per = n.at("per_stream");
  if (static_cast<int>(s.streams.size()) != s.count)
    per.fail(fmt::format("has {} streams but count is {}", s.streams.size(), s.count));
  for (std::size_t i = 0; i < s.streams.size(); ++i)
    if (s.streams[i].stream != static_cast<int>(i))
      per.elem(i).at("stream").fail(fmt::format("{} is not stream {} (in order)", s.streams[i].stream, i));
  auto index = [&](const char* key, int v) {
    if (v < 0 || v >= s.count) n.at(key).fail(fmt::format("{} is not one of the {} streams", v, s.count));
  };
  index("worst", s.worst);
  if (s.blame) index("blame", *s.blame);
}

void Fields<StepRecord>::after_read(const Node& n, StepRecord& st) {
  for (const char* kind : {"cascade", "spin", "sleep", "hosted", "section"})
    if (st.kind == kind) return;
  n.at("kind").fail(fmt::format("'{}' is not a step kind (cascade, spin, sleep, hosted or section)", st.kind));
}

void Fields<RunReport>::after_read(const Node& n, RunReport& r) {
  for (std::size_t i = 0; i < r.steps.size(); ++i)
    if (r.steps[i].index != static_cast<int>(i) + 1)
      n.at("steps").at("list").elem(i).at("index").fail(fmt::format("{} is not step {}", r.steps[i].index, i + 1));
  if (!n.has("diagnosis")) r.diagnosis = diagnose(r);  // an older report: diagnose what it holds now
}

void Fields<CompareVariant>::after_read(const Node& n, CompareVariant& v) {
  v.available = n.flag("available", n.has("report"));
  if (n.has("report")) {
    const Node rep = n.obj("report");
    if (rep.has("schema") && rep.str("schema", "") != kReportSchema)
      rep.at("schema").fail(fmt::format("'{}' is not {}", rep.str("schema", ""), kReportSchema));
  } else if (v.available) {
    n.at("report").fail("missing (the variant is marked available)");
  }
}

void Fields<CompareRule>::after_read(const Node& n, CompareRule& r) {
  if (!(r.confidence > 0 && r.confidence < 1))
    n.at("confidence").fail(fmt::format("{:g} is not between 0 and 1", r.confidence));
}

}  // namespace fields

// ================================================================ writing

json to_json(const HistSummary& h) { return fields::to_object(h); }

json to_json(const std::vector<Finding>& findings) { return fields::Writer::put(findings); }

json to_json(const Signature& s) { return fields::to_object(s); }

json to_json(const ReportEnvironment& e) { return fields::to_object(e); }

json to_json(const RunReport& r) {
  json j = fields::to_object(r);
  j["series"] = series_json(r.series);
  return j;
}

json to_json(const CompareReport& r) {
  json out = fields::to_object(r);
  auto& variants = out["variants"];
  for (std::size_t i = 0; i < r.variants.size(); ++i)
    if (r.variants[i].report) variants[i]["report"] = to_json(*r.variants[i].report);
  return out;
}

namespace {

// A run report without its series, a compare report without its variants' reports:
// documents whose size does not grow with the number of chunks.
json run_head(const RunReport& r) { return fields::to_object(r); }
json compare_head(const CompareReport& r) { return fields::to_object(r); }

// ---------------------------------------------------------------- streaming
//
// The text json::dump(2) gives, written piece by piece: the small sections are dumped from
// their json values (re-indented to where they sit), the series columns number by number
// and the variants' run reports one after the other, so writing a report needs memory for
// its head only, whatever the number of chunks.

using LateMember = std::pair<std::string, std::function<void(std::ostream&, int)>>;

void put_indent(std::ostream& o, int depth) {
  static const std::string spaces(256, ' ');
  for (int n = 2 * depth; n > 0; n -= static_cast<int>(spaces.size()))
    o.write(spaces.data(), std::min<std::streamsize>(n, static_cast<std::streamsize>(spaces.size())));
}

// `v` as dump(2) writes it at `depth` levels in: the line breaks of pretty-printing are the
// only raw newlines in the text (a string's newline is escaped), each gets the indent.
void put_value(std::ostream& o, const json& v, int depth) {
  const std::string text = v.dump(2);
  std::size_t from = 0;
  for (std::size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1) {
    o.write(text.data() + from, static_cast<std::streamsize>(nl + 1 - from));
    put_indent(o, depth);
  }
  o.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
}

void put_key(std::ostream& o, const std::string& key, int depth) {
  put_indent(o, depth);
  o << json(key).dump() << ": ";
}

// The object `head` with the members of `late` merged in at their places in key order (the
// order of json's objects), each late member written by its function at its depth.
void put_object(std::ostream& o, const json& head, std::vector<LateMember> late, int depth) {
  std::sort(late.begin(), late.end(), [](const LateMember& a, const LateMember& b) { return a.first < b.first; });
  if (head.empty() && late.empty()) {
    o << "{}";
    return;
  }
  o << "{\n";
  auto l = late.begin();
  bool first = true;
  auto next = [&] {
    if (!first) o << ",\n";
    first = false;
  };
  for (auto it = head.begin(); it != head.end(); ++it) {
    for (; l != late.end() && l->first < it.key(); ++l) {
      next();
      put_key(o, l->first, depth + 1);
      l->second(o, depth + 1);
    }
    next();
    put_key(o, it.key(), depth + 1);
    put_value(o, it.value(), depth + 1);
  }
  for (; l != late.end(); ++l) {
    next();
    put_key(o, l->first, depth + 1);
    l->second(o, depth + 1);
  }
  o << "\n";
  put_indent(o, depth);
  o << "}";
}

// An array of integers as dump(2) writes it: one number a line.
template <typename Int>
void put_int_array(std::ostream& o, const std::vector<Int>& v, int depth) {
  if (v.empty()) {
    o << "[]";
    return;
  }
  const std::string lead = std::string(",\n") + std::string(static_cast<std::size_t>(2 * (depth + 1)), ' ');
  std::string block = "[" + lead.substr(1);
  block.reserve(1u << 14);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) block += lead;
    const fmt::format_int n(v[i]);
    block.append(n.data(), n.size());
    if (block.size() >= (1u << 14) - 64) {
      o.write(block.data(), static_cast<std::streamsize>(block.size()));
      block.clear();
    }
  }
  o.write(block.data(), static_cast<std::streamsize>(block.size()));
  o << "\n";
  put_indent(o, depth);
  o << "]";
}

void put_series(std::ostream& o, const Series& s, int depth) {
  std::vector<LateMember> cols;
  for (const auto& [key, col] : series_columns(s))
    cols.emplace_back(key, [col = col](std::ostream& os, int d) {
      std::visit([&](const auto* c) { put_int_array(os, *c, d); }, col);
    });
  put_object(o, series_head(s), {{"columns", [&](std::ostream& os, int d) { put_object(os, json::object(), cols, d); }}},
             depth);
}

void put_run(std::ostream& o, const RunReport& r, int depth) {
  put_object(o, run_head(r), {{"series", [&](std::ostream& os, int d) { put_series(os, r.series, d); }}}, depth);
}

void put_compare(std::ostream& o, const CompareReport& r, int depth) {
  json head = compare_head(r);
  json variants = std::move(head["variants"]);
  head.erase("variants");
  auto put_variants = [&](std::ostream& os, int d) {
    if (variants.empty()) {
      os << "[]";
      return;
    }
    os << "[\n";
    for (std::size_t i = 0; i < variants.size(); ++i) {
      if (i > 0) os << ",\n";
      put_indent(os, d + 1);
      std::vector<LateMember> late;
      if (const auto& rep = r.variants[i].report)
        late.emplace_back("report", [&](std::ostream& s2, int d2) { put_run(s2, *rep, d2); });
      put_object(os, variants[i], std::move(late), d + 1);
    }
    os << "\n";
    put_indent(os, d);
    os << "]";
  };
  put_object(o, head, {{"variants", put_variants}}, depth);
}

}  // namespace

void write_json(std::ostream& o, const RunReport& r) { put_run(o, r, 0); }

void write_json(std::ostream& o, const CompareReport& r) { put_compare(o, r, 0); }

void write_report_file(const std::string& path, const RunReport& r, const std::string& label) {
  write_streamed_output(path, label, [&](std::ostream& o) {
    write_json(o, r);
    o << '\n';
  });
}

void write_report_file(const std::string& path, const CompareReport& r, const std::string& label) {
  write_streamed_output(path, label, [&](std::ostream& o) {
    write_json(o, r);
    o << '\n';
  });
}

// ================================================================ reading

namespace {

std::string schema_of(const Node& n) {
  if (!n.raw().is_object())
    throw InputError(fmt::format("JSON but not a chunkscope report (a top-level {}, not an object)", n.raw().type_name()));
  if (!n.has("schema"))
    throw InputError(fmt::format("JSON but not a chunkscope report (no \"schema\" key; expected {} or {})", kReportSchema,
                                 kCompareSchema));
  const json& s = n.raw()["schema"];
  return s.is_string() ? s.get<std::string>() : s.dump();
}


}  // namespace

RunReport run_report_from_json(const json& j) {
  const Node n(j, "");
  const std::string schema = schema_of(n);
  if (schema != kReportSchema)
    throw InputError(fmt::format("schema '{}', expected {}", schema, kReportSchema));
  return fields::from_object<RunReport>(n);
}

CompareReport compare_report_from_json(const json& j) {
  const Node n(j, "");
  const std::string schema = schema_of(n);
  if (schema != kCompareSchema)
    throw InputError(fmt::format("schema '{}', expected {}", schema, kCompareSchema));
  return fields::from_object<CompareReport>(n);
}

SavedReport load_saved_report(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw InputError(ec ? fmt::format("report '{}': cannot look at it ({})", path, ec.message())
                        : fmt::format("report '{}': no such file", path));
  if (fs::is_directory(path, ec)) throw InputError(fmt::format("report '{}': is a folder, not a report file", path));
  const std::string text = read_text_file_bounded(path, kReportFileLimit, fmt::format("report '{}'", path));
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(fmt::format("report '{}': empty file, not JSON", path));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    if (e.byte >= text.size())
      throw InputError(fmt::format("report '{}': truncated JSON (the document ends unfinished after {} bytes)", path,
                                   text.size()));
    throw InputError(fmt::format("report '{}': not JSON (parse error at byte {})", path, e.byte));
  } catch (const json::exception& e) {
    // e.g. 1e400: a number no double holds
    std::string what = e.what();
    if (const auto b = what.find("] "); b != std::string::npos) what = what.substr(b + 2);
    throw InputError(fmt::format("report '{}': a value is out of range ({})", path, what));
  }
  try {
    const Node n(j, "");
    const std::string schema = schema_of(n);
    if (schema == kReportSchema) return fields::from_object<RunReport>(n);
    if (schema == kCompareSchema) return compare_report_from_json(j);
    if (schema == kSweepSchema)
      throw InputError("a sweep (chunkscope.sweep/1), not a run or compare report: `chunkscope sweep --html` writes its page");
    throw InputError(fmt::format("JSON but not a chunkscope report (schema '{}'; expected {} or {})", schema,
                                 kReportSchema, kCompareSchema));
  } catch (const InputError& e) {
    throw InputError(fmt::format("report '{}': {}", path, e.what()));
  }
}

std::string report_file_of(const std::string& spec) {
  const auto hash = spec.rfind('#');
  std::error_code ec;
  if (hash == std::string::npos || hash == 0 || fs::exists(spec, ec)) return spec;
  return spec.substr(0, hash);
}

SavedReport load_report_spec(const std::string& spec) {
  const std::string path = report_file_of(spec);
  if (path == spec) return load_saved_report(spec);
  const std::string name = spec.substr(path.size() + 1);
  SavedReport saved = load_saved_report(path);
  const auto* cmp = std::get_if<CompareReport>(&saved);
  if (!cmp) throw InputError(fmt::format("report '{}': a run report has no variants (#{} names one)", path, name));
  std::string ran;
  for (const auto& v : cmp->variants)
    if (v.report) ran += (ran.empty() ? "" : ", ") + v.name;
  const CompareVariant* v = cmp->find(name);
  if (!v) throw InputError(fmt::format("report '{}': no variant '{}' (variants that ran: {})", path, name, ran.empty() ? "none" : ran));
  if (!v->report)
    throw InputError(fmt::format("report '{}': variant '{}' did not run ({}); variants that ran: {}", path, name,
                                 v->reason.empty() ? "unavailable" : v->reason, ran.empty() ? "none" : ran));
  return *v->report;
}

RunReport load_run_report(const std::string& spec) {
  SavedReport saved = load_report_spec(spec);
  if (auto* r = std::get_if<RunReport>(&saved)) return std::move(*r);
  const auto& cmp = std::get<CompareReport>(saved);
  std::string names;
  for (const auto& v : cmp.variants)
    if (v.report) names += (names.empty() ? "" : ", ") + v.name;
  throw InputError(fmt::format("report '{}': a compare report; pick a variant as {}#VARIANT: it holds one run report per "
                               "variant under variants[i].report (variants: {})",
                               spec, spec, names.empty() ? "none ran" : names));
}

// ---------------------------------------------------------------- chunkscope.sweep/1

namespace {

json sweep_opt(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }
json sweep_opt(const std::optional<int>& v) { return v ? json(*v) : json(nullptr); }
json sweep_opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json sweep_opt(const std::optional<bool>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

json to_json(const SweepReport& r) {
  json j;
  j["schema"] = kSweepSchema;
  j["state"] = run_state_name(r.state);
  if (!r.reason.empty()) j["reason"] = r.reason;
  j["workload"] = {{"command", r.command},
                   {"source", r.source},
                   {"chain", r.chain},
                   {"rate", r.rate},
                   {"channels", r.channels},
                   {"dtype", dtype_name(r.dtype)},
                   {"margin", r.margin_text},
                   {"cell_media_seconds", r.cell_media_seconds},
                   {"baseline_ns", r.baseline_ns},
                   {"stagger", r.staggered},
                   {"batch", r.batched},
                   {"run_mode",
                    {{"wait", r.run_mode.wait},
                     {"rt", r.run_mode.rt},
                     {"rt_priority", r.run_mode.rt_priority},
                     {"cpus", r.run_mode.cpus},
                     {"inline", r.run_mode.inline_process}}}};
  j["environment"] = to_json(r.environment);
  j["grid"] = {{"chunks", r.chunks}, {"streams", r.streams}, {"variants", r.variants}};
  j["planned_seconds"] = r.planned_seconds;
  j["wall_seconds"] = r.wall_seconds;
  j["rule"] = r.rule;
  const int cpus = r.environment.host.logical_cpus;
  json cells = json::array();
  for (const auto& c : r.cells) {
    json owners = json::object();
    for (int i = 0; i < kOwnerCount; ++i) owners[owner_key(static_cast<Owner>(i))] = c.stall_owner[static_cast<std::size_t>(i)];
    json e = {{"variant", c.variant},
              {"chunk", c.chunk},
              {"streams", c.streams},
              {"state", sweep_state_name(c.state)},
              {"safe", sweep_opt(c.safe)}};
    if (c.needed_chunks > 0) e["needed_chunks"] = c.needed_chunks;
    if (!c.reason.empty()) e["reason"] = c.reason;
    if (c.state == SweepCell::State::done || c.state == SweepCell::State::interrupted ||
        c.state == SweepCell::State::incomplete) {
      e["chunk_ns"] = c.chunk_ns;
      e["budget_ns"] = c.budget_ns;
      e["headroom_p95_ns"] = sweep_opt(c.headroom_p95_ns);
      e["pooled_headroom_p95_ns"] = sweep_opt(c.pooled_headroom_p95_ns);
      e["latency"] = to_json(c.latency);
      e["process"] = to_json(c.process);
      e["counted"] = c.counted;
      e["fewest_counted"] = c.fewest_counted;  // the stream with the fewest
      e["misses"] = c.misses;
      e["stall_events"] = c.stalls;
      e["stall_owner"] = owners;
      e["drops"] = c.drops;
      e["worst"] = c.worst;
      e["blame"] = sweep_opt(c.blame);
      e["busy_share"] = sweep_opt(c.busy_share);
      e["engine_cpu_ns"] = c.engine_cpu_ns;
      e["cpu_share"] = sweep_opt(c.cpu_share(cpus));
      e["wall_seconds"] = c.wall_s;
      e["baseline_wake_p99_ns"] = sweep_opt(c.wake_p99_ns);
    }
    cells.push_back(std::move(e));
  }
  j["cells"] = std::move(cells);
  json fr = json::array();
  for (const auto& f : r.frontier) {
    json a = json::array(), b = json::array();
    for (const auto& [n, c] : f.smallest_safe_chunk) a.push_back({{"streams", n}, {"chunk", sweep_opt(c)}});
    for (const auto& [c, n] : f.largest_safe_streams) b.push_back({{"chunk", c}, {"streams", sweep_opt(n)}});
    fr.push_back({{"variant", f.variant}, {"smallest_safe_chunk", a}, {"largest_safe_streams", b}});
  }
  j["frontier"] = std::move(fr);
  return j;
}

}  // namespace chunkscope
