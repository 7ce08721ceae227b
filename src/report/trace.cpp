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

}  // namespace

void write_trace(std::ostream& o, const std::vector<ChunkRecord>& records, const TraceThreads& t,
                 const TraceWindow& window) {
  const int pid = t.pid;
  const Track tracks[kStageCount] = {{"source", t.source_tid ? t.source_tid : kTraceDeviceSourceTrack},
                                     {"queue_in", kTraceQueueInTrack},
                                     {"process", t.processor_tid ? t.processor_tid : kTraceQueueInTrack + 16},
                                     {"queue_out", kTraceQueueOutTrack},
                                     {"sink", t.sink_tid ? t.sink_tid : kTraceDeviceSinkTrack}};
  const std::uint64_t held = records.size();
  const std::uint64_t not_kept = window.emitted > held ? window.emitted - held : 0;
  const json other = {
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
  o << R"({"displayTimeUnit":"ms","otherData":)" << other.dump() << R"(,"traceEvents":[)";

  bool first = true;
  auto put_event = [&](std::string_view ev) {
    o << (first ? "\n" : ",\n");
    first = false;
    o.write(ev.data(), static_cast<std::streamsize>(ev.size()));
  };
  put_event(json({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", "chunkscope"}}}}).dump());
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
    put_event(
        json({{"ph", "M"}, {"pid", pid}, {"tid", tracks[i].tid}, {"name", "thread_name"}, {"args", {{"name", label}}}})
            .dump());
    put_event(json({{"ph", "M"},
                    {"pid", pid},
                    {"tid", tracks[i].tid},
                    {"name", "thread_sort_index"},
                    {"args", {{"sort_index", i}}}})
                  .dump());
  }

  // the process slice holds each timed step's slice, end to end from proc_start
  fmt::memory_buffer sev;
  auto put_steps = [&](const ChunkRecord& r) {
    std::int64_t at = r.proc_start;
    const std::size_t n = std::min<std::size_t>(r.steps, window.steps.size());
    for (std::size_t k = 0; k < n; ++k) {
      sev.clear();
      fmt::format_to(std::back_inserter(sev), R"({{"args":{{"seq":{},"step":{}}},"cat":"step","dur":)", r.seq, k + 1);
      put_us(sev, r.step_ns[k]);
      fmt::format_to(std::back_inserter(sev), R"(,"name":{},"ph":"X","pid":{},"tid":{},"ts":)",
                     json(fmt::format("step {} {}", k + 1, window.steps[k])).dump(), pid, tracks[2].tid);
      put_us(sev, at);
      sev.push_back('}');
      put_event(std::string_view(sev.data(), sev.size()));
      at += r.step_ns[k];
    }
  };

  // Per chunk: five X slices (and the source's wake and read inside its slice) and two C counters, keys in the order json objects keep them
  fmt::memory_buffer args, ev;
  for (const auto& r : records) {
    const std::int64_t b[kStageCount + 1] = {r.sched, r.ready, r.dequeue, r.proc_end, r.sink_start, r.emit};
    args.clear();
    fmt::format_to(std::back_inserter(args), R"({{"frames":{},"latency_us":)", r.frames);
    put_us(args, r.emit - r.sched);
    fmt::format_to(std::back_inserter(args), R"(,"miss":{},"seq":{},"warmup":{}}})", (r.flags & kChunkMiss) != 0, r.seq,
                   (r.flags & kChunkWarmup) != 0);
    const std::string_view a(args.data(), args.size());
    for (int i = 0; i < kStageCount; ++i) {
      ev.clear();
      fmt::format_to(std::back_inserter(ev), R"({{"args":{},"cat":"{}","dur":)", a, tracks[i].name);
      put_us(ev, std::max<std::int64_t>(0, b[i + 1] - b[i]));
      fmt::format_to(std::back_inserter(ev), R"(,"name":"chunk {}","ph":"X","pid":{},"tid":{},"ts":)", r.seq, pid,
                     tracks[i].tid);
      put_us(ev, b[i]);
      ev.push_back('}');
      put_event(std::string_view(ev.data(), ev.size()));
      if (i == 2) put_steps(r);
      // the source's slice holds its wake-up (sched to woke) and its read (woke to ready)
      if (i == 0 && r.woke > r.sched && r.woke <= r.ready) {  // paced: without a schedule woke is sched
        const std::pair<const char*, std::pair<std::int64_t, std::int64_t>> parts[2] = {{"wake", {r.sched, r.woke}},
                                                                                       {"read", {r.woke, r.ready}}};
        for (const auto& [name, span] : parts) {
          ev.clear();
          fmt::format_to(std::back_inserter(ev), R"({{"args":{{"seq":{}}},"cat":"source","dur":)", r.seq);
          put_us(ev, span.second - span.first);
          fmt::format_to(std::back_inserter(ev), R"(,"name":"{}","ph":"X","pid":{},"tid":{},"ts":)", name, pid, tracks[0].tid);
          put_us(ev, span.first);
          ev.push_back('}');
          put_event(std::string_view(ev.data(), ev.size()));
        }
      }
    }
    const std::pair<const char*, std::pair<std::int64_t, std::int64_t>> counters[2] = {
        {"queue_in depth", {r.ready, r.q_in_depth}}, {"queue_out depth", {r.proc_end, r.q_out_depth}}};
    for (const auto& [name, at] : counters) {
      ev.clear();
      fmt::format_to(std::back_inserter(ev), R"({{"args":{{"depth":{}}},"name":"{}","ph":"C","pid":{},"ts":)", at.second,
                     name, pid);
      put_us(ev, at.first);
      ev.push_back('}');
      put_event(std::string_view(ev.data(), ev.size()));
    }
  }
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
