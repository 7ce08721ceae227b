#pragma once
// MetricsExporter: live metrics of running streams for Prometheus (--metrics-listen).
//
// Design: the real-time threads do nothing for it beyond what the live view already asks:
// RunStats::add (sink thread) records each counted chunk's latency, stage times and output
// period into interval recorders (wait-free, no locks, no allocation) and stores its
// counters in relaxed atomics. A sampler thread of the exporter, once per second, swaps the
// recorders' interval histograms out (rt/stats/interval_recorder.hpp), adds them to its
// own totals, reads the counters, and publishes an immutable snapshot (src/metrics/
// exposition.hpp) under a mutex that only it and the HTTP threads take. The HTTP threads
// (civetweb, src/metrics/server.hpp) copy the latest snapshot and render it: a scrape never
// touches the engine or the statistics. finish() stops the sampler after the run has
// joined and takes the last sample, whose counts equal the report's; hold() keeps serving
// them. Not real-time.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "rt/engine.hpp"
#include "rt/run_stats.hpp"
#include "rt/stats/interval_recorder.hpp"
#include "src/metrics/exposition.hpp"
#include "src/metrics/server.hpp"

namespace chunkscope::metrics {

/// What a stream's metrics are labelled with and measured against.
struct ExporterConfig {
  ListenAddress listen;
  std::string chain;  // backend and mode are each stream's: attach()
  int chunk = 0;
  double rate = 0;
  std::int64_t budget_ns = 0, chunk_ns = 0;
  bool paced = true;
  int queue_capacity = 0;
  std::int64_t sample_period_ns = 1'000'000'000;  // the interval of the headroom gauge
  std::string stream_label;  // the one stream's label instead of "0" ("all" for a --batch run)
  std::vector<std::string> steps;  // the planned steps' labels (CPU runs): one step series each
};

class MetricsExporter {
 public:
  /// Starts the HTTP server (the families without samples until start()) for `streams`
  /// streams (labelled stream="0", "1", ...). Throws RuntimeFailure when the address cannot
  /// be listened on. [allocates, blocks]
  explicit MetricsExporter(const ExporterConfig& cfg, int streams = 1);
  /// Stops sampling (finish()) and the server.
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  /// The recorders stream k's RunStats::enable_metrics feeds; call before the run.
  RunStats::MetricRecorders recorders(int k = 0);
  /// Stream k's statistics and engine (and `xruns`, a device's counter, when given), which
  /// must outlive finish(), labelled with `backend` and `mode` (the prepared backend's).
  /// `baseline_wake_p99_ns`: the platform baseline measured before the run, when there is
  /// one. Call for every stream, then start().
  void attach(int k, const RunStats& stats, const Engine& engine, std::string backend, std::string mode,
              std::optional<std::int64_t> baseline_wake_p99_ns, std::function<std::uint64_t()> xruns = {});
  /// The same for statistics fed without an engine (`engine` null: a probe in an
  /// application's callback, include/chunkscope/probe.h): no drops, underruns or queue.
  void attach(int k, const RunStats& stats, const Engine* engine, std::string backend, std::string mode,
              std::optional<std::int64_t> baseline_wake_p99_ns, std::function<std::uint64_t()> xruns = {});
  /// Starts the sampler thread: from now on the attached streams' samples are served.
  void start();
  /// One stream: attach(0, ...) and start().
  void start(const RunStats& stats, const Engine& engine, std::string backend, std::string mode,
             std::optional<std::int64_t> baseline_wake_p99_ns, std::function<std::uint64_t()> xruns = {});
  /// After the run has joined: stops the sampler, takes the final sample (its counts are
  /// the run's) and marks the streams as ended. Idempotent; no-op when never started.
  void finish();
  /// Keeps serving for `ns` or until `*stop` becomes true. [blocks]
  void hold(std::int64_t ns, const std::atomic<bool>* stop) const;

  /// The exposition of the latest snapshot (what GET /metrics answers). Thread-safe.
  std::string scrape(Format f) const;
  /// The latest snapshot (a copy). Thread-safe.
  MetricsSnapshot snapshot() const;
  const ListenAddress& address() const { return server_->address(); }
  std::uint64_t requests() const { return server_->requests(); }

 private:
  // one stream's recorders, the totals the sampler keeps, and what it reads
  struct Stream {
    stats::IntervalRecorder latency_rec, period_rec;
    std::array<std::unique_ptr<stats::IntervalRecorder>, kStageCount> stage_rec;
    stats::LogHistogram latency_total, period_total;
    std::array<stats::LogHistogram, kStageCount> stage_total;
    std::vector<std::unique_ptr<stats::IntervalRecorder>> step_rec;
    std::vector<stats::LogHistogram> step_total;
    std::optional<std::int64_t> headroom_ns;
    std::uint64_t headroom_chunks = 0;
    const RunStats* stats = nullptr;
    const Engine* engine = nullptr;
    std::string backend, mode;
    std::function<std::uint64_t()> xruns;
    std::optional<std::int64_t> baseline_wake_p99_ns;
  };
  void sample(bool final);
  StreamMetrics sample_stream(Stream& s, int index, bool final);
  void loop();

  ExporterConfig cfg_;
  std::vector<std::unique_ptr<Stream>> streams_;
  stats::LogHistogram interval_;

  mutable std::mutex snap_mutex_;
  MetricsSnapshot snap_;

  std::mutex loop_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread sampler_;
  bool started_ = false, finished_ = false;

  std::unique_ptr<MetricsServer> server_;  // last: stops first
};

}  // namespace chunkscope::metrics
