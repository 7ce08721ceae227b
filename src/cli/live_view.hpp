#pragma once
// The live view of `chunkscope monitor --live`: once per second, the last second and the
// run so far. On a terminal it is a small table redrawn in place that fits the terminal's
// width; otherwise one plain line per second. Not real-time: the figures come from
// interval recorders the real-time threads feed without locks.
#include <cstdint>
#include <ostream>
#include <string>

#include "src/report/columns.hpp"  // display_width, terminal_columns
#include <vector>

#include "rt/stats/histogram.hpp"

namespace chunkscope {

/// One row of the view: chunks counted and their latency and period jitter (|P - D|).
struct LiveRow {
  std::uint64_t chunks = 0;
  const stats::LogHistogram* latency = nullptr;
  const stats::LogHistogram* jitter = nullptr;
};

struct LiveFigures {
  double elapsed_s = 0;
  std::int64_t budget_ns = 0;
  std::string budget_rule;  // "D - margin", "K x D - margin"
  std::string devices;      // "system (JACK) -> system"
  LiveRow last_second, since_start;
  std::uint64_t xruns = 0, underruns = 0, drops = 0, misses = 0;
  std::size_t queue_depth = 0;
  int queue_capacity = 0;
};

/// The terminal view: a header, column titles, the last second, since start, and the
/// events line. No line is wider than `columns` - 1 (the least important columns and
/// fields are left off to fit; every figure fits in 80 columns).
std::vector<std::string> live_view_lines(const LiveFigures& f, int columns);

/// The single line written each second when stdout is not a terminal.
std::string live_log_line(const LiveFigures& f);

/// Draws the view on `os` once per call: on a terminal each frame replaces the one before
/// in place; otherwise each call writes one line.
class LiveView {
 public:
  LiveView(std::ostream& os, bool terminal) : os_(os), terminal_(terminal) {}
  void draw(const LiveFigures& f, int columns);

 private:
  std::ostream& os_;
  bool terminal_;
  std::size_t drawn_lines_ = 0;
};

}  // namespace chunkscope
