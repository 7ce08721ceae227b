#pragma once
// Several independent streams of one setup at once (--streams N): each stream its own
// source, backend, statistics, pool and queues, the same chain; their schedules share one
// start and are offset evenly over one chunk period (--stagger on) or aligned (off).
//
// With --batch the set is one StreamSession over a batched setup (src/session/stream_session.hpp,
// batched_setup): one engine whose chunks hold every stream's chunk of the period, read
// by a BatchSource, processed in one call.
//
// Design: a StreamSet owns N StreamSessions (one when batched). prepare() makes every stream; run() measures
// the machine once (the platform baseline before and after all streams, by stream 0),
// gives every engine its start, runs each on a thread of its own and joins them. report()
// builds each stream's report, then one for all (src/report/streams.hpp): the worst
// stream's sections with the streams section. Not real-time (the engines' threads are).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "src/report/model.hpp"
#include "src/session/stream_session.hpp"

namespace chunkscope {

/// The schedule offset of stream k of opt.streams from stream 0's: k x D / N with
/// --stagger on, else 0.
std::int64_t stream_offset_ns(const StreamSetup& setup, const StreamOptions& opt, int k);

/// Runs several engines at once: each gets its first chunk's schedule a moment from now,
/// offset by stream_offset_ns() (paced setups), and run_one(k) runs on a thread of its own
/// for every k; returns when all have ended. One engine runs on the calling thread with its
/// own start. [blocks]
void run_engines_together(const std::vector<Engine*>& engines, const StreamSetup& setup, const StreamOptions& opt,
                          const std::function<void(int)>& run_one);

class StreamSet {
 public:
  /// `n` streams (1..kMaxStreams) of `setup` under `opt` (opt.stagger says how they are
  /// offset); the report files go to `paths`.
  StreamSet(const StreamSetup& setup, const StreamOptions& opt, const ReportPaths& paths, int n);
  StreamSet(const StreamSet&) = delete;
  StreamSet& operator=(const StreamSet&) = delete;

  /// Every stream's source, null sink, backend and engine. Throws InputError (a source
  /// that cannot be opened) or RuntimeFailure (a backend that cannot be made).
  /// `metrics`, when given, holds one set of live-metrics recorders per stream.
  void prepare(const std::vector<RunStats::MetricRecorders>* metrics = nullptr);
  /// The baseline and snapshot before, then `started` (when given: the streams are
  /// prepared and measured, none runs yet), all streams until each ends (or `stop`), then
  /// `joined` (every stream has ended) and the baseline and snapshot after. [blocks]
  void run(const std::atomic<bool>* stop, const std::function<void()>& started = {},
           const std::function<void()>& joined = {});

  /// The schedule offset of stream k from stream 0's: k x D / n staggered, else 0 (also
  /// when batched).
  std::int64_t offset_ns(int k) const;
  /// The streams of the set.
  int size() const noexcept { return opt_.streams; }
  /// Whether the streams are batched into one engine (--batch with 2 or more streams).
  bool batched() const noexcept { return batched_; }
  /// The engines: one per stream, or one for all when batched.
  int sessions() const noexcept { return static_cast<int>(sessions_.size()); }
  StreamSession& session(int k) { return *sessions_[static_cast<std::size_t>(k)]; }
  const StreamSession& session(int k) const { return *sessions_[static_cast<std::size_t>(k)]; }

  /// Each session's report (built once, after run()): each stream's, or the batch's.
  const std::vector<RunReport>& stream_reports();
  /// The report of all streams: the worst stream's with the streams section.
  RunReport report();
  /// How the run ended: the worst stream's outcome, its reason naming the stream.
  RunOutcome outcome();
  /// The worst stream's session (its statistics back the .hgrm files and the trace).
  const StreamSession& worst();

 private:
  StreamOptions opt_;  // opt_.streams: this set's count
  bool batched_ = false;
  std::vector<std::unique_ptr<ChunkSource>> sources_;
  std::vector<std::unique_ptr<ChunkSink>> sinks_;
  std::vector<std::unique_ptr<StreamSession>> sessions_;
  std::vector<RunReport> reports_;
  std::vector<RunOutcome> outcomes_;
  std::optional<RunReport> combined_;
};

}  // namespace chunkscope
