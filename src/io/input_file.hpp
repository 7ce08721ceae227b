#pragma once
// Reading inputs without reading forever or waiting forever. Not real-time.
//  - read_text_file_bounded(): a whole regular file of at most `limit` bytes (SOS files,
//    saved reports); anything else (a device, a FIFO, a folder, a larger file) is refused in
//    one line.
//  - open_input(): an audio input; a FIFO or character device is waited for its first data
//    for at most kPipeWaitMs, never without end.
#include <cstddef>
#include <string>

namespace chunkscope {

/// How long an input FIFO or device is waited for its first data, and an output FIFO for a
/// reader, before the command gives up with one line (docs/profiler.md, "Exit codes").
inline constexpr int kPipeWaitMs = 5000;

/// The most an SOS coefficient file may hold (docs/profiler.md, "SOS files").
inline constexpr std::size_t kSosFileLimit = std::size_t{1} << 20;  // 1 MiB
/// The most a saved report read by report, cadence or stage-bench may hold.
inline constexpr std::size_t kReportFileLimit = std::size_t{512} << 20;  // 512 MiB

/// Reads the whole regular file `path`, refusing it with InputError ("WHAT: ...", exit 2)
/// when it cannot be opened, is not a regular file (a folder, a device, a FIFO: named), or
/// holds more than `limit` bytes. Never blocks on a FIFO.
std::string read_text_file_bounded(const std::string& path, std::size_t limit, const std::string& what);

/// Opens an input for reading and returns a blocking descriptor the caller owns. A regular
/// file opens at once (refused when empty). A FIFO or character device is refused when
/// `regular_only`; otherwise it is waited for up to kPipeWaitMs for data or a writer that
/// closes, then refused. Folders, block devices and sockets are refused. Throws InputError
/// ("WHAT: ...").
int open_input(const std::string& path, const std::string& what, bool regular_only, const char* why_regular = nullptr);

}  // namespace chunkscope
