#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>

#include "src/cli/report_cmd.hpp"
#include "src/errors.hpp"
#include "src/render/cadence_report.hpp"
#include "src/render/html.hpp"
#include "src/render/plot.hpp"
#include "src/render/series_view.hpp"
#include "src/render/sections.hpp"
#include "src/report/format.hpp"
#include "src/report/terminal.hpp"
#include "src/report/schema.hpp"
#include "tests/report_fixture.hpp"
#include "tests/test_util.hpp"

using nlohmann::json;
namespace fs = std::filesystem;
using chunkscope::RunReport;

namespace {

bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

std::size_t count(const std::string& s, const std::string& p) {
  std::size_t n = 0;
  for (auto i = s.find(p); i != std::string::npos; i = s.find(p, i + p.size())) ++n;
  return n;
}

RunReport run_of(const json& j) { return chunkscope::run_report_from_json(j); }
RunReport run_of(const fixture::Options& o = {}) { return run_of(fixture::make_run_report(o)); }
std::string page_of(const fixture::Options& o = {}) { return chunkscope::render_html(run_of(o)); }

// The <svg> element with this id, or "".
std::string svg_of(const std::string& html, const std::string& id) {
  const auto b = html.find("<svg id=\"" + id + "\"");
  if (b == std::string::npos) return "";
  const auto e = html.find("</svg>", b);
  return e == std::string::npos ? "" : html.substr(b, e + 6 - b);
}

// The contents of the first <g class="cls"> group in `s` (groups here hold no groups).
std::string group_of(const std::string& s, const std::string& cls) {
  const std::string open = "<g class=\"" + cls + "\">";
  const auto b = s.find(open);
  if (b == std::string::npos) return "";
  const auto e = s.find("</g>", b);
  return s.substr(b + open.size(), e - b - open.size());
}

// Every <svg> of a page, by id.
std::vector<std::pair<std::string, std::string>> svgs_of(const std::string& html) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::regex id(R"re(<svg id="([^"]+)")re");
  for (std::sregex_iterator it(html.begin(), html.end(), id), end; it != end; ++it)
    out.emplace_back((*it)[1], svg_of(html, (*it)[1]));
  return out;
}

// The legend items of a plot (each <g class="li">...</g>).
std::vector<std::string> legend_items(const std::string& svg) {
  std::vector<std::string> out;
  const std::string open = "<g class=\"li\">";
  for (auto b = svg.find(open); b != std::string::npos; b = svg.find(open, b + 1))
    out.push_back(svg.substr(b, svg.find("</g>", b) - b));
  return out;
}

const char* kRunPlots[] = {"plot-percentiles-latency",
                           "plot-percentiles-source",
                           "plot-percentiles-queue_in",
                           "plot-percentiles-process",
                           "plot-percentiles-queue_out",
                           "plot-percentiles-sink",
                           "plot-timeline",
                           "plot-breakdown",
                           "plot-cadence"};

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

// A compare report of the fixture's CPU run (baseline) and a CUDA graph run, and a
// variant that could not run.
json compare_json(const json& a, const json& b) {
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
  c["table"].push_back({{"variant", "cpu:fused"},
                        {"stage", "end-to-end"},
                        {"p50", 1},
                        {"p95", 1},
                        {"p99", 1},
                        {"ratio_p50", 1.0},
                        {"ratio_p95", 1.0},
                        {"ratio_p99", 1.0}});
  c["table"].push_back({{"variant", "cuda:graph"},
                        {"stage", "end-to-end"},
                        {"p50", 2},
                        {"p95", 2},
                        {"p99", 2},
                        {"ratio_p50", 0.25},
                        {"ratio_p95", 0.5},
                        {"ratio_p99", 0.75}});
  return c;
}

json gpu_run_json() {
  fixture::Options o;
  o.backend = "cuda";
  o.mode = "graph";
  o.gpu_parts = true;
  return fixture::make_run_report(o);
}

// Hue in degrees and saturation of "#rrggbb".
std::pair<double, double> hue_sat(const std::string& hex) {
  const auto v = std::stoul(hex.substr(1), nullptr, 16);
  const double r = ((v >> 16) & 255) / 255.0, g = ((v >> 8) & 255) / 255.0, b = (v & 255) / 255.0;
  const double mx = std::max({r, g, b}), mn = std::min({r, g, b}), d = mx - mn;
  if (d <= 0) return {0, 0};
  double h = mx == r ? std::fmod((g - b) / d, 6.0) : mx == g ? (b - r) / d + 2 : (r - g) / d + 4;
  h *= 60;
  if (h < 0) h += 360;
  return {h, mx > 0 ? d / mx : 0};
}

double hue_distance(double a, double b) {
  const double d = std::fabs(a - b);
  return std::min(d, 360 - d);
}

}  // namespace

TEST_CASE("html: a 10-chunk run has every plot with data / no script and nothing fetched from elsewhere") {
  fixture::Options o;
  o.chunks = 10;
  o.warmup = 2;
  const std::string html = page_of(o);
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
  CHECK(has(html, "<h2>Diagnosis</h2>"));
}

TEST_CASE("html: a million-chunk run stays small: every column with a miss shows it and the worst chunk is labelled") {
  fixture::Options o;
  o.chunks = 1000000;
  for (std::size_t i = 0; i < 50; ++i) o.spikes.push_back(i * 19997 + 1007);  // 50 misses in 50 distinct columns, none in warm-up
  o.spike_ns = 5e6;
  json j = fixture::make_run_report(o);
  // one unique worst chunk, far above the rest
  j["series"]["columns"]["latency_ns"][765432] = 900000000;
  j["series"]["columns"]["flags"][765432] = 4;
  const std::string html = chunkscope::render_html(run_of(j));
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
  const std::string tl = svg_of(page_of(o), "plot-timeline");
  // 1500 and 1501 share a pixel column (3003 chunk numbers in 1000 columns)
  CHECK(count(group_of(tl, "drops"), "<path class=\"drop\"") == 2);
  CHECK(has(tl, "dropped (3)"));
}

TEST_CASE("html: text from the report is escaped") {
  RunReport r = run_of();
  r.workload.chain = "lp:<script>alert(1)</script> & 'x' | \"y\"";
  r.workload.source = "file a<b>.wav";
  r.verdict.text = "<b>bold</b>";
  r.diagnosis.push_back({chunkscope::Finding::Severity::info,
                         chunkscope::Finding::Confidence::low,
                         "rule<1>",
                         "a < b",
                         {{"n<ns>", 1}},
                         "try \"this\""});
  const std::string html = chunkscope::render_html(r);
  check_self_contained(html);
  CHECK(has(html, "lp:&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#39;x&#39; | &quot;y&quot;"));
  CHECK(has(html, "file a&lt;b&gt;.wav"));
  CHECK(has(html, "&lt;b&gt;bold&lt;/b&gt;"));
  CHECK(has(html, "rule&lt;1&gt;"));
  CHECK(has(html, "n&lt;ns&gt;"));
  CHECK(has(html, "try &quot;this&quot;"));
  CHECK(!has(html, "a<b>"));
  CHECK(chunkscope::html_escape("<&>\"'") == "&lt;&amp;&gt;&quot;&#39;");
}

TEST_CASE("html: a report without a series draws what its summary allows and says per-chunk plots need a series") {
  fixture::Options o;
  o.spikes = {700};
  o.spike_ns = 5e6;
  o.drop_seqs = {900};
  json j = fixture::make_run_report(o);
  j.erase("series");
  const std::string html = chunkscope::render_html(run_of(j));
  check_self_contained(html);
  CHECK(has(html, "per-chunk plots need a report with a series"));
  for (const char* id : kRunPlots) {
    CAPTURE(id);
    CHECK(!svg_of(html, id).empty());
  }
  // the miss from the summary's miss list and the drop still show
  const std::string tl = svg_of(html, "plot-timeline");
  CHECK(count(group_of(tl, "misses"), "<circle class=\"miss\"") == 1);
  CHECK(count(group_of(tl, "drops"), "<path class=\"drop\"") == 1);
}

TEST_CASE("html: exact percentiles from the series are the nearest-rank values") {
  using chunkscope::render::rank_percentile;
  std::vector<std::int64_t> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i);
  CHECK(rank_percentile(v, 50) == 500);
  CHECK(rank_percentile(v, 99) == 990);
  CHECK(rank_percentile(v, 99.9) == 999);
  CHECK(rank_percentile(v, 100) == 1000);
  CHECK(rank_percentile(v, 0) == 1);
  CHECK(rank_percentile({}, 50) == 0);
  // the fixture's summary percentiles are computed the same way, over the counted chunks
  const RunReport r = run_of();
  const auto counted = chunkscope::render::counted_sorted(r.series, r.series.latency_ns);
  CHECK(counted.size() == r.counts.counted);
  CHECK(rank_percentile(counted, 95) == static_cast<double>(r.latency.p95));
  CHECK(rank_percentile(counted, 50) == static_cast<double>(r.latency.p50));
}

