#include "src/report/trace.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <sstream>
#include <unistd.h>

#include "src/errors.hpp"
#include "src/io/output_file.hpp"
#include "src/report/hgrm.hpp"

namespace chunkscope {

using nlohmann::json;

TraceThreads trace_threads(const EngineResult& er) {
  return {static_cast<int>(getpid()), er.source_tid, er.processor_tid, er.sink_tid};
}

json build_trace(const std::vector<ChunkRecord>& records, const TraceThreads& t) {
  json ev = json::array();
  const int pid = t.pid;
  struct Track {
    const char* name;
    int tid;
  };
  const Track tracks[kStageCount] = {{"source", t.source_tid ? t.source_tid : kTraceDeviceSourceTrack},
                                     {"queue_in", kTraceQueueInTrack},
                                     {"process", t.processor_tid ? t.processor_tid : kTraceQueueInTrack + 16},
                                     {"queue_out", kTraceQueueOutTrack},
                                     {"sink", t.sink_tid ? t.sink_tid : kTraceDeviceSinkTrack}};
  ev.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", "chunkscope"}}}});
  for (int i = 0; i < kStageCount; ++i) {
    const bool thread = tracks[i].tid < kTraceQueueInTrack;
    const std::string label = thread ? fmt::format("{} thread", tracks[i].name)
                                     : fmt::format("{} (waits, not a thread)", tracks[i].name);
    ev.push_back({{"ph", "M"}, {"pid", pid}, {"tid", tracks[i].tid}, {"name", "thread_name"}, {"args", {{"name", label}}}});
    ev.push_back(
        {{"ph", "M"}, {"pid", pid}, {"tid", tracks[i].tid}, {"name", "thread_sort_index"}, {"args", {{"sort_index", i}}}});
  }
  auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1e3; };
  for (const auto& r : records) {
    const std::int64_t b[kStageCount + 1] = {r.sched, r.ready, r.dequeue, r.proc_end, r.sink_start, r.emit};
    const json args = {{"seq", r.seq},
                       {"frames", r.frames},
                       {"latency_us", static_cast<double>(r.emit - r.sched) / 1e3},
                       {"miss", (r.flags & kChunkMiss) != 0},
                       {"warmup", (r.flags & kChunkWarmup) != 0}};
    for (int i = 0; i < kStageCount; ++i) {
      const double dur = std::max(0.0, static_cast<double>(b[i + 1] - b[i]) / 1e3);
      ev.push_back({{"ph", "X"}, {"pid", pid}, {"tid", tracks[i].tid}, {"name", fmt::format("chunk {}", r.seq)},
                    {"cat", tracks[i].name}, {"ts", us(b[i])}, {"dur", dur}, {"args", args}});
    }
    ev.push_back({{"ph", "C"}, {"pid", pid}, {"name", "queue_in depth"}, {"ts", us(r.ready)}, {"args", {{"depth", r.q_in_depth}}}});
    ev.push_back(
        {{"ph", "C"}, {"pid", pid}, {"name", "queue_out depth"}, {"ts", us(r.proc_end)}, {"args", {{"depth", r.q_out_depth}}}});
  }
  return {{"traceEvents", ev},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"clock", "CLOCK_MONOTONIC"},
            {"ts_unit", "microseconds of CLOCK_MONOTONIC (absolute, as clock_gettime reads it)"},
            {"pid", pid},
            {"queue_tracks", "queue_in and queue_out hold each chunk's wait in the queue; they are not threads"}}}};
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
