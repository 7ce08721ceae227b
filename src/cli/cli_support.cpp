#include "src/cli/cli_support.hpp"

#include <map>

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include "chunkscope/version.hpp"
#include "src/backends.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/entry.hpp"
#include "src/cli/signals.hpp"
#include "src/session/stream_session.hpp"
#include "src/io/output_file.hpp"
#include "src/chain_spec.hpp"
#include "src/errors.hpp"
#include "src/suggest.hpp"

namespace chunkscope::cli {

namespace {

// The name errors use for an option: its first long name, else its first name.
std::string flag_name(const std::string& names) {
  std::string first;
  std::size_t pos = 0;
  while (pos <= names.size()) {
    const auto end = std::min(names.find(',', pos), names.size());
    std::string n = names.substr(pos, end - pos);
    n.erase(0, n.find_first_not_of(' '));
    n.erase(n.find_last_not_of(' ') + 1);
    if (n.rfind("--", 0) == 0) return n;
    if (first.empty()) first = n;
    pos = end + 1;
  }
  return first;
}

long long parse_whole(const std::string& s, const std::string& flag, long long lo, long long hi) {
  long long v = 0;
  const char* first = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  const char* last = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && ptr == last && (v < lo || v > hi)))
    throw InputError(fmt::format("{}: {} is out of range {}..{}", flag, s, lo, hi));
  if (ec != std::errc() || ptr != last || s.empty()) throw InputError(fmt::format("{}: '{}' is not a whole number", flag, s));
  return v;
}

std::string number_text(double v) {
  if (v == static_cast<double>(static_cast<long long>(v))) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);
}

}  // namespace

// ---------------------------------------------------------------- options

CLI::Option* add_text(CLI::App* c, const std::string& names, std::string& field, const std::string& desc) {
  auto* o = c->add_option(names, field, desc);
  if (!field.empty()) o->capture_default_str();
  return o;
}

CLI::Option* add_int(CLI::App* c, const std::string& names, int& field, const std::string& desc, long long lo,
                     long long hi) {
  const std::string flag = flag_name(names);
  auto* o = c->add_option_function<std::string>(
      names, [&field, flag, lo, hi](const std::string& s) { field = static_cast<int>(parse_whole(s, flag, lo, hi)); },
      desc);
  return o->type_name("INT")->default_str(std::to_string(field));
}

CLI::Option* add_int(CLI::App* c, const std::string& names, long long& field, const std::string& desc) {
  const std::string flag = flag_name(names);
  auto* o = c->add_option_function<std::string>(
      names, [&field, flag](const std::string& s) { field = parse_whole(s, flag, LLONG_MIN, LLONG_MAX); }, desc);
  return o->type_name("INT")->default_str(std::to_string(field));
}

std::function<int(const std::string&)> whole_number(const std::string& flag, long long lo, long long hi) {
  return [flag, lo, hi](const std::string& s) { return static_cast<int>(parse_whole(s, flag, lo, hi)); };
}

CLI::Option* add_rate(CLI::App* c, const std::string& names, double& field, const std::string& desc) {
  const std::string flag = flag_name(names);
  auto* o = c->add_option_function<std::string>(
      names, [&field, flag](const std::string& s) { field = parse_frequency(s, flag); }, desc);
  o->type_name("HZ");
  if (field != 0) o->default_str(number_text(field));
  return o;
}

CLI::Option* add_flag(CLI::App* c, const std::string& names, bool& field, const std::string& desc, bool value) {
  return c->add_flag_callback(names, [&field, value] { field = value; }, desc);
}

void add_synth_input(CLI::App* c, StreamOptions& o, bool& given, const std::string& signal_note) {
  c->add_option_function<std::string>(
      "--synth",
      [&o, &given](const std::string& s) {
        given = !s.empty();
        if (given) o.signal = s;
      },
      "Synthetic input instead of a file: sine:<hz>, noise, sweep:<f0>:<f1>, impulse, silence, burst:<time>" + signal_note);
  add_int(c, "--channels", o.channels, "Synthetic input: channels");
  add_rate(c, "--rate", o.rate, "Synthetic input: sample rate in Hz (48000, 44.1k, 48kHz)");
}

void NotTaken::add(CLI::App* c, const std::string& name, std::string why) {
  c->get_option(name)->group("");  // no group: not listed by --help
  list_.emplace_back(name, std::move(why));
}

