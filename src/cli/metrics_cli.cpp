#include "src/cli/metrics_cli.hpp"

#include <fmt/format.h>
#include <iostream>

#include "src/report/format.hpp"

namespace chunkscope::cli {

std::unique_ptr<metrics::MetricsExporter> open_metrics(const StreamSession& session, int streams) {
  const StreamOptions& opt = session.options();
  if (opt.metrics_listen.empty()) return nullptr;
  const StreamSetup& su = session.setup();
  metrics::ExporterConfig c;
  c.listen = metrics::parse_listen_address(opt.metrics_listen);
  c.chain = opt.chain;
  c.chunk = opt.chunk;
  c.rate = su.rate;
  c.budget_ns = su.budget_ns;
  c.chunk_ns = su.chunk_ns;
  c.paced = !su.max_speed;
  c.queue_capacity = opt.queue_depth;
  if (su.batch > 1) c.stream_label = "all";  // one engine carries every stream
  if (opt.backend.backend == BackendKind::cpu)
    for (std::size_t i = 0; i < su.plan.steps.size() && i < static_cast<std::size_t>(kMaxTimedSteps); ++i)
      c.steps.push_back(su.plan.steps[i].label(su.plan.stages));
  auto e = std::make_unique<metrics::MetricsExporter>(c, streams);
  std::cerr << fmt::format("chunkscope: metrics at http://{}/metrics\n", e->address().text());
  return e;
}

namespace {
std::optional<std::int64_t> wake_p99_of(const StreamSession& session) {
  if (const auto& b = session.baseline_before(); b && ok(b->status) && b->wake.count() > 0)
    return static_cast<std::int64_t>(b->wake.value_at_percentile(99));
  return std::nullopt;
}
}  // namespace

void start_metrics(metrics::MetricsExporter* exporter, const StreamSession& session, std::function<std::uint64_t()> xruns) {
  if (!exporter) return;
  exporter->start(session.stats(), session.engine(), session.backend().name(), session.backend().mode(),
                  wake_p99_of(session), std::move(xruns));
}

void start_metrics(metrics::MetricsExporter* exporter, const StreamSet& set) {
  if (!exporter) return;
  const auto wake = wake_p99_of(set.session(0));
  for (int k = 0; k < set.sessions(); ++k)
    exporter->attach(k, set.session(k).stats(), set.session(k).engine(), set.session(k).backend().name(),
                     set.session(k).backend().mode(), wake);
  exporter->start();
}

void finish_metrics(metrics::MetricsExporter* exporter, const StreamSession& session, const std::atomic<bool>* stop) {
  if (!exporter) return;
  exporter->finish();
  const std::int64_t hold = metrics_hold_ns(session.options());
  if (hold <= 0) return;
  // A signal that already stopped the run does not skip the hold (a monitor usually ends so):
  // the next one ends the process, whose reports are written by now.
  const bool stopped = stop && stop->load();
  std::cerr << fmt::format("chunkscope: run over; serving its final metrics at http://{}/metrics for {} ({} ends it)\n",
                           exporter->address().text(), fmt_time(static_cast<double>(hold)),
                           stopped ? "another SIGINT or SIGTERM" : "SIGINT or SIGTERM");
  exporter->hold(hold, stopped ? nullptr : stop);
}

}  // namespace chunkscope::cli
