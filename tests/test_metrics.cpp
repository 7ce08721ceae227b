// Live metrics for Prometheus (--metrics-listen): the exposition text parses back to the
// figures it was made from in both formats; the real binary serves GET /metrics and nothing
// else, with the counts of its own report; bad values and busy ports fail before anything
// streams, in one line naming the flag; and a real Prometheus server scrapes it and agrees
// with the report. Waits are hang guards or readiness polls, never measurements.
#include <doctest/doctest.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cmath>
#include <fcntl.h>
#include <fmt/format.h>
#include <filesystem>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <spawn.h>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "src/errors.hpp"
#include "src/metrics/exposition.hpp"
#include "src/metrics/server.hpp"
#include "tests/test_util.hpp"

using namespace chunkscope;
using nlohmann::json;

extern char** environ;

namespace {

// ---------------------------------------------------------------- parsing an exposition

struct Family {
  std::string type, help, unit;
};
struct Parsed {
  std::map<std::string, Family> families;        // by the name on HELP / TYPE lines
  std::map<std::string, std::string> samples;    // "name{labels}" -> value text
  std::vector<std::string> order;                // sample keys as they came
  bool eof = false;
  std::vector<std::string> errors;
};

// A strict reader of the text formats: every line is a comment the format knows or
// `name{labels} value`; label values are unescaped and the labels put back as written.
Parsed parse_exposition(const std::string& text) {
  Parsed p;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (p.eof) p.errors.push_back("line after # EOF: " + line);
    if (line == "# EOF") {
      p.eof = true;
      continue;
    }
    if (line.rfind("# ", 0) == 0) {
      std::istringstream ls(line.substr(2));
      std::string kw, name, rest;
      ls >> kw >> name;
      std::getline(ls, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      if (kw == "HELP") p.families[name].help = rest;
      else if (kw == "TYPE") p.families[name].type = rest;
      else if (kw == "UNIT") p.families[name].unit = rest;
      else p.errors.push_back("unknown comment: " + line);
      continue;
    }
    const std::size_t brace = line.find('{');
    const std::size_t space = brace == std::string::npos ? line.find(' ') : line.find("} ", brace);
    if (space == std::string::npos) {
      p.errors.push_back("not a sample: " + line);
      continue;
    }
    const std::string key = brace == std::string::npos ? line.substr(0, space) : line.substr(0, space + 1);
    const std::string value = line.substr(brace == std::string::npos ? space + 1 : space + 2);
    if (p.samples.count(key)) p.errors.push_back("duplicate sample: " + key);
    p.samples[key] = value;
    p.order.push_back(key);
  }
  return p;
}

double num(const Parsed& p, const std::string& key) {
  const auto it = p.samples.find(key);
  REQUIRE_MESSAGE(it != p.samples.end(), "no sample " << key);
  if (it->second == "+Inf") return HUGE_VAL;
  return std::strtod(it->second.c_str(), nullptr);
}

// The buckets of one histogram series: (le, cumulative count), in the order written.
std::vector<std::pair<double, double>> buckets(const Parsed& p, const std::string& name, const std::string& labels) {
  std::vector<std::pair<double, double>> out;
  const std::string prefix = name + "_bucket{" + labels + ",le=\"";
  for (const auto& k : p.order)
    if (k.rfind(prefix, 0) == 0) {
      const std::string le = k.substr(prefix.size(), k.size() - prefix.size() - 2);
      out.emplace_back(le == "+Inf" ? HUGE_VAL : std::strtod(le.c_str(), nullptr), num(p, k));
    }
  return out;
}

metrics::MetricsSnapshot sample_snapshot(const stats::LogHistogram& lat, const stats::LogHistogram& per) {
  metrics::MetricsSnapshot s;
  const std::int64_t D = 5'333'333, B = 4'266'666;
  s.latency_bounds_ns = metrics::latency_bounds(B);
  s.period_bounds_ns = metrics::period_bounds(D);
  metrics::StreamMetrics m;
  m.chain = "lp:8000:4 | gain:\"-3\" \\ x\nnext";  // quotes, a backslash and a newline to escape
  m.backend = "cpu";
  m.mode = "fused";
  m.chunk = 256;
  m.rate = 48000;
  m.budget_ns = B;
  m.chunk_ns = D;
  m.chunks = lat.count();
  m.warmup_chunks = 10;
  m.misses = 3;
  m.drops = 2;
  m.stalls = 1;
  m.running = true;
  m.headroom_p95_ns = -125'000;
  m.queue_depth = 1;
  m.queue_capacity = 8;
  m.baseline_wake_p99_ns = 61'000;
  m.latency = metrics::bucketize(lat, s.latency_bounds_ns);
  for (auto& st : m.stage) st = metrics::bucketize(lat, s.latency_bounds_ns);
  m.period = metrics::bucketize(per, s.period_bounds_ns);
  s.streams.push_back(m);
  return s;
}

const std::string kLabels =
    R"(stream="0",chain="lp:8000:4 | gain:\"-3\" \\ x\nnext",backend="cpu",mode="fused",chunk="256",rate="48000")";

