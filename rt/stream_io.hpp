#pragma once
// The ends of a stream: a source that fills chunks and a sink that takes them. prepare()
// may allocate and fail; fill() and consume() are noexcept, return a Status, and never
// allocate (a file source or sink does its file I/O there, on its own thread).
#include <cstdint>

#include "rt/backend.hpp"
#include "rt/status.hpp"

namespace chunkscope {

class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  /// Frames the source will deliver in all, or -1 when open-ended.
  /// [no-alloc, no-block]
  virtual std::int64_t total_frames() const noexcept = 0;
  /// Fills up to `max_frames` interleaved frames into `dst`; *frames gets the count.
  /// Returns end_of_stream when nothing is left, io_error when the input failed.
  /// [no-alloc, blocks] A file source reads the file.
  virtual Status fill(void* dst, int max_frames, int* frames) noexcept = 0;
  /// One line on what the source is ("file audio/x.flac", "synth sine:440"). [no-alloc, no-block]
  virtual const char* describe() const noexcept = 0;
};

class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  /// Takes `frames` interleaved frames. [no-alloc, blocks] A file sink writes the file.
  virtual Status consume(const void* src, int frames) noexcept = 0;
  /// [no-alloc, no-block]
  virtual const char* describe() const noexcept = 0;
};

/// Discards everything. [no-alloc, no-block]
class NullSink final : public ChunkSink {
 public:
  /// [no-alloc, no-block]
  Status consume(const void*, int) noexcept override { return Status::ok; }
  /// [no-alloc, no-block]
  const char* describe() const noexcept override { return "null"; }
};

}  // namespace chunkscope
