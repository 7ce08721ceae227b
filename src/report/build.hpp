#pragma once
// Building a run's report: every section from the run's statistics, then the verdict and
// the diagnosis, once, when all sections are known. Not real-time.
#include <optional>
#include <string>

#include "rt/hosted.hpp"
#include "rt/engine.hpp"
#include "rt/baseline_probe.hpp"
#include "rt/run_stats.hpp"
#include "src/environment.hpp"
#include "src/plan.hpp"
#include "src/machine_load.hpp"
#include "src/report/model.hpp"

namespace chunkscope {

/// What the command knows of a run beyond its statistics: how it was set up.
struct Workload : ReportWorkload {
  // ReportWorkload: what the report's workload section says (chain, plan and pool fields
  // are filled from the plan and the engine's result by build_run_report)
  int batch = 1;  // streams batched into each chunk (--batch): the backend sees batch x channels
  // the backend's kernels, for the signature stage-bench rebuilds
  std::string cpu_isa, cpu_layout;  // the CPU backend's kernels ("" for other backends)
  std::size_t state_values = 0;
  bool gpu_timing = false;
  std::string short_chunk = "eager";  // graph mode: eager fallback or recapture
  BackendCounters counters;
  // How the engine ran (--rt, --cpus, --wait, --inline), and the machine around the run
  bool rt = false;
  ThreadPolicy policy;
  std::string cpus_text;  // --cpus as given ("" when not pinned)
  WaitMode wait = WaitMode::block;
  bool inline_process = false;
  bool ftz = true;
  std::optional<BaselineResult> baseline_before, baseline_after;  // --baseline 0: none
  std::optional<ProcSnapshot> proc_before, proc_after;
  // the CPU backend's hosted steps, in step order: what the audit counted, the delay each declares
  std::vector<HostedAudit> hosted_audit;
  std::vector<std::uint32_t> hosted_latency;
};

/// How the run ended.
struct RunOutcome {
  RunState state = RunState::complete;
  std::string reason;  // why not complete
};

/// A histogram's summary as reports keep it.
HistSummary summarize(const stats::LogHistogram& h);

/// The whole report of a run. The device section (monitor runs) is an input, so that the
/// verdict and the diagnosis see it.
RunReport build_run_report(const Workload& w, const Plan& plan, const Environment& env, const RunStats& st,
                           const EngineResult& er, const RunOutcome& outcome,
                           std::optional<DeviceSection> device = std::nullopt);

/// Who a run's misses belong to: the owner of most stall events (of most misses in a
/// report without events); nullopt without misses.
std::optional<Owner> owner_of_misses(const RunReport& r);

/// Decides the verdict (safe or not, the stage to blame, the headline) from the sections
/// of `r`. build_run_report() calls it; exposed for tests.
Verdict decide_verdict(const RunReport& r);

}  // namespace chunkscope
