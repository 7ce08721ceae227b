// Fuzzes the chain spec parser (src/chain_spec.cpp) and what follows it for every chain a
// user types: filter design and planning (src/filter_design.cpp, src/plan.cpp).
//
// Contract: any text either parses or throws InputError; nothing else escapes, nothing
// crashes, hangs or runs into undefined behaviour.
// Invariants of a chain that parses:
//  - every stage holds values in the ranges the parser promises (orders 1..16, finite
//    positive frequencies, band edges in order, times 0..1 h, every >= 1, ...);
//  - written back in canonical form (stage_text below) it parses again to the same stages;
//  - chain_files() lists exactly its sos: paths;
//  - each stage designs (at 48 kHz and 8 kHz) or throws InputError, and a design has
//    finite, normalised (a0 = 1), stable sections; the plan and its layout agree on the
//    number of dispatches, sections and state values.
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "src/chain_spec.hpp"
#include "src/errors.hpp"
#include "src/filter_design.hpp"
#include "src/plan.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace chunkscope;

namespace {

std::string num(double v) { return fmt::format("{:.17g}", v); }

// The stage in canonical form: every value written in full, nothing left to a default
// that the parser would fill differently.
std::string stage_text(const StageSpec& s) {
  const std::string name = stage_name(s.kind);
  switch (s.kind) {
    case StageKind::lowpass:
    case StageKind::highpass: return fmt::format("{}:{}:{}", name, num(s.freqs.at(0)), s.order);
    case StageKind::bandpass:
    case StageKind::bandstop:
      return fmt::format("{}:{}:{}:order={}", name, num(s.freqs.at(0)), num(s.freqs.at(1)), s.order);
    case StageKind::peak:
    case StageKind::lowshelf:
    case StageKind::highshelf: {
      std::string t = fmt::format("{}:{}:gain={}", name, num(s.freqs.at(0)), num(s.gain_db));
      if (s.q != 0) t += ":q=" + num(s.q);
      if (s.slope != 0) t += ":s=" + num(s.slope);
      return t;
    }
    case StageKind::notch:
    case StageKind::allpass:
    case StageKind::lp2:
    case StageKind::hp2:
    case StageKind::bp2: {
      std::string t = fmt::format("{}:{}", name, num(s.freqs.at(0)));
      if (s.q != 0) t += ":q=" + num(s.q);
      return t;
    }
    case StageKind::gain: return fmt::format("gain:{}dB", num(s.gain_db));
    case StageKind::sos: return "sos:" + s.path;
    case StageKind::spin:
    case StageKind::sleep: return fmt::format("{}:{}ns:every={}", name, s.time_ns, s.every);
    case StageKind::so:
    case StageKind::lv2:
    case StageKind::ladspa:
    case StageKind::faust: {
      std::string t = name + ":";
      if (s.kind == StageKind::ladspa)
        t += (s.path.empty() ? "" : s.path + ":") + s.label;
      else
        t += s.path;
      for (const auto& [k, v] : s.params) t += ":" + k + "=" + v;
      return t;
    }
  }
  fuzzutil::broken("stage kind %d has no name", static_cast<int>(s.kind));
}

bool same(const StageSpec& a, const StageSpec& b) {
  return a.kind == b.kind && a.freqs == b.freqs && a.order == b.order && a.q == b.q && a.slope == b.slope &&
         a.gain_db == b.gain_db && a.has_gain == b.has_gain && a.path == b.path && a.time_ns == b.time_ns &&
         a.every == b.every && a.label == b.label && a.params == b.params;
}

void check_ranges(const StageSpec& s) {
  for (double f : s.freqs) FUZZ_CHECK(std::isfinite(f) && f > 0);
  FUZZ_CHECK(std::isfinite(s.q) && s.q >= 0);
  FUZZ_CHECK(std::isfinite(s.slope) && s.slope >= 0);
  FUZZ_CHECK(std::isfinite(s.gain_db));
  FUZZ_CHECK(s.text.find('|') == std::string::npos);
  switch (s.kind) {
    case StageKind::lowpass:
    case StageKind::highpass:
      FUZZ_CHECK(s.freqs.size() == 1);
      FUZZ_CHECK(s.order >= 1 && s.order <= 16);
      break;
    case StageKind::bandpass:
    case StageKind::bandstop:
      FUZZ_CHECK(s.freqs.size() == 2 && s.freqs[0] < s.freqs[1]);
      FUZZ_CHECK(s.order >= 1 && s.order <= 16);
      break;
    case StageKind::peak:
    case StageKind::lowshelf:
    case StageKind::highshelf:
      FUZZ_CHECK(s.freqs.size() == 1 && s.has_gain);
      FUZZ_CHECK(s.q == 0 || s.slope == 0);
      break;
    case StageKind::notch:
    case StageKind::allpass:
    case StageKind::lp2:
    case StageKind::hp2:
    case StageKind::bp2: FUZZ_CHECK(s.freqs.size() == 1); break;
    case StageKind::gain: FUZZ_CHECK(s.has_gain && std::fabs(s.gain_db) <= 200); break;
    case StageKind::sos:
      FUZZ_CHECK(!s.path.empty());
      FUZZ_CHECK(s.path.find('|') == std::string::npos);
      break;
    case StageKind::spin:
    case StageKind::sleep:
      FUZZ_CHECK(s.time_ns >= 0 && s.time_ns <= std::int64_t{3600} * 1000000000);
      FUZZ_CHECK(s.every >= 1);
      break;
    case StageKind::lv2:
    case StageKind::ladspa:
      FUZZ_CHECK(s.kind == StageKind::lv2 ? !s.path.empty() : !s.label.empty());
      FUZZ_CHECK(s.path.find('|') == std::string::npos);
      break;
    case StageKind::so:
      FUZZ_CHECK(!s.path.empty());
      FUZZ_CHECK(s.path.find('|') == std::string::npos);
      for (const auto& [key, value] : s.params) {
        FUZZ_CHECK(!key.empty() && key.find_first_of(":=/| \t") == std::string::npos);
        FUZZ_CHECK(value.find_first_of(":/|") == std::string::npos);
      }
      break;
    case StageKind::faust:  // keys may be control paths; the compiler options may name folders
      FUZZ_CHECK(!s.path.empty());
      FUZZ_CHECK(s.path.find('|') == std::string::npos);
      for (const auto& [key, value] : s.params) {
        FUZZ_CHECK(!key.empty() && key.find_first_of(":=| \t") == std::string::npos);
        FUZZ_CHECK(value.find_first_of(key == "opts" ? ":|" : ":/|") == std::string::npos);
      }
      break;
  }
}

void check_design(const ChainSpec& chain, double rate) {
  std::vector<StageDesign> designs;
  for (const auto& st : chain.stages) {
    if (st.kind == StageKind::sos) continue;  // reads a file: fuzz_sos_file covers it
    if (is_hosted(st.kind)) continue;          // loads and runs a library: never on fuzzed input
    StageDesign d;
    try {
      d = design_stage(st, rate);
    } catch (const InputError& e) {
      FUZZ_CHECK(*e.what() != '\0');
      continue;
    }
    FUZZ_CHECK(is_iir(st.kind) != d.sections.empty());
    for (const auto& s : d.sections) {
      for (double c : s) FUZZ_CHECK(std::isfinite(c));
      FUZZ_CHECK(s[3] == 1.0);
      FUZZ_CHECK(sos_stable(s));
    }
    designs.push_back(std::move(d));
  }
  for (const bool fuse : {true, false}) {
    const Plan plan = plan_stages(designs, rate, fuse, chain.text);
    const ChainLayout lay = lay_out_plan(plan, 2);
    FUZZ_CHECK(lay.steps.size() == plan.steps.size());
    FUZZ_CHECK(lay.cascades == plan.dispatches());
    FUZZ_CHECK(lay.coef.size() == 5 * plan.total_sections());
    FUZZ_CHECK(lay.state_values == 2 * 2 * plan.total_sections());
    std::size_t filters = 0;
    for (const auto& d : designs) filters += is_iir(d.spec.kind) ? 1 : 0;
    if (!fuse) FUZZ_CHECK(plan.dispatches() == filters);
    FUZZ_CHECK(plan.host_steps() == designs.size() - filters);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;  // a chain spec is a command-line argument
  const std::string_view text = fuzzutil::as_text(data, size);
  ChainSpec chain;
  try {
    chain = parse_chain(text);
  } catch (const InputError& e) {
    FUZZ_CHECK(*e.what() != '\0');
    // chain_files() refuses what parse_chain refuses, but for a blank spec (no files)
    const bool blank = text.find_first_not_of(" \t\r\n") == std::string_view::npos;
    bool refused = false;
    try {
      FUZZ_CHECK(chain_files(text).empty());
    } catch (const InputError&) {
      refused = true;
    }
    FUZZ_CHECK(refused != blank);
    return 0;
  }
  FUZZ_CHECK(!chain.stages.empty());

  std::string canonical;
  std::vector<std::string> paths;
  for (const auto& st : chain.stages) {
    check_ranges(st);
    if (!canonical.empty()) canonical += " | ";
    canonical += stage_text(st);
    if (st.kind == StageKind::sos) paths.push_back(st.path);
  }
  FUZZ_CHECK(chain_files(text) == paths);

  ChainSpec again;
  try {
    again = parse_chain(canonical);
  } catch (const InputError& e) {
    fuzzutil::broken("the canonical form '%s' of a chain that parsed is refused: %s", canonical.c_str(), e.what());
  }
  FUZZ_CHECK(again.stages.size() == chain.stages.size());
  for (std::size_t i = 0; i < chain.stages.size(); ++i)
    if (!same(chain.stages[i], again.stages[i]))
      fuzzutil::broken("stage %zu '%s' reads back from '%s' as something else", i + 1, chain.stages[i].text.c_str(),
                       stage_text(chain.stages[i]).c_str());

  for (const double rate : {48000.0, 8000.0}) check_design(chain, rate);
  return 0;
}