// ---------------------------------------------------------------- HTTP and processes

bool on_path(const char* tool) {
  return std::system((std::string("command -v ") + tool + " >/dev/null 2>&1").c_str()) == 0;
}

// Polls `ready` every 100 ms for at most `timeout_s` seconds.
template <class F>
bool poll_until(F ready, int timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ready();
}

// promtool (when installed) accepts the exposition `body`.
void check_with_promtool(const testutil::TempDir& td, const std::string& body) {
  if (!on_path("promtool")) return;
  std::ofstream(td.file("metrics.txt")) << body;
  const std::string cmd = "promtool check metrics < '" + td.file("metrics.txt") + "' > '" + td.file("promtool.out") + "' 2>&1";
  CHECK_MESSAGE(std::system(cmd.c_str()) == 0, testutil::slurp(td.file("promtool.out")));
}

// A synth run serving metrics and holding them, its report in report.json.
struct ServingRun {
  testutil::TempDir td;
  int port = testutil::free_port();
  pid_t pid = -1;
  explicit ServingRun(std::vector<std::string> extra = {}, const std::string& chain = "lp:8000:4") {
    std::vector<std::string> args{"synth",   "--duration",     "2s",  "--chain", chain, "--baseline", "200ms",
                                  "--quiet", "--json",         "report.json", "--metrics-listen",
                                  "127.0.0.1:" + std::to_string(port), "--metrics-hold", "120s"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid = testutil::spawn_cli(td.path().string(), args, td.file("stdout"), td.file("stderr"));
  }
  // The report is written after the final sample: from then on /metrics serves the final values.
  json wait_report() {
    REQUIRE_MESSAGE(testutil::wait_for_path(td.file("report.json"), 120), testutil::slurp(td.file("stderr")));
    return testutil::load_json(td.file("report.json"));
  }
  int stop() {
    ::kill(pid, SIGTERM);
    const int rc = testutil::wait_cli(pid, 60);
    pid = -1;
    return rc;
  }
  ~ServingRun() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      testutil::wait_cli(pid, 30);
    }
  }
};

}  // namespace

// ---------------------------------------------------------------- the exposition