void NotTaken::check(const CLI::App* c) const {
  for (const auto& [name, why] : list_)
    if (c->count(name) > 0) throw InputError(fmt::format("{}: `chunkscope {}` does not take it: {}", name, c->get_name(), why));
}

void add_stream_options(CLI::App* c, StreamOptions& o, unsigned groups) {
  add_text(c, "--chain,-c", o.chain, "Chain spec: " + chain_spec_help() + "; empty: no processing, to measure the engine alone");
  add_int(c, "--chunk,-n", o.chunk, "Frames per chunk (1..65536)");
  if (groups & kDtype)
    add_parsed<DType>(c, "--dtype", o.dtype, "Sample type: f32 or f64",
                      [](const std::string& s) { return parse_dtype(s); }, dtype_name(o.dtype));
  add_flag(c, "--no-fuse", o.fuse, "One pass per filter (the unfused baseline)", false);
  if (groups & kSpeed) add_text(c, "--speed", o.speed, "Replay speed: a factor (1 = real time) or 'max'");
  add_int(c, "--warmup", o.warmup, "First chunks reported apart and left out of the statistics");
  add_text(c, "--margin", o.margin, "Transport/encoding margin: a time (1.5ms) or a share of D (20%)");
  add_int(c, "--queue-depth", o.queue_depth,
          "Capacity of the source->processor queue; a paced source drops when it is full (the sink side never drops)");
  if (groups & kFileOutput) {
    add_text(c, "--output,-o", o.output, "Write the processed stream to this file (default: discard)");
    add_text(c, "--output-format", o.output_format,
             "--output's sample type: auto (the input's, or the closest the extension's container holds), float, "
             "double, pcm16, pcm24 or pcm32; float keeps samples beyond full scale, integers clip them (counted)");
  }
  if (groups & kReportFiles) {
    add_text(c, "--json", o.json_path, "Write the report as JSON (schema chunkscope.report/1)");
    add_text(c, "--hgrm", o.hgrm_dir, "Write one HdrHistogram .hgrm file per stage into this folder");
    add_text(c, "--trace", o.trace_path, "Write a Chrome trace (Perfetto, chrome://tracing)");
    add_text(c, "--report-dir", o.report_dir,
             "Write report.json, report.html, trace.json and hgrm/ into this folder, and list the files written");
    add_flag(c, "--no-html", o.report_html, "With --report-dir: no report.html", false);
    add_parsed<std::size_t>(
        c, "--trace-limit", o.trace_capacity, "Chunks the trace keeps: the last N to reach the sink (0: none)",
        [](const std::string& s) {
          return static_cast<std::size_t>(parse_whole(s, "--trace-limit", 0, static_cast<long long>(kMaxTraceLimit)));
        },
        std::to_string(o.trace_capacity))
        ->type_name("INT");
  }
  add_flag(c, "--fail-on-miss", o.fail_on_miss, "Exit 1 when p95 headroom is negative or any chunk missed or dropped");
  add_flag(c, "--fail-on-unsafe", o.fail_on_unsafe,
           "Exit 1 when a hosted step allocated, blocked or wrote NaN/Inf inside process()");
  add_flag(c, "--quiet,-q", o.quiet, "No terminal report");
  add_parsed<std::size_t>(
      c, "--series-limit", o.series_limit, "Per-chunk points kept in the JSON report for plots (0: none)",
      [](const std::string& s) {
        return static_cast<std::size_t>(
            parse_whole(s, "--series-limit", 0, static_cast<long long>(kMaxSeriesLimit)));
      },
      std::to_string(o.series_limit))
      ->type_name("INT");
  // run modes (docs/profiler.md, "Run modes")
  add_text(c, "--baseline", o.baseline,
           "Platform baseline (timer wake-up and thread hand-off) measured before and after a paced run, each this "
           "long (0: none)");
  auto* rt = add_flag(c, "--rt", o.rt, "Engine threads under SCHED_FIFO and the process's memory locked (mlockall)");
  add_int(c, "--rt-priority", o.rt_priority, "The SCHED_FIFO priority --rt gives the engine threads", 1, 99)
      ->needs(rt);
  c->add_option_function<std::string>(
       "--cpus",
       [&o](const std::string& s) {
         const long n = sysconf(_SC_NPROCESSORS_CONF);
         (void)parse_cpu_list(s, n > 0 ? static_cast<int>(n) : 1);
         o.cpus = s;
       },
       "Pin the engine threads (source, processor, sink) round-robin over these CPUs: 0,1 or 0-2")
      ->type_name("LIST");
  add_parsed<WaitMode>(c, "--wait", o.wait,
                       "How the source paces and the consumers wait: block (sleep), spin (busy-wait, a core per "
                       "thread) or hybrid (sleep, then spin the last 200 us)",
                       [](const std::string& s) { return parse_wait_mode(s); }, wait_mode_name(o.wait));
  add_flag(c, "--inline", o.inline_process,
           "Process on the source's thread (monitor: inside the audio callback): no source->processor hand-off");
  add_parsed<bool>(c, "--ftz", o.ftz,
                   "on: process with denormals flushed to zero (FTZ/DAZ), as real-time hosts do; off: as they come "
                   "(compare a plugin's cost on a decaying tail, and its subnormal output in the audit)",
                   [](const std::string& s) { return parse_on_off(s, "--ftz"); }, on_off(o.ftz));
  add_parsed<bool>(c, "--switch-record", o.switch_record,
                   "on: split processing and judge blame from each engine thread's context-switch record (perf "
                   "events); off: the thread CPU clock and the wall-clock rules, as where the kernel refuses",
                   [](const std::string& s) { return parse_on_off(s, "--switch-record"); }, on_off(o.switch_record));
  add_parsed<std::string>(c, "--step-timeout", o.step_timeout,
                          "A hosted call (process, reset) that has not returned after this long ends the run with "
                          "one line naming the step and the chunk, the report of the chunks measured so far marked "
                          "incomplete, exit 4: auto (the larger of 2 s and 100 chunk durations), off, or a duration",
                          [](const std::string& s) {
                            static_cast<void>(step_timeout_ns(s, 1, 48000));  // refused here when it is not one
                            return s;
                          },
                          o.step_timeout);
  if (groups & kStreams) {
    add_int(c, "--streams", o.streams,
            "Independent streams of the chain at once, each with its own schedule, queues and filter state", 1,
            kMaxStreams);
    add_parsed<bool>(c, "--stagger", o.stagger,
                     "on: the streams' schedules offset evenly over one chunk period; off: aligned (the worst case)",
                     [&o](const std::string& s) {
                       o.stagger_given = true;
                       return parse_on_off(s, "--stagger");
                     },
                     on_off(o.stagger));
    add_flag(c, "--batch", o.batch,
             "Gather every stream's chunk of a period into one chunk (streams x channels) and process it in one call: "
             "one set of launches per period on the GPU; the streams are aligned");
  }
  if (groups & kMetrics) {
    add_text(c, "--metrics-listen", o.metrics_listen,
             "Serve live metrics for Prometheus at http://ADDR:PORT/metrics (PORT or :PORT: loopback only)");
    add_text(c, "--metrics-hold", o.metrics_hold, "Keep serving the metrics this long after the run ends, e.g. 30s");
  }
  if (groups & kBackendKind) {
    add_parsed<BackendKind>(c, "--backend", o.backend.backend, "Processing backend: cpu or cuda",
                            [](const std::string& s) { return parse_backend_kind(s); }, backend_name(o.backend.backend));
    add_parsed<CudaOptions::Mode>(c, "--mode", o.backend.cuda.mode,
                                  "CUDA: eager (steps launched one by one) or graph (CUDA graph replay)",
                                  [](const std::string& s) { return parse_cuda_mode(s); },
                                  cuda_mode_name(o.backend.cuda.mode));
    add_parsed<std::optional<CpuIsa>>(
        c, "--isa", o.backend.cpu_isa,
        "CPU backend: the instruction set of its kernels, auto (of the sets this CPU has, the one needing the fewest passes over a chunk for this chain: docs/profiler.md, CPU kernels), scalar, sse4, avx2 or avx512",
        [](const std::string& s) { return parse_isa_choice(s); }, isa_choice_name(o.backend.cpu_isa));
  }
  if (groups & kCudaTuning) {
    add_parsed<bool>(c, "--gpu-timing", o.backend.cuda.gpu_timing,
                     "CUDA: on (events time H2D, kernels, D2H) or off (no events)",
                     [](const std::string& s) { return parse_on_off(s, "--gpu-timing"); },
                     on_off(o.backend.cuda.gpu_timing));
    add_parsed<bool>(c, "--short-chunk", o.backend.cuda.recapture_on_shape_change,
                     "CUDA graph mode, a chunk shorter than the captured shape: eager (run it eagerly) or recapture",
                     [](const std::string& s) { return parse_short_chunk(s); },
                     short_chunk_name(o.backend.cuda.recapture_on_shape_change));
  }
}

