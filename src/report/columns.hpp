#pragma once
// Fitting the terminal reports to a width: long lines wrap at spaces under their own text,
// commands to paste stay whole. Not real-time.
#include <iosfwd>
#include <string>

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

/// The columns of the terminal on `fd`, 80 when it does not say (or is none).
int terminal_columns(int fd);

/// The width the reports written to `os` are fitted to: the terminal's when `os` is
/// standard output and that is a terminal (80 when it does not say, at least 40); 0 (lines
/// kept whole, one record a line for grep and logs) for a file or a pipe.
std::size_t report_width(const std::ostream& os);

}  // namespace chunkscope
