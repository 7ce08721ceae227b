#include "src/plan.hpp"

#include <cmath>

#include <algorithm>
#include <fmt/format.h>

#include "src/errors.hpp"

namespace chunkscope {

std::size_t Plan::dispatches() const {
  return static_cast<std::size_t>(
      std::count_if(steps.begin(), steps.end(), [](const PlanStep& s) { return s.kind == PlanStep::Kind::cascade; }));
}

std::size_t Plan::total_sections() const {
  std::size_t n = 0;
  for (const auto& s : steps) n += s.sections.size();
  return n;
}

std::size_t Plan::max_step_sections() const {
  std::size_t n = 0;
  for (const auto& s : steps) n = std::max(n, s.sections.size());
  return n;
}

ChainLayout lay_out_plan(const Plan& plan, int channels) {
  ChainLayout lay;
  lay.fused = plan.fused;
  for (const auto& ps : plan.steps) {
    StepLayout st;
    if (ps.kind == PlanStep::Kind::cascade) {
      st.kind = StepLayout::Kind::cascade;
      st.sections = static_cast<int>(ps.sections.size());
      st.coef_offset = lay.coef.size();
      st.state_offset = lay.state_values;
      for (const auto& s : ps.sections) lay.coef.insert(lay.coef.end(), {s[0], s[1], s[2], s[4], s[5]});  // a0 == 1
      lay.state_values += 2u * ps.sections.size() * static_cast<std::size_t>(channels);
      ++lay.cascades;
    } else if (ps.kind == PlanStep::Kind::hosted) {
      st.kind = StepLayout::Kind::hosted;
      st.hosted = static_cast<std::uint32_t>(lay.hosted.size());
      lay.hosted.push_back(ps.hosted);
    } else {
      st.kind = ps.kind == PlanStep::Kind::spin ? StepLayout::Kind::spin : StepLayout::Kind::sleep;
      st.time_ns = ps.time_ns;
      st.every = std::max<std::uint32_t>(1, ps.every);
    }
    lay.steps.push_back(st);
  }
  return lay;
}

std::size_t Plan::host_steps() const { return steps.size() - dispatches(); }

std::size_t Plan::hosted_steps() const {
  return static_cast<std::size_t>(
      std::count_if(steps.begin(), steps.end(), [](const PlanStep& s) { return s.kind == PlanStep::Kind::hosted; }));
}

std::size_t Plan::first_hosted_stage() const {
  for (const auto& s : steps)
    if (s.kind == PlanStep::Kind::hosted) return s.stages.front() + 1;
  return 0;
}

std::string PlanStep::label(const std::vector<StageDesign>& all) const {
  if (kind == Kind::hosted && hosted) return hosted->label();
  if (kind == Kind::section) return name;
  std::string out;
  for (auto i : stages) out += (out.empty() ? "" : " | ") + all[i].spec.text;
  return out;
}

const char* PlanStep::kind_name(Kind k) noexcept {
  switch (k) {
    case Kind::cascade: return "cascade";
    case Kind::spin: return "spin";
    case Kind::sleep: return "sleep";
    case Kind::section: return "section";
    case Kind::hosted: return "hosted";
  }
  return "?";
}

namespace {

// Folds a gain section {g,0,0,1,0,0} into the numerator of a real section.
void fold_gain(Sos& into, double g) {
  into[0] *= g;
  into[1] *= g;
  into[2] *= g;
}

void finish_cascade(PlanStep& step, const std::vector<StageDesign>& stages) {
  // In a fused cascade, pure gains are folded into the first filter section, so a gain
  // costs nothing per sample; a cascade of gains alone keeps one section.
  std::vector<Sos> filt;
  double g = 1.0;
  for (auto i : step.stages) {
    if (stages[i].gain_only)
      g *= stages[i].sections[0][0];
    else
      filt.insert(filt.end(), stages[i].sections.begin(), stages[i].sections.end());
  }
  if (filt.empty())
    filt.push_back(Sos{g, 0, 0, 1, 0, 0});
  else if (g != 1.0)
    fold_gain(filt.front(), g);
  step.sections = std::move(filt);
}

}  // namespace

Plan plan_stages(std::vector<StageDesign> stages, double rate, bool fuse, std::string spec) {
  Plan plan;
  plan.spec = std::move(spec);
  plan.rate = rate;
  plan.fused = fuse;
  plan.stages = std::move(stages);
  // the chain's gains multiply, fused into one section or sample by sample: a product
  // beyond a double turns every sample into inf or NaN
  double total_gain = 1.0;
  for (const auto& st : plan.stages)
    if (st.gain_only && !st.sections.empty()) total_gain *= std::fabs(st.sections[0][0]);
  if (!std::isfinite(total_gain))
    throw InputError(fmt::format("chain '{}': its gain stages multiply to more than a number can hold", plan.spec));
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const auto& st = plan.stages[i];
    if (!is_iir(st.spec.kind)) {
      PlanStep s;
      s.kind = is_hosted(st.spec.kind)          ? PlanStep::Kind::hosted
               : st.spec.kind == StageKind::spin ? PlanStep::Kind::spin
                                                 : PlanStep::Kind::sleep;
      s.hosted = st.hosted;
      s.stages = {i};
      s.time_ns = st.spec.time_ns;
      s.every = st.spec.every;
      plan.steps.push_back(std::move(s));
      continue;
    }
    const bool extend = fuse && !plan.steps.empty() && plan.steps.back().kind == PlanStep::Kind::cascade;
    if (extend) {
      plan.steps.back().stages.push_back(i);
    } else {
      PlanStep s;
      s.stages = {i};
      plan.steps.push_back(std::move(s));
    }
  }
  for (auto& s : plan.steps)
    if (s.kind == PlanStep::Kind::cascade) {
      if (fuse)
        finish_cascade(s, plan.stages);
      else
        s.sections = plan.stages[s.stages[0]].sections;
    }
  return plan;
}

Plan plan_chain(const std::string& spec, double rate, bool fuse) {
  if (!(rate > 0) || rate > 1e6) throw InputError(fmt::format("rate {} is out of range (1 Hz .. 1 MHz)", rate));
  const ChainSpec chain = parse_chain(spec);
  std::vector<StageDesign> stages;
  stages.reserve(chain.stages.size());
  for (const auto& st : chain.stages) stages.push_back(design_stage(st, rate));
  return plan_stages(std::move(stages), rate, fuse, chain.text);
}

}  // namespace chunkscope
