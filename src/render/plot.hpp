#pragma once
// The plot kit of the HTML pages: scales, ticks, a plot frame with axes and a legend, the
// percentile plot shared by the run and compare pages, the page frame and its CSS. Pure
// string building over numbers and the model's histogram summaries; it knows nothing of
// report sections or pages. Not real-time.
//
// Design: a Plot is a canvas with two scales and an SVG body that the caller appends to;
// str() lays the legend out under the title (each item in <g class="li">, its line or
// mark and its text), then grid, ticks, body, frame and axis labels. Colours are named
// here once: the budget has its own red, and no curve colour is near it.
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "src/report/model.hpp"

namespace chunkscope::render {

// ---------------------------------------------------------------- colours
inline constexpr const char* kBudgetColor = "#c0392b";  // budget B, D + margin, the margin band
inline constexpr const char* kDColor = "#555555";       // D
inline constexpr const char* kCurveColor = "#1f6fb2";   // a plot's one curve
inline constexpr const char* kPointColor = "#e8b100";   // the report's histogram percentiles
inline constexpr const char* kWarmColor = "#b0b0b0";    // warm-up chunks
inline constexpr const char* kMissColor = "#d62728";    // a chunk over the budget (a mark, not a curve)
/// Curves of several variants: all at least 40° of hue away from the budget's red and
/// none grey (D is grey).
inline constexpr std::array<const char*, 8> kCurvePalette = {"#1f6fb2", "#2ca02c", "#9467bd", "#17becf",
                                                             "#bcbd22", "#e377c2", "#393b79", "#637939"};

// ---------------------------------------------------------------- text
std::string esc(const std::string& s);  // html_escape
/// "4.71 ms": three significant digits, for ticks.
std::string short_time(double ns);
/// fmt_time, escaped for HTML.
std::string ft(double ns);
/// One decimal, for coordinates.
std::string f1(double v);

// ---------------------------------------------------------------- scales and ticks
struct Scale {
  double lo = 0, hi = 1;  // data range
  double a = 0, b = 1;    // pixel range (b may be below a for the y axis)
  bool log = false;
  /// The pixel of `v`; values out of range sit on the edge.
  double operator()(double v) const;
};

using Ticks = std::vector<std::pair<double, std::string>>;
/// 1-2-5 ticks on a log time axis (only powers of ten when it spans more than 3 decades).
Ticks log_time_ticks(double lo, double hi);
/// About `target` ticks at a 1-2-5 step, labelled by `label`.
Ticks linear_ticks(double lo, double hi, int target, const std::function<std::string(double)>& label);
Ticks time_ticks(double lo, double hi, int target);   // labelled with short_time
Ticks count_ticks(double lo, double hi, int target);  // labelled as integers

// ---------------------------------------------------------------- a plot
struct LegendItem {
  enum class Kind { line, dot, band } kind = Kind::line;
  std::string cls, style, label;
};

class Plot {
 public:
  static constexpr double kL = 84, kR = 24, kT = 46, kB = 48;
  Plot(std::string id, std::string title, int w, int h);

  Scale x, y;
  std::string body;  // SVG appended by the caller, in plot coordinates
  Ticks xticks, yticks;
  std::string xlabel, ylabel;
  std::vector<LegendItem> legend;

  /// A horizontal line across the plot at `v`.
  void hline(double v, const std::string& cls);
  /// A vertical line from top to bottom at `v`.
  void vline(double v, const std::string& cls);
  /// A band across the plot between `lo` and `hi` on the y axis.
  void hband(double lo, double hi, const std::string& cls);
  void text(double px, double py, const std::string& s, const std::string& anchor = "start", const std::string& cls = "lbl");
  void add_legend(LegendItem::Kind kind, std::string cls, std::string label, std::string style = "");
  int width() const { return w_; }
  /// The whole <svg> element.
  std::string str() const;

 private:
  std::string legend_svg(double& extra) const;
  std::string axes_svg() const;
  std::string id_, title_;
  int w_, h_;
};

// ---------------------------------------------------------------- per-chunk columns
/// One pixel column of a per-chunk plot: the range of its counted and warm-up values.
struct Column {
  double lo = std::numeric_limits<double>::infinity(), hi = -1;
  double wlo = std::numeric_limits<double>::infinity(), whi = -1;  // warm-up chunks
  double miss = -1;                                                // worst miss in the column
  bool drop = false;
};
/// Maps chunk numbers 0..last onto at most kPlotColumns columns.
struct ColumnMap {
  std::int64_t last = 1;
  int n = 1;
  ColumnMap(std::int64_t last_seq, int max_columns);
  std::size_t of(std::int64_t seq) const;
  double centre(const Plot& p, std::size_t col) const;  // pixel x of a column's centre
  double width(const Plot& p) const;                    // pixel width of a column
};
/// One vertical segment per column from its least to its greatest value.
std::string minmax_path(const std::vector<Column>& cols, const Plot& p, const ColumnMap& m, bool warm);

// ---------------------------------------------------------------- percentile plots
/// A curve of a percentile plot: exact values from the series when there are any, and the
/// report's histogram percentiles.
struct Curve {
  std::string label, color;          // color "" = kCurveColor
  std::vector<std::int64_t> sorted;  // counted chunks' values, sorted (may be empty)
  const HistSummary* h = nullptr;    // summary percentiles (nullptr or no data: none)
};
struct HLine {
  double v;
  std::string cls, label;  // label carries the value, e.g. "budget B 4.267 ms"
};
struct Band {
  double lo = 0, hi = 0;  // nothing unless 0 < lo < hi
  std::string label;
};
/// x: percentile on a log scale of 1/(1-p); y: time on a log scale.
std::string percentile_svg(const std::string& id, const std::string& title, const std::vector<Curve>& curves,
                           const std::vector<HLine>& lines, const Band& band, int w = 560, int h = 300);

// ---------------------------------------------------------------- the page
/// <!DOCTYPE html> ... <body> with the inline CSS.
std::string page_head(const std::string& title);
/// The closing caption and </body></html>.
std::string page_foot(const std::string& caption);
/// A two-column table; values are HTML already (escape them), keys are escaped here.
std::string kv_table(const std::vector<std::pair<std::string, std::string>>& rows);

}  // namespace chunkscope::render
