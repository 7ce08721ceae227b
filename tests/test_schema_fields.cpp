// The schema rule: each struct of the report model is described once (src/report/
// schema_fields.hpp), every member of it, each key once; and what the description writes
// reads back equal, for documents with every optional section filled.
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "src/report/schema.hpp"
#include "src/report/schema_fields.hpp"

namespace {

using namespace chunkscope;
using namespace chunkscope::fields;

// ---------------------------------------------------------------- how many members a struct has
// An aggregate takes as many initialisers as it has members: the largest N for which
// T{x1, ..., xN} compiles, where each x converts to anything.
struct AnyMember {
  template <class T>
  operator T&() const&& noexcept;
};
template <class T, std::size_t... I>
concept BracesWith = requires { T{(void(I), AnyMember{})...}; };
template <class T, std::size_t... I>
constexpr bool braces(std::index_sequence<I...>) {
  return BracesWith<T, I...>;
}
template <class T, std::size_t N = 0>
constexpr std::size_t member_count() {
  if constexpr (N > 96)
    return 0;
  else if constexpr (braces<T>(std::make_index_sequence<N + 1>{}))
    return member_count<T, N + 1>();
  else
    return N;
}

// ---------------------------------------------------------------- what a description visits
// The members of one object a description names (by address), each key it uses per JSON
// object, and any member or key named twice. A nested member whose fields the
// description names one by one (e.g. ReportEnvironment's host) is counted once.
class Visits {
 public:
  Visits(const void* base, std::size_t size) : base_(static_cast<const char*>(base)), size_(size) { keys_.emplace_back(); }
  void collapse(const void* p, std::size_t size) { folded_.emplace_back(static_cast<const char*>(p), size); }

  template <class T, class U = T>
  void operator()(const char* key, T& v, Rules = {}, const U* = nullptr) {
    visit(key, &v);
  }
  template <class T>
  void derived(const char* key, const T&) {
    use_key(key);
  }
  template <class F>
  void object(const char* key, F&& inner, Rules = {}) {
    use_key(key);
    keys_.emplace_back();
    inner(*this);
    keys_.pop_back();
  }
  template <class A, class K>
  void keyed(const char* key, A& arr, K, Rules = {}) {
    visit(key, &arr);
  }
  template <class T, class P, class G>
  void custom(const char* key, T& v, P, G, Rules = {}, const T* = nullptr) {
    visit(key, &v);
  }

  std::size_t members() const { return members_.size(); }
  std::size_t inside(const void* p, std::size_t size) const {
    std::size_t n = 0;
    for (const char* m : raw_)
      n += m >= static_cast<const char*>(p) && m < static_cast<const char*>(p) + size ? 1 : 0;
    return n;
  }
  std::vector<std::string> twice;  // keys or members named twice
  std::vector<std::string> outside;  // keys whose member lies outside the struct

 private:
  void use_key(const char* key) {
    if (!keys_.back().insert(key).second) twice.push_back(std::string("key ") + key);
  }
  void visit(const char* key, const void* p) {
    use_key(key);
    const char* m = static_cast<const char*>(p);
    if (m < base_ || m >= base_ + size_) {
      outside.push_back(key);
      return;
    }
    raw_.push_back(m);
    for (const auto& [f, n] : folded_)
      if (m >= f && m < f + n) m = f;
    if (!members_.insert(m).second && m == static_cast<const char*>(p)) twice.push_back(std::string("member ") + key);
  }
  const char* base_;
  std::size_t size_;
  std::vector<std::pair<const char*, std::size_t>> folded_;
  std::vector<std::set<std::string>> keys_;
  std::set<const char*> members_;
  std::vector<const char*> raw_;
};

template <class T>
void check_described_once(const char* name) {
  CAPTURE(name);
  T v{};
  Visits seen(&v, sizeof v);
  Fields<T>::each(seen, v);
  CHECK(seen.twice == std::vector<std::string>{});
  CHECK(seen.outside == std::vector<std::string>{});
  CHECK(seen.members() == member_count<T>());
}

// ---------------------------------------------------------------- a document with everything
// Sets every member a description names to a value that is not its default (a bool
// flipped, numbers 3 or 0.5, words "x", an enum's last value, lists of one, optionals
// present), so that a field the writer or reader dropped would not read back equal.
struct Filler {
  template <class T, class U = T>
  void operator()(const char*, T& v, Rules = {}, const U* = nullptr) {
    fill(v);
  }
  template <class T>
  void derived(const char*, const T&) {}
  template <class F>
  void object(const char*, F&& inner, Rules = {}) {
    inner(*this);
  }
  template <class A, class K>
  void keyed(const char*, A& arr, K, Rules = {}) {
    for (auto& e : arr) fill(e);
  }
  template <class T, class P, class G>
  void custom(const char*, T& v, P, G, Rules = {}, const T* = nullptr) {
    fill(v);
  }

