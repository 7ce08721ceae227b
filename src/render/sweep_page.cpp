// The HTML page of a capacity sweep: per variant a heat map of the grid with the safe
// frontier drawn, then every cell's figures.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "src/render/html.hpp"
#include "src/render/plot.hpp"
#include "src/report/format.hpp"
#include "src/report/sweep.hpp"

namespace chunkscope {

namespace {

using namespace render;

// A safe cell: its p95 headroom as a share of B, 0..1, from pale yellow to green. A cell
// that is not safe is red whatever its headroom (a stall event or a drop breaks it), the
// deeper the further its p95 is over the budget.
std::string heat_color(double share, bool safe) {
  auto mix = [](int a, int b, double t) { return static_cast<int>(std::lround(a + (b - a) * t)); };
  const int y[3] = {0xf7, 0xf0, 0xb5}, g[3] = {0x3c, 0xa5, 0x5c};
  const int pale_red[3] = {0xf4, 0xb4, 0xb0}, red[3] = {0xc6, 0x1f, 0x20};
  const int *from = y, *to = g;
  double t = std::clamp(share, 0.0, 1.0);
  if (!safe) {
    from = pale_red;
    to = red;
    t = std::clamp(-share, 0.0, 1.0);
  }
  return fmt::format("#{:02x}{:02x}{:02x}", mix(from[0], to[0], t), mix(from[1], to[1], t), mix(from[2], to[2], t));
}

std::string heat_map(const SweepReport& r, const std::string& variant, int index) {
  const int cw = 120, ch = 44, left = 90, top = 40;
  const int w = left + cw * static_cast<int>(r.streams.size()) + 20;
  const int h = top + ch * static_cast<int>(r.chunks.size()) + 10;
  std::string s = fmt::format(
      "<svg id=\"plot-sweep-{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"{}\"><title>{}</title>",
      index, w, h, esc("sweep heat map, variant " + variant), esc("p95 headroom of the worst stream, variant " + variant));
  s += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"13\" text-anchor=\"middle\">streams</text>",
                   left + cw * static_cast<int>(r.streams.size()) / 2);
  s += fmt::format("<text x=\"14\" y=\"{}\" font-size=\"13\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">chunk "
                   "(frames)</text>",
                   top + ch * static_cast<int>(r.chunks.size()) / 2, top + ch * static_cast<int>(r.chunks.size()) / 2);
  for (std::size_t x = 0; x < r.streams.size(); ++x)
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>",
                     left + cw * static_cast<int>(x) + cw / 2, top - 6, r.streams[x]);
  for (std::size_t y = 0; y < r.chunks.size(); ++y) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text>", left - 8,
                     top + ch * static_cast<int>(y) + ch / 2 + 4, r.chunks[y]);
    for (std::size_t x = 0; x < r.streams.size(); ++x) {
      const SweepCell* c = r.find(variant, r.chunks[y], r.streams[x]);
      const int px = left + cw * static_cast<int>(x), py = top + ch * static_cast<int>(y);
      std::string fill = "#eeeeee", label = c ? sweep_state_name(c->state) : "-", tip = label;
      if (c && c->state == SweepCell::State::done && c->headroom_p95_ns && c->budget_ns > 0) {
        const double share = static_cast<double>(*c->headroom_p95_ns) / static_cast<double>(c->budget_ns);
        fill = c->safe ? heat_color(share, *c->safe) : "#d8d8d8";  // grey: too few chunks to judge
        label = fmt::format("{} {}", short_time(static_cast<double>(*c->headroom_p95_ns)), c->mark());
        tip = fmt::format("{} frames x {} streams: p95 headroom {} ({:.0f}% of B), {} misses in {} stall events, {} drops: {}",
                          c->chunk, c->streams, fmt_time(static_cast<double>(*c->headroom_p95_ns)), share * 100, c->misses,
                          c->stalls, c->drops, c->verdict_words());
      }
      s += fmt::format("<g class=\"cell\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
                       "stroke=\"#ffffff\"/><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text></g>",
                       esc(tip), px, py, cw, ch, fill, px + cw / 2, py + ch / 2 + 4, esc(label));
    }
  }
  // the frontier: the edge between the safe cells and the rest of each column, drawn above
  // the smallest safe chunk of each stream count (chunks grow downwards)
  std::string path;
  for (std::size_t x = 0; x < r.streams.size(); ++x) {
    std::optional<std::size_t> first_safe;
    for (std::size_t y = 0; y < r.chunks.size() && !first_safe; ++y)
      if (const SweepCell* c = r.find(variant, r.chunks[y], r.streams[x]); c && c->safe == true) first_safe = y;
    const int yy = top + ch * static_cast<int>(first_safe.value_or(r.chunks.size()));
    const int x0 = left + cw * static_cast<int>(x), x1 = x0 + cw;
    path += fmt::format("{}{} {} L{} {}", path.empty() ? "M" : " L", x0, yy, x1, yy);
  }
  s += fmt::format("<path id=\"sweep-frontier-{}\" d=\"{}\" fill=\"none\" stroke=\"#111111\" stroke-width=\"3\"/>", index, path);
  return s + "</svg><p class=\"caption\">Each cell: the least p95 headroom of its streams. Black line: the safe frontier "
             "(the safe cells of each column lie below it). Colour: a safe cell from pale yellow (no headroom) to green (all "
             "of B left); a cell that is not safe is red, deeper the further its p95 is over the budget; grey: not run.</p>";
}

}  // namespace

