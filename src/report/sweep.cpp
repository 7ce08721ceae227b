#include "src/report/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "src/report/columns.hpp"
#include "src/report/format.hpp"
#include "src/report/streams.hpp"

namespace chunkscope {

const char* sweep_state_name(SweepCell::State s) noexcept {
  switch (s) {
    case SweepCell::State::done: return "done";
    case SweepCell::State::interrupted: return "interrupted";
    case SweepCell::State::incomplete: return "incomplete";
    case SweepCell::State::skipped: return "skipped";
    case SweepCell::State::unavailable: return "unavailable";
  }
  return "?";
}

bool sweep_cell_safe(const StreamsSection& s) noexcept {
  if (s.streams.empty() || s.stalls > 0 || s.drops > 0 || s.misses > 0) return false;
  for (const auto& f : s.streams)
    if (f.state != RunState::complete || !f.headroom_p95_ns || *f.headroom_p95_ns <= 0) return false;
  return true;
}

std::string sweep_rule_text() {
  return fmt::format(
      "a cell is safe when every stream's p95 headroom is above 0 and no stream had a stall event (a chunk past its "
      "deadline) or a drop, each stream over at least {} counted chunks (fewer: cannot judge); once a cell of a row (a "
      "chunk size) is not safe, the larger stream counts of that row are skipped",
      kChunksToJudgeP95);
}

const SweepCell* SweepReport::find(const std::string& variant, int chunk, int n) const noexcept {
  for (const auto& c : cells)
    if (c.variant == variant && c.chunk == chunk && c.streams == n) return &c;
  return nullptr;
}

std::vector<SweepFrontier> sweep_frontier(const SweepReport& r) {
  std::vector<SweepFrontier> out;
  for (const auto& v : r.variants) {
    SweepFrontier f;
    f.variant = v;
    for (int n : r.streams) {
      std::optional<int> best;
      for (int c : r.chunks)
        if (const SweepCell* cell = r.find(v, c, n); cell && cell->safe == true && (!best || c < *best)) best = c;
      f.smallest_safe_chunk[n] = best;
    }
    for (int c : r.chunks) {
      std::optional<int> best;
      for (int n : r.streams)
        if (const SweepCell* cell = r.find(v, c, n); cell && cell->safe == true && (!best || n > *best)) best = n;
      f.largest_safe_streams[c] = best;
    }
    out.push_back(std::move(f));
  }
  return out;
}

void fill_sweep_cell(SweepCell& cell, const RunReport& combined, const std::vector<RunReport>& per_stream) {
  const StreamsSection& s = *combined.streams;
  cell.state = combined.state == RunState::complete      ? SweepCell::State::done
               : combined.state == RunState::interrupted ? SweepCell::State::interrupted
                                                         : SweepCell::State::incomplete;
  cell.reason = combined.reason;
  cell.chunk_ns = combined.timing.chunk_ns;
  cell.budget_ns = combined.timing.budget_ns;
  for (const auto& f : s.streams)
    if (f.headroom_p95_ns && (!cell.headroom_p95_ns || *f.headroom_p95_ns < *cell.headroom_p95_ns))
      cell.headroom_p95_ns = f.headroom_p95_ns;
  cell.pooled_headroom_p95_ns = s.headroom_p95_ns;
  cell.latency = s.latency;
  cell.process = s.process;
  cell.counted = s.counted;
  cell.misses = s.misses;
  cell.stalls = s.stalls;
  cell.drops = s.drops;
  cell.worst = s.worst;
  cell.blame = s.blame;
  cell.stall_owner = {};
  cell.engine_cpu_ns = 0;
  cell.wall_s = 0;
  for (const auto& r : per_stream) {
    for (std::size_t i = 0; i < cell.stall_owner.size(); ++i) cell.stall_owner[i] += r.counts.stall_owner[i];
    if (r.platform)
      for (const auto& t : r.platform->threads) cell.engine_cpu_ns += t.cpu_ns;
    cell.wall_s = std::max(cell.wall_s, r.throughput.wall_seconds);
  }
  if (combined.platform) {
    cell.busy_share = combined.platform->busy_share;
    cell.wake_p99_ns = combined.platform->wake_p99();
  }
  cell.safe = cell.state == SweepCell::State::done ? std::optional<bool>(sweep_cell_safe(s)) : std::nullopt;
  cell.fewest_counted = fewest_counted(s);
  if (cell.safe == true && s.needed_chunks > 0) {  // nothing missed, too few chunks to call it safe
    cell.safe.reset();
    cell.needed_chunks = s.needed_chunks;
  }
}

std::string SweepCell::verdict_words() const {
  return !safe && needed_chunks > 0 ? cannot_judge_words(fewest_counted, needed_chunks) : verdict_word(safe, 0);
}

namespace {

// Whose limit a row's frontier is: when the not-safe cells of `n` streams below chunk `below`
// (all of them when unset) had stall events mostly the platform's, the machine's scheduling
// and not the chain sets it. "" otherwise; else the words, with the processing share.
std::string machine_limit(const SweepReport& r, const std::string& variant, int n, std::optional<int> below) {
  std::uint64_t platform = 0, events = 0;
  double share = 0;  // the largest processing p95 / budget among those cells
  for (int c : r.chunks) {
    const SweepCell* cell = r.find(variant, c, n);
    if (!cell || cell->state != SweepCell::State::done || cell->safe != false || (below && c >= *below)) continue;
    platform += cell->stall_owner[static_cast<std::size_t>(Owner::platform)];
    for (auto k : cell->stall_owner) events += k;
    if (cell->process.has_data() && cell->budget_ns > 0)
      share = std::max(share, static_cast<double>(cell->process.p95) / static_cast<double>(cell->budget_ns));
  }
  if (events == 0 || 2 * platform <= events) return "";
  return fmt::format("the machine's scheduling limits this chain{}: {} of the {} stall event(s) of the chunks "
                     "{} were the platform's, while processing took at most {:.1f}% of the budget at p95",
                     below ? fmt::format(" below {} frames", *below) : std::string(" at every size in the grid"), platform,
                     events, below ? "below it" : "in the grid", share * 100);
}

}  // namespace

std::vector<std::string> frontier_sentences(const SweepReport& r, const SweepFrontier& f) {
  std::vector<std::string> out;
  for (const auto& [n, c] : f.smallest_safe_chunk) {
    const std::string who = machine_limit(r, f.variant, n, c);
    const std::string rows = fmt::format("{} stream{}", n, n == 1 ? "" : "s");
    if (!who.empty())  // the smaller chunks failed on the machine's account, not the chain's
      out.push_back(fmt::format("{}: {}{}", rows, who,
                                c ? fmt::format("; the smallest safe chunk here is {} frames ({})", *c, fmt_time(1e9 * *c / r.rate))
                                  : std::string()));
    else
      out.push_back(c ? fmt::format("{}: the smallest safe chunk is {} frames ({})", rows, *c, fmt_time(1e9 * *c / r.rate))
                      : fmt::format("{}: no chunk size in the grid is safe", rows));
  }
  for (const auto& [c, n] : f.largest_safe_streams)
    out.push_back(n ? fmt::format("chunk {} frames: the largest safe stream count is {}", c, *n)
                    : fmt::format("chunk {} frames: not even {} stream{} safe", c, r.streams.empty() ? 1 : r.streams.front(),
                                  !r.streams.empty() && r.streams.front() != 1 ? "s are" : " is"));
  return out;
}

void print_sweep(std::ostream& os, const SweepReport& r) {
  const std::size_t width = report_width(os);
  std::string out;
  const Environment& e = r.environment.host;
  out += fmt::format("chunkscope {} ({}) sweep\n", e.version, e.commit);
  out += fmt::format("workload   {}, chain '{}', {} Hz, {} ch, {}, margin {}\n", r.source, r.chain, r.rate, r.channels,
                     dtype_name(r.dtype), r.margin_text);
  out += fmt::format("cells      {} s of audio each, baseline {} before and after, schedules {}; planned at most {:.0f} s, "
                     "took {:.1f} s\n",
                     r.cell_media_seconds, fmt_time(static_cast<double>(r.baseline_ns)),
                     r.batched ? "aligned, streams batched into one chunk per period (--batch)"
                     : r.staggered ? "staggered" : "aligned",
                     r.planned_seconds, r.wall_seconds);
  out += fmt::format("environment {}, {} logical CPUs, {}\n", e.cpu, e.logical_cpus, e.os);
  out += fmt::format("rule       {}\n", r.rule);
  if (r.state != RunState::complete) out += fmt::format("SWEEP {}: {}\n", r.state == RunState::interrupted ? "INTERRUPTED" : "INCOMPLETE", r.reason);
  for (std::size_t vi = 0; vi < r.variants.size(); ++vi) {
    const std::string& v = r.variants[vi];
    out += fmt::format("\nvariant {}: p95 headroom of the worst stream (ok: safe, NO: not safe, ?: too few chunks to judge, -: not run)\n", v);
    std::vector<TextColumn> cols{{"chunk", 8, false, 0}};
    for (int n : r.streams) cols.push_back({fmt::format("{} stream{}", n, n == 1 ? "" : "s"), 16});
    TextTable grid(std::move(cols), 1);
    for (int c : r.chunks) {
      std::vector<std::string> row{std::to_string(c)};
      for (int n : r.streams) {
        const SweepCell* cell = r.find(v, c, n);
        std::string t = "-";
        if (cell && cell->state == SweepCell::State::done)
          t = fmt::format("{} {}", cell->headroom_p95_ns ? fmt_time(static_cast<double>(*cell->headroom_p95_ns)) : "-",
                          cell->mark());
        else if (cell)
          t = sweep_state_name(cell->state);
        row.push_back(t);
      }
      grid.row(std::move(row));
    }
    out += grid.render(width);
    for (const auto& f : r.frontier)
      if (f.variant == v)
        for (const auto& s : frontier_sentences(r, f)) out += "  " + s + "\n";
  }
  const int cpus = r.environment.host.logical_cpus;
  out += "\ncells (in run order)\n";
  TextTable cells({{"variant", 12, true, 0}, {"chunk", 6}, {"streams", 7}, {"headroom", 10}, {"e2e p95", 10},
                   {"proc p50", 10}, {"misses", 7}, {"events", 6}, {"drops", 6}, {"cpu", 7}, {"busy", 7},
                   {"cell", 0, true, 2}},
                  3);
  for (const auto& c : r.cells) {
    if (c.state == SweepCell::State::skipped || c.state == SweepCell::State::unavailable) {
      cells.span({c.variant, std::to_string(c.chunk), std::to_string(c.streams)},
                 fmt::format("{}: {}", sweep_state_name(c.state), c.reason));
      continue;
    }
    const auto cs = c.cpu_share(cpus);
    std::string owners;
    for (int i = 0; i < kOwnerCount; ++i)
      if (c.stall_owner[static_cast<std::size_t>(i)] > 0)
        owners += fmt::format("{}{} {}", owners.empty() ? "" : ", ", owner_key(static_cast<Owner>(i)),
                              c.stall_owner[static_cast<std::size_t>(i)]);
    cells.row({c.variant, std::to_string(c.chunk), std::to_string(c.streams),
               c.headroom_p95_ns ? fmt_time(static_cast<double>(*c.headroom_p95_ns)) : "-",
               c.latency.has_data() ? fmt_time(static_cast<double>(c.latency.p95)) : "-",
               c.process.has_data() ? fmt_time(static_cast<double>(c.process.p50)) : "-", std::to_string(c.misses),
               std::to_string(c.stalls), std::to_string(c.drops), cs ? fmt::format("{:.1f}%", *cs * 100) : "-",
               c.busy_share ? fmt::format("{:.0f}%", *c.busy_share * 100) : "-",
               (c.state != SweepCell::State::done ? std::string(sweep_state_name(c.state)) : c.verdict_words()) +
                   (owners.empty() ? "" : " (events: " + owners + ")") +
                   (c.blame && c.streams > 1 ? fmt::format(", blame stream {}", *c.blame) : "")});
  }
  out += cells.render(width);
  out += "cpu: the engine threads' CPU time over the run, as a share of all CPUs; busy: the whole machine's (/proc/stat)\n";
  os << fit_width(out, width);
}

}  // namespace chunkscope
