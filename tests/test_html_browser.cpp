// The HTML report in a real browser: headless Chromium loads the page offline, takes a
// screenshot and dumps the DOM; the test checks the page loaded without errors and that
// every plot's SVG is there with content. Skips when chromium is not installed.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "src/render/html.hpp"
#include "src/report/schema.hpp"
#include "tests/report_fixture.hpp"
#include "tests/test_util.hpp"

namespace fs = std::filesystem;

namespace {

bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

bool chromium_installed() { return std::system("command -v chromium >/dev/null 2>&1") == 0; }

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Browser {
  int rc = -1;
  std::string out, err;
};

// Runs headless Chromium on `html` with a fresh profile, nothing from the network, at most 60 s.
Browser chromium(const testutil::TempDir& td, const std::string& html, const std::string& action) {
  static int n = 0;
  const std::string profile = td.file("profile-" + std::to_string(++n));
  fs::create_directories(profile);
  const std::string out = td.file("chromium.out"), err = td.file("chromium.err");
  const std::string cmd = "timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run "
                          "--disable-background-networking --disable-quic --disable-component-update --disable-sync "
                          "--enable-logging=stderr --v=0 --user-data-dir=" +
                          quote(profile) + " --window-size=1280,4000 " + action + " " + quote("file://" + html) + " >" +
                          quote(out) + " 2>" + quote(err) + " </dev/null";
  const int st = std::system(cmd.c_str());
  Browser b;
  b.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  b.out = testutil::slurp(out);
  b.err = testutil::slurp(err);
  return b;
}

// Log lines about the page itself: script errors, console messages, failed loads.
std::vector<std::string> page_errors(const std::string& log) {
  std::vector<std::string> bad;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line))
    if (has(line, "Uncaught") || has(line, "CONSOLE") || has(line, "Failed to load resource") ||
        (has(line, "net::ERR_") && has(line, "file://")))
      bad.push_back(line);
  return bad;
}

std::uint32_t be32(const std::string& s, std::size_t at) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 3]));
}

// The serialised <svg> element with this id in a dumped DOM, or "".
std::string svg_in_dom(const std::string& dom, const std::string& id) {
  const auto at = dom.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  const auto b = dom.rfind("<svg", at);
  const auto e = dom.find("</svg>", at);
  if (b == std::string::npos || e == std::string::npos) return "";
  return dom.substr(b, e + 6 - b);
}

void check_page(const testutil::TempDir& td, const std::string& html, const std::vector<std::string>& plots,
                bool screenshot) {
  if (screenshot) {
    const std::string png = td.file("shot-" + fs::path(html).stem().string() + ".png");
    const Browser s = chromium(td, html, "--screenshot=" + quote(png));
    CAPTURE(s.err.substr(0, 2000));
    REQUIRE(s.rc != 124);  // the browser hung
    CHECK(s.rc == 0);
    CHECK(page_errors(s.err).empty());
    REQUIRE(fs::exists(png));
    const std::string img = testutil::slurp(png);
    CHECK(img.size() > 20 * 1024);  // a blank page of this size compresses to a few KB
    REQUIRE(img.size() > 24);
    CHECK(img.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
    CHECK(img.substr(12, 4) == "IHDR");
    CHECK(be32(img, 16) == 1280);
    CHECK(be32(img, 20) == 4000);
  }
  const Browser d = chromium(td, html, "--dump-dom");
  CAPTURE(d.err.substr(0, 2000));
  REQUIRE(d.rc != 124);
  CHECK(d.rc == 0);
  CHECK(page_errors(d.err).empty());
  CHECK(has(d.out, "</html>"));
  CHECK(!has(d.out, "<script"));
  for (const auto& id : plots) {
    CAPTURE(id);
    const std::string svg = svg_in_dom(d.out, id);
    REQUIRE(!svg.empty());
    CHECK(svg.size() > 1000);
    CHECK((has(svg, "<polyline") || has(svg, "<path") || has(svg, "<rect x=")));
    CHECK(has(svg, "<text"));
  }
}

const std::vector<std::string> kRunPlots = {"plot-percentiles-latency", "plot-percentiles-source", "plot-percentiles-queue_in",
                                            "plot-percentiles-process", "plot-percentiles-queue_out", "plot-percentiles-sink",
                                            "plot-timeline", "plot-breakdown", "plot-cadence"};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream o(path, std::ios::binary);
  o << text;
}

}  // namespace

TEST_CASE("html in headless chromium: a real synth run loads without errors and every plot has content") {
  if (!chromium_installed()) {
    MESSAGE("skipped: chromium is not installed (Debian package chromium)");
    return;
  }
  testutil::TempDir td;
  const std::string dir = td.file("run");
  const auto run = testutil::run_cli({"synth", "--signal", "noise", "--duration", "1s", "--chunk", "256", "--report-dir", dir, "--quiet"});
  REQUIRE(run.rc == 0);
  const std::string json = dir + "/report.json";
  REQUIRE(fs::exists(json));
  const std::string html = td.file("run.html");
  const auto rep = testutil::run_cli({"report", json, "--html", html});
  CAPTURE(rep.err);
  REQUIRE(rep.rc == 0);
  REQUIRE(fs::exists(html));
  check_page(td, html, kRunPlots, true);
}

TEST_CASE("html in headless chromium: a million-chunk report loads without errors") {
  if (!chromium_installed()) {
    MESSAGE("skipped: chromium is not installed (Debian package chromium)");
    return;
  }
  testutil::TempDir td;
  fixture::Options o;
  o.chunks = 1000000;
  o.spikes = {123456, 654321};
  o.spike_ns = 6e6;
  const std::string html = td.file("million.html");
  write_text(html, chunkscope::render_html(chunkscope::run_report_from_json(fixture::make_run_report(o))));
  check_page(td, html, kRunPlots, true);
}

TEST_CASE("html in headless chromium: a compare report loads without errors and its plots have content") {
  if (!chromium_installed()) {
    MESSAGE("skipped: chromium is not installed (Debian package chromium)");
    return;
  }
  testutil::TempDir td;
  fixture::Options g;
  g.backend = "cuda";
  g.mode = "graph";
  g.gpu_parts = true;
  nlohmann::json c;
  c["schema"] = "chunkscope.compare/1";
  c["baseline"] = "cpu:fused";
  c["rounds"] = 2;
  c["variants"] = nlohmann::json::array();
  c["variants"].push_back({{"name", "cpu:fused"}, {"available", true}, {"report", fixture::make_run_report()}});
  c["variants"].push_back({{"name", "cuda:graph"}, {"available", true}, {"report", fixture::make_run_report(g)}});
  const std::string html = td.file("compare.html");
  auto cmp = chunkscope::compare_report_from_json(c);
  for (const auto& v : cmp.variants) {
    chunkscope::CompareSummary s;
    s.variant = v.name;
    s.latency_p95_ns = v.report->latency.p95;
    s.realtime_safe = v.report->verdict.realtime_safe;
    cmp.summary.push_back(s);
  }
  write_text(html, chunkscope::render_html(cmp));
  check_page(td, html, {"plot-compare", "plot-compare-process", "plot-compare-percentiles"}, false);
}
