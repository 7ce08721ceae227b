#pragma once
// The Chrome trace of a run (X slices per chunk per stage, C counters for queue depths, M
// names; Perfetto and chrome://tracing load it) and the per-stage .hgrm files. Both are
// written from the run's records and histograms, not from the report. Not real-time.
//
// Design: the engine keeps the records of the last N chunks to reach the sink (a ring,
// --trace-limit, kDefaultTraceLimit by default), so a long run's trace has a fixed size;
// the trace says which chunks it holds. The events are written to the output one by one,
// never gathered into one JSON value.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "rt/chunk.hpp"
#include "rt/engine.hpp"
#include "rt/run_stats.hpp"

namespace chunkscope {

/// The thread tracks of the trace: the process id and the Linux thread ids of the engine's
/// source, processor and sink threads (0: not a thread of the engine, e.g. the device
/// callback). Queue waits are not threads; they get tracks of their own.
struct TraceThreads {
  int pid = 0;
  int source_tid = 0, processor_tid = 0, sink_tid = 0;
};
/// The ids of this process and of the engine's threads in `er`.
TraceThreads trace_threads(const EngineResult& er);

/// The track id of the queue_in and queue_out waits, and of a stage played by a device
/// callback: numbers above any Linux thread id (pid_max is at most 2^22).
inline constexpr int kTraceQueueInTrack = 0x7fff0001, kTraceQueueOutTrack = 0x7fff0002;
inline constexpr int kTraceDeviceSourceTrack = 0x7fff0003, kTraceDeviceSinkTrack = 0x7fff0004;

/// The chunks a trace window holds of a run: the engine kept the last `limit` chunks to
/// reach the sink, and `emitted` reached it over the whole run.
struct TraceWindow {
  std::size_t limit = 0;
  std::uint64_t emitted = 0;
  // the planned steps' names (the report's step labels), for one slice per step inside each
  // chunk's process slice; none: no step slices
  std::vector<std::string> steps;
};

/// Writes the Chrome trace JSON of `records` (in emit order) to `o`, one event a line, as it
/// goes: memory does not grow with the number of records. Timestamps are absolute
/// CLOCK_MONOTONIC times in µs (the clock is named in the trace's "otherData"), so the
/// trace lines up with a system trace of the same run taken with the same clock (perf,
/// ftrace). "otherData" also says which chunks the trace holds (first and last seq, how
/// many were not kept, the window). Keys are in alphabetical order; no final newline.
/// With window.steps, each chunk's process slice holds one slice per timed step, laid end
/// to end from proc_start (the time outside every step comes after the last).
void write_trace(std::ostream& o, const std::vector<ChunkRecord>& records, const TraceThreads& threads,
                 const TraceWindow& window);
/// write_trace and a final newline into `path` through an OutputTarget. Throws InputError /
/// RuntimeFailure naming `label`.
void write_trace_file(const std::string& path, const std::vector<ChunkRecord>& records, const TraceThreads& threads,
                      const TraceWindow& window, const std::string& label);

/// One HdrHistogram percentile file per stage (and end-to-end, period) into `dir`. Throws
/// RuntimeFailure naming the file that cannot be written.
void write_hgrm_files(const std::string& dir, const RunStats& st);
/// The names of the files write_hgrm_files() writes ("process.hgrm", ...).
std::vector<std::string> hgrm_file_names();

}  // namespace chunkscope