TEST_CASE("html: a compare report shows the variants side by side with ratios") {
  const json a = fixture::make_run_report(), b = gpu_run_json();
  const auto c = chunkscope::compare_report_from_json(compare_json(a, b));
  const std::string html = chunkscope::render_html(c);
  check_self_contained(html);
  const std::string cmp = svg_of(html, "plot-compare");
  REQUIRE(!cmp.empty());
  CHECK(has(cmp, "cpu:fused (baseline)"));
  CHECK(has(cmp, "cuda:graph"));
  // each bar's ratio is the variant's percentile over the baseline's, as drawn
  const RunReport& ra = *c.variants[0].report;
  const RunReport& rb = *c.variants[1].report;
  CHECK(has(cmp, fmt::format("p50 {}  ×{:.2f}", chunkscope::fmt_time(static_cast<double>(rb.latency.p50)),
                             static_cast<double>(rb.latency.p50) / static_cast<double>(ra.latency.p50))));
  CHECK(has(cmp, fmt::format("p99 {}  ×{:.2f}", chunkscope::fmt_time(static_cast<double>(rb.latency.p99)),
                             static_cast<double>(rb.latency.p99) / static_cast<double>(ra.latency.p99))));
  CHECK(has(cmp, "×1.00"));
  CHECK(!svg_of(html, "plot-compare-process").empty());
  CHECK(!svg_of(html, "plot-compare-percentiles").empty());
  // the table as saved, ratios included
  CHECK(has(html, "<td class=\"n\">0.25</td><td class=\"n\">0.50</td><td class=\"n\">0.75</td>"));
  CHECK(has(html, "no CUDA device &lt;none&gt;"));
  CHECK(count(html, "<h2>Variant ") == 2);
  // the variant overload is the same page
  CHECK(chunkscope::render_html(chunkscope::SavedReport{c}) == html);
}

