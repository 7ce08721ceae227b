#include "src/report/columns.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <sys/ioctl.h>
#include <unistd.h>
#include <vector>

namespace chunkscope {

namespace {

// Where a line's continuation goes: a line that starts with a word has its text after the
// first run of spaces ("headline   ...", "environment AMD ..."), and continues under it; an
// indented line is either the text column of such a block (10 or more spaces: continues at
// the same column) or a nested item ("  [warning] ...", "      next: ..."): 4 deeper.
std::size_t hanging_indent(const std::string& line) {
  const std::size_t lead = line.find_first_not_of(' ');
  if (lead == std::string::npos) return 0;
  if (lead >= 10) return lead;
  if (lead > 0) return lead + 4;
  const std::size_t gap = line.find(' ');
  const std::size_t text = gap == std::string::npos ? std::string::npos : line.find_first_not_of(' ', gap);
  return text == std::string::npos || text > 12 ? 4 : display_width(line.substr(0, text));
}

// A unit stays with its number: "30.2 µs" does not break.
bool is_unit(std::string w) {
  while (!w.empty() && (w.back() == ',' || w.back() == ';' || w.back() == ')' || w.back() == ':' || w.back() == '.'))
    w.pop_back();
  for (const char* u : {"ns", "µs", "ms", "s", "Hz", "dB", "dBFS", "MiB", "ch", "chunks", "frames", "ppm"})
    if (w == u) return true;
  return false;
}

// The words of a line after its indent; a `code span` is one word, spaces and all.
std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> words;
  std::string w;
  bool in_code = false;
  for (char ch : s) {
    if (ch == '`') in_code = !in_code;
    if (ch == ' ' && !in_code) {
      if (!w.empty()) words.push_back(w);
      w.clear();
      continue;
    }
    w += ch;
  }
  if (!w.empty()) words.push_back(w);
  std::vector<std::string> joined;
  for (auto& x : words) {
    const bool after_number = !joined.empty() && !joined.back().empty() &&
                              std::isdigit(static_cast<unsigned char>(joined.back().back()));
    if (after_number && is_unit(x))
      joined.back() += " " + x;
    else
      joined.push_back(std::move(x));
  }
  return joined;
}

// `words` after the end of `out` (the last line of which is as wide as it is), wrapped at
// `width` under column `indent`: a word that would pass the width starts a new line there.
void flow_words(std::string& out, const std::vector<std::string>& words, std::size_t indent, std::size_t width) {
  const std::size_t nl = out.rfind('\n');
  std::size_t col = display_width(nl == std::string::npos ? out : out.substr(nl + 1));
  bool first = true;
  for (const auto& w : words) {
    const std::size_t ww = display_width(w);
    const bool fresh = first || col == indent;
    if (!fresh && col + 1 + ww > width) {
      out += "\n" + std::string(indent, ' ');
      col = indent;
    } else if (!fresh) {
      out += ' ';
      ++col;
    }
    out += w;
    col += ww;
    first = false;
  }
}

std::string fit_line(const std::string& line, std::size_t width) {
  if (width == 0 || display_width(line) <= width) return line;
  const std::size_t lead = line.find_first_not_of(' ');
  const std::size_t indent = hanging_indent(line);
  if (indent + 20 > width) return line;  // too narrow to wrap usefully
  // the label column is kept as written; the rest flows
  std::size_t body_at = lead;
  if (lead == 0 && indent > 4) body_at = line.find_first_not_of(' ', line.find(' '));
  // a table row (columns aligned with runs of spaces) keeps its alignment, however wide
  if (line.find("  ", body_at) != std::string::npos) return line;
  std::string out = line.substr(0, body_at);
  flow_words(out, words_of(line.substr(body_at)), indent, width);
  return out;
}

// `text` after `gap` spaces at the end of `out`, wrapped at `width` (0: whole) under its
// first column; a number keeps its unit, a `code span` stays whole.
void append_wrapped(std::string& out, const std::string& text, std::size_t gap, std::size_t width) {
  const std::size_t at = display_width(out) + gap;
  out += std::string(gap, ' ');
  if (width == 0 || at + display_width(text) <= width || at + 20 > width)
    out += text;
  else
    flow_words(out, words_of(text), at, width);
}

}  // namespace

