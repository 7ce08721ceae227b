#pragma once
// --metrics-listen and --metrics-hold for replay, synth and monitor: the exporter of one
// stream session, started and held the same way by each command. Not real-time.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "src/metrics/exporter.hpp"
#include "src/session/stream_session.hpp"
#include "src/session/stream_set.hpp"

namespace chunkscope::cli {

/// The exporter for `session`'s setup when --metrics-listen is given (null otherwise): it
/// listens at once, so a port in use fails before anything streams (RuntimeFailure, exit 3).
std::unique_ptr<metrics::MetricsExporter> open_metrics(const StreamSession& session, int streams = 1);

/// Starts sampling once the session is prepared and measure_before() has run. No-op for null.
void start_metrics(metrics::MetricsExporter* exporter, const StreamSession& session,
                   std::function<std::uint64_t()> xruns = {});

/// The same for the streams of a set (--streams N): each labelled with its index, the
/// baseline's wake-up p99 measured by stream 0. No-op for null.
void start_metrics(metrics::MetricsExporter* exporter, const StreamSet& set);

/// After the run and its reports: the final sample, then --metrics-hold of serving (a line
/// on stderr says for how long), ended early when `stop` is raised (when a signal already
/// raised it, the next signal ends the process: src/cli/signals.hpp). No-op for null.
void finish_metrics(metrics::MetricsExporter* exporter, const StreamSession& session, const std::atomic<bool>* stop);

}  // namespace chunkscope::cli
