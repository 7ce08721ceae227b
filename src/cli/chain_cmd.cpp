#include "src/cli/chain_cmd.hpp"

#include <cmath>
#include <fmt/format.h>
#include <iostream>
#include <nlohmann/json.hpp>

#include "src/chain_spec.hpp"
#include "src/cli/cli_support.hpp"
#include "src/errors.hpp"
#include "src/filter_design.hpp"
#include "src/plan.hpp"
#include "rt/backend.hpp"
#include "rt/hosted.hpp"
#include "src/hosted_faust.hpp"

namespace chunkscope {

using nlohmann::json;

namespace {

const char* step_kind(PlanStep::Kind k) { return PlanStep::kind_name(k); }

json sos_json(const std::vector<Sos>& v) {
  json a = json::array();
  for (const auto& s : v) a.push_back({s[0], s[1], s[2], s[3], s[4], s[5]});
  return a;
}

std::vector<double> response_freqs(double rate, const std::vector<double>& given) {
  const std::vector<double>& f = given.empty() ? kDefaultResponseFreqs : given;
  std::vector<double> out;
  for (double x : f) {
    if (x > 0 && x < rate / 2)
      out.push_back(x);
    else if (!given.empty())  // a frequency the user asked for is never dropped silently
      throw InputError(fmt::format("--freqs: {} is not a frequency between 0 and Nyquist ({} Hz at rate {})", x, rate / 2, rate));
  }
  return out;
}

std::vector<Sos> all_sections(const Plan& p) {
  std::vector<Sos> v;
  for (const auto& s : p.steps) v.insert(v.end(), s.sections.begin(), s.sections.end());
  return v;
}

// Makes each hosted step's code for a chunk of `channels` at `rate`, as a run prepares it, so
// that what a run would refuse there (a channel count the stage does not take, a control out
// of its range at this rate) is refused here, in the run's words.
void check_hosted(const Plan& plan, double rate, int channels) {
  if (channels < 1 || channels > kMaxChannels)
    throw InputError(fmt::format("--channels: {} is out of range 1..{}", channels, kMaxChannels));
  HostedShape shape;  // the default chunk frames
  shape.rate = rate, shape.channels = channels;
  for (const auto& s : plan.steps) {
    if (s.kind != PlanStep::Kind::hosted || !s.hosted) continue;
    std::string why;
    if (!s.hosted->create(shape, why))
      throw InputError(fmt::format("chain '{}': {}: {}", one_line(plan.spec), s.hosted->label(),
                                   why.empty() ? "could not be made" : why));
  }
}

}  // namespace

int run_chain(const ChainOptions& o) {
  const double rate = o.rate;
  if (!(rate > 0) || rate > 1e6) throw InputError(fmt::format("--rate: {} Hz is out of range", rate));
  const Plan plan = plan_chain(o.spec, rate, o.fuse);
  check_hosted(plan, rate, o.channels);
  const auto cascade = all_sections(plan);
  const auto fr = response_freqs(rate, o.freqs);
  if (o.json) {
    json j;
    j["schema"] = "chunkscope.chain/1";
    j["spec"] = plan.spec;
    j["rate"] = rate;
    j["fused"] = plan.fused;
    j["dispatches_per_chunk"] = plan.dispatches();
    j["sections_per_sample"] = plan.total_sections();
    j["host_steps"] = plan.host_steps();
    json st = json::array();
    for (std::size_t i = 0; i < plan.stages.size(); ++i) {
      const auto& s = plan.stages[i];
      json e{{"index", i + 1}, {"text", s.spec.text}, {"name", stage_name(s.spec.kind)}, {"kind", stage_kind_label(s.spec.kind)},
             {"sections", sos_json(s.sections)}};
      if (s.spec.kind == StageKind::spin || s.spec.kind == StageKind::sleep) {
        e["time_ns"] = s.spec.time_ns;
        e["every"] = s.spec.every;
      }
      st.push_back(e);
    }
    j["stages"] = st;
    json steps = json::array();
    for (const auto& s : plan.steps) {
      json idx = json::array();
      for (auto i : s.stages) idx.push_back(i + 1);
      json e{{"kind", step_kind(s.kind)}, {"stages", idx}, {"sections", sos_json(s.sections)}};
      if (s.kind == PlanStep::Kind::hosted) {
        e["label"] = s.label(plan.stages);
        if (const auto b = s.hosted ? faust_build_of(*s.hosted) : std::nullopt)  // a faust: stage's compile, apart
          e["compile"] = {{"backend", b->backend}, {"ns", b->compile_ns}, {"llvm_failure", b->llvm_failure}};
      } else if (s.kind != PlanStep::Kind::cascade) {
        e["time_ns"] = s.time_ns;
        e["every"] = s.every;
      }
      steps.push_back(e);
    }
    j["steps"] = steps;
    json r = json::array();
    for (double f : fr) r.push_back({{"hz", f}, {"db", sos_response_db(cascade, f, rate)}});
    j["response_db"] = r;
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  fmt::print("chain      {}\n", one_line(plan.spec));
  fmt::print("rate       {} Hz\n", rate);
  fmt::print("fusion     {}\n", plan.fused ? "on (consecutive filters share one cascade)" : "off (one pass per filter)");
  fmt::print("dispatches {} per chunk ({} sections per sample per channel, {} calibration steps, {} hosted)\n\n",
             plan.dispatches(), plan.total_sections(), plan.host_steps() - plan.hosted_steps(), plan.hosted_steps());
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const auto& s = plan.stages[i];
    fmt::print("stage {}  {}  [{}]\n", i + 1, s.spec.text, stage_kind_label(s.spec.kind));
    if (s.spec.kind == StageKind::spin || s.spec.kind == StageKind::sleep)
      fmt::print("    {} ns, paid by one chunk in {}\n", s.spec.time_ns, s.spec.every);
    for (const auto& c : s.sections)
      fmt::print("    {:>24.17g} {:>24.17g} {:>24.17g} | {:.17g} {:>24.17g} {:>24.17g}\n", c[0], c[1], c[2], c[3], c[4], c[5]);
  }
  fmt::print("\nplanned steps per chunk\n");
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const auto& s = plan.steps[i];
    std::string idx;
    for (auto k : s.stages) idx += (idx.empty() ? "" : ",") + std::to_string(k + 1);
    if (s.kind == PlanStep::Kind::cascade)
      fmt::print("  {}. cascade of {} sections (stages {})\n", i + 1, s.sections.size(), idx);
    else if (s.kind == PlanStep::Kind::hosted) {
      fmt::print("  {}. hosted {} on planar floats (stage {})\n", i + 1, s.label(plan.stages), idx);
      if (const std::string note = s.hosted ? faust_build_note(*s.hosted) : ""; !note.empty())
        fmt::print("     {}\n", note);
    }
    else
      fmt::print("  {}. {} {} ns every {} chunk(s) (stage {})\n", i + 1, step_kind(s.kind), s.time_ns, s.every, idx);
  }
  fmt::print("\nresponse{}\n", plan.hosted_steps() ? " (built-in filters only; hosted code is not included)" : "");
  for (double f : fr) {
    const double db = sos_response_db(cascade, f, rate);
    fmt::print("  {:>8g} Hz  {:>9.3f} dB\n", f, std::fabs(db) < 0.0005 ? 0.0 : db);  // never "-0.000"
  }
  return kExitOk;
}

namespace cli {

Command add_chain_command(CLI::App& app) {
  auto o = std::make_shared<ChainOptions>();
  auto* c = app.add_subcommand("chain", "Show the planned chain: stages, sections, dispatches and response");
  add_text(c, "spec", o->spec, "Chain spec: " + chain_spec_help())->required();
  add_rate(c, "--rate,-r", o->rate, "Sample rate in Hz (48000, 44.1k, 48kHz)");
  add_flag(c, "--json", o->json, "Print JSON (schema chunkscope.chain/1)");
  add_flag(c, "--no-fuse", o->fuse, "One pass per filter instead of one fused cascade", false);
  add_int(c, "--channels", o->channels, "Channels of the chunk the hosted stages are made for (as a run makes them)");
  std::string freqs;
  for (double f : kDefaultResponseFreqs) freqs += (freqs.empty() ? "" : ",") + fmt::format("{}", f);
  add_list<double>(c, "--freqs", o->freqs, "Frequencies (Hz) for the response table",
                   [](const std::string& s) { return parse_frequency(s, "--freqs"); }, freqs)
      ->type_name("HZ");
  return {c, [o] { return run_chain(*o); }};
}

}  // namespace cli

}  // namespace chunkscope