std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string fit_width(const std::string& text, std::size_t width) {
  if (width == 0) return text;
  std::string out;
  std::size_t from = 0;
  while (from < text.size()) {
    const std::size_t nl = text.find('\n', from);
    const std::size_t end = nl == std::string::npos ? text.size() : nl;
    out += fit_line(text.substr(from, end - from), width);
    if (nl == std::string::npos) break;
    out += '\n';
    from = nl + 1;
  }
  return out;
}

TextTable::TextTable(std::vector<TextColumn> columns, std::size_t key) : cols_(std::move(columns)), key_(key) {
  key_ = std::min(key_, cols_.size());
}

void TextTable::row(std::vector<std::string> cells) {
  cells.resize(cols_.size());
  rows_.push_back({std::move(cells), false});
}

void TextTable::span(std::vector<std::string> key_cells, std::string text) {
  key_cells.resize(key_);
  key_cells.push_back(std::move(text));
  rows_.push_back({std::move(key_cells), true});
}

// The columns a cell of column c takes: its set width, or its widest cell (or header) when
// that is wider (a cell is padded to the set width, never cut).
std::size_t TextTable::column_width(std::size_t c) const {
  std::size_t w = std::max(cols_[c].width, display_width(cols_[c].header));
  for (const auto& r : rows_)
    if (!r.span && c < r.cells.size()) w = std::max(w, display_width(r.cells[c]));
  return w;
}

// The key columns and columns [from, to) of one row; a span row's text follows its key. Free
// text (a last column of width 0, a span's text) wraps under itself at `width`.
std::string TextTable::line(const std::vector<std::string>& cells, std::size_t from, std::size_t to, bool span,
                            std::size_t width) const {
  std::string out;
  auto put = [&](std::size_t c, const std::string& text) {
    if (c > 0) out += std::string(cols_[c].gap, ' ');
    const std::size_t w = display_width(text), pad = cols_[c].width > w ? cols_[c].width - w : 0;
    out += cols_[c].left ? text + std::string(pad, ' ') : std::string(pad, ' ') + text;
  };
  for (std::size_t c = 0; c < key_; ++c) put(c, cells[c]);
  if (span) {
    if (key_ < cells.size()) append_wrapped(out, cells[key_], 2, width);
    return out + "\n";
  }
  for (std::size_t c = from; c < to; ++c)
    if (cols_[c].width == 0 && c + 1 == cols_.size())
      append_wrapped(out, cells[c], c > 0 ? cols_[c].gap : 0, width);
    else
      put(c, cells[c]);
  return out + "\n";
}

std::string TextTable::render(std::size_t width) const {
  std::vector<std::string> header;
  for (const auto& c : cols_) header.push_back(c.header);
  std::size_t key_w = 0;
  for (std::size_t c = 0; c < key_; ++c) key_w += (c > 0 ? cols_[c].gap : 0) + column_width(c);
  // the blocks: as many columns after the key as fit the width (at least one each); free
  // text at the end wraps, so it joins a block with room for 24 columns of it
  auto need = [&](std::size_t c) {
    const std::size_t w = column_width(c);
    return cols_[c].gap + (cols_[c].width == 0 && c + 1 == cols_.size() ? std::min<std::size_t>(w, 24) : w);
  };
  std::vector<std::pair<std::size_t, std::size_t>> blocks;
  for (std::size_t c = key_; c < cols_.size();) {
    std::size_t w = key_w, to = c;
    while (to < cols_.size() && (to == c || width == 0 || w + need(to) <= width)) w += need(to++);
    blocks.emplace_back(c, to);
    c = to;
  }
  if (blocks.empty()) blocks.emplace_back(key_, key_);
  std::string out;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    if (b > 0) out += "\n";
    out += line(header, blocks[b].first, blocks[b].second, false, width);
    for (const auto& r : rows_)
      if (!r.span || b == 0) out += line(r.cells, blocks[b].first, blocks[b].second, r.span, width);
  }
  return out;
}

int terminal_columns(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

std::size_t report_width(const std::ostream& os) {
  if (&os != &std::cout || !isatty(STDOUT_FILENO)) return 0;  // a file, a pipe: whole lines
  return static_cast<std::size_t>(std::max(40, terminal_columns(STDOUT_FILENO)));
}

}  // namespace chunkscope
