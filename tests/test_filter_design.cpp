#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>

#include "rt/cpu_backend.hpp"
#include "src/errors.hpp"
#include "src/filter_design.hpp"
#include "src/plan.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;
using nlohmann::json;

namespace {
json load(const std::string& rel) {
  std::ifstream in(testutil::source_dir() + "/" + rel);
  REQUIRE(in.good());
  return json::parse(in);
}
BType btype_of(const std::string& s) {
  if (s == "lowpass") return BType::lowpass;
  if (s == "highpass") return BType::highpass;
  if (s == "bandpass") return BType::bandpass;
  return BType::bandstop;
}
// |a - b| within 1e-9, relative to the coefficient's size when it is larger than 1.
bool close(double a, double b, double tol = 1e-9) { return std::fabs(a - b) <= tol * std::max(1.0, std::fabs(b)); }
}  // namespace

TEST_CASE("Butterworth sections equal scipy.signal.butter(output='sos') within 1e-9") {
  const json ref = load("tests/data/butter_ref.json");
  int cases = 0;
  double worst = 0;
  for (const auto& c : ref["cases"]) {
    const auto wn = c["wn"].get<std::vector<double>>();
    const auto got = butter_sos(c["order"].get<int>(), wn, btype_of(c["btype"]), c["fs"].get<double>());
    const auto& want = c["sos"];
    CAPTURE(c.dump());
    REQUIRE(got.size() == want.size());
    for (std::size_t s = 0; s < got.size(); ++s)
      for (std::size_t k = 0; k < 6; ++k) {
        const double w = want[s][k].get<double>();
        worst = std::max(worst, std::fabs(got[s][k] - w) / std::max(1.0, std::fabs(w)));
        CHECK(close(got[s][k], w));
      }
    ++cases;
  }
  CHECK(cases >= 200);
  MESSAGE("worst coefficient difference against scipy: " << worst);
}

TEST_CASE("Butterworth: tiny coefficients agree in relative terms too") {
  // An absolute 1e-9 says nothing about b0 ~ 1e-51; check the relative error of the gain.
  const json ref = load("tests/data/butter_ref.json");
  for (const auto& c : ref["cases"]) {
    const auto got = butter_sos(c["order"].get<int>(), c["wn"].get<std::vector<double>>(), btype_of(c["btype"]),
                                c["fs"].get<double>());
    const double w = c["sos"][0][0].get<double>();
    CAPTURE(c.dump());
    CHECK(std::fabs(got[0][0] - w) <= 1e-9 * std::fabs(w));
  }
}

TEST_CASE("Butterworth: bands mirrored about fs/4 give scipy's sections, order aside") {
  // With f1 + f2 = fs/2 the poles pair up with equal radius, and which one scipy takes first
  // is decided by rounding in its absolute-value routine; the set of sections is the same.
  const std::vector<Sos> ours = butter_sos(5, {11000, 13000}, BType::bandpass, 48000);
  const std::vector<double> f = {100, 5000, 11000, 12000, 13000, 20000};
  for (double x : f) {
    const double mag = sos_response_db(ours, x, 48000);
    if (x == 11000 || x == 13000) CHECK(mag == doctest::Approx(-3.0103).epsilon(1e-3));
    if (x == 12000) CHECK(std::fabs(mag) < 1e-6);
    if (x == 100 || x == 20000) CHECK(mag < -100);
  }
  CHECK(ours.size() == 5);
}

TEST_CASE("Butterworth: the magnitude is the bilinear Butterworth formula") {
  // |H(f)|^2 = 1 / (1 + (tan(pi f/fs) / tan(pi fc/fs))^(+-2N)): -3.01 dB at fc, maximally flat.
  const double fs = 48000, fc = 1000;
  for (int order : {1, 2, 3, 4, 7, 8, 16}) {
    CAPTURE(order);
    const auto lp = butter_sos(order, {fc}, BType::lowpass, fs);
    const auto hp = butter_sos(order, {fc}, BType::highpass, fs);
    for (double f : {10.0, 300.0, 1000.0, 1500.0, 5000.0}) {
      CAPTURE(f);
      const double r = std::tan(std::numbers::pi * f / fs) / std::tan(std::numbers::pi * fc / fs);
      const double want_lp = -10 * std::log10(1 + std::pow(r, 2 * order));
      const double want_hp = -10 * std::log10(1 + std::pow(r, -2 * order));
      // within 1e-9 dB plus 1e-7 relative (the -200 dB floor is below double rounding)
      if (want_lp > -200) CHECK(std::fabs(sos_response_db(lp, f, fs) - want_lp) <= 1e-9 + 1e-7 * std::fabs(want_lp));
      if (want_hp > -200) CHECK(std::fabs(sos_response_db(hp, f, fs) - want_hp) <= 1e-9 + 1e-7 * std::fabs(want_hp));
    }
    CHECK(sos_response_db(lp, fc, fs) == doctest::Approx(-3.0103).epsilon(1e-4));
  }
}

