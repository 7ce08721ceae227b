#pragma once
// A test case that skips (MESSAGE("skipped: <what is missing>")) is reported skipped only when
// nothing in it failed: this listener prints "CASE SKIPPED: <reason>" at the end of a case that
// said it skipped and has no failed assertion, and ctest's skip pattern is that line. A case
// that checked something, failed, then said "skipped" is a failure. Include it in one file of
// a doctest program.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

namespace testutil {

class SkipListener : public doctest::IReporter {
 public:
  explicit SkipListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { reason_.clear(); }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& st) override {
    if (!reason_.empty() && st.numAssertsFailedCurrentTest == 0 && st.testCaseSuccess)
      std::printf("CASE SKIPPED: %s\n", reason_.c_str());
    std::fflush(stdout);
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData& m) override {
    const std::string s = m.m_string.c_str();
    if (s.rfind("skipped: ", 0) == 0) reason_ = s.substr(9);
  }
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  std::string reason_;
};

}  // namespace testutil

REGISTER_LISTENER("skip", 1, testutil::SkipListener);
