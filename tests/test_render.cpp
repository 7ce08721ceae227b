#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "src/errors.hpp"
#include "src/render/cadence_report.hpp"
#include "src/render/html.hpp"
#include "src/report/report_json.hpp"
#include "src/cli/report_cmd.hpp"
#include "tests/report_fixture.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

std::size_t count(const std::string& s, const std::string& p) {
  std::size_t n = 0;
  for (auto i = s.find(p); i != std::string::npos; i = s.find(p, i + p.size())) ++n;
  return n;
}

// The <svg> element with this id, or "".
std::string svg_of(const std::string& html, const std::string& id) {
  const auto b = html.find("<svg id=\"" + id + "\"");
  if (b == std::string::npos) return "";
  const auto e = html.find("</svg>", b);
  return e == std::string::npos ? "" : html.substr(b, e + 6 - b);
}

// The contents of the first <g class="cls"> group in `s`.
std::string group_of(const std::string& s, const std::string& cls) {
  const std::string open = "<g class=\"" + cls + "\">";
  const auto b = s.find(open);
  if (b == std::string::npos) return "";
  const auto e = s.find("</g>", b);
  return s.substr(b + open.size(), e - b - open.size());
}

const char* kRunPlots[] = {"plot-percentiles-latency", "plot-percentiles-source", "plot-percentiles-queue_in",
                           "plot-percentiles-process", "plot-percentiles-queue_out", "plot-percentiles-sink",
                           "plot-timeline",            "plot-breakdown",          "plot-cadence"};

void check_self_contained(const std::string& html) {
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(!has(html, "<script"));
  CHECK(!has(html, "src=\"http"));
  CHECK(!has(html, "href=\"http"));
  CHECK(!has(html, "url("));
  CHECK(!has(html, "@import"));
  CHECK(has(html, "</html>"));
}