std::string render_sweep_html(const SweepReport& r) {
  std::string s = page_head("chunkscope sweep: " + r.source);
  s += fmt::format("<h1>Capacity sweep: {}</h1>", esc(r.source));
  if (r.state != RunState::complete)
    s += fmt::format("<div class=\"verdict bad\">Sweep {}: {}. The cells done are kept.</div>", run_state_name(r.state),
                     esc(r.reason));
  const Environment& e = r.environment.host;
  s += kv_table({{"chain", esc(r.chain)},
                 {"audio", fmt::format("{} Hz, {} ch, {}", r.rate, r.channels, dtype_name(r.dtype))},
                 {"margin", esc(r.margin_text)},
                 {"cells", fmt::format("{} s of audio each, baseline {} before and after, schedules {}", r.cell_media_seconds,
                                       ft(static_cast<double>(r.baseline_ns)),
                                       r.batched ? "aligned, streams batched into one chunk per period (--batch)"
                                       : r.staggered ? "staggered" : "aligned")},
                 {"time", fmt::format("planned at most {:.0f} s, took {:.1f} s", r.planned_seconds, r.wall_seconds)},
                 {"environment", esc(fmt::format("chunkscope {} ({}), {}, {} logical CPUs, {}", e.version, e.commit, e.cpu,
                                                 e.logical_cpus, e.os))},
                 {"rule", esc(r.rule)}});
  for (std::size_t i = 0; i < r.variants.size(); ++i) {
    s += fmt::format("<h2>Variant {}</h2>", esc(r.variants[i]));
    s += heat_map(r, r.variants[i], static_cast<int>(i));
    for (const auto& f : r.frontier)
      if (f.variant == r.variants[i]) {
        s += "<ul>";
        for (const auto& line : frontier_sentences(r, f)) s += "<li>" + esc(line) + "</li>";
        s += "</ul>";
      }
  }
  s += "<h2>Cells</h2><table><tr><th>variant</th><th class=\"n\">chunk</th><th class=\"n\">streams</th><th>state</th>"
       "<th class=\"n\">p95 headroom</th><th class=\"n\">e2e p95</th><th class=\"n\">process p50</th><th class=\"n\">misses</th>"
       "<th class=\"n\">stall events</th><th class=\"n\">drops</th><th class=\"n\">engine CPU</th><th class=\"n\">machine busy</th>"
       "<th>safe</th><th>note</th></tr>";
  for (const auto& c : r.cells) {
    const auto cs = c.cpu_share(e.logical_cpus);
    const bool ran = c.state == SweepCell::State::done || c.state == SweepCell::State::interrupted ||
                     c.state == SweepCell::State::incomplete;
    s += fmt::format(
        "<tr{}><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
        c.safe == false ? " class=\"bad\"" : "", esc(c.variant), c.chunk, c.streams,
        sweep_state_name(c.state),
        ran && c.headroom_p95_ns ? ft(static_cast<double>(*c.headroom_p95_ns)) : "-",
        ran && c.latency.has_data() ? ft(static_cast<double>(c.latency.p95)) : "-",
        ran && c.process.has_data() ? ft(static_cast<double>(c.process.p50)) : "-", ran ? std::to_string(c.misses) : "-",
        ran ? std::to_string(c.stalls) : "-", ran ? std::to_string(c.drops) : "-",
        cs ? fmt::format("{:.1f}%", *cs * 100) : "-", c.busy_share ? fmt::format("{:.0f}%", *c.busy_share * 100) : "-",
        !c.safe ? "-" : *c.safe ? "safe" : "NOT safe", esc(c.reason));
  }
  s += "</table>";
  return s + page_foot("Engine CPU: the CPU time of every stream's engine threads over the run, as a share of all CPUs; "
                       "machine busy: the whole machine's share from /proc/stat.");
}

}  // namespace chunkscope
