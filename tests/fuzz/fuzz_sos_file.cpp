// Fuzzes the SOS coefficient file reader, load_sos_file() (src/filter_design.cpp), which
// reads its file through read_text_file_bounded() (src/io/input_file.cpp), and the design
// of an `sos:<file>` stage that uses it.
//
// Contract: any file content either reads or throws InputError; nothing else escapes,
// nothing crashes, hangs or runs into undefined behaviour.
// Invariants of a file that reads:
//  - at least one section, each normalised (a0 = 1) and stable;
//  - the sections written back one per line ("%.17g", six columns) read again to the
//    same sections, bit for bit;
//  - the `sos:` stage designs to those sections or throws InputError, and what it designs
//    is finite and stable (a section that overflows when normalised is refused, not kept).
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "src/chain_spec.hpp"
#include "src/errors.hpp"
#include "src/filter_design.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace chunkscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzzutil::MemFile file;
  file.set(fuzzutil::as_text(data, size));

  std::vector<Sos> sections;
  try {
    sections = load_sos_file(file.path());
  } catch (const InputError& e) {
    FUZZ_CHECK(*e.what() != '\0');
    return 0;
  }
  FUZZ_CHECK(!sections.empty());
  for (const auto& s : sections) {
    FUZZ_CHECK(s[3] == 1.0);
    FUZZ_CHECK(sos_stable(s));
  }

  bool all_finite = true;
  std::string written;
  for (const auto& s : sections) {
    for (double c : s) all_finite = all_finite && std::isfinite(c);
    written += fmt::format("{:.17g} {:.17g} {:.17g} {:.17g} {:.17g} {:.17g}\n", s[0], s[1], s[2], s[3], s[4], s[5]);
  }
  if (all_finite) {
    file.set(written);
    std::vector<Sos> again;
    try {
      again = load_sos_file(file.path());
    } catch (const InputError& e) {
      fuzzutil::broken("sections that were read are refused when written back: %s", e.what());
    }
    FUZZ_CHECK(again == sections);
  }

  StageSpec spec;
  spec.kind = StageKind::sos;
  spec.text = "sos:" + file.path();
  spec.path = file.path();
  StageDesign d;
  try {
    d = design_stage(spec, 48000);
  } catch (const InputError& e) {
    FUZZ_CHECK(*e.what() != '\0');
    return 0;
  }
  FUZZ_CHECK(d.sections.size() == sections.size());
  for (const auto& s : d.sections) {
    for (double c : s) FUZZ_CHECK(std::isfinite(c));
    FUZZ_CHECK(s[3] == 1.0);
    FUZZ_CHECK(sos_stable(s));
  }
  return 0;
}
