#pragma once
// The Chrome trace of a run (X slices per chunk per stage, C counters for queue depths, M
// names; Perfetto and chrome://tracing load it) and the per-stage .hgrm files. Both are
// written from the run's records and histograms, not from the report. Not real-time.
#include <cstdint>
#include <nlohmann/json.hpp>
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

/// Chrome trace JSON. Timestamps are absolute CLOCK_MONOTONIC times in µs (the clock is
/// named in the trace's "otherData"), so the trace lines up with a system trace of the same
/// run taken with the same clock (perf, ftrace).
nlohmann::json build_trace(const std::vector<ChunkRecord>& records, const TraceThreads& threads);

/// One HdrHistogram percentile file per stage (and end-to-end, period) into `dir`. Throws
/// RuntimeFailure naming the file that cannot be written.
void write_hgrm_files(const std::string& dir, const RunStats& st);
/// The names of the files write_hgrm_files() writes ("process.hgrm", ...).
std::vector<std::string> hgrm_file_names();

}  // namespace chunkscope