// ---------------------------------------------------------------- usage errors

namespace {

// The candidate closest to `word` within an edit distance of 2 ("" when none).
std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = 3;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::vector<std::string> long_names(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app->get_options())
    for (const auto& n : o->get_lnames()) out.push_back("--" + n);
  return out;
}

bool takes_option(const CLI::App* app, const std::string& flag) {
  for (const auto& n : long_names(app))
    if (n == flag) return true;
  return false;
}

std::string command_list(const std::vector<Command>& commands) {
  std::string s;
  for (const auto& c : commands) s += (s.empty() ? "" : ", ") + c.app->get_name();
  return s;
}

int usage_error(const std::string& line) {
  std::cerr << "chunkscope: " << one_line(line) << "\n";
  return kExitUsage;
}

// A word left over on the command line of `sub` (nullptr: before any command).
int leftover_error(const CLI::App& app, const CLI::App* sub, const std::vector<Command>& commands,
                   const std::string& word) {
  const std::string see = sub ? fmt::format("see chunkscope {} --help", sub->get_name()) : "see chunkscope --help";
  const std::string where = sub ? sub->get_name() + ": " : "";
  if (word.size() > 1 && word[0] == '-') {
    const std::string flag = word.substr(0, word.find('='));
    const CLI::App* owner = sub ? sub : &app;
    std::string hint;
    if (flag.rfind("--", 0) == 0) {
      const std::string near = closest(flag, long_names(owner));
      if (!near.empty()) hint = fmt::format(": did you mean '{}'?", near);
    }
    if (hint.empty() && sub) {
      std::vector<std::string> others;
      for (const auto& c : commands)
        if (c.app != sub && takes_option(c.app, flag)) others.push_back(c.app->get_name());
      if (!others.empty()) {
        std::string list;
        for (std::size_t i = 0; i < others.size(); ++i)
          list += (i == 0 ? "" : i + 1 == others.size() ? " and " : ", ") + others[i];
        return usage_error(fmt::format("{}unknown option '{}' ({} {} it; {})", where, flag, list,
                                       others.size() == 1 ? "takes" : "take", see));
      }
    }
    return usage_error(fmt::format("{}unknown option '{}'{} ({})", where, flag, hint, see));
  }
  if (!sub) {
    std::vector<std::string> names;
    for (const auto& c : commands) names.push_back(c.app->get_name());
    const std::string near = closest(word, names);
    return usage_error(fmt::format("unknown command '{}'{} (commands: {})", word,
                                   near.empty() ? "" : fmt::format(": did you mean '{}'?", near),
                                   command_list(commands)));
  }
  return usage_error(fmt::format("{}unexpected argument '{}' ({})", where, word, see));
}

