// Two cases for check_skip_rule.cmake: one that fails and then says it skipped (a failure),
// one that only says it skipped (skipped).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "tests/skip_listener.hpp"

TEST_CASE("probe: fails and then says skipped") {
  CHECK(1 + 1 == 3);
  MESSAGE("skipped: this case failed first");
}

TEST_CASE("probe: says skipped") { MESSAGE("skipped: nothing to run here"); }
