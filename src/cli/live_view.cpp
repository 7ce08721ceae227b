#include "src/cli/live_view.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/report/format.hpp"

namespace chunkscope {

namespace {

std::string pad_left(const std::string& s, std::size_t width) {
  const std::size_t w = display_width(s);
  return w >= width ? s : std::string(width - w, ' ') + s;
}
std::string pad_right(const std::string& s, std::size_t width) {
  const std::size_t w = display_width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

// The first `width` columns of `s` (whole code points).
std::string cut(const std::string& s, std::size_t width) {
  std::size_t cols = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (cols == width) break;
      ++cols;
    }
  }
  return s.substr(0, i);
}

// Fields joined by `sep`, as many as fit in `width` from the first; the first is cut to fit.
std::string fit_fields(const std::vector<std::string>& fields, const char* sep, std::size_t width) {
  std::string out;
  for (const auto& f : fields) {
    const std::string next = out.empty() ? f : out + sep + f;
    if (display_width(next) > width) {
      if (out.empty()) out = cut(f, width);
      break;
    }
    out = next;
  }
  return out;
}

std::string time_or_dash(const stats::LogHistogram* h, double p) {
  if (!h || h->count() == 0) return "-";
  return fmt_time(static_cast<double>(p >= 100 ? h->max() : h->value_at_percentile(p)));
}
std::string headroom(const LiveRow& r, std::int64_t budget) {
  if (!r.latency || r.latency->count() == 0) return "-";
  return fmt_time(static_cast<double>(budget - static_cast<std::int64_t>(r.latency->value_at_percentile(95))));
}

enum Column { kChunks, kP50, kP95, kP99, kMax, kHeadroom, kJitter, kColumns };
struct ColumnDef {
  const char* title;
  std::size_t width;
};
constexpr std::array<ColumnDef, kColumns> kColumnDefs{{{"chunks", 8},
                                                       {"lat p50", 10},
                                                       {"lat p95", 10},
                                                       {"lat p99", 10},
                                                       {"lat max", 10},
                                                       {"headroom p95", 14},
                                                       {"jitter p95", 12}}};
// Which columns stay when the terminal is narrow: the first ones of this list.
constexpr std::array<Column, kColumns> kPriority{kChunks, kP95, kHeadroom, kMax, kP50, kJitter, kP99};
constexpr std::size_t kLabelWidth = 12;

std::string cell(Column c, const LiveRow& r, std::int64_t budget) {
  switch (c) {
    case kChunks: return fmt::format("{}", r.chunks);
    case kP50: return time_or_dash(r.latency, 50);
    case kP95: return time_or_dash(r.latency, 95);
    case kP99: return time_or_dash(r.latency, 99);
    case kMax: return time_or_dash(r.latency, 100);
    case kHeadroom: return headroom(r, budget);
    case kJitter: return time_or_dash(r.jitter, 95);
    case kColumns: break;
  }
  return "";
}

std::vector<std::string> event_fields(const LiveFigures& f) {
  return {fmt::format("xruns {}", f.xruns), fmt::format("underruns {}", f.underruns), fmt::format("drops {}", f.drops),
          fmt::format("deadline misses {}", f.misses),
          fmt::format("source queue {} of {}", f.queue_depth, f.queue_capacity)};
}

}  // namespace

std::vector<std::string> live_view_lines(const LiveFigures& f, int columns) {
  const std::size_t width = static_cast<std::size_t>(std::max(columns, 2) - 1);
  // the columns that fit, shown in their own order
  std::array<bool, kColumns> shown{};
  std::size_t used = kLabelWidth;
  for (Column c : kPriority)
    if (used + kColumnDefs[c].width <= width) {
      shown[c] = true;
      used += kColumnDefs[c].width;
    }
  auto row = [&](const std::string& label, const LiveRow* r) {
    std::string s = pad_right(label, kLabelWidth);
    for (int c = 0; c < kColumns; ++c)
      if (shown[c])
        s += pad_left(r ? cell(static_cast<Column>(c), *r, f.budget_ns) : std::string(kColumnDefs[c].title),
                      kColumnDefs[c].width);
    return cut(s, width);
  };
  std::vector<std::string> lines;
  lines.push_back(fit_fields({fmt::format("monitor {:.0f} s", f.elapsed_s),
                              fmt::format("budget B {} ({})", fmt_time(static_cast<double>(f.budget_ns)), f.budget_rule),
                              "headroom = B - latency", "jitter = |period - D|", f.devices},
                             "   ", width));
  lines.push_back(row("", nullptr));
  lines.push_back(row("last 1 s", &f.last_second));
  lines.push_back(row("since start", &f.since_start));
  lines.push_back(fit_fields(event_fields(f), "   ", width));
  return lines;
}

std::string live_log_line(const LiveFigures& f) {
  const LiveRow& r = f.last_second;
  return fmt::format("[{:>5.1f} s] last 1 s: chunks {}, latency p50 {} p95 {} max {}, headroom p95 {}, jitter p95 {} | "
                     "since start: chunks {} | {}",
                     f.elapsed_s, r.chunks, time_or_dash(r.latency, 50), time_or_dash(r.latency, 95),
                     time_or_dash(r.latency, 100), headroom(r, f.budget_ns), time_or_dash(r.jitter, 95),
                     f.since_start.chunks, fmt::join(event_fields(f), ", "));
}

void LiveView::draw(const LiveFigures& f, int columns) {
  if (!terminal_) {
    os_ << live_log_line(f) << "\n" << std::flush;
    return;
  }
  const auto lines = live_view_lines(f, columns);
  std::string out;
  if (drawn_lines_ > 0) out += fmt::format("\x1b[{}A", drawn_lines_);  // back to the first line of the last frame
  for (const auto& l : lines) out += "\r\x1b[2K" + l + "\n";
  os_ << out << std::flush;
  drawn_lines_ = lines.size();
}

}  // namespace chunkscope