TEST_CASE("html: a document that is not a run report never reaches the renderer: the schema reader refuses it") {
  CHECK(has(input_error([] {
              chunkscope::run_report_from_json(json{{"schema", "chunkscope.chain/1"}});
            }),
            "schema 'chunkscope.chain/1'"));
  CHECK(has(input_error([] { chunkscope::run_report_from_json(json{{"a", 1}}); }), "no \"schema\" key"));
  CHECK(!input_error([] { chunkscope::run_report_from_json(json::array()); }).empty());
  CHECK(
      has(input_error([] { chunkscope::compare_report_from_json(fixture::make_run_report()); }), "schema 'chunkscope.report/1'"));
}

// ---------------------------------------------------------------- defects of the old pages

TEST_CASE(
    "html breakdown: the stage means are stacked and add up to the mean latency, a part paid by few chunks counts "
    "spread over all of them, never as a stacked percentile") {
  fixture::Options o;
  o.chunks = 750;  // 10 warm-up, 740 counted
  RunReport r = run_of(o);
  REQUIRE(r.latency.count == 740);
  // a calibration step paid by 7 of the 740 chunks, 2 ms each, inside the process stage
  chunkscope::HistSummary cal;
  cal.count = 7;
  cal.min = cal.p50 = cal.p90 = cal.p95 = cal.p99 = cal.p99_9 = cal.max = 2000000;
  cal.mean = 2e6;
  r.process_parts[static_cast<std::size_t>(chunkscope::Part::calib)] = cal;
  const double spread = 2e6 * 7 / 740;
  r.stages[static_cast<std::size_t>(chunkscope::Stage::process)].mean += spread;
  r.latency.mean += spread;
  const std::string svg = svg_of(chunkscope::render_html(r), "plot-breakdown");
  REQUIRE(!svg.empty());
  const std::string stack = group_of(svg, "stack");
  REQUIRE(!stack.empty());
  CHECK(!has(stack, "p50"));
  CHECK(!has(stack, "p95"));
  CHECK(has(stack, "calibration mean per chunk " + chunkscope::fmt_time(spread) + " (7 of 740 chunks)"));
  CHECK(has(stack, "process (rest) mean per chunk"));
  // the segments end where the end-to-end mean is marked
  const std::regex rect(R"re(<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)")re");
  double right = 0;
  int segments = 0;
  for (std::sregex_iterator it(stack.begin(), stack.end(), rect), end; it != end; ++it, ++segments)
    right = std::max(right, std::stod((*it)[1]) + std::stod((*it)[2]));
  CHECK(segments == 6);  // source, queue_in, calibration, process (rest), queue_out, sink
  std::smatch mark;
  const std::string after = svg.substr(svg.find("<g class=\"stack\">"));
  REQUIRE(std::regex_search(after, mark, std::regex(R"re(<line class="latmark" x1="([0-9.]+)")re")));
  CHECK(std::fabs(std::stod(mark[1]) - right) <= 1.5);
  CHECK(has(svg, "= end-to-end mean " + chunkscope::fmt_time(r.latency.mean)));
  // percentiles side by side, each with the chunks it rests on
  CHECK(has(group_of(svg, "pcts"), "p50 2.000 ms · p95 2.000 ms (7 of 740 chunks)"));
  CHECK(has(chunkscope::render_html(r), "the means add up to the mean end-to-end latency"));
}