  template <class T>
  static void fill(T& v) {
    if constexpr (std::is_same_v<T, Series>) {
      fill_series(v);
    } else if constexpr (std::is_same_v<T, std::vector<CompareSpread>>) {
      v = {CompareSpread{CompareFigure::drops, 3, 0.25, 0.5, 0.75}};
    } else if constexpr (Described<T>) {
      Filler f;
      Fields<T>::each(f, v);
    } else if constexpr (Worded<T>) {
      v = static_cast<T>(EnumWords<T>::count - 1);
    } else if constexpr (IsOptional<T>::value) {
      v.emplace();
      fill(*v);
    } else if constexpr (IsVector<T>::value) {
      v.resize(1);
      fill(v[0]);
    } else if constexpr (std::is_same_v<T, std::pair<std::string, double>>) {
      v = {"evidence", 0.5};
    } else if constexpr (std::is_same_v<T, OwnerCounts>) {
      for (auto& x : v) x = 3;
    } else if constexpr (std::is_same_v<T, bool>) {
      v = !v;
    } else if constexpr (std::is_same_v<T, std::string>) {
      v = "x";
    } else if constexpr (std::is_floating_point_v<T>) {
      v = 0.5;
    } else {
      static_assert(std::is_integral_v<T>, "a member type the filler does not know");
      v = 3;
    }
  }
  static void fill_series(Series& s) {
    s.capacity = 8;
    s.truncated = true;
    s.not_kept = 3;
    s.seq = {0, 1};
    s.sched_ns = {10, 20};
    s.emit_ns = {15, 27};
    s.latency_ns = {5, 7};
    s.period_ns = {0, 12};
    for (auto& c : s.stage_ns) c = {1, 2};
    for (auto& c : s.part_ns) c = {3, 4};
    s.flags = {2, 4};
    s.source_wake_ns = {1, 1};
  }
};

// What a filled run report needs to be a valid one: the values its reader checks.
void make_valid(RunReport& r) {
  r.workload.input = InputDesc{};
  r.workload.input.kind = InputDesc::Kind::synth;
  r.workload.input.signal = "noise";
  r.workload.input.rate = 48000;
  r.workload.input.channels = 2;
  r.workload.input.frames = 96000;
  r.workload.run_mode->wait = "spin";
  auto& s = *r.streams;
  s.count = 1;
  s.mode = "batched";
  s.streams[0].stream = 0;
  s.worst = 0;
  s.blame = 0;
  r.steps[0].index = 1;
  r.steps[0].kind = "hosted";
}

RunReport full_run_report() {
  RunReport r;
  Filler::fill(r);
  make_valid(r);
  r.exit_policy.reset();  // how the command ended is never written: a saved report does not know it
  return r;
}

CompareReport full_compare_report() {
  CompareReport c;
  Filler::fill(c);
  for (auto& v : c.variants) {
    make_valid(*v.report);
    v.report->exit_policy.reset();  // never written
    v.reason.clear();  // a variant that ran has no reason for not running
  }
  // a comparison's workload holds what its variants share: not the run's own settings
  ReportWorkload& w = c.workload;
  const ReportWorkload def;
  w.fused = def.fused;
  w.dispatches_per_chunk_planned = 0;
  w.backend = def.backend;
  w.mode = def.mode;
  w.run_mode.reset();
  w.args.clear();
  w.signature.reset();
  w.variant.clear();
  w.rounds = 0;
  w.input = c.variants[0].report->workload.input;
  return c;
}

template <class Report>
std::string streamed(const Report& r) {
  std::ostringstream o;
  write_json(o, r);
  return o.str();
}

}  // namespace