// A parse error that is not a left-over word, in the project's words.
int parse_error(const CLI::App* sub, const CLI::ParseError& e) {
  const std::string where = sub ? sub->get_name() + ": " : "";
  const std::string see = sub ? fmt::format("see chunkscope {} --help", sub->get_name()) : "see chunkscope --help";
  if (dynamic_cast<const CLI::RequiredError*>(&e) && sub) {
    for (const CLI::Option* o : sub->get_options())
      if (o->get_required() && o->count() == 0) {
        if (o->get_lnames().empty() && o->get_snames().empty())
          return usage_error(fmt::format("{}missing argument '{}' ({})", where, o->get_name(), see));
        return usage_error(fmt::format("{}{} is required ({})", where, o->get_name(), see));
      }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
    const std::string what = e.what();
    const std::string flag = what.substr(0, what.find(':'));
    if (what.find("missing") != std::string::npos) return usage_error(fmt::format("{}{} needs a value ({})", where, flag, see));
    if (what.find("At Most") != std::string::npos)
      return usage_error(fmt::format("{}{} is given more than once ({})", where, flag, see));
  }
  return usage_error(fmt::format("{}{} ({})", where, e.what(), see));
}

}  // namespace

int parse_command_line(CLI::App& app, int argc, char** argv, const std::vector<Command>& commands,
                       const Command** chosen) {
  app.allow_extras();
  for (const auto& c : commands) c.app->allow_extras();
  // A word the command line does not know comes first: it is the likeliest cause of any
  // other complaint (a misspelt --chain makes --chain missing).
  auto leftover = [&](const CLI::App* sub) -> int {
    const auto words = app.remaining(true);
    return words.empty() ? kRunCommand : leftover_error(app, sub, commands, words.front());
  };
  auto selected = [&]() -> const CLI::App* {
    const auto subs = app.get_subcommands();
    return subs.empty() ? nullptr : subs.front();
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const CLI::App* sub = selected();
    if (const int rc = leftover(sub); rc != kRunCommand) return rc;
    if (!sub) return usage_error(fmt::format("no command given (commands: {}; see chunkscope --help)", command_list(commands)));
    return parse_error(sub, e);
  } catch (const InputError& e) {
    if (const int rc = leftover(selected()); rc != kRunCommand) return rc;
    return usage_error(e.what());
  }
  const CLI::App* sub = selected();
  if (const int rc = leftover(sub); rc != kRunCommand) return rc;
  for (const auto& c : commands)
    if (c.app == sub) *chosen = &c;
  if (!*chosen) return usage_error(fmt::format("no command given (commands: {}; see chunkscope --help)", command_list(commands)));
  return kRunCommand;
}