// Runs f with std::cout captured.
template <typename F>
std::string capture_cout(F f) {
  std::ostringstream os;
  auto* old = std::cout.rdbuf(os.rdbuf());
  try {
    f();
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  return os.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream o(path, std::ios::binary);
  o << text;
}

// The InputError text of f(), or "" when it does not throw one.
template <typename F>
std::string input_error(F f) {
  try {
    f();
  } catch (const chunkscope::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("html: a 10-chunk run has every plot with data / no script and nothing fetched from elsewhere") {
  fixture::Options o;
  o.chunks = 10;
  o.warmup = 2;
  const std::string html = chunkscope::render_html(fixture::make_run_report(o));
  check_self_contained(html);
  for (const char* id : kRunPlots) {
    CAPTURE(id);
    const std::string svg = svg_of(html, id);
    REQUIRE(!svg.empty());
    CHECK((has(svg, "<polyline") || has(svg, "<path") || has(svg, "<rect x=")));
    CHECK(has(svg, "<title>"));
    CHECK(has(svg, "class=\"tick\""));  // labelled ticks
    CHECK(has(svg, "class=\"axl\""));   // axis labels
  }
  // one point per chunk: 8 counted and 2 warm-up, plus the legend's dot
  const std::string tl = svg_of(html, "plot-timeline");
  CHECK(count(tl, "<circle class=\"dot\"") == 8 + 1);
  CHECK(count(tl, "<circle class=\"wdot\"") == 2);
  CHECK(has(tl, "worst: chunk "));
  CHECK(has(html, "Verdict:"));
}

TEST_CASE("html: a million-chunk run stays small: every column with a miss shows it and the worst chunk is labelled") {
  fixture::Options o;
  o.chunks = 1000000;
  for (std::size_t i = 0; i < 50; ++i) o.spikes.push_back(i * 19997 + 1007);  // 50 misses in 50 distinct columns, none in warm-up
  o.spike_ns = 5e6;
  json r = fixture::make_run_report(o);
  // one unique worst chunk, far above the rest
  auto& lat = r["series"]["columns"]["latency_ns"];
  lat[765432] = 900000000;
  r["series"]["columns"]["flags"][765432] = 4;
  const std::string html = chunkscope::render_html(r);
  check_self_contained(html);
  CAPTURE(html.size());
  CHECK(html.size() < 2u * 1024 * 1024);
  const std::string tl = svg_of(html, "plot-timeline");
  CHECK(has(tl, "worst: chunk 765432, 900.000 ms"));
  CHECK(count(group_of(tl, "misses"), "<circle class=\"miss\"") == 51);
  // down-sampled: at most one min/max segment per pixel column
  const auto cols_at = tl.find("class=\"cols\"");
  REQUIRE(cols_at != std::string::npos);
  const std::string cols = tl.substr(cols_at, tl.find("/>", cols_at) - cols_at);
  CHECK(count(cols, "M") <= static_cast<std::size_t>(chunkscope::kPlotColumns));
  CHECK(count(cols, "M") >= static_cast<std::size_t>(chunkscope::kPlotColumns) - 1);
  for (const char* id : kRunPlots) CHECK(!svg_of(html, id).empty());
  CHECK(svg_of(html, "plot-cadence").size() < 200000);
}

TEST_CASE("html: drops are marked on the timeline axis") {
  fixture::Options o;
  o.chunks = 3000;
  o.drop_seqs = {1500, 1501, 2500};
  const std::string tl = svg_of(chunkscope::render_html(fixture::make_run_report(o)), "plot-timeline");
  // 1500 and 1501 share a pixel column (3003 chunk numbers in 1000 columns)
  CHECK(count(group_of(tl, "drops"), "<path class=\"drop\"") == 2);
  CHECK(has(tl, "dropped (3)"));
}

TEST_CASE("html: text from the report is escaped") {
  json r = fixture::make_run_report();
  r["workload"]["chain"] = "lp:<script>alert(1)</script> & 'x' | \"y\"";
  r["workload"]["source"] = "file a<b>.wav";
  r["verdict"]["text"] = "<b>bold</b>";
  const std::string html = chunkscope::render_html(r);
  check_self_contained(html);
  CHECK(has(html, "lp:&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#39;x&#39; | &quot;y&quot;"));
  CHECK(has(html, "file a&lt;b&gt;.wav"));
  CHECK(has(html, "&lt;b&gt;bold&lt;/b&gt;"));
  CHECK(!has(html, "a<b>"));
  CHECK(chunkscope::html_escape("<&>\"'") == "&lt;&amp;&gt;&quot;&#39;");
}

TEST_CASE("html: a report without a series draws what its summary allows and says per-chunk plots need a series") {
  fixture::Options o;
  o.spikes = {700};
  o.spike_ns = 5e6;
  o.drop_seqs = {900};
  json r = fixture::make_run_report(o);
  r.erase("series");
  const std::string html = chunkscope::render_html(r);
  check_self_contained(html);
  CHECK(has(html, "per-chunk plots need a report with a series"));
  for (const char* id : kRunPlots) {
    CAPTURE(id);
    CHECK(!svg_of(html, id).empty());
  }
  // the miss from counts.miss_list and the drop still show
  const std::string tl = svg_of(html, "plot-timeline");
  CHECK(count(group_of(tl, "misses"), "<circle class=\"miss\"") == 1);
  CHECK(count(group_of(tl, "drops"), "<path class=\"drop\"") == 1);
}

TEST_CASE("html: exact percentiles from the series are the nearest-rank values") {
  std::vector<std::int64_t> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i);
  CHECK(chunkscope::rj::rank_percentile(v, 50) == 500);
  CHECK(chunkscope::rj::rank_percentile(v, 99) == 990);
  CHECK(chunkscope::rj::rank_percentile(v, 99.9) == 999);
  CHECK(chunkscope::rj::rank_percentile(v, 100) == 1000);
  CHECK(chunkscope::rj::rank_percentile(v, 0) == 1);
  // the fixture's summary percentiles are computed the same way
  const json r = fixture::make_run_report();
  auto lat = chunkscope::rj::column(r, "latency_ns");
  const auto flags = chunkscope::rj::column(r, "flags");
  std::vector<std::int64_t> counted;
  for (std::size_t i = 0; i < lat.size(); ++i)
    if (!(flags[i] & 2)) counted.push_back(lat[i]);
  std::sort(counted.begin(), counted.end());
  CHECK(chunkscope::rj::rank_percentile(counted, 95) == r["latency"]["p95"].get<double>());
}

TEST_CASE("html: a compare report shows the variants side by side with ratios") {
  json a = fixture::make_run_report();
  fixture::Options o;
  o.backend = "cuda";
  o.mode = "graph";
  o.gpu_parts = true;
  json b = fixture::make_run_report(o);
  json c;
  c["schema"] = "chunkscope.compare/1";
  c["baseline"] = "cpu:fused";
  c["rounds"] = 3;
  c["workload"] = {{"chain", "hp:80:4 | lp:12000:8"}};
  c["environment"] = a["environment"];
  c["variants"] = json::array();
  c["variants"].push_back({{"name", "cpu:fused"}, {"available", true}, {"report", a}});
  c["variants"].push_back({{"name", "cuda:graph"}, {"available", true}, {"report", b}});
  c["variants"].push_back({{"name", "cuda:eager"}, {"available", false}, {"reason", "no CUDA device <none>"}});
  c["table"] = json::array();
  c["table"].push_back({{"variant", "cpu:fused"}, {"stage", "latency"}, {"p50", 1}, {"p95", 1}, {"p99", 1},
                        {"ratio_p50", 1.0}, {"ratio_p95", 1.0}, {"ratio_p99", 1.0}});
  c["table"].push_back({{"variant", "cuda:graph"}, {"stage", "latency"}, {"p50", 2}, {"p95", 2}, {"p99", 2},
                        {"ratio_p50", 0.25}, {"ratio_p95", 0.5}, {"ratio_p99", 0.75}});
  const std::string html = chunkscope::render_html(c);
  check_self_contained(html);
  const std::string cmp = svg_of(html, "plot-compare");
  REQUIRE(!cmp.empty());
  CHECK(has(cmp, "cpu:fused"));
  CHECK(has(cmp, "cuda:graph"));
  CHECK(has(cmp, "×0.25"));
  CHECK(has(cmp, "×0.50"));
  CHECK(!svg_of(html, "plot-compare-process").empty());
  CHECK(!svg_of(html, "plot-compare-percentiles").empty());
  CHECK(has(html, "no CUDA device &lt;none&gt;"));
  CHECK(count(html, "<h2>Variant ") == 2);
}

TEST_CASE("html: a document that is not a chunkscope report is refused") {
  CHECK(has(input_error([] { chunkscope::render_html(json{{"schema", "chunkscope.chain/1"}}); }), "schema 'chunkscope.chain/1'"));
  CHECK(has(input_error([] { chunkscope::render_html(json{{"a", 1}}); }), "no \"schema\" key"));
  CHECK(!input_error([] { chunkscope::render_html(json::array()); }).empty());
}

TEST_CASE("cadence: the histogram counts every counted period: longest gaps with chunk numbers: verdict") {
  fixture::Options o;
  o.spikes = {1000};
  o.spike_ns = 3e6;
  const json r = fixture::make_run_report(o);
  std::ostringstream os;
  chunkscope::print_cadence(os, r);
  const std::string s = os.str();
  CAPTURE(s);
  // the bars add up to the periods between counted chunks
  std::uint64_t total = 0;
  std::regex row(R"(\|[# ]+\|\s+(\d+))");
  for (std::sregex_iterator it(s.begin(), s.end(), row), end; it != end; ++it) total += std::stoull((*it)[1]);
  CHECK(total == r["cadence"]["period"]["count"].get<std::uint64_t>());
  CHECK(has(s, "µs"));
  CHECK(has(s, "<- D"));
  CHECK(has(s, "1. "));
  CHECK(has(s, "ended by chunk 1000 at"));
  CHECK(has(s, "late       1 output(s)"));
  CHECK(has(s, "chunks 1000"));
  CHECK(has(s, "verdict    not steady"));
  CHECK(has(s, "jitter     p95"));
  CHECK(has(s, "ppm"));

  std::ostringstream h;
  chunkscope::print_cadence(h, fixture::make_run_report());
  CHECK(has(h.str(), "verdict    steady"));
  CHECK(has(h.str(), "late       0 output(s)"));
}

TEST_CASE("cadence: a compare report is refused: a monitor run shows the callback period: no series still reports") {
  CHECK(has(input_error([] {
              std::ostringstream os;
              chunkscope::print_cadence(os, json{{"schema", "chunkscope.compare/1"}, {"variants", json::array()}});
            }),
            "pick one variant"));
  CHECK(has(input_error([] {
              std::ostringstream os;
              chunkscope::print_cadence(os, json{{"schema", "chunkscope.report/1"}});
            }),
            "no cadence data"));
  json m = fixture::make_run_report();
  m["workload"]["command"] = "monitor";
  const double D = m["timing"]["chunk_ns"];
  m["device"] = {{"callback_period", {{"count", 500}, {"min", D - 1000}, {"p50", D}, {"p95", D + 2000}, {"p99", D + 3000}, {"max", D + 9000}}},
                 {"xruns", 2},
                 {"underruns", 1}};
  std::ostringstream os;
  chunkscope::print_cadence(os, m);
  CHECK(has(os.str(), "callback period over 500 callbacks"));
  CHECK(has(os.str(), "(p50 = 1.000 D)"));
  CHECK(has(os.str(), "xruns 2, underruns 1"));
  json old = fixture::make_run_report();
  old.erase("series");
  std::ostringstream oo;
  chunkscope::print_cadence(oo, old);
  CHECK(has(oo.str(), "needs the per-chunk series"));
  CHECK(has(oo.str(), "only the longest is in a report without a series"));
}

TEST_CASE("report command: bad input files are one error line naming the file") {
  testutil::TempDir td;
  auto err = [](const std::string& path) {
    return input_error([&] { chunkscope::run_report_command({path, "", false}); });
  };
  const std::string missing = td.file("missing.json");
  CHECK(err(missing) == "report '" + missing + "': no such file");
  const std::string notjson = td.file("notes.json");
  write_text(notjson, "hello, world\n");
  CHECK(has(err(notjson), "report '" + notjson + "': not JSON"));
  const std::string empty = td.file("empty.json");
  write_text(empty, "");
  CHECK(has(err(empty), "empty file"));
  const std::string cut = td.file("cut.json");
  const std::string full = fixture::make_run_report().dump();
  write_text(cut, full.substr(0, full.size() / 2));
  CHECK(has(err(cut), "report '" + cut + "': truncated JSON"));
  const std::string chain = td.file("chain.json");
  write_text(chain, R"({"schema": "chunkscope.chain/1", "stages": []})");
  CHECK(err(chain) == "report '" + chain +
                          "': JSON but not a chunkscope report (schema 'chunkscope.chain/1'; expected chunkscope.report/1 or "
                          "chunkscope.compare/1)");
  const std::string noschema = td.file("noschema.json");
  write_text(noschema, R"({"a": 1})");
  CHECK(has(err(noschema), "no \"schema\" key"));
  const std::string arr = td.file("array.json");
  write_text(arr, "[1, 2]");
  CHECK(has(err(arr), "top-level array"));
  json damaged = fixture::make_run_report();
  damaged.erase("counts");
  const std::string dmg = td.file("damaged.json");
  write_text(dmg, damaged.dump());
  CHECK(has(err(dmg), "field 'counts': missing"));
  CHECK(has(err(td.path().string()), "is a folder"));
  for (const auto& p : {missing, notjson, cut, chain, dmg}) CHECK(!has(err(p), "\n"));
  // cadence uses the same loader
  CHECK(input_error([&] { chunkscope::run_cadence_command(missing); }) == "report '" + missing + "': no such file");
}

TEST_CASE("report command: the terminal report ends with the diagnosis: --html writes the page through a .partial file") {
  testutil::TempDir td;
  const std::string path = td.file("run.json");
  write_text(path, fixture::make_run_report().dump());
  const std::string out = capture_cout([&] { CHECK(chunkscope::run_report_command({path, "", false}) == 0); });
  CHECK(has(out, "headline"));
  const auto d = out.find("\ndiagnosis\n");
  REQUIRE(d != std::string::npos);
  CHECK(has(out.substr(d), "healthy"));
  // a diagnosis saved in the report is printed as it is
  json saved = fixture::make_run_report();
  saved["diagnosis"] = json::array({{{"rule", "saved_rule"}, {"severity", "info"}, {"finding", "x 1"},
                                     {"evidence", {{"n", 1}}}, {"confidence", "high"}, {"next", "y"}}});
  write_text(path, saved.dump());
  CHECK(has(capture_cout([&] { chunkscope::run_report_command({path, "", false}); }), "saved_rule"));

  const std::string html = td.file("page.html");
  const std::string o2 = capture_cout([&] { CHECK(chunkscope::run_report_command({path, html, false}) == 0); });
  CHECK(!has(o2, "headline"));  // --html alone: no terminal report
  CHECK(has(o2, html));
  CHECK(fs::exists(html));
  CHECK(!fs::exists(html + ".partial"));
  CHECK(testutil::slurp(html).rfind("<!DOCTYPE html>", 0) == 0);
  const std::string o3 = capture_cout([&] { chunkscope::run_report_command({path, html, true}); });
  CHECK(has(o3, "headline"));
  const std::string bad = td.file("nowhere/page.html");
  CHECK(input_error([&] { chunkscope::run_report_command({path, bad, false}); }) ==
        "--html '" + bad + "': folder '" + td.file("nowhere") + "' does not exist");
  CHECK(!fs::exists(bad));
}

TEST_CASE("cli report and cadence: exit 2 with one line naming the file") {
  testutil::TempDir td;
  const std::string missing = td.file("missing.json");
  const std::string chain = td.file("chain.json");
  write_text(chain, R"({"schema": "chunkscope.chain/1"})");
  for (const std::string cmd : {"report", "cadence"}) {
    CAPTURE(cmd);
    const auto a = testutil::run_cli({cmd, missing});
    CHECK(a.rc == 2);
    CHECK(a.err == "chunkscope: report '" + missing + "': no such file\n");
    CHECK(a.out.empty());
    const auto b = testutil::run_cli({cmd, chain});
    CHECK(b.rc == 2);
    CHECK(has(b.err, "schema 'chunkscope.chain/1'"));
    CHECK(std::count(b.err.begin(), b.err.end(), '\n') == 1);
  }
  const std::string run = td.file("run.json");
  write_text(run, fixture::make_run_report().dump());
  const auto h = testutil::run_cli({"report", run, "--html", td.file("no/such/dir/x.html")});
  CHECK(h.rc == 2);
  CHECK(std::count(h.err.begin(), h.err.end(), '\n') == 1);
}

TEST_CASE("cli report and cadence render a saved run") {
  testutil::TempDir td;
  const std::string run = td.file("run.json");
  write_text(run, fixture::make_run_report().dump());
  const auto t = testutil::run_cli({"report", run});
  CHECK(t.rc == 0);
  CHECK(has(t.out, "headline"));
  CHECK(has(t.out, "\ndiagnosis\n"));
  const std::string html = td.file("run.html");
  const auto h = testutil::run_cli({"report", run, "--html", html});
  CHECK(h.rc == 0);
  CHECK(fs::exists(html));
  const auto c = testutil::run_cli({"cadence", run});
  CHECK(c.rc == 0);
  CHECK(has(c.out, "histogram"));
  CHECK(has(c.out, "verdict"));
}