TEST_CASE("schema: every struct of the report model is described once, every member, each key once") {
  check_described_once<HistSummary>("HistSummary");
  check_described_once<InputDesc>("InputDesc");
  check_described_once<Signature>("Signature");
  check_described_once<RunMode>("RunMode");
  check_described_once<ReportWorkload>("ReportWorkload");
  check_described_once<GpuEnvironment>("GpuEnvironment");
  check_described_once<Method>("Method");
  check_described_once<Timing>("Timing");
  check_described_once<MissRecord>("MissRecord");
  check_described_once<StallRecord>("StallRecord");
  check_described_once<Counts>("Counts");
  check_described_once<Headroom>("Headroom");
  check_described_once<Verdict>("Verdict");
  check_described_once<LongestGap>("LongestGap");
  check_described_once<Cadence>("Cadence");
  check_described_once<Throughput>("Throughput");
  check_described_once<Queues>("Queues");
  check_described_once<BackendCounters>("BackendCounters");
  check_described_once<Checksums>("Checksums");
  check_described_once<XrunRecord>("XrunRecord");
  check_described_once<DeviceSection>("DeviceSection");
  check_described_once<BaselineSummary>("BaselineSummary");
  check_described_once<ThreadRecord>("ThreadRecord");
  check_described_once<MachineLoad>("MachineLoad");
  check_described_once<PlatformSection>("PlatformSection");
  check_described_once<StreamFigures>("StreamFigures");
  check_described_once<StreamsSection>("StreamsSection");
  check_described_once<StepAudit>("StepAudit");
  check_described_once<StepRecord>("StepRecord");
  check_described_once<Finding>("Finding");
  check_described_once<RunReport>("RunReport");
  check_described_once<CompareVariant>("CompareVariant");
  check_described_once<CompareRow>("CompareRow");
  check_described_once<CompareSummary>("CompareSummary");
  check_described_once<CompareRound>("CompareRound");
  check_described_once<CompareRounds>("CompareRounds");
  check_described_once<CompareCall>("CompareCall");
  check_described_once<CompareRule>("CompareRule");

  // two structs name a nested member's fields in their own object: the environment's host
  // (Environment) and the comparison's workload (a ReportWorkload, described as its view)
  SUBCASE("the environment's host") {
    ReportEnvironment e;
    Visits seen(&e, sizeof e);
    seen.collapse(&e.host, sizeof e.host);
    Fields<ReportEnvironment>::each(seen, e);
    CHECK(seen.twice.empty());
    CHECK(seen.members() == member_count<ReportEnvironment>());
    CHECK(seen.inside(&e.host, sizeof e.host) == member_count<Environment>());
  }
  SUBCASE("the comparison's workload") {
    CompareReport c;
    Visits seen(&c, sizeof c);
    seen.collapse(&c.workload, sizeof c.workload);
    Fields<CompareReport>::each(seen, c);
    CHECK(seen.twice.empty());
    CHECK(seen.members() == member_count<CompareReport>());
    CHECK(seen.inside(&c.workload, sizeof c.workload) == member_count<ReportWorkload>());
  }
}

TEST_CASE("schema: the member counter sees a member the description leaves out") {
  // the check above could not pass by counting wrong: a struct with one member more than
  // its description names counts one more
  struct Wider {
    Timing t;
    int extra = 0;
  };
  CHECK(member_count<Timing>() == 3);
  CHECK(member_count<Wider>() == 2);
  Timing t;
  Visits seen(&t, sizeof t);
  Fields<Timing>::each(seen, t);
  CHECK(seen.members() == 3);
}

TEST_CASE("schema: a run report with every section filled reads back equal, whole and streamed") {
  const RunReport r = full_run_report();
  REQUIRE(r.device);
  REQUIRE(r.platform);
  REQUIRE(r.streams);
  REQUIRE(r.headroom);
  REQUIRE(r.cadence.steady);
  REQUIRE(r.steps.size() == 1);
  REQUIRE(r.steps[0].audit);
  REQUIRE(r.counts.stalls);
  REQUIRE(r.series.size() == 2);
  const nlohmann::json j = to_json(r);
  const RunReport back = run_report_from_json(j);
  CHECK(to_json(back).dump() == j.dump());  // where a field was lost, this names it
  CHECK(back == r);
  CHECK(run_report_from_json(nlohmann::json::parse(streamed(r))) == r);
  CHECK(streamed(r) == j.dump(2));
}

TEST_CASE("schema: a compare report with every section filled reads back equal, whole and streamed") {
  const CompareReport c = full_compare_report();
  REQUIRE(c.variants.size() == 1);
  REQUIRE(c.variants[0].report);
  REQUIRE(c.per_round.size() == 1);
  REQUIRE(c.differences.size() == 1);
  const nlohmann::json j = to_json(c);
  const CompareReport back = compare_report_from_json(j);
  CHECK(to_json(back).dump() == j.dump());
  CHECK(back == c);
  CHECK(compare_report_from_json(nlohmann::json::parse(streamed(c))) == c);
  CHECK(streamed(c) == j.dump(2));
}

TEST_CASE("schema: a value the description marks as not written does not round-trip, so the test above could fail") {
  // a compare workload leaves out the run's own settings: a filled one does not read back
  CompareReport c = full_compare_report();
  c.workload.backend = "cuda";
  CHECK_FALSE(compare_report_from_json(to_json(c)) == c);
}
