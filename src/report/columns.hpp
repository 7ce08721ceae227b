#pragma once
// Fitting the terminal reports to a width: long lines wrap at spaces under their own text,
// commands to paste stay whole. Not real-time.
#include <iosfwd>
#include <string>
#include <vector>

namespace chunkscope {

/// The display width of UTF-8 text: its code points (every character the reports print
/// is one column wide).
std::size_t display_width(const std::string& s);

/// `text` (one or more lines) with every line longer than `width` columns wrapped at spaces
/// (`width` 0: as is). A continuation line is indented under the line's text: after its
/// label column ("headline   ...": 11) when the line starts with a word followed by two or
/// more spaces, else 4 deeper than the line's own indent. A `code span` (a command to
/// paste) is never broken; one longer than the width stands on a line of its own. A number
/// keeps its unit. A table row (two spaces in a row after its label) is left as it is.
std::string fit_width(const std::string& text, std::size_t width);

/// One column of a TextTable: its header, its width (text is padded to it; 0 for a last
/// column of free text, never padded), its alignment and the spaces before it.
struct TextColumn {
  std::string header;
  std::size_t width = 0;
  bool left = false;
  std::size_t gap = 1;
};

/// An aligned table that folds to a width. Its first `key` columns name a row; when a row
/// is wider than the width, the other columns go into blocks, one under the other (blank
/// line between), each block repeating the key columns with their header, as many
/// columns to a block as fit. Width 0 (a file, a pipe): one line per row, whole.
class TextTable {
 public:
  TextTable(std::vector<TextColumn> columns, std::size_t key);
  /// One cell per column.
  void row(std::vector<std::string> cells);
  /// The key cells, then `text` across the other columns (in the first block only).
  void span(std::vector<std::string> key_cells, std::string text);
  /// The table as lines, each ending in a newline.
  std::string render(std::size_t width) const;

 private:
  struct Row {
    std::vector<std::string> cells;
    bool span = false;
  };
  std::string line(const std::vector<std::string>& cells, std::size_t from, std::size_t to, bool span,
                   std::size_t width) const;
  std::size_t column_width(std::size_t c) const;
  std::vector<TextColumn> cols_;
  std::size_t key_;
  std::vector<Row> rows_;
};

/// The columns of the terminal on `fd`, 80 when it does not say (or is none).
int terminal_columns(int fd);

/// The width the reports written to `os` are fitted to: the terminal's when `os` is
/// standard output and that is a terminal (80 when it does not say, at least 40); 0 (lines
/// kept whole, one record a line for grep and logs) for a file or a pipe.
std::size_t report_width(const std::ostream& os);

}  // namespace chunkscope
