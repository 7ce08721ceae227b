#include "src/metrics/exporter.hpp"

#include <chrono>

#include "rt/clock.hpp"

namespace chunkscope::metrics {

MetricsExporter::MetricsExporter(const ExporterConfig& cfg)
    : cfg_(cfg),
      interval_(latency_rec_.make_histogram()),
      latency_total_(latency_rec_.make_histogram()),
      period_total_(latency_rec_.make_histogram()) {
  for (int i = 0; i < kStageCount; ++i) {
    stage_rec_[static_cast<std::size_t>(i)] = std::make_unique<stats::IntervalRecorder>();
    stage_total_[static_cast<std::size_t>(i)] = latency_rec_.make_histogram();
  }
  snap_.latency_bounds_ns = latency_bounds(cfg_.budget_ns);
  snap_.period_bounds_ns = period_bounds(cfg_.chunk_ns);
  sample(false);  // no stream yet: the families without samples
  server_ = std::make_unique<MetricsServer>(cfg_.listen, [this](Format f) { return scrape(f); });
}

MetricsExporter::~MetricsExporter() {
  finish();
  server_.reset();
}

RunStats::MetricRecorders MetricsExporter::recorders() {
  RunStats::MetricRecorders r;
  r.latency = &latency_rec_;
  r.period = &period_rec_;
  for (int i = 0; i < kStageCount; ++i) r.stage[static_cast<std::size_t>(i)] = stage_rec_[static_cast<std::size_t>(i)].get();
  return r;
}

void MetricsExporter::start(const RunStats& stats, const Engine& engine, std::string backend, std::string mode,
                            std::optional<std::int64_t> baseline_wake_p99_ns, std::function<std::uint64_t()> xruns) {
  if (started_) return;
  cfg_.backend = std::move(backend);
  cfg_.mode = std::move(mode);
  stats_ = &stats;
  engine_ = &engine;
  xruns_ = std::move(xruns);
  baseline_wake_p99_ns_ = baseline_wake_p99_ns;
  started_ = true;
  sample(false);
  sampler_ = std::thread([this] { loop(); });
}

void MetricsExporter::loop() {
  std::unique_lock<std::mutex> lock(loop_mutex_);
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    next += std::chrono::nanoseconds(cfg_.sample_period_ns);
    if (wake_.wait_until(lock, next, [this] { return stop_; })) return;
    lock.unlock();
    sample(false);
    lock.lock();
  }
}

void MetricsExporter::finish() {
  if (!started_ || finished_) return;
  {
    std::lock_guard<std::mutex> lock(loop_mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (sampler_.joinable()) sampler_.join();
  finished_ = true;
  sample(true);
}

void MetricsExporter::sample(bool final) {
  if (!stats_ || !engine_) {
    std::lock_guard<std::mutex> lock(snap_mutex_);
    snap_.streams.clear();
    return;
  }
  StreamMetrics m;
  m.chain = cfg_.chain;
  m.backend = cfg_.backend;
  m.mode = cfg_.mode;
  m.chunk = cfg_.chunk;
  m.rate = cfg_.rate;
  m.budget_ns = cfg_.budget_ns;
  m.chunk_ns = cfg_.chunk_ns;
  m.paced = cfg_.paced;
  m.queue_capacity = cfg_.queue_capacity;
  {
    latency_rec_.sample_into(interval_);
    if (interval_.count() > 0 && cfg_.paced) {
      headroom_ns_ = cfg_.budget_ns - static_cast<std::int64_t>(interval_.value_at_percentile(95));
      headroom_chunks_ = interval_.count();
    }
    latency_total_.add(interval_);
    period_rec_.sample_into(interval_);
    period_total_.add(interval_);
    for (int i = 0; i < kStageCount; ++i) {
      stage_rec_[static_cast<std::size_t>(i)]->sample_into(interval_);
      stage_total_[static_cast<std::size_t>(i)].add(interval_);
    }
    if (final) {
      // the run has joined: the statistics are complete and exact
      m.chunks = stats_->chunks;
      m.warmup_chunks = stats_->warmup_chunks;
      m.misses = stats_->misses;
      m.stalls = stats_->stalls;
    } else {
      m.chunks = stats_->live_counted.load(std::memory_order_relaxed);
      m.misses = stats_->live_misses.load(std::memory_order_relaxed);
      m.stalls = stats_->live_stalls.load(std::memory_order_relaxed);
      m.warmup_chunks = stats_->live_warmup.load(std::memory_order_relaxed);
    }
    m.drops = engine_->live_drops();
    m.underruns = engine_->live_underruns();
    m.queue_depth = final ? 0 : engine_->live_queue_depth();
    if (xruns_) m.xruns = xruns_();
    m.running = !final;
  }
  m.headroom_p95_ns = headroom_ns_;
  m.interval_chunks = headroom_chunks_;
  m.baseline_wake_p99_ns = baseline_wake_p99_ns_;
  m.latency = bucketize(latency_total_, snap_.latency_bounds_ns);
  m.period = bucketize(period_total_, snap_.period_bounds_ns);
  for (int i = 0; i < kStageCount; ++i)
    m.stage[static_cast<std::size_t>(i)] = bucketize(stage_total_[static_cast<std::size_t>(i)], snap_.latency_bounds_ns);
  std::lock_guard<std::mutex> lock(snap_mutex_);
  snap_.streams.assign(1, std::move(m));
}

std::string MetricsExporter::scrape(Format f) const { return render(snapshot(), f); }

MetricsSnapshot MetricsExporter::snapshot() const {
  std::lock_guard<std::mutex> lock(snap_mutex_);
  return snap_;
}

void MetricsExporter::hold(std::int64_t ns, const std::atomic<bool>* stop) const {
  const std::int64_t until = now_ns() + ns;
  while (now_ns() < until) {
    if (stop && stop->load()) return;
    sleep_until_ns(std::min(until, now_ns() + 50'000'000));
  }
}

}  // namespace chunkscope::metrics
