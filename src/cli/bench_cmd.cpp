#include "src/cli/bench_cmd.hpp"

#include <cstdio>
#include <string>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/backends.hpp"
#include "src/session/bench.hpp"
#include "src/cli/cli_support.hpp"
#include "src/errors.hpp"
#include "src/io/output_file.hpp"

namespace chunkscope {

int run_bench(const BenchCommandOptions& o) {
  using nlohmann::json;
  BenchOptions opt = o.grid;
  for (int c : opt.channels)
    if (c < 1 || c > kMaxChannels) throw InputError(fmt::format("--channels: {} is out of range 1..64", c));
  for (int s : opt.sections)
    if (s < 1 || s > 256) throw InputError(fmt::format("--sections: {} is out of range 1..256", s));
  for (int n : opt.chunks) check_chunk_frames(n, "--chunks");
  if (opt.repeats < 1) throw InputError("--repeats: must be 1 or more");
  if (o.quick) opt.seconds_per_repeat = kBenchQuickSecondsPerRepeat;
  if (!o.json_path.empty()) check_output_path(o.json_path, fmt::format("--json '{}'", o.json_path));  // before the bench runs

  fmt::print("{:<8} {:<7} {:<16} {:<5} {:>4} {:>4} {:>6} {:>5} {:>10} {:>10} {:>10} {:>12} {:>7}\n", "chain", "isa",
             "layout", "dtype", "ch", "sec", "chunk", "disp", "Gbq-s/s", "min", "max", "ns/chunk", "spread");
  std::size_t flagged = 0;
  auto rows = run_filter_bench(opt, [&](const BenchRow& r) {
    const std::string spread = fmt::format("{:.0f}%{}", r.spread * 100, r.warning.empty() ? "" : " !");
    fmt::print("{:<8} {:<7} {:<16} {:<5} {:>4} {:>4} {:>6} {:>5} {:>10.3f} {:>10.3f} {:>10.3f} {:>12.0f} {:>7}\n",
               r.fused ? "fused" : "unfused", fmt::format("{}{}", cpu_isa_name(r.isa), r.isa_auto ? "*" : ""),
               cascade_layout_name(r.layout), dtype_name(r.dtype),
               r.channels, r.sections, r.chunk, r.dispatches,
               r.median_gbs, r.min_gbs, r.max_gbs, r.median_ns_per_chunk, spread);
    std::fflush(stdout);
    if (!r.warning.empty()) {
      ++flagged;
      fmt::print(stderr, "chunkscope: bench: {} {} {} {} ch {} sections chunk {}: {}\n", r.fused ? "fused" : "unfused",
                 cpu_isa_name(r.isa), dtype_name(r.dtype), r.channels, r.sections, r.chunk, r.warning);
      std::fflush(stderr);
    }
  });
  fmt::print("Gbq-s/s: 1e9 biquad-samples per second (sections x frames x channels / s), median of {} repeats\n",
             opt.repeats);
  fmt::print("isa, layout: the instruction set the kernels ran on ('*': chosen by --isa auto; this CPU has: {}) and "
             "how they laid the cascade out (docs/profiler.md, \"CPU kernels\")\n",
             supported_isas());
  fmt::print("spread: (max - min) / median of the repeats; '!' above {:.0f}% (or a repeat too short for the clock): the "
             "repeats disagree by more than the bench resolves\n",
             kBenchSpreadLimit * 100);
  if (flagged > 0)
    fmt::print(stderr,
               "chunkscope: bench: {} of {} row(s) flagged: the machine was busy or changing speed while they ran; run "
               "again{}, and compare only rows that agree\n",
               flagged, rows.size(), o.quick ? " without --quick" : "");
  if (!o.json_path.empty()) {
    json j;
    j["schema"] = "chunkscope.bench/1";
    j["unit"] = "1e9 biquad-samples per second";
    j["repeats"] = opt.repeats;
    j["spread_limit"] = kBenchSpreadLimit;
    j["min_clock_steps"] = kBenchMinClockSteps;
    j["isa_best"] = cpu_isa_name(cpu_isa_best());
    json isas = json::array();
    for (int i = 0; i < kCpuIsaCount; ++i)
      if (cpu_isa_supported(static_cast<CpuIsa>(i))) isas.push_back(cpu_isa_name(static_cast<CpuIsa>(i)));
    j["isas_supported"] = isas;
    j["clock_resolution_ns"] = rows.empty() ? 0.0 : rows.front().clock_resolution_ns;
    json a = json::array();
    for (const auto& r : rows)
      a.push_back({{"fused", r.fused}, {"isa", cpu_isa_name(r.isa)}, {"isa_auto", r.isa_auto}, {"layout", cascade_layout_name(r.layout)},
                   {"dtype", dtype_name(r.dtype)}, {"channels", r.channels}, {"sections", r.sections},
                   {"chain_spec", bench_chain(r.sections)},
                   {"chunk", r.chunk}, {"dispatches", r.dispatches}, {"median_gbs", r.median_gbs},
                   {"min_gbs", r.min_gbs}, {"max_gbs", r.max_gbs}, {"median_ns_per_chunk", r.median_ns_per_chunk},
                   {"spread", r.spread}, {"shortest_repeat_ns", r.shortest_repeat_ns},
                   {"warning", r.warning.empty() ? json(nullptr) : json(r.warning)}});
    j["rows"] = a;
    cli::guard_outputs({{"--json", o.json_path}});
    write_json_file(o.json_path, j, fmt::format("--json '{}'", o.json_path));
  }
  return kExitOk;
}

namespace cli {

namespace {
template <class T, class F>
std::string joined(const std::vector<T>& v, F name) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + name(x);
  return s;
}
std::string int_text(int v) { return std::to_string(v); }
}  // namespace

Command add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchCommandOptions>();
  BenchOptions& g = o->grid;
  auto* c = app.add_subcommand("bench", "CPU filter throughput, fused and unfused, in biquad-samples per second");
  add_list<int>(c, "--channels", g.channels, "Channel counts", whole_number("--channels"), joined(g.channels, int_text))
      ->type_name("INT");
  add_list<int>(c, "--sections", g.sections, "Sections per chain", whole_number("--sections"),
                joined(g.sections, int_text))
      ->type_name("INT");
  add_list<int>(c, "--chunks", g.chunks, "Chunk sizes in frames", whole_number("--chunks"), joined(g.chunks, int_text))
      ->type_name("INT");
  add_list<DType>(c, "--dtype", g.dtypes, "Sample types: f32, f64 or both",
                  [](const std::string& s) { return parse_dtype(s); },
                  joined(g.dtypes, [](DType d) { return std::string(dtype_name(d)); }));
  add_list<std::optional<CpuIsa>>(
      c, "--isa", g.isas,
      "CPU kernels' instruction sets, side by side: auto (what a run picks for the shape: docs/profiler.md, CPU kernels), scalar, sse4, avx2, avx512",
      [](const std::string& s) { return parse_isa_choice(s); }, joined(g.isas, isa_choice_name));
  add_int(c, "--repeats", g.repeats, "Timed repeats per configuration (the median is reported)");
  add_text(c, "--json", o->json_path, "Also write the rows as JSON to this file");
  add_flag(c, "--quick", o->quick, "Shorter repeats (a rough figure in a few seconds)");
  return {c, [o] { return run_bench(*o); }};
}

}  // namespace cli

}  // namespace chunkscope
