// chunkscope command line. Every error is one line on stderr and a documented exit code
// (docs/profiler.md, "Exit codes").
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "chunkscope/version.hpp"
#include "src/bench.hpp"
#include "src/io/output_file.hpp"
#include "src/errors.hpp"
#include "src/filter_design.hpp"
#include "src/plan.hpp"
#include "src/backends.hpp"
#include "src/cli/process_cmd.hpp"
#include "src/cli/stream_cmd.hpp"
#include "src/cli/monitor_cmd.hpp"
#include "src/cli/compare_cmd.hpp"
#include "src/cli/report_cmd.hpp"
#include "src/cli/stage_bench.hpp"

#include <atomic>
#include <csignal>

using namespace chunkscope;
using nlohmann::json;

namespace {

const char* kind_label(StageKind k) {
  switch (k) {
    case StageKind::lowpass: return "Butterworth lowpass";
    case StageKind::highpass: return "Butterworth highpass";
    case StageKind::bandpass: return "Butterworth bandpass";
    case StageKind::bandstop: return "Butterworth bandstop";
    case StageKind::peak: return "cookbook peaking EQ";
    case StageKind::lowshelf: return "cookbook low shelf";
    case StageKind::highshelf: return "cookbook high shelf";
    case StageKind::notch: return "cookbook notch";
    case StageKind::allpass: return "cookbook allpass";
    case StageKind::lp2: return "cookbook 2nd-order lowpass";
    case StageKind::hp2: return "cookbook 2nd-order highpass";
    case StageKind::bp2: return "cookbook 2nd-order bandpass (0 dB peak)";
    case StageKind::gain: return "gain";
    case StageKind::sos: return "SOS file";
    case StageKind::spin: return "calibration busy-wait";
    case StageKind::sleep: return "calibration sleep";
  }
  return "?";
}

const char* step_kind(PlanStep::Kind k) {
  switch (k) {
    case PlanStep::Kind::cascade: return "cascade";
    case PlanStep::Kind::spin: return "spin";
    case PlanStep::Kind::sleep: return "sleep";
  }
  return "?";
}

json sos_json(const std::vector<Sos>& v) {
  json a = json::array();
  for (const auto& s : v) a.push_back({s[0], s[1], s[2], s[3], s[4], s[5]});
  return a;
}

std::vector<double> response_freqs(double rate, const std::vector<double>& extra) {
  std::vector<double> f = extra;
  if (f.empty()) f = {20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000};
  std::vector<double> out;
  for (double x : f) {
    if (x > 0 && x < rate / 2) out.push_back(x);
    else if (!extra.empty())  // a frequency the user asked for is never dropped silently
      throw InputError(fmt::format("--freqs: {} is not a frequency between 0 and Nyquist ({} Hz at rate {})", x, rate / 2, rate));
  }
  return out;
}

std::vector<Sos> all_sections(const Plan& p) {
  std::vector<Sos> v;
  for (const auto& s : p.steps) v.insert(v.end(), s.sections.begin(), s.sections.end());
  return v;
}

int cmd_chain(const std::string& spec, double rate, bool json_out, bool no_fuse, const std::vector<double>& freqs) {
  const Plan plan = plan_chain(spec, rate, !no_fuse);
  const auto cascade = all_sections(plan);
  const auto fr = response_freqs(rate, freqs);
  if (json_out) {
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
      json e{{"index", i + 1}, {"text", s.spec.text}, {"name", stage_name(s.spec.kind)}, {"kind", kind_label(s.spec.kind)},
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
      if (s.kind != PlanStep::Kind::cascade) {
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
  fmt::print("chain      {}\n", plan.spec);
  fmt::print("rate       {} Hz\n", rate);
  fmt::print("fusion     {}\n", plan.fused ? "on (consecutive filters share one cascade)" : "off (one pass per filter)");
  fmt::print("dispatches {} per chunk ({} sections per sample per channel, {} calibration steps)\n\n",
             plan.dispatches(), plan.total_sections(), plan.host_steps());
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const auto& s = plan.stages[i];
    fmt::print("stage {}  {}  [{}]\n", i + 1, s.spec.text, kind_label(s.spec.kind));
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
    else
      fmt::print("  {}. {} {} ns every {} chunk(s) (stage {})\n", i + 1, step_kind(s.kind), s.time_ns, s.every, idx);
  }
  fmt::print("\nresponse\n");
  for (double f : fr) fmt::print("  {:>8g} Hz  {:>9.3f} dB\n", f, sos_response_db(cascade, f, rate));
  return kExitOk;
}

int cmd_process(const std::string& in, const std::string& out, const ProcessOptions& opt) {
  const auto r = process_file(in, out, opt);
  fmt::print("{} -> {}: {} frames ({:.3f} s, {} ch, {} Hz) in {} chunks of {} frames, {} dispatch(es) per chunk\n", in,
             out, r.frames, static_cast<double>(r.frames) / r.rate, r.channels, r.rate, r.chunks, opt.chunk,
             r.dispatches_per_chunk);
  fmt::print("  read as {}; written as {}\n", r.in_format, r.out_format);
  return kExitOk;
}

int cmd_bench(BenchOptions opt, const std::string& json_path) {
  fmt::print("{:<8} {:<5} {:>4} {:>4} {:>6} {:>5} {:>10} {:>10} {:>10} {:>12}\n", "chain", "dtype", "ch", "sec", "chunk",
             "disp", "Gbq-s/s", "min", "max", "ns/chunk");
  auto rows = run_filter_bench(opt, [](const BenchRow& r) {
    fmt::print("{:<8} {:<5} {:>4} {:>4} {:>6} {:>5} {:>10.3f} {:>10.3f} {:>10.3f} {:>12.0f}\n",
               r.fused ? "fused" : "unfused", dtype_name(r.dtype), r.channels, r.sections, r.chunk, r.dispatches,
               r.median_gbs, r.min_gbs, r.max_gbs, r.median_ns_per_chunk);
    std::fflush(stdout);
  });
  fmt::print("Gbq-s/s: 1e9 biquad-samples per second (sections x frames x channels / s), median of {} repeats\n",
             opt.repeats);
  if (!json_path.empty()) {
    json j;
    j["schema"] = "chunkscope.bench/1";
    j["unit"] = "1e9 biquad-samples per second";
    j["repeats"] = opt.repeats;
    json a = json::array();
    for (const auto& r : rows)
      a.push_back({{"fused", r.fused}, {"dtype", dtype_name(r.dtype)}, {"channels", r.channels}, {"sections", r.sections},
                   {"chunk", r.chunk}, {"dispatches", r.dispatches}, {"median_gbs", r.median_gbs},
                   {"min_gbs", r.min_gbs}, {"max_gbs", r.max_gbs}, {"median_ns_per_chunk", r.median_ns_per_chunk}});
    j["rows"] = a;
    write_json_file(json_path, j, fmt::format("--json '{}'", json_path));
  }
  return kExitOk;
}

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_signal(int) { g_stop.store(true, std::memory_order_relaxed); }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

struct StreamCli {
  StreamOptions opt;
  std::string dtype = "f32";
  long long chunk = 256;
  bool no_fuse = false;
  std::string mode = "eager";
  std::string gpu_timing = "on";
  std::string short_chunk = "eager";
  long long series_limit = 1 << 20;
};

// --backend, --mode, --gpu-timing, --short-chunk: which backend processes the chunks
void add_backend_options(CLI::App* c, StreamCli& s, bool with_backend = true) {
  if (with_backend)
    c->add_option("--backend", s.opt.backend.backend, "Processing backend: cpu or cuda")->capture_default_str();
  c->add_option("--mode", s.mode, "CUDA: eager (steps launched one by one) or graph (CUDA graph replay)")
      ->capture_default_str();
  c->add_option("--gpu-timing", s.gpu_timing, "CUDA: on (events time H2D, kernels, D2H) or off (no events)")
      ->capture_default_str();
  c->add_option("--short-chunk", s.short_chunk,
                "CUDA graph mode, a chunk shorter than the captured shape: eager (run it eagerly) or recapture")
      ->capture_default_str();
}

void add_stream_options(CLI::App* c, StreamCli& s) {
  c->add_option("--chain,-c", s.opt.chain, "Chain spec (empty: no processing, to measure the engine alone)");
  c->add_option("--chunk,-n", s.chunk, "Frames per chunk (1..65536)")->capture_default_str();
  c->add_option("--dtype", s.dtype, "Sample type: f32 or f64")->capture_default_str();
  c->add_flag("--no-fuse", s.no_fuse, "One pass per filter (the unfused baseline)");
  c->add_option("--speed", s.opt.speed, "Replay speed: a factor (1 = real time) or 'max'")->capture_default_str();
  c->add_option("--warmup", s.opt.warmup, "First chunks reported apart and left out of the statistics")->capture_default_str();
  c->add_option("--margin", s.opt.margin, "Transport/encoding margin: a time (1.5ms) or a share of D (20%)")
      ->capture_default_str();
  c->add_option("--queue-depth", s.opt.queue_depth, "Capacity of the source->processor queue; a paced source drops when it is full (the sink side never drops)")->capture_default_str();
  c->add_option("--output,-o", s.opt.output, "Write the processed stream to this file (default: discard)");
  c->add_option("--json", s.opt.json_path, "Write the report as JSON (schema chunkscope.report/1)");
  c->add_option("--hgrm", s.opt.hgrm_dir, "Write one HdrHistogram .hgrm file per stage into this folder");
  c->add_option("--trace", s.opt.trace_path, "Write a Chrome trace (Perfetto, chrome://tracing)");
  c->add_option("--report-dir", s.opt.report_dir, "Write report.json, trace.json and hgrm/ into this folder");
  c->add_flag("--fail-on-miss", s.opt.fail_on_miss, "Exit 1 when p95 headroom is negative or any chunk missed or dropped");
  c->add_flag("--quiet,-q", s.opt.quiet, "No terminal report");
  c->add_option("--series-limit", s.series_limit, "Per-chunk points kept in the JSON report for plots (0: none)")
      ->capture_default_str();
  add_backend_options(c, s);
}

void finish_stream_options(StreamCli& s) {
  check_chunk_frames(s.chunk);
  s.opt.chunk = static_cast<int>(s.chunk);
  s.opt.dtype = parse_dtype(s.dtype);
  s.opt.fuse = !s.no_fuse;
  s.opt.backend.cuda.mode = parse_cuda_mode(s.mode);
  if (s.gpu_timing != "on" && s.gpu_timing != "off")
    throw InputError(fmt::format("--gpu-timing: '{}' is not on or off", s.gpu_timing));
  s.opt.backend.cuda.gpu_timing = s.gpu_timing == "on";
  if (s.short_chunk != "eager" && s.short_chunk != "recapture")
    throw InputError(fmt::format("--short-chunk: '{}' is not eager or recapture", s.short_chunk));
  s.opt.backend.cuda.recapture_on_shape_change = s.short_chunk == "recapture";
  if (s.series_limit < 0 || s.series_limit > (1ll << 26))
    throw InputError(fmt::format("--series-limit: {} is out of range 0..{}", s.series_limit, 1ll << 26));
  s.opt.series_limit = static_cast<std::size_t>(s.series_limit);
  if (s.opt.backend.backend != "cpu" && s.opt.backend.backend != "cuda")
    throw InputError(fmt::format("--backend: '{}' is not cpu or cuda", s.opt.backend.backend));
}

}  // namespace


static int run_command(int argc, char** argv) {
  CLI::App app{"chunkscope: does this audio filter chain keep real time? Measures every chunk at every stage."};
  app.set_version_flag("--version", fmt::format("chunkscope {} ({})", kVersion, kGitCommit));
  app.require_subcommand(1);

  // chain
  std::string spec;
  double rate = 48000;
  bool json_out = false, no_fuse = false;
  std::vector<double> freqs;
  auto* chain = app.add_subcommand("chain", "Show the planned chain: stages, sections, dispatches and response");
  chain->add_option("spec", spec, "Chain spec, e.g. 'hp:80:4 | lp:12000:8 | peak:1000:q=0.7:gain=6'")->required();
  chain->add_option("--rate,-r", rate, "Sample rate in Hz")->capture_default_str();
  chain->add_flag("--json", json_out, "Print JSON (schema chunkscope.chain/1)");
  chain->add_flag("--no-fuse", no_fuse, "One pass per filter instead of one fused cascade");
  chain->add_option("--freqs", freqs, "Frequencies (Hz) for the response table")->delimiter(',');

  // process
  std::string in, out, dtype = "f32";
  ProcessOptions popt;
  long long chunk = 1024;
  auto* proc = app.add_subcommand("process", "Run a file through the chain in chunks (single thread, no pacing)");
  proc->add_option("input", in, "Input audio file (anything libsndfile reads)")->required();
  proc->add_option("output", out, "Output file; format from its extension, else the input's")->required();
  proc->add_option("--chain,-c", popt.chain, "Chain spec")->required();
  proc->add_option("--chunk,-n", chunk, "Frames per chunk (1..65536)")->capture_default_str();
  proc->add_option("--dtype", dtype, "Sample type for processing: f32 or f64")->capture_default_str();
  bool proc_no_fuse = false;
  proc->add_flag("--no-fuse", proc_no_fuse, "One pass per filter (the unfused baseline)");
  std::string proc_mode = "eager";
  proc->add_option("--backend", popt.backend, "Processing backend: cpu or cuda")->capture_default_str();
  proc->add_option("--mode", proc_mode, "CUDA: eager or graph")->capture_default_str();

  // bench
  BenchOptions bopt;
  std::vector<std::string> bdtypes{"f32"};
  std::string bjson;
  bool quick = false;
  auto* bench = app.add_subcommand("bench", "CPU filter throughput, fused and unfused, in biquad-samples per second");
  bench->add_option("--channels", bopt.channels, "Channel counts")->delimiter(',')->capture_default_str();
  bench->add_option("--sections", bopt.sections, "Sections per chain")->delimiter(',')->capture_default_str();
  bench->add_option("--chunks", bopt.chunks, "Chunk sizes in frames")->delimiter(',')->capture_default_str();
  bench->add_option("--dtype", bdtypes, "Sample types: f32, f64 or both")->delimiter(',')->capture_default_str();
  bench->add_option("--repeats", bopt.repeats, "Timed repeats per configuration (the median is reported)")
      ->capture_default_str();
  bench->add_option("--json", bjson, "Also write the rows as JSON to this file");
  bench->add_flag("--quick", quick, "Shorter repeats (a rough figure in a few seconds)");

  // replay
  std::string replay_in;
  StreamCli rs;
  auto* replay = app.add_subcommand("replay", "Stream a file through the chain at real-time pace and report on every chunk");
  replay->add_option("input", replay_in, "Input audio file")->required();
  add_stream_options(replay, rs);
  replay->add_option("--rate", rs.opt.expect_rate, "Expected sample rate (an error when the file differs)");
  replay->add_option("--channels", rs.opt.expect_channels, "Expected channel count (an error when the file differs)");

  // devices
  bool dev_json = false;
  auto* devices = app.add_subcommand("devices", "List audio host APIs and devices (PortAudio)");
  devices->add_flag("--json", dev_json, "Print JSON (schema chunkscope.devices/1)");

  // monitor
  StreamCli ms;
  MonitorOptions mopt;
  auto* monitor = app.add_subcommand("monitor", "Run a live audio device through the chain and report on every chunk");
  add_stream_options(monitor, ms);
  monitor->remove_option(monitor->get_option("--output"));
  monitor->remove_option(monitor->get_option("--speed"));
  monitor->add_option("--input,-i", mopt.input, "Input device: index or name substring (default: the default input)");
  monitor->add_option("--output,-o", mopt.output, "Output device: index, name substring or 'none' (input only)");
  monitor->add_option("--rate", mopt.rate, "Sample rate in Hz (default: the input device's)");
  monitor->add_option("--channels", mopt.channels, "Channels")->capture_default_str();
  monitor->add_option("--duration", mopt.duration, "Stop after this long, e.g. 10s (default: at SIGINT/SIGTERM)");
  monitor->add_flag("--live", mopt.live, "Print a compact live view once per second");
  monitor->add_option("--latency-chunks", mopt.latency_chunks,
                      "Full duplex: the output of input chunk k plays at callback k + K")
      ->capture_default_str();

  // synth
  StreamCli ss;
  auto* synth = app.add_subcommand("synth", "Stream a synthetic signal through the chain and report on every chunk");
  add_stream_options(synth, ss);
  synth->add_option("--signal", ss.opt.signal, "sine:<hz>, noise, sweep:<f0>:<f1>, impulse or silence")->capture_default_str();
  synth->add_option("--duration", ss.opt.duration, "Length of the signal, e.g. 10s")->capture_default_str();
  synth->add_option("--channels", ss.opt.channels, "Channels")->capture_default_str();
  synth->add_option("--rate", ss.opt.rate, "Sample rate in Hz")->capture_default_str();

  // compare
  StreamCli cs;
  CompareOptions copt;
  std::string csynth;
  auto* compare = app.add_subcommand(
      "compare", "Run the same input through several backend variants, interleaved in rounds, side by side");
  compare->add_option("input", copt.input, "Input audio file (or --synth)");
  add_stream_options(compare, cs);
  compare->remove_option(compare->get_option("--backend"));
  compare->remove_option(compare->get_option("--mode"));
  compare->remove_option(compare->get_option("--output"));
  compare->remove_option(compare->get_option("--json"));
  compare->remove_option(compare->get_option("--hgrm"));
  compare->remove_option(compare->get_option("--trace"));
  compare->remove_option(compare->get_option("--report-dir"));
  compare->add_option("--variants", copt.variants,
                      "Comma-separated: cpu, cpu:fused, cpu:unfused, cuda:eager, cuda:graph, cuda:eager:unfused, "
                      "cuda:graph:unfused")
      ->capture_default_str();
  compare->add_option("--rounds", copt.rounds, "Rounds; each runs every variant once over the whole input")
      ->capture_default_str();
  compare->add_option("--json", copt.json_path, "Write the comparison as JSON (schema chunkscope.compare/1)");
  compare->add_option("--synth", csynth, "Synthetic input instead of a file: sine:<hz>, noise, sweep:<f0>:<f1>, impulse, silence");
  compare->add_option("--duration", cs.opt.duration, "Synthetic input: length, e.g. 5s")->capture_default_str();
  compare->add_option("--channels", cs.opt.channels, "Synthetic input: channels")->capture_default_str();
  compare->add_option("--rate", cs.opt.rate, "Synthetic input: sample rate in Hz")->capture_default_str();

  // report, cadence
  ReportCmdOptions ropt;
  auto* report = app.add_subcommand("report", "Render a saved report again: terminal text, or one self-contained HTML file");
  report->add_option("report", ropt.path, "A report JSON (replay, synth, monitor or compare)")->required();
  report->add_option("--html", ropt.html, "Write an HTML page with plots (inline SVG, readable offline)");
  report->add_flag("--text", ropt.text, "Print the terminal report too when writing --html");
  std::string cad_path;
  auto* cadence = app.add_subcommand("cadence", "The cadence report of a saved run: output period, jitter, drift, gaps");
  cadence->add_option("report", cad_path, "A run report JSON")->required();

  // stage-bench
  StageBenchOptions sbo;
  auto* sbench = app.add_subcommand("stage-bench", "Replay one stage of a saved run alone and compare isolated with in-pipeline time");
  sbench->add_option("report", sbo.report, "A run report JSON (or COMPARE.json#variant)")->required();
  sbench->add_option("--stage", sbo.stage, "The stage to replay (process)")->capture_default_str();
  sbench->add_option("--iterations", sbo.iterations, "Timed calls")->capture_default_str();
  sbench->add_option("--warmup", sbo.warmup, "Untimed calls first")->capture_default_str();
  sbench->add_option("--json", sbo.json, "Write the result as JSON (schema chunkscope.stagebench/1)");

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const auto* sc : app.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || sc->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sc->get_name();
    }
    if (!known) {
      std::cerr << "chunkscope: unknown command '" << argv[1] << "' (commands: " << names << ")\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    std::cerr << "chunkscope: " << msg << " (see --help)\n";
    return kExitUsage;
  }

  try {
    if (*chain) {
      if (!(rate > 0) || rate > 1e6) throw InputError(fmt::format("--rate: {} Hz is out of range", rate));
      return cmd_chain(spec, rate, json_out, no_fuse, freqs);
    }
    if (*proc) {
      check_chunk_frames(chunk);
      popt.chunk = static_cast<int>(chunk);
      popt.dtype = parse_dtype(dtype);
      popt.fuse = !proc_no_fuse;
      popt.cuda.mode = parse_cuda_mode(proc_mode);
      return cmd_process(in, out, popt);
    }
    if (*replay) {
      finish_stream_options(rs);
      install_signal_handlers();
      return run_stream("replay", replay_in, rs.opt, &g_stop);
    }
    if (*devices) return run_devices(dev_json);
    if (*monitor) {
      finish_stream_options(ms);
      mopt.stream = ms.opt;
      install_signal_handlers();
      return run_monitor(mopt, &g_stop);
    }
    if (*synth) {
      finish_stream_options(ss);
      install_signal_handlers();
      return run_stream("synth", "", ss.opt, &g_stop);
    }
    if (*compare) {
      finish_stream_options(cs);
      copt.stream = cs.opt;
      copt.quiet = cs.opt.quiet;
      copt.synth_given = !csynth.empty();
      if (copt.synth_given) copt.stream.signal = csynth;
      if (copt.input.empty() && !copt.synth_given)
        throw InputError("compare: give an input file or --synth SIGNAL");
      install_signal_handlers();
      return run_compare(copt, &g_stop);
    }
    if (*report) return run_report_command(ropt);
    if (*cadence) return run_cadence_command(cad_path);
    if (*sbench) return run_stage_bench(sbo);
    if (*bench) {
      bopt.dtypes.clear();
      for (const auto& d : bdtypes) bopt.dtypes.push_back(parse_dtype(d));
      for (int c : bopt.channels)
        if (c < 1 || c > kMaxChannels) throw InputError(fmt::format("--channels: {} is out of range 1..64", c));
      for (int s : bopt.sections)
        if (s < 1 || s > 256) throw InputError(fmt::format("--sections: {} is out of range 1..256", s));
      for (int n : bopt.chunks) check_chunk_frames(n, "--chunks");
      if (bopt.repeats < 1) throw InputError("--repeats: must be 1 or more");
      if (quick) bopt.seconds_per_repeat = 0.002;
      if (!bjson.empty()) check_output_path(bjson, fmt::format("--json '{}'", bjson));  // before the bench runs
      return cmd_bench(bopt, bjson);
    }
  } catch (const InputError& e) {
    std::cerr << "chunkscope: " << e.what() << "\n";
    return kExitUsage;
  } catch (const RuntimeFailure& e) {
    std::cerr << "chunkscope: " << e.what() << "\n";
    return kExitRuntime;
  } catch (const std::exception& e) {
    std::cerr << "chunkscope: internal error: " << e.what() << "\n";
    return kExitRuntime;
  }
  return kExitOk;
}

// A report that could not reach stdout (a full disk, a closed pipe) is a failure: exit 3.
int main(int argc, char** argv) { return finish_stdout(run_command(argc, argv)); }