TEST_CASE("metrics: the exposition parses back to its figures, buckets cumulative, in both formats") {
  stats::LogHistogram lat, per;
  std::uint64_t exact_sum = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const std::uint64_t v = 200'000 + 4'500 * i;  // 0.2 ms .. 4.7 ms, some above B
    lat.record(v);
    exact_sum += v;
    per.record(5'333'333 + (i % 7) * 1000 - 3000);
  }
  const auto snap = sample_snapshot(lat, per);
  for (const auto f : {metrics::Format::prometheus_text, metrics::Format::openmetrics}) {
    const bool om = f == metrics::Format::openmetrics;
    CAPTURE(om);
    const std::string text = metrics::render(snap, f);
    const Parsed p = parse_exposition(text);
    CHECK_MESSAGE(p.errors.empty(), (p.errors.empty() ? "" : p.errors.front()));
    CHECK(p.eof == om);
    if (om) CHECK(text.size() >= 6);
    if (om) CHECK(text.substr(text.size() - 6) == "# EOF\n");
    // counters: OpenMetrics names the family without _total, the text format with it
    const std::string fam = om ? "chunkscope_chunks" : "chunkscope_chunks_total";
    REQUIRE(p.families.count(fam));
    CHECK(p.families.at(fam).type == "counter");
    CHECK(num(p, "chunkscope_chunks_total{" + kLabels + "}") == 1000);
    CHECK(num(p, "chunkscope_deadline_misses_total{" + kLabels + "}") == 3);
    CHECK(num(p, "chunkscope_dropped_chunks_total{" + kLabels + "}") == 2);
    CHECK(num(p, "chunkscope_stall_events_total{" + kLabels + "}") == 1);
    CHECK(num(p, "chunkscope_xruns_total{" + kLabels + "}") == 0);
    CHECK(num(p, "chunkscope_underruns_total{" + kLabels + "}") == 0);
    CHECK(num(p, "chunkscope_headroom_p95_seconds{" + kLabels + "}") == doctest::Approx(-0.000125));
    CHECK(num(p, "chunkscope_baseline_wakeup_p99_seconds{" + kLabels + "}") == doctest::Approx(0.000061));
    CHECK(num(p, "chunkscope_budget_seconds{" + kLabels + "}") == doctest::Approx(0.004266666));
    CHECK(num(p, "chunkscope_queue_depth{" + kLabels + "}") == 1);
    CHECK(p.families.at("chunkscope_chunk_latency_seconds").type == "histogram");
    CHECK(p.families.at("chunkscope_chunk_latency_seconds").unit == (om ? "seconds" : ""));
    // histograms: cumulative, +Inf equals _count equals the count, _sum the exact sum
    for (const std::string& series : {std::string("chunkscope_chunk_latency_seconds|") + kLabels,
                                      std::string("chunkscope_stage_latency_seconds|") + kLabels + ",stage=\"process\"",
                                      std::string("chunkscope_output_period_seconds|") + kLabels}) {
      const std::string name = series.substr(0, series.find('|'));
      const std::string labels = series.substr(series.find('|') + 1);
      CAPTURE(name);
      const auto b = buckets(p, name, labels);
      REQUIRE(b.size() >= 2);
      CHECK(b.back().first == HUGE_VAL);
      for (std::size_t i = 1; i < b.size(); ++i) {
        CHECK(b[i].first > b[i - 1].first);
        CHECK(b[i].second >= b[i - 1].second);
      }
      CHECK(b.back().second == 1000);
      CHECK(num(p, name + "_count{" + labels + "}") == 1000);
    }
    CHECK(num(p, "chunkscope_chunk_latency_seconds_sum{" + kLabels + "}") ==
          doctest::Approx(static_cast<double>(exact_sum) / 1e9).epsilon(1e-12));
    // each bucket holds the values at or below its bound, at the histogram's resolution
    for (const auto& [le, n] : buckets(p, "chunkscope_chunk_latency_seconds", kLabels)) {
      if (le == HUGE_VAL) continue;
      double exact = 0;
      for (std::uint64_t i = 0; i < 1000; ++i) exact += (200'000 + 4'500 * i) <= le * 1e9 * (1 + 1e-3) ? 1 : 0;
      double below = 0;
      for (std::uint64_t i = 0; i < 1000; ++i) below += (200'000 + 4'500 * i) <= le * 1e9 * (1 - 1e-3) ? 1 : 0;
      CAPTURE(le);
      CHECK(n <= exact);
      CHECK(n >= below);
    }
  }
}