TEST_CASE("html diagnosis: evidence values carry the unit their name gives") {
  RunReport r = run_of();
  r.diagnosis = {{chunkscope::Finding::Severity::warning,
                  chunkscope::Finding::Confidence::high,
                  "unit_rule",
                  "text",
                  {{"counted", 1234567},
                   {"drift_ppm", -1.7},
                   {"miss_share", 0.0123},
                   {"process_p50_ns", 21000},
                   {"process_p99_over_p50", 3.2},
                   {"queue_depth", 8},
                   {"wall_seconds", 10.01}},
                  "next"}};
  const std::string html = chunkscope::render_html(r);
  const auto at = html.find("<table class=\"evidence\">");
  REQUIRE(at != std::string::npos);
  const std::string ev = html.substr(at, html.find("</table>", at) - at);
  CAPTURE(ev);
  CHECK(has(ev, "<td>counted</td><td class=\"n\">1234567</td>"));
  CHECK(has(ev, "<td>drift_ppm</td><td class=\"n\">-1.7 ppm</td>"));
  CHECK(has(ev, "<td>miss_share</td><td class=\"n\">1.23%</td>"));
  CHECK(has(ev, "<td>process_p50_ns</td><td class=\"n\">21.0 µs</td>"));
  CHECK(has(ev, "<td>process_p99_over_p50</td><td class=\"n\">3.20×</td>"));
  CHECK(has(ev, "<td>queue_depth</td><td class=\"n\">8</td>"));
  CHECK(has(ev, "<td>wall_seconds</td><td class=\"n\">10.010 s</td>"));
  CHECK(!std::regex_search(ev, std::regex(R"(\de[+-]\d)")));
}

