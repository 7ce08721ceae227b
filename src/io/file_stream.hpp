#pragma once
// Stream ends built on the library: a file source and file sink (libsndfile, the same
// reader and writer as `chunkscope process`) and a synthetic source.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rt/stream_io.hpp"
#include "src/io/audio_file.hpp"

namespace chunkscope {

/// Reads a file chunk by chunk on the source thread. Not copyable.
class FileSource final : public ChunkSource {
 public:
  /// Opens the file (throws InputError; a FIFO or device is refused: the input is opened
  /// more than once). `dtype` is the sample type chunks carry; `limit_frames` (0 or more)
  /// ends the stream after that many frames (-1: the whole file).
  FileSource(const std::string& path, DType dtype, std::int64_t limit_frames = -1);
  std::int64_t total_frames() const noexcept override {
    return limit_ >= 0 && limit_ < reader_.info().frames ? limit_ : reader_.info().frames;
  }
  /// [no-alloc, blocks] Reads the file; returns io_error when the file ends early.
  Status fill(void* dst, int max_frames, int* frames) noexcept override;
  const char* describe() const noexcept override { return desc_.c_str(); }
  const AudioInfo& info() const { return reader_.info(); }
  /// Frames delivered when the stream ended, and whether the file ended before its header said.
  std::int64_t delivered() const noexcept { return reader_.position(); }
  bool truncated() const noexcept { return truncated_; }

 private:
  AudioReader reader_;
  DType dtype_;
  std::string desc_;
  bool truncated_ = false;
  std::int64_t limit_ = -1;
};

/// Writes every chunk; the file appears at its path only after commit().
class FileSink final : public ChunkSink {
 public:
  FileSink(const std::string& path, int format, double rate, int channels, DType dtype);
  Status consume(const void* src, int frames) noexcept override;
  const char* describe() const noexcept override { return desc_.c_str(); }
  void commit() { writer_.commit(); }
  /// The levels written so far (read after the run has joined).
  const AudioWriter& writer() const { return writer_; }

 private:
  AudioWriter writer_;
  DType dtype_;
  std::string desc_;
};

struct SynthSpec {
  enum class Kind { sine, noise, sweep, impulse, silence, burst } kind = Kind::sine;
  double f0 = 440, f1 = 0;  // sine: f0; sweep: f0 -> f1 (logarithmic); burst: f0 seconds of noise
  double burst_amplitude = 0.9;  // burst: loud, then a silent tail (what exposes denormals)
  double amplitude = 0.5;
  double rate = 48000;
  int channels = 2;
  std::int64_t frames = 480000;  // duration in frames
  std::string text;
};

/// Parses "sine:<hz>", "noise", "sweep:<f0>:<f1>", "impulse", "silence", "burst:<time>" (loud
/// noise for <time>, then silence to the end: a decaying tail). Throws InputError.
SynthSpec parse_synth(const std::string& s, double rate);

/// Generates the signal sample by sample; deterministic (noise has a fixed seed).
class SynthSource final : public ChunkSource {
 public:
  SynthSource(const SynthSpec& spec, DType dtype);
  std::int64_t total_frames() const noexcept override { return spec_.frames; }
  Status fill(void* dst, int max_frames, int* frames) noexcept override;
  const char* describe() const noexcept override { return desc_.c_str(); }

 private:
  double next() noexcept;
  SynthSpec spec_;
  DType dtype_;
  std::string desc_;
  std::int64_t pos_ = 0;
  double phase_ = 0;
  std::uint64_t rng_ = 0x9E3779B97F4A7C15ull;
};

/// Several streams' sources read into one chunk per period (--batch): each fill() fills
/// every part's chunk in turn and lays them side by side, frame by frame (part k's channel
/// c is channel k x channels + c of the chunk). A part that ended before the others gives
/// silence until every part has ended. Not copyable.
class BatchSource final : public ChunkSource {
 public:
  /// `parts` (at least one) each deliver `channels` channels of `dtype`, at most
  /// `max_frames` per fill. [allocates]
  BatchSource(std::vector<std::unique_ptr<ChunkSource>> parts, int channels, int max_frames, DType dtype);
  /// The most any part delivers. [no-alloc, no-block]
  std::int64_t total_frames() const noexcept override { return total_; }
  /// [no-alloc, blocks] as the parts do (a file part reads its file); the first part that
  /// fails ends the batch with its status.
  Status fill(void* dst, int max_frames, int* frames) noexcept override;
  const char* describe() const noexcept override { return desc_.c_str(); }
  int parts() const noexcept { return static_cast<int>(parts_.size()); }

 private:
  std::vector<std::unique_ptr<ChunkSource>> parts_;
  std::vector<unsigned char> scratch_;  // one part's chunk
  std::vector<char> ended_;
  int channels_ = 0, max_frames_ = 0;
  std::size_t sample_bytes_ = 0;
  std::int64_t total_ = 0;
  std::string desc_;
};

}  // namespace chunkscope