TEST_CASE("metrics: bucket bounds follow the budget, Accept picks the format, labels escape") {
  const auto lb = metrics::latency_bounds(4'266'666);
  CHECK(lb.front() == 4'000);       // B x 0.001 rounded to a whole microsecond
  CHECK(std::find(lb.begin(), lb.end(), 4'267'000) != lb.end());  // B itself
  CHECK(lb.back() == 42'667'000);   // 10 B
  for (std::size_t i = 1; i < lb.size(); ++i) CHECK(lb[i] > lb[i - 1]);
  CHECK(metrics::latency_bounds(100).front() == 1'000);  // at least 1 us, duplicates removed
  const auto pb = metrics::period_bounds(5'333'333);
  CHECK(pb.front() == 2'667'000);
  CHECK(pb.back() == 21'333'000);
  CHECK(metrics::seconds_text(4'267'000) == "0.004267");
  CHECK(metrics::seconds_text(1'000'000'000) == "1");
  CHECK(metrics::seconds_text(-125'000) == "-0.000125");
  CHECK(metrics::seconds_text(0) == "0");

  using metrics::Format;
  CHECK(metrics::negotiate("") == Format::prometheus_text);
  CHECK(metrics::negotiate("text/plain") == Format::prometheus_text);
  CHECK(metrics::negotiate("*/*") == Format::prometheus_text);
  CHECK(metrics::negotiate("application/openmetrics-text") == Format::openmetrics);
  // what Prometheus 2.x sends
  CHECK(metrics::negotiate("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
                           "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1") == Format::openmetrics);
  CHECK(metrics::negotiate("application/openmetrics-text; version=0.0.1") == Format::prometheus_text);
  CHECK(metrics::negotiate("application/openmetrics-text;q=0") == Format::prometheus_text);
  CHECK(metrics::negotiate("text/plain;q=1, application/openmetrics-text;q=0.5") == Format::prometheus_text);
  CHECK(std::string(metrics::content_type(Format::prometheus_text)) == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(std::string(metrics::content_type(Format::openmetrics)) ==
        "application/openmetrics-text; version=1.0.0; charset=utf-8");
  CHECK(metrics::escape_label_value("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
}

TEST_CASE("metrics: --metrics-listen takes PORT, :PORT or ADDR:PORT, loopback unless an address is given") {
  CHECK(metrics::parse_listen_address("9464").text() == "127.0.0.1:9464");
  CHECK(metrics::parse_listen_address(":9464").text() == "127.0.0.1:9464");
  CHECK(metrics::parse_listen_address("localhost:9464").text() == "127.0.0.1:9464");
  CHECK(metrics::parse_listen_address("0.0.0.0:9464").text() == "0.0.0.0:9464");
  CHECK(metrics::parse_listen_address("10.1.2.3:80").text() == "10.1.2.3:80");
  for (const char* bad : {"", "abc", ":", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:12a",
                          "example.com:9464", "[::1]:9464", "1.2.3:9464"}) {
    CAPTURE(bad);
    try {
      (void)metrics::parse_listen_address(bad);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).rfind("--metrics-listen: ", 0) == 0);
    }
  }
}

// ---------------------------------------------------------------- the real binary

TEST_CASE("metrics: bad --metrics-listen exits 2, a port in use exits 3, each one line naming the flag") {
  if (!metrics::server_available()) {
    MESSAGE("skipped: this build has no metrics server (civetweb, Debian libcivetweb-dev, not found)");
    return;
  }
  testutil::TempDir td;
  const auto bad = testutil::run_cli_at(td.path().string(), {"synth", "--duration", "0.2s", "--metrics-listen", "nope:1"});
  CHECK(bad.rc == kExitUsage);
  CHECK(bad.err.rfind("chunkscope: --metrics-listen: 'nope:1': 'nope' is not an IPv4 address", 0) == 0);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
  const auto hold = testutil::run_cli_at(td.path().string(), {"synth", "--duration", "0.2s", "--metrics-hold", "5s"});
  CHECK(hold.rc == kExitUsage);
  CHECK(hold.err.find("--metrics-hold: needs --metrics-listen") != std::string::npos);

  // a port someone listens on
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  const int port = ntohs(sa.sin_port);
  const auto busy = testutil::run_cli_at(
      td.path().string(), {"synth", "--duration", "0.2s", "--json", "r.json", "--metrics-listen", "127.0.0.1:" + std::to_string(port)});
  ::close(fd);
  CHECK(busy.rc == kExitRuntime);
  CHECK(busy.err == "chunkscope: --metrics-listen: port " + std::to_string(port) + " is already in use on 127.0.0.1\n");
  CHECK_FALSE(std::filesystem::exists(td.file("r.json")));  // it failed before anything streamed
}

TEST_CASE("metrics: a synth run serves GET /metrics with its report's counts, other paths 404, other methods 405") {
  if (!metrics::server_available()) {
    MESSAGE("skipped: this build has no metrics server (civetweb, Debian libcivetweb-dev, not found)");
    return;
  }
  ServingRun run;
  const json report = run.wait_report();
  const testutil::HttpReply r = testutil::http(run.port, "GET", "/metrics");
  REQUIRE(r.status == 200);
  CHECK(testutil::header(r, "content-type") == "text/plain; version=0.0.4; charset=utf-8");
  const Parsed p = parse_exposition(r.body);
  CHECK_MESSAGE(p.errors.empty(), (p.errors.empty() ? "" : p.errors.front()));
  CHECK_FALSE(p.eof);
  const json& c = report["counts"];
  // the one stream's labels, as the report describes the run
  const std::string labels = R"(stream="0",chain="lp:8000:4",backend="cpu",mode="fused",chunk="256",rate="48000")";
  CHECK(num(p, "chunkscope_chunks_total{" + labels + "}") == c["counted"].get<double>());
  CHECK(num(p, "chunkscope_warmup_chunks_total{" + labels + "}") == c["warmup"].get<double>());
  CHECK(num(p, "chunkscope_deadline_misses_total{" + labels + "}") == c["misses"].get<double>());
  CHECK(num(p, "chunkscope_dropped_chunks_total{" + labels + "}") == c["drops"].get<double>());
  CHECK(num(p, "chunkscope_stall_events_total{" + labels + "}") == c.value("stalls", 0.0));
  CHECK(num(p, "chunkscope_chunk_latency_seconds_count{" + labels + "}") == c["counted"].get<double>());
  CHECK(num(p, "chunkscope_running{" + labels + "}") == 0);
  for (const char* st : {"source", "queue_in", "process", "queue_out", "sink"}) {
    CAPTURE(st);
    CHECK(num(p, "chunkscope_stage_latency_seconds_count{" + labels + ",stage=\"" + st + "\"}") ==
          report["stages"][st]["count"].get<double>());
  }
  const double lat_sum = num(p, "chunkscope_chunk_latency_seconds_sum{" + labels + "}");
  CHECK(lat_sum / c["counted"].get<double>() == doctest::Approx(report["latency"]["mean"].get<double>() / 1e9).epsilon(1e-6));
  CHECK(num(p, "chunkscope_budget_seconds{" + labels + "}") ==
        doctest::Approx(report["timing"]["budget_ns"].get<double>() / 1e9));

  // OpenMetrics when asked for
  const testutil::HttpReply om = testutil::http(run.port, "GET", "/metrics", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5");
  CHECK(om.status == 200);
  CHECK(testutil::header(om, "content-type") == "application/openmetrics-text; version=1.0.0; charset=utf-8");
  CHECK(parse_exposition(om.body).eof);
  CHECK(parse_exposition(om.body).samples == p.samples);

  // nothing else
  CHECK(testutil::http(run.port, "GET", "/").status == 404);
  CHECK(testutil::http(run.port, "GET", "/metricsx").status == 404);
  CHECK(testutil::http(run.port, "GET", "/metrics/x").status == 404);
  const testutil::HttpReply post = testutil::http(run.port, "POST", "/metrics");
  CHECK(post.status == 405);
  CHECK(testutil::header(post, "allow") == "GET");
  CHECK(testutil::http(run.port, "PUT", "/metrics").status == 405);
  CHECK(testutil::http(run.port, "DELETE", "/metrics").status == 405);

  // promtool lints the exposition when it is installed
  check_with_promtool(run.td, r.body);
  // a signal ends the hold; the run's own exit code stands
  CHECK(run.stop() == 0);
}

TEST_CASE("metrics: a real Prometheus scrapes a synth run and agrees with its report") {
  if (!metrics::server_available()) {
    MESSAGE("skipped: this build has no metrics server (civetweb, Debian libcivetweb-dev, not found)");
    return;
  }
  if (!on_path("prometheus") || !on_path("promtool")) {
    MESSAGE("skipped: prometheus or promtool is not installed (Debian package prometheus)");
    return;
  }
  ServingRun run;
  // Prometheus on loopback, scraping every second
  const int prom_port = testutil::free_port();
  const std::string cfg = run.td.file("prometheus.yml");
  std::ofstream(cfg) << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                        "scrape_configs:\n  - job_name: chunkscope\n    static_configs:\n      - targets: ['127.0.0.1:"
                     << run.port << "']\n";
  const std::string check = "promtool check config '" + cfg + "' > /dev/null 2>&1";
  REQUIRE(std::system(check.c_str()) == 0);
  const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(prom_port);
  const std::string cfg_arg = "--config.file=" + cfg;
  const std::string tsdb = "--storage.tsdb.path=" + run.td.file("tsdb");
  const std::string log = run.td.file("prometheus.log");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  const char* argv[] = {"prometheus", cfg_arg.c_str(), tsdb.c_str(), listen.c_str(), "--log.level=warn", nullptr};
  pid_t prom = -1;
  REQUIRE(posix_spawnp(&prom, "prometheus", &fa, nullptr, const_cast<char**>(argv), environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      ::kill(pid, SIGTERM);
      int st = 0;
      for (int i = 0; i < 300 && ::waitpid(pid, &st, WNOHANG) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (::waitpid(pid, &st, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
      }
    }
  } reaper{prom};
  REQUIRE_MESSAGE(poll_until([&] { return testutil::http(prom_port, "GET", "/-/ready").status == 200; }, 120),
                  testutil::slurp(log));

  const json report = run.wait_report();
  const json& c = report["counts"];
  // an instant query's one value (NaN when the result is empty)
  const auto query = [&](const std::string& promql) {
    const testutil::HttpReply r = testutil::http(prom_port, "GET", "/api/v1/query?query=" + testutil::url_encode(promql));
    if (r.status != 200) return std::nan("");
    const json j = json::parse(r.body, nullptr, false);
    if (j.is_discarded() || j["status"] != "success" || j["data"]["result"].empty()) return std::nan("");
    return std::strtod(j["data"]["result"][0]["value"][1].get<std::string>().c_str(), nullptr);
  };
  // the final values reach Prometheus within a few scrapes of the report
  const double counted = c["counted"].get<double>();
  const bool scraped = poll_until([&] { return query("chunkscope_chunks_total") == counted; }, 120);
  CHECK_MESSAGE(scraped, "prometheus has " << query("chunkscope_chunks_total") << ", the report " << counted << "\n"
                                           << testutil::slurp(log));
  CHECK(query("chunkscope_deadline_misses_total") == c["misses"].get<double>());
  CHECK(query("chunkscope_chunk_latency_seconds_count") == counted);
  CHECK(query("up{job=\"chunkscope\"}") == 1);
  // p95 of end-to-end latency: Prometheus interpolates inside the bucket that holds the
  // report's p95 (within the histogram's 0.1 % either side of it)
  const double p95 = report["latency"]["p95"].get<double>() / 1e9;
  const double q95 = query("histogram_quantile(0.95, chunkscope_chunk_latency_seconds_bucket)");
  const auto bounds = metrics::latency_bounds(report["timing"]["budget_ns"].get<std::int64_t>());
  double lo = 0, hi = HUGE_VAL;
  for (const auto b : bounds) {
    const double s = static_cast<double>(b) / 1e9;
    if (s < p95 * (1 - 1e-3)) lo = s;
    if (s >= p95 * (1 + 1e-3) && s < hi) hi = s;
  }
  CAPTURE(p95);
  CAPTURE(lo);
  CAPTURE(hi);
  CHECK(q95 >= lo);
  CHECK(q95 <= hi);
  // the three queries docs/profiler.md gives are valid PromQL for these series
  for (const char* promql :
       {"chunkscope_budget_seconds - histogram_quantile(0.95, rate(chunkscope_chunk_latency_seconds_bucket[1m]))",
        "rate(chunkscope_deadline_misses_total[5m]) / rate(chunkscope_chunks_total[5m])",
        "(chunkscope_headroom_p95_seconds < 0.1 * chunkscope_budget_seconds) or "
        "(increase(chunkscope_deadline_misses_total[5m]) > 0) or (increase(chunkscope_dropped_chunks_total[5m]) > 0) "
        "or (increase(chunkscope_xruns_total[5m]) > 0)"}) {
    CAPTURE(promql);
    const testutil::HttpReply r = testutil::http(prom_port, "GET", "/api/v1/query?query=" + testutil::url_encode(promql));
    CHECK(r.status == 200);
    CHECK(json::parse(r.body, nullptr, false).value("status", "") == "success");
  }
  CHECK(run.stop() == 0);
}

TEST_CASE("metrics: chunks the source drops (queue full, pool empty) are served as they happen and in the end") {
  if (!metrics::server_available()) {
    MESSAGE("skipped: this build has no metrics server (civetweb, Debian libcivetweb-dev, not found)");
    return;
  }
  // an 8 ms spin cannot keep 5.333 ms chunks: the processor falls behind on any machine, the
  // input queue fills and the source drops
  ServingRun run({}, "lp:8000:2 | spin:8ms");
  const json report = run.wait_report();
  const testutil::HttpReply r = testutil::http(run.port, "GET", "/metrics");
  REQUIRE(r.status == 200);
  const Parsed p = parse_exposition(r.body);
  CHECK_MESSAGE(p.errors.empty(), (p.errors.empty() ? "" : p.errors.front()));
  const auto drops = report["counts"]["drops"].get<double>();
  REQUIRE(drops > 0);
  const auto it = std::find_if(p.order.begin(), p.order.end(), [](const std::string& k) {
    return k.rfind("chunkscope_dropped_chunks_total{stream=\"0\"", 0) == 0;
  });
  REQUIRE(it != p.order.end());
  CHECK(num(p, *it) == drops);
}

TEST_CASE("metrics: --streams 3 serves one labelled series per stream with each stream's counts") {
  if (!metrics::server_available()) {
    MESSAGE("skipped: this build has no metrics server (civetweb, Debian libcivetweb-dev, not found)");
    return;
  }
  ServingRun run({"--streams", "3"});
  const json report = run.wait_report();
  const testutil::HttpReply r = testutil::http(run.port, "GET", "/metrics");
  REQUIRE(r.status == 200);
  const Parsed p = parse_exposition(r.body);
  CHECK_MESSAGE(p.errors.empty(), (p.errors.empty() ? "" : p.errors.front()));
  const json& per = report["streams"]["per_stream"];
  REQUIRE(per.size() == 3);
  for (int k = 0; k < 3; ++k) {
    CAPTURE(k);
    const std::string labels =
        fmt::format(R"(stream="{}",chain="lp:8000:4",backend="cpu",mode="fused",chunk="256",rate="48000")", k);
    CHECK(num(p, "chunkscope_chunks_total{" + labels + "}") == per[k]["counted"].get<double>());
    CHECK(num(p, "chunkscope_deadline_misses_total{" + labels + "}") == per[k]["misses"].get<double>());
    CHECK(num(p, "chunkscope_dropped_chunks_total{" + labels + "}") == per[k]["drops"].get<double>());
    CHECK(num(p, "chunkscope_chunk_latency_seconds_count{" + labels + "}") == per[k]["latency"]["count"].get<double>());
  }
  CHECK(p.order.end() == std::find_if(p.order.begin(), p.order.end(),
                                      [](const std::string& k) { return k.find("stream=\"3\"") != std::string::npos; }));
  check_with_promtool(run.td, r.body);
  CHECK(run.stop() == 0);
}

TEST_CASE("metrics: each planned step is a series of its own under its step and step_label") {
  if (!metrics::server_available()) {
    MESSAGE("skipped: this build has no metrics server (civetweb, Debian libcivetweb-dev, not found)");
    return;
  }
  const std::string chain = std::string("lp:8000:4 | so:") + CHUNKSCOPE_CLEAN_STAGE + " | hp:50";
  ServingRun run({}, chain);
  const json report = run.wait_report();
  const testutil::HttpReply r = testutil::http(run.port, "GET", "/metrics");
  REQUIRE(r.status == 200);
  const Parsed p = parse_exposition(r.body);
  CHECK_MESSAGE(p.errors.empty(), (p.errors.empty() ? "" : p.errors.front()));
  const std::string labels = fmt::format(R"(stream="0",chain="{}",backend="cpu",mode="fused",chunk="256",rate="48000")", chain);
  const char* names[3] = {"lp:8000:4", "so:libclean_stage.so", "hp:50"};
  for (int k = 1; k <= 3; ++k) {
    CAPTURE(k);
    const std::string series =
        fmt::format("chunkscope_step_latency_seconds_count{{{},step=\"{}\",step_label=\"{}\"}}", labels, k, names[k - 1]);
    CHECK(num(p, series) == report["counts"]["counted"].get<double>());
  }
  CHECK(run.stop() == 0);
}
