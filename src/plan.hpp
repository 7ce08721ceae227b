#pragma once
// Planning: designed stages -> the steps run per chunk. Consecutive IIR stages (filters and
// gains) fuse into one SOS cascade, one dispatch per chunk however many filters; without
// fusion every filter stage is its own pass. Calibration stages (spin, sleep) are host
// steps between cascades. Not real-time.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rt/backend.hpp"
#include "src/chain_spec.hpp"
#include "src/filter_design.hpp"

namespace chunkscope {

struct PlanStep {
  // section: a named part of an application's callback that a probe times (include/chunkscope/probe.h)
  enum class Kind { cascade, spin, sleep, hosted, section };
  Kind kind = Kind::cascade;
  std::vector<Sos> sections;        // cascade: normalised sections, a0 = 1
  std::vector<std::size_t> stages;  // indices into Plan::stages this step covers
  std::int64_t time_ns = 0;         // spin/sleep
  std::uint32_t every = 1;          // spin/sleep: paid by one chunk in `every`
  std::shared_ptr<const HostedFactory> hosted;  // hosted: the code that runs
  std::string name;                             // section: its name
  /// How reports name the step: its stages' specs joined by " | ", a hosted step's label, or a section's name.
  std::string label(const std::vector<StageDesign>& stages) const;
  /// "cascade", "spin", "sleep", "hosted".
  static const char* kind_name(Kind k) noexcept;
};

struct Plan {
  std::string spec;
  double rate = 0;
  bool fused = true;
  std::vector<StageDesign> stages;
  std::vector<PlanStep> steps;

  /// Filter passes per chunk (cascade steps); calibration steps are not dispatches.
  std::size_t dispatches() const;
  /// Biquad sections evaluated per sample per channel, over all cascade steps.
  std::size_t total_sections() const;
  /// Largest section count of any one cascade step.
  std::size_t max_step_sections() const;
  /// Calibration (spin/sleep) and hosted steps: what runs on the host, not as a filter pass.
  std::size_t host_steps() const;
  /// Hosted steps (so:).
  std::size_t hosted_steps() const;
  /// The 1-based stage of the first hosted step's spec, or 0 when there is none.
  std::size_t first_hosted_stage() const;
};

/// The plan laid out for a backend with `channels` channels (rt/backend.hpp, ChainLayout).
ChainLayout lay_out_plan(const Plan& plan, int channels);

/// Parses and designs `spec` at `rate` and plans it. Throws InputError.
Plan plan_chain(const std::string& spec, double rate, bool fuse = true);

/// Plans already designed stages.
Plan plan_stages(std::vector<StageDesign> stages, double rate, bool fuse, std::string spec);

}  // namespace chunkscope
