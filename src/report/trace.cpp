#include "src/report/trace.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <unistd.h>

#include "src/errors.hpp"
#include "src/io/output_file.hpp"
#include "src/report/hgrm.hpp"

namespace chunkscope {

using nlohmann::json;

TraceThreads trace_threads(const EngineResult& er) {
  return {static_cast<int>(getpid()), er.source_tid, er.processor_tid, er.sink_tid};
}

namespace {

struct Track {
  const char* name;
  int tid;
};

// `ns` as µs with three decimals: the exact decimal value, which reads back as the double
// ns / 1e3.
void put_us(fmt::memory_buffer& b, std::int64_t ns) {
  if (ns < 0) {
    b.push_back('-');
    ns = -ns;
  }
  fmt::format_to(std::back_inserter(b), "{}.{:03}", ns / 1000, ns % 1000);
}

// The trace's events, one a line, comma-separated.
struct EventStream {
  std::ostream& o;
  bool first = true;
  void put(std::string_view ev) {
    o << (first ? "\n" : ",\n");
    first = false;
    o.write(ev.data(), static_cast<std::streamsize>(ev.size()));
  }
};

// What the trace holds and how to read it: the clock, the tracks, the window of chunks kept.
json trace_other_data(const std::vector<ChunkRecord>& records, int pid, const TraceWindow& window) {
  const std::uint64_t held = records.size();
  const std::uint64_t not_kept = window.emitted > held ? window.emitted - held : 0;
  return {
      {"clock", "CLOCK_MONOTONIC"},
      {"ts_unit", "microseconds of CLOCK_MONOTONIC (absolute, as clock_gettime reads it)"},
      {"pid", pid},
      {"queue_tracks", "queue_in and queue_out hold each chunk's wait in the queue; they are not threads"},
      {"trace_limit", window.limit},
      {"chunks_emitted", window.emitted},
      {"chunks_held", held},
      {"chunks_not_kept", not_kept},
      {"first_seq", records.empty() ? json(nullptr) : json(records.front().seq)},
      {"last_seq", records.empty() ? json(nullptr) : json(records.back().seq)},
      {"window", fmt::format("the last {} chunks to reach the sink (--trace-limit), warm-up included; {} of the run's "
                             "{} chunks are held, the {} before them are not kept",
                             window.limit, held, window.emitted, not_kept)}};
}

// The metadata events: the process's name, each track's name and its place in the list.
void put_track_names(EventStream& events, const Track (&tracks)[kStageCount], int pid) {
  events.put(json({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", "chunkscope"}}}}).dump());
  for (int i = 0; i < kStageCount; ++i) {
    const bool thread = tracks[i].tid < kTraceQueueInTrack;
    // One name per thread: stages that share a thread (--inline) are named together, once.
    bool named_before = false;
    std::string names = tracks[i].name;
    for (int k = 0; k < kStageCount; ++k) {
      if (k == i || tracks[k].tid != tracks[i].tid) continue;
      if (k < i) named_before = true;
      else names += fmt::format(" and {}", tracks[k].name);
    }
    if (named_before) continue;
    const std::string label = thread ? fmt::format("{} thread", names)
                                     : fmt::format("{} (waits, not a thread)", names);
    events.put(
        json({{"ph", "M"}, {"pid", pid}, {"tid", tracks[i].tid}, {"name", "thread_name"}, {"args", {{"name", label}}}})
            .dump());
    events.put(json({{"ph", "M"},
                     {"pid", pid},
                     {"tid", tracks[i].tid},
                     {"name", "thread_sort_index"},
                     {"args", {{"sort_index", i}}}})
                   .dump());
  }
}

// Per chunk: five X slices (and the source's wake and read inside its slice) and two C
// counters, keys in the order json objects keep them. The buffers are reused from chunk to chunk.
class ChunkEvents {
 public:
  ChunkEvents(EventStream& events, const Track (&tracks)[kStageCount], int pid, const TraceWindow& window)
      : events_(events), tracks_(tracks), pid_(pid), window_(window) {}

  void put(const ChunkRecord& r) {
    // the stages' boundaries, as the statistics cut them (process is the backend's call)
    const std::int64_t b[kStageCount + 1] = {r.sched, r.ready, r.proc_start, r.proc_end, r.sink_start, r.emit};
    args_.clear();
    fmt::format_to(std::back_inserter(args_), R"({{"frames":{},"latency_us":)", r.frames);
    put_us(args_, r.emit - r.sched);
    fmt::format_to(std::back_inserter(args_), R"(,"miss":{},"seq":{},"warmup":{}}})", (r.flags & kChunkMiss) != 0, r.seq,
                   (r.flags & kChunkWarmup) != 0);
    const std::string_view a(args_.data(), args_.size());
    for (int i = 0; i < kStageCount; ++i) {
      ev_.clear();
      fmt::format_to(std::back_inserter(ev_), R"({{"args":{},"cat":"{}","dur":)", a, tracks_[i].name);
      put_us(ev_, std::max<std::int64_t>(0, b[i + 1] - b[i]));
      fmt::format_to(std::back_inserter(ev_), R"(,"name":"chunk {}","ph":"X","pid":{},"tid":{},"ts":)", r.seq, pid_,
                     tracks_[i].tid);
      put_us(ev_, b[i]);
      ev_.push_back('}');
      events_.put(std::string_view(ev_.data(), ev_.size()));
      if (i == 2) put_steps(r);
      // the source's slice holds its wake-up (sched to woke) and its read (woke to ready)
      if (i == 0 && r.woke > r.sched && r.woke <= r.ready) put_source_parts(r);  // paced: without a schedule woke is sched
    }
    put_counters(r);
  }

 private:
  // the process slice holds each timed step's slice, end to end from proc_start
  void put_steps(const ChunkRecord& r) {
    std::int64_t at = r.proc_start;
    const std::size_t n = std::min<std::size_t>(r.steps, window_.steps.size());
    for (std::size_t k = 0; k < n; ++k) {
      sev_.clear();
      fmt::format_to(std::back_inserter(sev_), R"({{"args":{{"seq":{},"step":{}}},"cat":"step","dur":)", r.seq, k + 1);
      put_us(sev_, r.step_ns[k]);
      fmt::format_to(std::back_inserter(sev_), R"(,"name":{},"ph":"X","pid":{},"tid":{},"ts":)",
                     json(fmt::format("step {} {}", k + 1, window_.steps[k])).dump(), pid_, tracks_[2].tid);
      put_us(sev_, at);
      sev_.push_back('}');
      events_.put(std::string_view(sev_.data(), sev_.size()));
      at += r.step_ns[k];
    }
  }

  void put_source_parts(const ChunkRecord& r) {
    const std::pair<const char*, std::pair<std::int64_t, std::int64_t>> parts[2] = {{"wake", {r.sched, r.woke}},
                                                                                   {"read", {r.woke, r.ready}}};
    for (const auto& [name, span] : parts) {
      ev_.clear();
      fmt::format_to(std::back_inserter(ev_), R"({{"args":{{"seq":{}}},"cat":"source","dur":)", r.seq);
      put_us(ev_, span.second - span.first);
      fmt::format_to(std::back_inserter(ev_), R"(,"name":"{}","ph":"X","pid":{},"tid":{},"ts":)", name, pid_,
                     tracks_[0].tid);
      put_us(ev_, span.first);
      ev_.push_back('}');
      events_.put(std::string_view(ev_.data(), ev_.size()));
    }
  }

  void put_counters(const ChunkRecord& r) {
    const std::pair<const char*, std::pair<std::int64_t, std::int64_t>> counters[2] = {
        {"queue_in depth", {r.ready, r.q_in_depth}}, {"queue_out depth", {r.proc_end, r.q_out_depth}}};
    for (const auto& [name, at] : counters) {
      ev_.clear();
      fmt::format_to(std::back_inserter(ev_), R"({{"args":{{"depth":{}}},"name":"{}","ph":"C","pid":{},"ts":)", at.second,
                     name, pid_);
      put_us(ev_, at.first);
      ev_.push_back('}');
      events_.put(std::string_view(ev_.data(), ev_.size()));
    }
  }

  EventStream& events_;
  const Track (&tracks_)[kStageCount];
  const int pid_;
  const TraceWindow& window_;
  fmt::memory_buffer args_, ev_, sev_;
};

}  // namespace

void write_trace(std::ostream& o, const std::vector<ChunkRecord>& records, const TraceThreads& t,
                 const TraceWindow& window) {
  const int pid = t.pid;
  const Track tracks[kStageCount] = {
      {stage_key(Stage::source), t.source_tid ? t.source_tid : kTraceDeviceSourceTrack},
      {stage_key(Stage::wait_in), kTraceQueueInTrack},
      {stage_key(Stage::process), t.processor_tid ? t.processor_tid : kTraceQueueInTrack + 16},
      {stage_key(Stage::wait_out), kTraceQueueOutTrack},
      {stage_key(Stage::sink), t.sink_tid ? t.sink_tid : kTraceDeviceSinkTrack}};
  const json other = trace_other_data(records, pid, window);
  o << R"({"displayTimeUnit":"ms","otherData":)" << other.dump() << R"(,"traceEvents":[)";
  EventStream events{o};
  put_track_names(events, tracks, pid);
  ChunkEvents chunk_events(events, tracks, pid, window);
  for (const auto& r : records) chunk_events.put(r);
  o << "\n]}";
}

void write_trace_file(const std::string& path, const std::vector<ChunkRecord>& records, const TraceThreads& threads,
                      const TraceWindow& window, const std::string& label) {
  write_streamed_output(path, label, [&](std::ostream& o) {
    write_trace(o, records, threads, window);
    o << '\n';
  });
}

std::vector<std::string> hgrm_file_names() {
  std::vector<std::string> names;
  for (int i = 0; i < kStageCount; ++i) names.push_back(std::string(stage_key(static_cast<Stage>(i))) + ".hgrm");
  names.push_back("end_to_end.hgrm");
  names.push_back("period.hgrm");
  return names;
}

void write_hgrm_files(const std::string& dir, const RunStats& st) {
  const auto names = hgrm_file_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& h = i < kStageCount ? st.stage[i] : i == kStageCount ? st.latency : st.period;
    std::ostringstream o;
    stats::write_hgrm(o, h, 1000.0);
    const std::string path = dir + "/" + names[i];
    write_text_output(path, o.str(), fmt::format("--hgrm '{}': {}", dir, path));
  }
}

}  // namespace chunkscope