TEST_CASE("html compare: each variant's misses, drops and verdict are on the page, as in the terminal summary") {
  auto c = chunkscope::compare_report_from_json(compare_json(fixture::make_run_report(), gpu_run_json()));
  auto row = [](const char* v, std::uint64_t misses, std::uint64_t drops, std::optional<bool> safe) {
    chunkscope::CompareSummary s;
    s.variant = v;
    s.latency_p95_ns = 80000;
    s.misses = misses;
    s.drops = drops;
    s.realtime_safe = safe;
    return s;
  };
  c.summary = {row("cpu:fused", 0, 0, true), row("cuda:graph", 3, 2, false), row("cuda:max", 0, 0, std::nullopt)};
  const std::string html = chunkscope::render_html(c);
  const auto at = html.find("<table class=\"summary\">");
  REQUIRE(at != std::string::npos);
  const std::string sum = html.substr(at, html.find("</table>", at) - at);
  CAPTURE(sum);
  CHECK(has(sum, "<th class=\"n\">misses</th><th class=\"n\">drops</th><th>verdict</th>"));
  const auto row_of = [&](const std::string& v) {
    const auto b = sum.find("<tr><td>" + v + "</td>");
    return b == std::string::npos ? std::string() : sum.substr(b, sum.find("</tr>", b) - b);
  };
  CHECK(has(row_of("cpu:fused"), "<td class=\"n\">0</td><td class=\"n\">0</td><td class=\"ok\">real-time safe</td>"));
  CHECK(has(row_of("cuda:graph"), "<td class=\"n\">3</td><td class=\"n\">2</td><td class=\"bad\">NOT safe</td>"));
  CHECK(has(row_of("cuda:max"), "<td class=\"none\">throughput only</td>"));
  // and each variant's own section says it too
  CHECK(count(html, "counted chunks missed the budget;") == 2);
}

