#pragma once
// `chunkscope stage-bench RUN.json`: one stage of a recorded run, replayed alone.
//
// Design: a run report records the I/O signature of its processing stage (frames,
// channels, rate, dtype, chain, fusion, backend, mode, state length) in
// workload.signature, where its input came from in workload.input, and FNV-1a checksums
// of the first chunks' input and output in checksums. stage-bench rebuilds the plan and
// the backend from the signature, refuses to time anything unless the rebuilt harness
// matches it (backend name and mode, state values, dispatches per chunk), regenerates
// the run's input, proves on the recorded chunks that it computes what the run computed
// (same input bytes in, same output bytes out, state carried from prepare()), and only
// then times the stage on its own: warm-up calls, then N timed calls into a log-linear
// histogram with the report's percentiles. The result sets the isolated time beside the
// in-pipeline time of the same stage; the difference is what the pipeline adds (waits,
// cache and CPU contention with the source and sink threads). Not real-time: the timed
// loop itself does not allocate.
#include <string>

namespace chunkscope {

struct StageBenchOptions {
  std::string report;           // RUN.json, or COMPARE.json#variant-name
  std::string stage = "process";
  long long iterations = 2000;  // timed process() calls after warm-up
  long long warmup = 50;        // untimed calls first
  std::string json;             // optional: write the result as JSON (schema chunkscope.stagebench/1)
  std::string step_timeout = "auto";  // a hosted call that does not return ends the bench (exit 4)
};

inline constexpr const char* kStageBenchSchema = "chunkscope.stagebench/1";

/// Runs the bench and prints the result on stdout. Returns the exit code: 0 when the
/// checksums match (or cannot be compared: live device input, none recorded); 3 after a
/// checksum mismatch (input or output), which is reported in full, written to --json, and
/// named in one line on stderr. Throws InputError (exit 2) for a report or option that
/// cannot be used (missing, not JSON, a compare report without a variant, no signature,
/// unknown stage, recorded input file missing), RuntimeFailure (exit 3) when the harness
/// cannot reproduce the run (backend unavailable, signature mismatch, input of another
/// shape). Not real-time.
int run_stage_bench(const StageBenchOptions& o);

}  // namespace chunkscope
