#pragma once
// `chunkscope sweep`: how many streams fit, and the smallest chunk that stays safe. A grid
// of chunk sizes x stream counts (x variants), each cell a short paced run of N streams
// (src/session/stream_set.hpp) with the platform baseline, judged by one rule (src/report/sweep.hpp).
// Not real-time.
#include <atomic>

#include "src/options.hpp"
#include "src/report/sweep.hpp"

namespace chunkscope {

/// The longest a sweep of `cells` (stream count per cell) can take, in seconds: each
/// cell's audio at the replay speed, the baseline before and after, and the start.
double sweep_planned_seconds(const std::vector<int>& cell_streams, double media_seconds, double speed,
                             double baseline_seconds);

/// The chunk sizes whose cells count fewer chunks per stream than a verdict needs
/// (kChunksToJudgeP95), with the --duration that would count enough: one line, empty when
/// every size can be judged.
std::string sweep_short_cells(const std::vector<int>& chunks, std::int64_t frames, int rate, long long warmup);

/// Runs the sweep; writes --json and --html; returns the exit code. Throws InputError
/// (exit 2) for bad options before anything streams.
int run_sweep(const SweepOptions& so, const std::atomic<bool>* stop_flag);

}  // namespace chunkscope
