#include <doctest/doctest.h>

#include <string>

#include "src/chain_spec.hpp"
#include "src/errors.hpp"
#include "src/plan.hpp"

using namespace chunkscope;

namespace {
// The message of the InputError that `f` throws, or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("chain spec: the documented example parses into three stages") {
  const auto c = parse_chain("hp:80:4 | lp:12000:8 | peak:1000:q=0.7:gain=6");
  REQUIRE(c.stages.size() == 3);
  CHECK(c.stages[0].kind == StageKind::highpass);
  CHECK(c.stages[0].freqs == std::vector<double>{80});
  CHECK(c.stages[0].order == 4);
  CHECK(c.stages[1].kind == StageKind::lowpass);
  CHECK(c.stages[1].order == 8);
  CHECK(c.stages[2].kind == StageKind::peak);
  CHECK(c.stages[2].q == doctest::Approx(0.7));
  CHECK(c.stages[2].gain_db == doctest::Approx(6));
  CHECK(c.stages[2].text == "peak:1000:q=0.7:gain=6");
}

TEST_CASE("chain spec: every stage kind, units and defaults") {
  const auto c = parse_chain(
      "bp:300:3400:4|bs:1k:2kHz|lowshelf:100:gain=-3:s=1|highshelf:8k:gain=2|notch:50Hz:q=10|allpass:1000|"
      "lp2:5000|hp2:40:q=0.5|bp2:1000:q=2|gain:-6dB|spin:250us|sleep:1.5ms:every=4|lp:1000");
  REQUIRE(c.stages.size() == 13);
  CHECK(c.stages[0].freqs == std::vector<double>{300, 3400});
  CHECK(c.stages[1].freqs == std::vector<double>{1000, 2000});
  CHECK(c.stages[1].order == 2);  // documented default order
  CHECK(c.stages[2].slope == doctest::Approx(1));
  CHECK(c.stages[3].freqs[0] == doctest::Approx(8000));
  CHECK(c.stages[4].freqs[0] == doctest::Approx(50));
  CHECK(c.stages[9].gain_db == doctest::Approx(-6));
  CHECK(c.stages[10].time_ns == 250'000);
  CHECK(c.stages[11].time_ns == 1'500'000);
  CHECK(c.stages[11].every == 4);
  CHECK(c.stages[12].order == 2);
}

TEST_CASE("durations") {
  CHECK(parse_duration_ns("250us", "t") == 250'000);
  CHECK(parse_duration_ns("1.5ms", "t") == 1'500'000);
  CHECK(parse_duration_ns("2s", "t") == 2'000'000'000);
  CHECK(parse_duration_ns("800ns", "t") == 800);
  CHECK(has(error_of([] { parse_duration_ns("5", "t"); }), "needs a unit"));
  CHECK(has(error_of([] { parse_duration_ns("-1ms", "t"); }), "negative"));
  CHECK(has(error_of([] { parse_duration_ns("xms", "t"); }), "not a number"));
}

TEST_CASE("bad chain specs: one clear message naming the stage and the problem") {
  struct Case {
    const char* spec;
    const char* expect;
  };
  const Case cases[] = {
      {"", "empty"},
      {"lp:1000 | | hp:20", "stage 2 is empty"},
      {"lp:1000 |", "stage 2 is empty"},
      {"wobble:3", "unknown stage 'wobble'"},
      {"lp", "missing argument"},
      {"lp:1000:4:5", "too many arguments"},
      {"bp:300", "missing argument"},
      {"lp:abc", "'abc' is not a number"},
      {"lp:1000:x", "not a number"},
      {"lp:0", "must be above 0"},
      {"lp:-5", "must be above 0"},
      {"bp:3000:300", "band edges out of order"},
      {"bp:300:300", "band edges out of order"},
      {"lp:1000:0", "out of range 1..16"},
      {"lp:1000:17", "out of range 1..16"},
      {"lp:1000:2.5", "not an integer"},
      {"peak:1000:q=0:gain=3", "must be above 0"},
      {"peak:1000:q=-1:gain=3", "must be above 0"},
      {"peak:1000:q=0.7", "missing gain"},
      {"lp:nan", "not a finite number"},
      {"lp:inf", "not a finite number"},
      {"gain:NaN", "not a finite number"},
      {"peak:1000:q=inf:gain=1", "not a finite number"},
      {"lp:1000:order=4:q=1", "unknown key 'q'"},
      {"peak:1000:gain=1:gain=2", "given twice"},
      {"spin:5", "needs a unit"},
      {"spin:1ms:every=0", "every=0"},
      {"sleep:1ms:every=1.5", "every=1.5"},
      {"sos:", "missing file"},
      {"lp::4", "empty argument"},
      {"peak:1000:=3", "no key"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.spec);
    const auto msg = error_of([&] { parse_chain(c.spec); });
    CHECK(has(msg, c.expect));
    CHECK(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("rate-dependent checks happen at design: cutoff at or above Nyquist") {
  CHECK(has(error_of([] { plan_chain("lp:24000", 48000); }), "not below Nyquist"));
  CHECK(has(error_of([] { plan_chain("lp:30000", 48000); }), "not below Nyquist"));
  CHECK(has(error_of([] { plan_chain("bp:100:22050", 44100); }), "not below Nyquist"));
  CHECK(has(error_of([] { plan_chain("peak:23000:gain=3", 44100); }), "not below Nyquist"));
  CHECK(error_of([] { plan_chain("lp:23000", 48000); }).empty());
  CHECK(has(error_of([] { plan_chain("lp:1000", 0); }), "rate"));
}

TEST_CASE("planner: consecutive filters fuse into one dispatch - --no-fuse keeps one per filter") {
  for (int n : {1, 2, 5, 10, 20}) {
    std::string spec;
    for (int i = 0; i < n; ++i) spec += (i ? " | " : "") + std::string("peak:") + std::to_string(100 + 50 * i) + ":gain=1";
    const auto fused = plan_chain(spec, 48000, true);
    const auto unfused = plan_chain(spec, 48000, false);
    CAPTURE(n);
    CHECK(fused.dispatches() == 1);
    CHECK(unfused.dispatches() == static_cast<std::size_t>(n));
    CHECK(fused.total_sections() == static_cast<std::size_t>(n));
    CHECK(unfused.total_sections() == static_cast<std::size_t>(n));
  }
  // Butterworth order 8 = 4 sections, order 3 = 2 sections.
  const auto p = plan_chain("hp:80:3 | lp:12000:8", 48000);
  CHECK(p.dispatches() == 1);
  CHECK(p.total_sections() == 6);
}

TEST_CASE("planner: calibration stages split cascades - gains fold into the next filter") {
  const auto p = plan_chain("lp:1000 | gain:6 | hp:50 | spin:100us | peak:1000:gain=3 | sleep:1ms", 48000);
  REQUIRE(p.steps.size() == 4);
  CHECK(p.steps[0].kind == PlanStep::Kind::cascade);
  CHECK(p.steps[0].sections.size() == 2);  // the gain costs no section
  CHECK(p.steps[1].kind == PlanStep::Kind::spin);
  CHECK(p.steps[2].sections.size() == 1);
  CHECK(p.steps[3].kind == PlanStep::Kind::sleep);
  CHECK(p.dispatches() == 2);
  CHECK(p.host_steps() == 2);
  const auto g = plan_chain("gain:-6", 48000);
  REQUIRE(g.steps.size() == 1);
  CHECK(g.steps[0].sections.size() == 1);
  CHECK(g.steps[0].sections[0][0] == doctest::Approx(0.501187).epsilon(1e-5));
}

TEST_CASE("chain spec: a misspelt stage name gets a did-you-mean, a cookbook gain takes dB like gain: does") {
  struct Case {
    const char* spec;
    const char* says;
  };
  for (const Case& c : {Case{"lpf:1k", "unknown stage 'lpf'; did you mean 'lp'?"},
                        Case{"LP:1k", "unknown stage 'LP'; did you mean 'lp'?"},
                        Case{"highpass:80", "did you mean 'hp'?"},
                        Case{"peek:1k:gain=3", "did you mean 'peak'?"},
                        Case{"notch2:1k", "did you mean 'notch'?"}}) {
    CAPTURE(c.spec);
    CHECK_THROWS_WITH_AS(parse_chain(c.spec), doctest::Contains(c.says), InputError);
  }
  try {
    (void)parse_chain("zzz:1");
    FAIL("zzz is not a stage");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("did you mean") == std::string::npos);  // nothing close: no guess
  }
  const auto a = parse_chain("peak:1k:gain=6dB | lowshelf:100:gain=-3 dB").stages;
  CHECK(a[0].gain_db == 6.0);
  CHECK(a[1].gain_db == -3.0);
  CHECK(parse_chain("peak:1k:gain=6").stages[0].gain_db == parse_chain("peak:1k:gain=6dB").stages[0].gain_db);
}
