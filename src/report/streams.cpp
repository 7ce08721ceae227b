#include "src/report/streams.hpp"

#include <fmt/format.h>

#include <limits>
#include <tuple>

#include "src/report/build.hpp"
#include "src/report/diagnosis.hpp"

namespace chunkscope {

namespace {

StreamFigures figures_of(const RunReport& r, int index, std::int64_t offset_ns) {
  StreamFigures f;
  f.stream = index;
  f.offset_ns = offset_ns;
  f.state = r.state;
  f.counted = r.counts.counted;
  f.misses = r.counts.misses;
  f.stalls = r.counts.events();
  f.drops = r.counts.drops;
  f.latency = r.latency;
  f.process = r.stage(Stage::process);
  if (r.headroom) f.headroom_p95_ns = r.headroom->p95;
  f.realtime_safe = r.verdict.realtime_safe;
  f.needed_chunks = r.verdict.needed_chunks;
  f.owner = r.verdict.owner;
  return f;
}

// smaller is worse
auto badness_key(const StreamFigures& f) {
  const std::int64_t room = f.headroom_p95_ns ? *f.headroom_p95_ns
                            : f.latency.has_data() ? -f.latency.p95
                                                   : std::numeric_limits<std::int64_t>::max();
  return std::make_tuple(f.state == RunState::incomplete ? 0 : 1, f.realtime_safe == false ? 0 : 1, room);
}

}  // namespace

int worst_stream(const std::vector<StreamFigures>& streams) {
  int worst = 0;
  for (std::size_t i = 1; i < streams.size(); ++i)
    if (badness_key(streams[i]) < badness_key(streams[static_cast<std::size_t>(worst)])) worst = static_cast<int>(i);
  return worst;
}

std::uint64_t fewest_counted(const StreamsSection& s) noexcept {
  if (s.streams.empty()) return 0;
  std::uint64_t n = s.streams.front().counted;
  for (const auto& f : s.streams) n = std::min(n, f.counted);
  return n;
}

StreamsSection build_streams_section(const std::vector<StreamRun>& runs, bool staggered, std::int64_t offset_step_ns) {
  StreamsSection s;
  s.count = static_cast<int>(runs.size());
  s.staggered = staggered;
  s.offset_step_ns = offset_step_ns;
  if (runs.empty()) return s;
  stats::LogHistogram latency = runs[0].stats->latency;
  stats::LogHistogram process = runs[0].stats->stage[static_cast<std::size_t>(Stage::process)];
  bool any_verdict = false, all_safe = true;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunReport& r = *runs[i].report;
    s.streams.push_back(figures_of(r, static_cast<int>(i), runs[i].offset_ns));
    const StreamFigures& f = s.streams.back();
    s.counted += f.counted;
    s.misses += f.misses;
    s.stalls += f.stalls;
    s.drops += f.drops;
    if (f.realtime_safe) {
      any_verdict = true;
      all_safe = all_safe && *f.realtime_safe;
    }
    s.needed_chunks = std::max(s.needed_chunks, f.needed_chunks);
    if (i > 0) {
      latency.add(runs[i].stats->latency);
      process.add(runs[i].stats->stage[static_cast<std::size_t>(Stage::process)]);
    }
  }
  if (!runs[0].report->timing.paced) {  // --speed max: no schedule, so no offsets either
    s.offset_step_ns = 0;
    for (auto& f : s.streams) f.offset_ns = 0;
  }
  s.latency = summarize(latency);
  s.process = summarize(process);
  const RunReport& first = *runs[0].report;
  if (first.timing.paced && s.latency.has_data()) s.headroom_p95_ns = first.timing.budget_ns - s.latency.p95;
  if (any_verdict) s.realtime_safe = all_safe;
  if (s.realtime_safe == false) s.needed_chunks = 0;                 // a stream that missed decides
  else if (s.needed_chunks > 0) s.realtime_safe = std::nullopt;      // one that cannot be judged leaves it open
  s.worst = worst_stream(s.streams);
  for (const auto& f : s.streams) {
    if (f.misses == 0) continue;
    if (!s.blame) {
      s.blame = f.stream;
      continue;
    }
    const StreamFigures& b = s.streams[static_cast<std::size_t>(*s.blame)];
    if (std::tie(f.stalls, f.misses) > std::tie(b.stalls, b.misses)) s.blame = f.stream;
  }
  return s;
}

RunReport combine_streams(const std::vector<StreamRun>& runs, bool staggered, std::int64_t offset_step_ns) {
  StreamsSection s = build_streams_section(runs, staggered, offset_step_ns);
  RunReport r = *runs[static_cast<std::size_t>(s.worst)].report;
  if (s.realtime_safe) r.verdict.realtime_safe = s.realtime_safe;
  if (s.needed_chunks > 0 && r.verdict.needed_chunks == 0) {  // the worst was judged, another stream cannot be
    r.verdict.realtime_safe.reset();
    r.verdict.text =
        fmt::format("{} on some stream; {}", cannot_judge_words(fewest_counted(s), s.needed_chunks), r.verdict.text);
  }
  r.verdict.needed_chunks = s.needed_chunks;
  const int unsafe = s.unsafe_streams();
  if (unsafe > 0)
    r.verdict.text = fmt::format("{} of {} streams not safe; the worst, stream {}: {}", unsafe, s.count, s.worst,
                                 r.verdict.text);
  else
    r.verdict.text = fmt::format("worst of {} streams, stream {}: {}", s.count, s.worst, r.verdict.text);
  if (r.state != RunState::complete && s.count > 1) r.reason = fmt::format("stream {}: {}", s.worst, r.reason);
  r.streams = std::move(s);
  r.diagnosis = diagnose(r);  // again, now that it sees every stream
  return r;
}

RunReport combine_batched(const RunReport& batch, const RunStats& stats, int n) {
  const std::vector<StreamRun> runs(static_cast<std::size_t>(std::max(1, n)), StreamRun{&batch, &stats, 0});
  StreamsSection s = build_streams_section(runs, false, 0);
  s.mode = "batched";
  s.blame.reset();  // one engine: no stream is worse than another
  s.stalls = batch.counts.events();  // one event held up every stream's chunk at once: it is one event
  RunReport r = batch;
  r.verdict.text = fmt::format("{} streams batched into one chunk per period: {}", s.count, r.verdict.text);
  r.streams = std::move(s);
  r.diagnosis = diagnose(r);
  return r;
}

}  // namespace chunkscope