int run_command(const Command& command) {
  try {
    return command.run();
  } catch (const InputError& e) {
    std::cerr << "chunkscope: " << one_line(e.what()) << "\n";
    return kExitUsage;
  } catch (const RuntimeFailure& e) {
    std::cerr << "chunkscope: " << one_line(e.what()) << "\n";
    return kExitRuntime;
  } catch (const std::exception& e) {
    std::cerr << "chunkscope: internal error: " << one_line(e.what()) << "\n";
    return kExitRuntime;
  }
}

namespace {

std::vector<Command> add_commands(CLI::App& app) {
  app.set_version_flag("-V,--version", fmt::format("chunkscope {} ({})", kVersion, kGitCommit));
  app.require_subcommand(1);
  return {
      add_chain_command(app),   add_process_command(app), add_bench_command(app),   add_replay_command(app),
      add_devices_command(app), add_monitor_command(app), add_synth_command(app),   add_compare_command(app),
      add_report_command(app),  add_cadence_command(app), add_stage_bench_command(app), add_sweep_command(app),
      add_plugins_command(app),
  };
}

const char* kAbout = "chunkscope: does this audio filter chain keep real time? Measures every chunk at every stage.";

}  // namespace

namespace {

// `words` parsed as run_main parses argv, the refusal's line kept instead of printed.
struct ParsedWords {
  CLI::App app{kAbout};
  std::vector<Command> commands = add_commands(app);
  const Command* chosen = nullptr;
  std::string refusal;  // "" when the words parse

  explicit ParsedWords(const std::vector<std::string>& words) {
    std::vector<std::string> argv_words{"chunkscope"};
    argv_words.insert(argv_words.end(), words.begin(), words.end());
    std::vector<char*> argv;
    for (auto& w : argv_words) argv.push_back(w.data());
    std::ostringstream line;
    auto* old = std::cerr.rdbuf(line.rdbuf());
    const int rc = parse_command_line(app, static_cast<int>(argv.size()), argv.data(), commands, &chosen);
    std::cerr.rdbuf(old);
    if (rc != kRunCommand) refusal = one_line(line.str());
  }
};

}  // namespace

StreamOptions parse_stream_command(const std::vector<std::string>& words) {
  const ParsedWords p(words);
  if (!p.refusal.empty()) throw InputError(p.refusal);
  if (!p.chosen->stream) throw InputError(fmt::format("'{}' is not replay or synth", words.empty() ? "" : words.front()));
  check_stream_options(*p.chosen->stream);  // what a run refuses before it opens anything
  return *p.chosen->stream;
}

std::string refusal_of(const std::vector<std::string>& words) {
  const ParsedWords p(words);
  if (!p.refusal.empty()) return p.refusal;
  try {
    p.chosen->refused.check(p.chosen->app);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The command line, parsed and dispatched (src/cli/main.cpp calls it).
int run_main(int argc, char** argv) {
  // first, on the main thread: a signal during parsing or in a command that does not stop on
  // its own ends the process at once, removing temporary files (src/cli/signals.hpp)
  install_signal_handlers();
  if (argc > 0 && argv[0]) set_program_name(argv[0]);  // how printed commands name the program
  CLI::App app{kAbout};
  const std::vector<Command> commands = add_commands(app);
  const Command* chosen = nullptr;
  if (const int rc = parse_command_line(app, argc, argv, commands, &chosen); rc != kRunCommand)
    return finish_stdout(rc);
  // a report that could not reach stdout (a full disk, a closed pipe) is a failure: exit 3
  return finish_stdout(run_command(*chosen));
}

}  // namespace chunkscope::cli