TEST_CASE("html: the budget has a colour no curve has, and every legend line carries its value") {
  const std::string budget_css = "svg.plot .budget{stroke:";
  json b = gpu_run_json(), d = fixture::make_run_report();
  json c = compare_json(fixture::make_run_report(), b);
  c["variants"][2] = {{"name", "cpu:unfused"}, {"available", true}, {"report", d}};
  const std::string pages[] = {page_of(), chunkscope::render_html(run_of(gpu_run_json())),
                               chunkscope::render_html(chunkscope::compare_report_from_json(c))};
  const std::regex time_value(R"([0-9](\.[0-9]+)? (ns|µs|ms|s)\b)");
  const std::regex stroke(R"re(<polyline class="curve[^"]*" style="stroke:(#[0-9a-f]{6}))re");
  for (const auto& html : pages) {
    const auto at = html.find(budget_css);
    REQUIRE(at != std::string::npos);
    const std::string budget = html.substr(at + budget_css.size(), 7);
    const auto [bh, bs] = hue_sat(budget);
    REQUIRE(bs > 0.5);
    std::size_t curves = 0;
    for (const auto& [id, svg] : svgs_of(html)) {
      CAPTURE(id);
      // curves: far in hue from the budget's red
      for (std::sregex_iterator it(svg.begin(), svg.end(), stroke), end; it != end; ++it, ++curves) {
        const std::string col = (*it)[1];
        CAPTURE(col);
        CHECK(col != budget);
        const auto [h, s] = hue_sat(col);
        CHECK((s < 0.15 || hue_distance(h, bh) >= 35));
      }
      // legend lines (budget, D, curves, marks) say their value
      const auto items = legend_items(svg);
      CHECK(!items.empty());
      for (const auto& it : items) {
        if (!has(it, "<line")) continue;
        CAPTURE(it);
        CHECK(std::regex_search(it, time_value));
      }
    }
    CHECK(curves > 0);
  }
  // the compare overlay names each variant's p95 and the budget's value
  const std::string ov = svg_of(pages[2], "plot-compare-percentiles");
  CHECK(count(ov, "<polyline class=\"curve") == 3);
  CHECK(has(ov, "budget B 4.267 ms"));
  CHECK(std::regex_search(ov, std::regex("cuda:graph p95 [0-9.]+ µs")));
  for (const auto* col : chunkscope::render::kCurvePalette) {
    CAPTURE(col);
    CHECK(hue_distance(hue_sat(col).first, hue_sat(chunkscope::render::kBudgetColor).first) >= 35);
  }
}

// ---------------------------------------------------------------- cadence

TEST_CASE("cadence: the histogram counts every counted period: longest gaps with chunk numbers: verdict") {
  fixture::Options o;
  o.spikes = {1000};
  o.spike_ns = 3e6;
  const RunReport r = run_of(o);
  std::ostringstream os;
  chunkscope::print_cadence(os, r);
  const std::string s = os.str();
  CAPTURE(s);
  // the bars add up to the periods between counted chunks
  std::uint64_t total = 0;
  std::regex row(R"(\|[# ]+\|\s+(\d+))");
  for (std::sregex_iterator it(s.begin(), s.end(), row), end; it != end; ++it) total += std::stoull((*it)[1]);
  CHECK(total == r.cadence.period.count);
  CHECK(has(s, "µs"));
  CHECK(has(s, "<- D"));
  CHECK(has(s, "1. "));
  CHECK(has(s, "ended by chunk 1000 at"));
  CHECK(has(s, "late       1 output(s)"));
  CHECK(has(s, "chunks 1000"));
  // a 3 ms stall with 1.067 ms of margin: the chunk is out well within B + margin, so a
  // consumer holding the margin never runs dry although one period is long
  CHECK(has(s, "verdict    steady: a consumer holding the margin's 1.067 ms of audio would never have run dry"));
  CHECK(has(s, "jitter     p95"));
  CHECK(has(s, "ppm"));
  CHECK(has(s, fmt::format("period     {} periods: min ", r.cadence.period.count)));

  std::ostringstream h;
  chunkscope::print_cadence(h, run_of());
  CHECK(has(h.str(), "verdict    steady"));
  CHECK(has(h.str(), "late       0 output(s)"));
}

TEST_CASE("cadence: not steady exactly when a chunk is out later than B + margin, or dropped") {
  // D 5.333 ms, B 4.267 ms, margin 1.067 ms: a stall that puts one chunk past B + margin = D
  fixture::Options o;
  o.spikes = {1000};
  o.spike_ns = 9e6;
  const RunReport r = run_of(o);
  std::ostringstream os;
  chunkscope::print_cadence(os, r);
  CAPTURE(os.str());
  CHECK(has(os.str(), "verdict    not steady: a consumer holding the margin's 1.067 ms of audio would have run dry on 1 chunk(s) out later than B + margin = 5.333 ms (first chunk 1000"));
  // the headline agrees: that chunk missed the budget
  CHECK(r.counts.misses >= 1);
  // a report that says it is steady is read as such; one with drops is not steady
  json j = fixture::make_run_report();
  j["cadence"]["steady"] = true;
  j["cadence"]["dry_after_ns"] = j["timing"]["chunk_ns"];
  j["cadence"]["dry_chunks"] = 0;
  j["cadence"]["dry_worst_ns"] = 0;
  j["counts"]["drops"] = 2;
  std::ostringstream d;
  chunkscope::print_cadence(d, chunkscope::run_report_from_json(j));
  CHECK(has(d.str(), "verdict    not steady: a consumer holding the margin's 1.067 ms of audio would have run dry on 2 dropped chunk(s)"));
}

TEST_CASE("cadence: a monitor run shows the callback period: no series still reports: --speed max has no schedule") {
  json m = fixture::make_run_report();
  m["workload"]["command"] = "monitor";
  const double D = m["timing"]["chunk_ns"];
  m["device"] = {{"callback_period", fixture::hist_of({static_cast<std::int64_t>(D - 1000), static_cast<std::int64_t>(D),
                                                       static_cast<std::int64_t>(D + 9000)})},
                 {"xruns", 2},
                 {"underruns", 1}};
  std::ostringstream os;
  chunkscope::print_cadence(os, run_of(m));
  CHECK(has(os.str(), "callback period over 3 callbacks"));
  CHECK(has(os.str(), "(p50 = 1.000 D)"));
  CHECK(has(os.str(), "xruns 2, underruns 1"));
  json old = fixture::make_run_report();
  old.erase("series");
  std::ostringstream oo;
  chunkscope::print_cadence(oo, run_of(old));
  CHECK(has(oo.str(), "needs the per-chunk series"));
  CHECK(has(oo.str(), "only the longest is in a report without a series"));
  fixture::Options fast;
  fast.paced = false;
  std::ostringstream of;
  chunkscope::print_cadence(of, run_of(fast));
  CHECK(has(of.str(), "verdict    no schedule (--speed max)"));
  CHECK(!has(of.str(), "misses     "));
  // a run with one counted chunk has no period
  fixture::Options one;
  one.chunks = 11;
  std::ostringstream o1;
  chunkscope::print_cadence(o1, run_of(one));
  CHECK(has(o1.str(), "period     - (fewer than two counted chunks)"));
  CHECK(has(o1.str(), "verdict    no verdict: fewer than two counted chunks"));
}

TEST_CASE("cadence: a compare report or a report without its cadence is refused by the reader, naming what is wrong") {
  testutil::TempDir td;
  const std::string cmp = td.file("compare.json");
  write_text(cmp, compare_json(fixture::make_run_report(), gpu_run_json()).dump());
  const std::string err = input_error([&] { chunkscope::load_run_report(cmp); });
  CHECK(has(err, cmp + "#VARIANT"));
  CHECK(has(err, "cpu:fused, cuda:graph"));
  CHECK(chunkscope::load_run_report(cmp + "#cuda:graph").workload.backend == "cuda");
  json j = fixture::make_run_report();
  j.erase("cadence");
  CHECK(has(input_error([&] { run_of(j); }), "field 'cadence': missing"));
}

TEST_CASE("report command: bad input files are one error line naming the file") {
  testutil::TempDir td;
  auto err = [](const std::string& path) { return input_error([&] { chunkscope::run_report_command({path, "", false}); }); };
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
  CHECK(has(err(dmg), "report '" + dmg + "': field 'counts': missing"));
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
  saved["diagnosis"] = json::array({{{"rule", "saved_rule"},
                                     {"severity", "info"},
                                     {"finding", "x 1"},
                                     {"evidence", {{"n", 1}}},
                                     {"confidence", "high"},
                                     {"next", "y"}}});
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
  CHECK(input_error([&] {
          chunkscope::run_report_command({path, bad, false});
        }) == "--html '" + bad + "': folder '" + td.file("nowhere") + "' does not exist");
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

TEST_CASE("html: a finding's `command` spans are code on the page, escaped, a lone backtick stays") {
  using chunkscope::render::with_code_spans;
  CHECK(with_code_spans("run it: `chunkscope synth --chain 'lp:1k' < x` now") ==
        "run it: <code>chunkscope synth --chain &#39;lp:1k&#39; &lt; x</code> now");
  CHECK(with_code_spans("a `b` and `c`") == "a <code>b</code> and <code>c</code>");
  CHECK(with_code_spans("one ` alone") == "one ` alone");
  CHECK(with_code_spans("") == "");
}

TEST_CASE("html: the stage table puts the process stage's parts under process, as the terminal does") {
  fixture::Options o;
  o.backend = "cuda";
  o.mode = "eager";
  o.gpu_parts = true;
  const RunReport r = run_of(o);
  const std::string html = chunkscope::render_html(r);
  const auto at = [&](const std::string& name) { return html.find("<tr><td>" + name + "</td>"); };
  REQUIRE(at("process") != std::string::npos);
  REQUIRE(at("  kernel") != std::string::npos);
  CHECK(at("process") < at("  launch"));
  CHECK(at("  kernel") < at("queue_out"));
  CHECK(at("  sync") < at("queue_out"));
  // the terminal's order is the same
  std::ostringstream os;
  chunkscope::print_report(os, r);
  const std::string t = os.str();
  CHECK(t.find("\nprocess ") < t.find("\n  kernel "));
  CHECK(t.find("\n  kernel ") < t.find("\nqueue_out "));
}
