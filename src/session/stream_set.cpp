#include "src/session/stream_set.hpp"

#include <fmt/format.h>

#include <cmath>
#include <thread>

#include "rt/clock.hpp"
#include "src/errors.hpp"
#include "src/io/file_stream.hpp"
#include "src/report/streams.hpp"

namespace chunkscope {

namespace {
// The engines' common start is this far after they were given their schedules, and 1 ms
// more per engine, so that every engine's threads are up before its first chunk is due.
constexpr std::int64_t kSetStartSlackNs = 20'000'000;
}  // namespace

StreamSet::StreamSet(const StreamSetup& setup, const StreamOptions& opt, const ReportPaths& paths, int n)
    : opt_(opt) {
  if (n < 1 || n > kMaxStreams) throw InputError(fmt::format("--streams: {} is out of range 1..{}", n, kMaxStreams));
  opt_.streams = n;
  batched_ = opt.batch && n > 1;
  if (batched_) {
    opt_.stagger = false;
    sessions_.push_back(std::make_unique<StreamSession>(batched_setup(setup, n), opt_, paths));
    return;
  }
  for (int k = 0; k < n; ++k) sessions_.push_back(std::make_unique<StreamSession>(setup, opt, paths));
}

std::int64_t stream_offset_ns(const StreamSetup& setup, const StreamOptions& opt, int k) {
  if (!opt.stagger || opt.batch || opt.streams < 1) return 0;
  return static_cast<std::int64_t>(std::llround(static_cast<long double>(setup.chunk_ns) * k /
                                                static_cast<long double>(opt.streams)));
}

void run_engines_together(const std::vector<Engine*>& engines, const StreamSetup& setup, const StreamOptions& opt,
                          const std::function<void(int)>& run_one) {
  const int n = static_cast<int>(engines.size());
  if (n == 1) {
    run_one(0);
    return;
  }
  if (!setup.max_speed) {
    const std::int64_t t0 = now_ns() + kSetStartSlackNs + 1'000'000 * static_cast<std::int64_t>(n);
    for (int k = 0; k < n; ++k) engines[static_cast<std::size_t>(k)]->schedule_start(t0 + stream_offset_ns(setup, opt, k));
  }
  std::vector<std::thread> threads;
  threads.reserve(engines.size());
  for (int k = 0; k < n; ++k) threads.emplace_back([&run_one, k] { run_one(k); });
  for (auto& t : threads) t.join();
}

std::int64_t StreamSet::offset_ns(int k) const { return stream_offset_ns(sessions_.front()->setup(), opt_, k); }

void StreamSet::prepare(const std::vector<RunStats::MetricRecorders>* metrics) {
  for (std::size_t k = 0; k < sessions_.size(); ++k) {
    auto& s = sessions_[k];
    sources_.push_back(open_source(s->setup(), opt_));
    sinks_.push_back(std::make_unique<NullSink>());
    s->prepare(*sources_.back(), *sinks_.back(), s->engine_config(), nullptr, nullptr,
               metrics && k < metrics->size() ? &(*metrics)[k] : nullptr);
  }
}

void StreamSet::run(const std::atomic<bool>* stop, const std::function<void()>& started,
                    const std::function<void()>& joined) {
  StreamSession& first = *sessions_[0];
  first.measure_before();
  for (std::size_t k = 1; k < sessions_.size(); ++k) sessions_[k]->adopt_platform_tails(first.baseline_before());
  if (started) started();
  std::vector<Engine*> engines;
  for (auto& s : sessions_) engines.push_back(&s->engine());
  run_engines_together(engines, first.setup(), opt_, [this, stop](int k) { session(k).run(stop); });
  if (joined) joined();
  first.measure_after();
  for (std::size_t k = 1; k < sessions_.size(); ++k) sessions_[k]->adopt_measurements(first);
}

const std::vector<RunReport>& StreamSet::stream_reports() {
  if (reports_.empty())
    for (auto& s : sessions_) {
      outcomes_.push_back(s->outcome());
      reports_.push_back(s->report(s->workload(), outcomes_.back()));
    }
  return reports_;
}

RunReport StreamSet::report() {
  if (!combined_) {
    const auto& reps = stream_reports();
    std::vector<StreamRun> runs;
    for (int k = 0; k < sessions(); ++k)
      runs.push_back({&reps[static_cast<std::size_t>(k)], &session(k).stats(), offset_ns(k)});
    combined_ = batched_ ? combine_batched(reps.front(), session(0).stats(), size())
                         : combine_streams(runs, opt_.stagger, offset_ns(1));
  }
  return *combined_;
}

RunOutcome StreamSet::outcome() {
  const int w = report().streams->worst;
  RunOutcome o = outcomes_[static_cast<std::size_t>(w)];
  if (o.state != RunState::complete && sessions() > 1) o.reason = fmt::format("stream {}: {}", w, o.reason);
  return o;
}

const StreamSession& StreamSet::worst() { return session(report().streams->worst); }

}  // namespace chunkscope
