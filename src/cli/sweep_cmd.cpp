#include "src/cli/sweep_cmd.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <set>

#include "rt/clock.hpp"
#include "src/backends.hpp"
#include "src/cli/cli_support.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/compare_cmd.hpp"
#include "src/cli/signals.hpp"
#include "src/environment.hpp"
#include "src/errors.hpp"
#include "src/io/output_file.hpp"
#include "src/render/html.hpp"
#include "src/report/format.hpp"
#include "src/session/stream_set.hpp"

namespace chunkscope {

namespace {

// what a sweep adds to the start of each cell beyond its audio and baseline: the streams'
// common start, and the threads and statistics of each stream
constexpr double kCellStartSeconds = 0.1, kStreamStartSeconds = 0.01;

std::vector<int> sorted_unique(std::vector<int> v, const char* flag) {
  if (v.empty()) throw InputError(fmt::format("{}: give at least one value", flag));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string variant_name(const StreamOptions& opt) {
  std::string n = backend_name(opt.backend.backend);
  if (opt.backend.backend == BackendKind::cuda) n += std::string(":") + cuda_mode_name(opt.backend.cuda.mode);
  return n + (opt.fuse ? "" : ":unfused");
}

std::string joined_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

std::string sweep_short_cells(const std::vector<int>& chunks, std::int64_t frames, int rate, long long warmup) {
  std::string sizes;
  int largest = 0;
  for (int c : chunks) {
    const std::int64_t counted = std::max<std::int64_t>(0, (frames + c - 1) / c - warmup);
    if (counted >= static_cast<std::int64_t>(kChunksToJudgeP95)) continue;
    sizes += fmt::format("{}{} frames ({} chunks)", sizes.empty() ? "" : ", ", c, counted);
    largest = std::max(largest, c);
  }
  if (sizes.empty() || rate <= 0) return "";
  const double need_s = static_cast<double>(static_cast<long long>(kChunksToJudgeP95) + warmup) * largest / rate;
  return fmt::format("cells of {} count fewer chunks per stream than the {} a verdict needs: a cell of them that "
                     "misses nothing will say 'cannot judge' (--duration {:g}s counts enough)",
                     sizes, kChunksToJudgeP95, std::ceil(need_s * 10) / 10);
}

double sweep_planned_seconds(const std::vector<int>& cell_streams, double media_seconds, double speed,
                             double baseline_seconds) {
  double total = 0;
  for (int n : cell_streams) total += media_seconds / speed + 2 * baseline_seconds + kCellStartSeconds + kStreamStartSeconds * n;
  return total;
}

int run_sweep(const SweepOptions& so, const std::atomic<bool>* stop_flag) {
  const std::string command = so.input.empty() ? "synth" : "replay";
  if (!so.input.empty() && so.synth_given)
    throw InputError(fmt::format("sweep: give an input file ('{}') or --synth, not both", so.input));
  StreamOptions base = so.stream;
  // --batch: each cell of 2 or more streams runs them batched; a cell of one stream is a plain run
  const bool batch = base.batch;
  base.batch = false;
  if (batch && base.stagger_given && base.stagger)
    throw InputError("--stagger on: --batch processes every stream's chunk of a period together, so their schedules "
                     "are aligned; drop --stagger");
  if (batch) base.stagger = false;
  if (base.speed == "max") throw InputError("--speed: a sweep is paced (every cell is judged against its deadlines); give a factor");
  const std::vector<int> chunks = sorted_unique(so.chunks, "--chunks");
  const std::vector<int> counts = sorted_unique(so.streams, "--streams");
  for (int c : chunks) check_chunk_frames(c, "--chunks");
  for (int n : counts)
    if (n < 1 || n > kMaxStreams) throw InputError(fmt::format("--streams: {} is out of range 1..{}", n, kMaxStreams));
  std::vector<VariantSpec> specs;
  if (so.variants.empty()) {
    VariantSpec v;
    v.name = variant_name(base);
    v.choice = base.backend;
    v.fuse = base.fuse;
    v.fuse_given = true;
    specs.push_back(v);
  } else {
    specs = parse_variants(so.variants);
    for (const auto& v : specs)
      if (v.chain_variant())
        throw InputError(fmt::format("--variants: '{}' is a chain variant; a sweep varies the backend of its --chain "
                                     "(compare chains with compare)",
                                     v.name));
  }
  const std::size_t cells_total = chunks.size() * counts.size() * specs.size();
  if (cells_total > static_cast<std::size_t>(kMaxSweepCells))
    throw InputError(fmt::format("sweep: {} cells ({} chunk sizes x {} stream counts x {} variants) is more than {}",
                                 cells_total, chunks.size(), counts.size(), specs.size(), kMaxSweepCells));
  const std::int64_t cell_ns = parse_duration_ns(so.cell, "--duration");
  if (cell_ns <= 0) throw InputError("--duration: must be above 0");
  base.duration = so.cell;
  if (command == "replay") base.input_limit_ns = cell_ns;
  base.series_limit = 0;  // a cell keeps no per-chunk series: only its figures are reported
  base.quiet = true;
  base.json_path.clear();
  base.hgrm_dir.clear();
  base.trace_path.clear();
  base.report_dir.clear();
  check_distinct_paths(stream_inputs(so.input, base), {{"--json", so.json_path}, {"--html", so.html_path}});
  cli::guard_outputs({{"--json", so.json_path}, {"--html", so.html_path}});
  if (!so.json_path.empty()) check_output_path(so.json_path, fmt::format("--json '{}'", so.json_path));
  if (!so.html_path.empty()) check_output_path(so.html_path, fmt::format("--html '{}'", so.html_path));

  // ---- every cell's setup, checked before anything streams (a margin too large for the
  // smallest chunk fails here)
  struct Row {
    std::size_t variant;
    int chunk;
    StreamOptions opt;
    StreamSetup setup;
  };
  std::vector<Row> rows;
  for (std::size_t v = 0; v < specs.size(); ++v)
    for (int c : chunks) {
      StreamOptions o = base;
      o.chunk = c;
      BackendChoice ch = specs[v].choice;
      ch.cuda.gpu_timing = base.backend.cuda.gpu_timing;
      ch.cuda.recapture_on_shape_change = base.backend.cuda.recapture_on_shape_change;
      ch.cpu_isa = base.backend.cpu_isa;
      o.backend = ch;
      o.fuse = specs[v].fuse_given ? specs[v].fuse : base.fuse;
      StreamSetup su = setup_stream(command, so.input, o);
      if (batch && static_cast<long long>(su.channels) * counts.back() > kMaxBatchChannels)
        throw InputError(fmt::format("--batch: {} streams x {} channels = {} channels in one chunk, above the {} a chunk "
                                     "can hold (smaller --streams, or drop --batch)",
                                     counts.back(), su.channels, su.channels * counts.back(), kMaxBatchChannels));
      rows.push_back({v, c, o, std::move(su)});
    }

  SweepReport rep;
  rep.input = rows.front().setup.input_desc;
  rep.source = command == "replay" ? fmt::format("file {}", so.input) : fmt::format("synth {}", base.signal);
  rep.chain = base.chain;
  rep.rate = rows.front().setup.rate;
  rep.channels = rows.front().setup.channels;
  rep.dtype = base.dtype;
  rep.margin_text = base.margin;
  rep.cell_media_seconds = static_cast<double>(rows.front().setup.total_frames) / rep.rate;
  rep.baseline_ns = baseline_ns(base);
  rep.staggered = base.stagger;
  rep.batched = batch;
  rep.run_mode.wait = wait_mode_name(base.wait);
  rep.run_mode.rt = base.rt;
  rep.run_mode.rt_priority = base.rt ? base.rt_priority : 0;
  rep.run_mode.cpus = base.cpus;
  rep.run_mode.inline_process = base.inline_process;
  rep.chunks = chunks;
  rep.streams = counts;
  for (const auto& s : specs) rep.variants.push_back(s.name);
  rep.rule = sweep_rule_text();
  rep.environment.host = probe_environment();
  std::vector<int> plan;
  for (std::size_t i = 0; i < rows.size(); ++i) plan.insert(plan.end(), counts.begin(), counts.end());
  rep.planned_seconds =
      sweep_planned_seconds(plan, rep.cell_media_seconds, rows.front().setup.speed, static_cast<double>(rep.baseline_ns) / 1e9);
  std::cerr << fmt::format(
      "chunkscope: sweep of {} cells ({} chunk size(s) x {} stream count(s) x {} variant(s)), {} s of audio each with a "
      "{} baseline before and after: at most {} s (a row stops at its first cell that is not safe; Ctrl-C keeps the "
      "cells done)\n",
      cells_total, chunks.size(), counts.size(), specs.size(), fmt::format("{:g}", rep.cell_media_seconds),
      fmt_time(static_cast<double>(rep.baseline_ns)),
      rep.planned_seconds < 10 ? fmt::format("{:.1f}", rep.planned_seconds) : fmt::format("{:.0f}", rep.planned_seconds));
  if (const std::string few = sweep_short_cells(chunks, rows.front().setup.total_frames, rep.rate, base.warmup);
      !few.empty())
    std::cerr << "chunkscope: sweep: " << few << "\n";

  // ---- the cells: per variant, per chunk size, stream counts upwards
  const std::int64_t t_start = now_ns();
  bool interrupted = false, failed = false;
  std::string failure;
  std::vector<std::string> unavailable(specs.size());
  int index = 0;
  for (auto& row : rows) {
    bool row_failed = false;
    for (int n : counts) {
      ++index;
      SweepCell cell;
      cell.variant = specs[row.variant].name;
      cell.chunk = row.chunk;
      cell.streams = n;
      if (interrupted) {
        cell.reason = "the sweep was stopped before this cell";
      } else if (!unavailable[row.variant].empty()) {
        cell.state = SweepCell::State::unavailable;
        cell.reason = unavailable[row.variant];
      } else if (row_failed) {
        cell.reason = "a smaller stream count at this chunk size was not safe";
      } else {
        StreamOptions o = row.opt;
        o.streams = n;
        o.batch = batch && n > 1;
        try {
          StreamSet set(row.setup, o, ReportPaths{}, n);
          set.prepare();
          set.run(stop_flag);
          for (int k = 0; k < set.sessions(); ++k)  // a thread still in the call: nothing may be destroyed now
            if (const EngineResult& er = set.session(k).result(); er.stuck.stuck)
              cli::end_after_stuck_call(
                  fmt::format("{} at {} frames x {} streams: {}", cell.variant, cell.chunk, n, stuck_reason(er.stuck)),
                  false);
          const RunReport combined = set.report();
          fill_sweep_cell(cell, combined, set.stream_reports());
        } catch (const RuntimeFailure& e) {
          cell.state = SweepCell::State::unavailable;
          cell.reason = e.what();
          unavailable[row.variant] = e.what();
        }
        if (cell.state == SweepCell::State::interrupted) interrupted = true;
        if (cell.state == SweepCell::State::incomplete && !failed) {
          failed = true;
          failure = fmt::format("{} at {} frames x {} streams: {}", cell.variant, cell.chunk, n, cell.reason);
        }
        if (cell.safe == false) row_failed = true;  // too few chunks to judge: the row goes on
        if (!so.stream.quiet) {
          std::cerr << fmt::format(
              "chunkscope: sweep cell {}/{}: {} {} frames x {} stream(s): {}\n", index, cells_total, cell.variant,
              cell.chunk, n,
              cell.state == SweepCell::State::done
                  ? fmt::format("p95 headroom {}, {} stall event(s), {} drop(s): {}",
                                cell.headroom_p95_ns ? fmt_time(static_cast<double>(*cell.headroom_p95_ns)) : "-",
                                cell.stalls, cell.drops, cell.verdict_words())
                  : fmt::format("{} ({})", sweep_state_name(cell.state), one_line(cell.reason)));
        }
      }
      rep.cells.push_back(std::move(cell));
    }
  }
  rep.wall_seconds = static_cast<double>(now_ns() - t_start) / 1e9;
  if (interrupted) {
    rep.state = RunState::interrupted;
    rep.reason = "stopped by a signal; the cells done are kept, the cell that was running is marked interrupted";
  } else if (failed) {
    rep.state = RunState::incomplete;
    rep.reason = failure;
  }
  rep.frontier = sweep_frontier(rep);

  if (!so.stream.quiet) print_sweep(std::cout, rep);
  if (!so.json_path.empty())
    write_text_output(so.json_path, to_json(rep).dump(2) + "\n", fmt::format("--json '{}'", so.json_path));
  if (!so.html_path.empty())
    write_text_output(so.html_path, render_sweep_html(rep), fmt::format("--html '{}'", so.html_path));
  if (failed) {
    std::cerr << "chunkscope: " << one_line(failure) << " (sweep marked incomplete)\n";
    return kExitRuntime;
  }
  return kExitOk;
}

namespace cli {

Command add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  o->stream.baseline = "200ms";
  o->stream.signal = "noise";
  auto* c = app.add_subcommand(
      "sweep", "Run a grid of chunk sizes x stream counts, each cell a short paced run, and find the safe frontier");
  add_text(c, "input", o->input, "Input audio file (or --synth)");
  add_stream_options(c, o->stream, kDtype | kSpeed | kBackendKind | kCudaTuning);
  add_list<int>(c, "--chunks", o->chunks, "Chunk sizes in frames", whole_number("--chunks", 1, kMaxChunkFrames),
                joined_ints(o->chunks));
  add_list<int>(c, "--streams", o->streams, "Stream counts", whole_number("--streams", 1, kMaxStreams),
                joined_ints(o->streams));
  add_parsed<bool>(c, "--stagger", o->stream.stagger,
                   "on: the streams' schedules offset evenly over one chunk period; off: aligned (the worst case)",
                   [o](const std::string& s) {
                     o->stream.stagger_given = true;
                     return parse_on_off(s, "--stagger");
                   },
                   on_off(o->stream.stagger));
  add_flag(c, "--batch", o->stream.batch,
           "Each cell's streams batched into one chunk per period, processed in one call (one set of launches per period on the "
           "GPU)");
  add_text(c, "--variants", o->variants,
           "Comma-separated, as compare names them (cpu, cpu:unfused, cuda:graph, ...); default: the one --backend, "
           "--mode and --no-fuse give");
  add_text(c, "--duration", o->cell, "Each cell's length of audio (a file: its first part), e.g. 3s; each stream needs 200 counted chunks for a verdict");
  add_synth_input(c, o->stream, o->synth_given, " (default noise)");
  add_text(c, "--json", o->json_path, "Write the sweep as JSON (schema chunkscope.sweep/1)");
  add_text(c, "--html", o->html_path, "Write the sweep's page: a heat map per variant with the safe frontier");
  NotTaken refused;
  refused.add(c, "--chunk", "a sweep takes --chunks LIST (the grid's chunk sizes)");
  refused.add(c, "--fail-on-miss", "a sweep judges each cell itself; read its frontier instead");
  refused.add(c, "--fail-on-unsafe", "a sweep keeps no hosted step's audit; gate on a replay or synth run");
  c->get_option("--speed")->description("Replay speed: a factor (1 = real time); a sweep is paced, so not 'max'");
  return {c,
          [o, c, refused] {
            refused.check(c);
            if (o->input.empty() && !o->synth_given) o->synth_given = true;  // the default: noise
            return run_sweep(*o, stop_on_signals());
          },
          nullptr, refused};
}

}  // namespace cli

}  // namespace chunkscope