TEST_CASE("cookbook biquads: magnitude at known points") {
  const double fs = 48000, inv_sqrt2 = 1 / std::numbers::sqrt2;
  auto db = [&](StageKind k, double f0, double q, double g, double at, double s = 0) {
    return sos_response_db({normalized(cookbook_biquad(k, f0, fs, q, g, s))}, at, fs);
  };
  CHECK(db(StageKind::peak, 1000, 0.7, 6, 1000) == doctest::Approx(6).epsilon(1e-9));
  CHECK(db(StageKind::peak, 1000, 2, -12, 1000) == doctest::Approx(-12).epsilon(1e-9));
  CHECK(std::fabs(db(StageKind::peak, 1000, 2, -12, 20)) < 0.05);
  CHECK(db(StageKind::lp2, 2000, inv_sqrt2, 0, 2000) == doctest::Approx(-3.0103).epsilon(1e-4));
  CHECK(db(StageKind::hp2, 2000, inv_sqrt2, 0, 2000) == doctest::Approx(-3.0103).epsilon(1e-4));
  CHECK(std::fabs(db(StageKind::lp2, 2000, inv_sqrt2, 0, 1)) < 1e-6);  // unity at DC
  CHECK(db(StageKind::lp2, 2000, inv_sqrt2, 0, 23999) < -60);
  CHECK(std::fabs(db(StageKind::bp2, 3000, 2, 0, 3000)) < 1e-9);     // constant 0 dB peak
  CHECK(db(StageKind::notch, 50, 10, 0, 50) < -200);                  // a zero on the circle
  for (double f : {20.0, 500.0, 1000.0, 8000.0})
    CHECK(std::fabs(db(StageKind::allpass, 1000, 0.9, 0, f)) < 1e-9);  // flat magnitude
  // shelves: full gain far inside the shelf, half the gain (in dB) at f0
  CHECK(db(StageKind::lowshelf, 200, inv_sqrt2, 6, 5) == doctest::Approx(6).epsilon(1e-3));
  CHECK(db(StageKind::lowshelf, 200, inv_sqrt2, 6, 200) == doctest::Approx(3).epsilon(1e-6));
  CHECK(db(StageKind::highshelf, 5000, inv_sqrt2, -8, 23900) == doctest::Approx(-8).epsilon(1e-2));
  CHECK(db(StageKind::highshelf, 5000, inv_sqrt2, -8, 5000) == doctest::Approx(-4).epsilon(1e-6));
  CHECK(db(StageKind::lowshelf, 200, 0, 6, 200, 1.0) == doctest::Approx(3).epsilon(1e-6));
}

TEST_CASE("sos files: rows as scipy writes them are normalised, bad files are rejected with the line") {
  testutil::TempDir td;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(td.file(name)) << text;
    return td.file(name);
  };
  const auto good = write("good.sos", "# two sections\n2 4 2 2 -0.5 0.25\n1.0,0.0,0.0,1.0,0.1,0.0\n\n");
  const auto s = load_sos_file(good);
  REQUIRE(s.size() == 2);
  CHECK(s[0][0] == 1.0);
  CHECK(s[0][3] == 1.0);
  CHECK(s[0][4] == -0.25);
  auto err = [&](const std::string& path) {
    try {
      load_sos_file(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(err(write("a0.sos", "1 0 0 0 0.1 0\n")).find("line 1: a0 is 0") != std::string::npos);
  CHECK(err(write("cols.sos", "1 0 0 1 0.1 0\n1 2 3 4 5\n")).find("line 2: 5 columns") != std::string::npos);
  CHECK(err(write("unst.sos", "1 0 0 1 0 1.0\n")).find("unstable") != std::string::npos);     // poles on the circle
  CHECK(err(write("unst2.sos", "1 0 0 1 -2.5 1.2\n")).find("unstable") != std::string::npos);  // outside
  CHECK(err(write("nan.sos", "1 0 0 1 nan 0\n")).find("not a finite number") != std::string::npos);
  CHECK(err(write("word.sos", "1 0 0 1 x 0\n")).find("not a number") != std::string::npos);
  CHECK(err(write("empty.sos", "# nothing\n\n")).find("no sections") != std::string::npos);
  CHECK(err(td.file("missing.sos")).find("cannot open") != std::string::npos);
}

TEST_CASE("CPU backend f64 equals scipy.signal.sosfilt within 1e-12") {
  const json ref = load("tests/data/sosfilt_ref.json");
  const auto x = ref["input"]["x"].get<std::vector<double>>();
  // the input is also given by formula; check the stored one is what the formula says
  for (std::size_t n = 0; n < x.size(); n += 97) {
    const double pi = std::numbers::pi;
    double v = 0.0 + 0.5 * std::sin(2.0 * pi * 440.0 * static_cast<double>(n) / 48000.0) +
               0.25 * std::sin(2.0 * pi * 9000.0 * static_cast<double>(n) / 48000.0);
    if (n == 0) v += 1.0;
    CHECK(std::fabs(v - x[n]) < 1e-15);
  }
  for (const auto& chain : ref["chains"]) {
    CAPTURE(chain["name"].get<std::string>());
    std::vector<Sos> sos;
    for (const auto& r : chain["sos"]) sos.push_back(normalized({r[0], r[1], r[2], r[3], r[4], r[5]}));
    StageDesign d;
    d.spec.kind = StageKind::sos;
    d.spec.text = "sos";
    d.sections = sos;
    const Plan plan = plan_stages({d}, 48000, true, "sos");
    CpuBackend be;
    REQUIRE(be.prepare({48000, 1, 4096, DType::f64}, lay_out_plan(plan, 1)) == Status::ok);
    std::vector<double> y = x;
    REQUIRE(be.process({y.data(), static_cast<int>(y.size()), 1, DType::f64}, nullptr) == Status::ok);
    const auto want = chain["y"].get<std::vector<double>>();
    double worst = 0;
    for (std::size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(y[i] - want[i]));
    CHECK(worst <= 1e-12);
  }
}
