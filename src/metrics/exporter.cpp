#include "src/metrics/exporter.hpp"

#include <algorithm>
#include <chrono>

#include "rt/clock.hpp"

namespace chunkscope::metrics {

MetricsExporter::MetricsExporter(const ExporterConfig& cfg, int streams) : cfg_(cfg) {
  for (int k = 0; k < std::max(1, streams); ++k) {
    auto s = std::make_unique<Stream>();
    s->latency_total = s->latency_rec.make_histogram();
    s->period_total = s->latency_rec.make_histogram();
    for (int i = 0; i < kStageCount; ++i) {
      s->stage_rec[static_cast<std::size_t>(i)] = std::make_unique<stats::IntervalRecorder>();
      s->stage_total[static_cast<std::size_t>(i)] = s->latency_rec.make_histogram();
    }
    for (std::size_t i = 0; i < std::min<std::size_t>(cfg_.steps.size(), kMaxTimedSteps); ++i) {
      s->step_rec.push_back(std::make_unique<stats::IntervalRecorder>());
      s->step_total.push_back(s->latency_rec.make_histogram());
    }
    streams_.push_back(std::move(s));
  }
  interval_ = streams_[0]->latency_rec.make_histogram();
  snap_.latency_bounds_ns = latency_bounds(cfg_.budget_ns);
  snap_.period_bounds_ns = period_bounds(cfg_.chunk_ns);
  sample(false);  // no stream yet: the families without samples
  server_ = std::make_unique<MetricsServer>(cfg_.listen, [this](Format f) { return scrape(f); });
}

MetricsExporter::~MetricsExporter() {
  finish();
  server_.reset();
}

RunStats::MetricRecorders MetricsExporter::recorders(int k) {
  Stream& s = *streams_.at(static_cast<std::size_t>(k));
  RunStats::MetricRecorders r;
  r.latency = &s.latency_rec;
  r.period = &s.period_rec;
  for (int i = 0; i < kStageCount; ++i) r.stage[static_cast<std::size_t>(i)] = s.stage_rec[static_cast<std::size_t>(i)].get();
  for (std::size_t i = 0; i < s.step_rec.size(); ++i) r.step[i] = s.step_rec[i].get();
  return r;
}

void MetricsExporter::attach(int k, const RunStats& stats, const Engine& engine, std::string backend, std::string mode,
                             std::optional<std::int64_t> baseline_wake_p99_ns, std::function<std::uint64_t()> xruns) {
  attach(k, stats, &engine, std::move(backend), std::move(mode), baseline_wake_p99_ns, std::move(xruns));
}

void MetricsExporter::attach(int k, const RunStats& stats, const Engine* engine, std::string backend, std::string mode,
                             std::optional<std::int64_t> baseline_wake_p99_ns, std::function<std::uint64_t()> xruns) {
  if (started_) return;
  Stream& s = *streams_.at(static_cast<std::size_t>(k));
  s.backend = std::move(backend);
  s.mode = std::move(mode);
  s.stats = &stats;
  s.engine = engine;
  s.xruns = std::move(xruns);
  s.baseline_wake_p99_ns = baseline_wake_p99_ns;
}

void MetricsExporter::start() {
  if (started_) return;
  started_ = true;
  sample(false);
  sampler_ = std::thread([this] { loop(); });
}

void MetricsExporter::start(const RunStats& stats, const Engine& engine, std::string backend, std::string mode,
                            std::optional<std::int64_t> baseline_wake_p99_ns, std::function<std::uint64_t()> xruns) {
  attach(0, stats, engine, std::move(backend), std::move(mode), baseline_wake_p99_ns, std::move(xruns));
  start();
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

StreamMetrics MetricsExporter::sample_stream(Stream& s, int index, bool final) {
  StreamMetrics m;
  m.stream = index == 0 && !cfg_.stream_label.empty() ? cfg_.stream_label : std::to_string(index);
  m.chain = cfg_.chain;
  m.backend = s.backend;
  m.mode = s.mode;
  m.chunk = cfg_.chunk;
  m.rate = cfg_.rate;
  m.budget_ns = cfg_.budget_ns;
  m.chunk_ns = cfg_.chunk_ns;
  m.paced = cfg_.paced;
  m.queue_capacity = cfg_.queue_capacity;
  s.latency_rec.sample_into(interval_);
  if (interval_.count() > 0 && cfg_.paced) {
    s.headroom_ns = cfg_.budget_ns - static_cast<std::int64_t>(interval_.value_at_percentile(95));
    s.headroom_chunks = interval_.count();
  }
  s.latency_total.add(interval_);
  s.period_rec.sample_into(interval_);
  s.period_total.add(interval_);
  for (int i = 0; i < kStageCount; ++i) {
    s.stage_rec[static_cast<std::size_t>(i)]->sample_into(interval_);
    s.stage_total[static_cast<std::size_t>(i)].add(interval_);
  }
  for (std::size_t i = 0; i < s.step_rec.size(); ++i) {
    s.step_rec[i]->sample_into(interval_);
    s.step_total[i].add(interval_);
  }
  if (final) {
    // the run has joined: the statistics are complete and exact
    m.chunks = s.stats->chunks;
    m.warmup_chunks = s.stats->warmup_chunks;
    m.misses = s.stats->misses;
    m.stalls = s.stats->stalls;
  } else {
    m.chunks = s.stats->live_counted.load(std::memory_order_relaxed);
    m.misses = s.stats->live_misses.load(std::memory_order_relaxed);
    m.stalls = s.stats->live_stalls.load(std::memory_order_relaxed);
    m.warmup_chunks = s.stats->live_warmup.load(std::memory_order_relaxed);
  }
  if (s.engine) {  // a probe's callback has no engine: no drops, underruns or queue
    m.drops = s.engine->live_drops();
    m.underruns = s.engine->live_underruns();
    m.queue_depth = final ? 0 : s.engine->live_queue_depth();
  }
  if (s.xruns) m.xruns = s.xruns();
  m.running = !final;
  m.headroom_p95_ns = s.headroom_ns;
  m.interval_chunks = s.headroom_chunks;
  m.baseline_wake_p99_ns = s.baseline_wake_p99_ns;
  m.latency = bucketize(s.latency_total, snap_.latency_bounds_ns);
  m.period = bucketize(s.period_total, snap_.period_bounds_ns);
  for (int i = 0; i < kStageCount; ++i)
    m.stage[static_cast<std::size_t>(i)] = bucketize(s.stage_total[static_cast<std::size_t>(i)], snap_.latency_bounds_ns);
  for (std::size_t i = 0; i < s.step_total.size(); ++i) {
    m.step.push_back(bucketize(s.step_total[i], snap_.latency_bounds_ns));
    m.step_labels.push_back(cfg_.steps[i]);
  }
  return m;
}

void MetricsExporter::sample(bool final) {
  std::vector<StreamMetrics> out;
  if (started_)
    for (std::size_t k = 0; k < streams_.size(); ++k)
      if (streams_[k]->stats) out.push_back(sample_stream(*streams_[k], static_cast<int>(k), final));
  std::lock_guard<std::mutex> lock(snap_mutex_);
  snap_.streams = std::move(out);
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
