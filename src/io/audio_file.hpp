#pragma once
// Audio files through libsndfile: a reader that checks its input up front and a writer that
// writes through an OutputTarget (output_file.hpp): to a temporary file beside the target,
// renamed into place only on commit(), so a failed run never leaves a partial file that looks
// complete; a device or FIFO is written directly. Not real-time.
#include <cstdint>
#include <memory>
#include <string>

#include "src/io/output_file.hpp"

namespace chunkscope {

struct AudioInfo {
  double rate = 0;
  int channels = 0;
  std::int64_t frames = 0;  // as the header states it
  int format = 0;           // libsndfile SF_FORMAT_* major | subtype
  std::string format_name;  // e.g. "WAV (Microsoft) / Signed 16 bit PCM"
};

class AudioReader {
 public:
  /// Opens `path`. Throws InputError when it is missing, unreadable, not audio, empty, or
  /// its sample rate is outside 1 Hz .. 1 MHz. A FIFO or character device is waited for its
  /// first data for at most kPipeWaitMs; with `regular_only` it is refused at once (`why`
  /// says what needs a regular file).
  explicit AudioReader(const std::string& path, bool regular_only = false, const char* why = nullptr);
  ~AudioReader();
  AudioReader(const AudioReader&) = delete;
  AudioReader& operator=(const AudioReader&) = delete;

  const AudioInfo& info() const { return info_; }
  const std::string& path() const { return path_; }
  /// Reads up to `frames` interleaved frames; returns the count read (0 at the end).
  /// Throws RuntimeFailure when the file ends before the frame count its header states.
  std::int64_t read(float* dst, std::int64_t frames);
  std::int64_t read(double* dst, std::int64_t frames);
  /// Reads without throwing, for a stream's source thread: ok with *got frames (0 at
  /// the end), or io_error when the file ends before its header's frame count.
  int try_read(void* dst, bool f64, std::int64_t frames, std::int64_t* got) noexcept;
  /// Frames delivered so far.
  std::int64_t position() const { return pos_; }
  /// Back to the first frame.
  void rewind();

 private:
  template <class T>
  std::int64_t read_impl(T* dst, std::int64_t frames);
  std::string path_;
  void* sf_ = nullptr;
  AudioInfo info_;
  std::int64_t pos_ = 0;
};

class AudioWriter {
 public:
  /// Prepares to write `path` with `format` (SF_FORMAT_*), rate and channels. The data go
  /// to a temporary file until commit() (a device or FIFO: directly). Throws InputError when
  /// the target cannot be written, RuntimeFailure when it cannot be opened.
  AudioWriter(const std::string& path, int format, double rate, int channels);
  /// Removes the temporary file unless commit() succeeded.
  ~AudioWriter();
  AudioWriter(const AudioWriter&) = delete;
  AudioWriter& operator=(const AudioWriter&) = delete;

  /// Writes interleaved frames. Throws RuntimeFailure on a write error.
  void write(const float* src, std::int64_t frames);
  void write(const double* src, std::int64_t frames);
  /// Closes the file and renames it to the target path. Throws RuntimeFailure.
  void commit();
  std::int64_t frames_written() const { return written_; }
  const std::string& path() const { return path_; }
  /// Whether the file's samples are integers (PCM, or a codec that holds them so): a sample
  /// beyond full scale (|x| > 1) is clipped to it on writing; float files keep it.
  bool clips() const { return integer_; }
  /// Samples written beyond full scale, clipped when clips() (counted either way).
  std::uint64_t over_full_scale() const { return over_; }
  std::uint64_t samples_written() const { return static_cast<std::uint64_t>(written_) * static_cast<std::uint64_t>(channels_); }
  /// The largest |sample| written (1.0 is full scale).
  double peak() const { return peak_; }

 private:
  template <class T>
  void count_levels(const T* src, std::int64_t frames);
  std::string path_;
  OutputTarget target_;
  void* sf_ = nullptr;
  bool committed_ = false;
  std::int64_t written_ = 0;
  int channels_ = 0;
  bool integer_ = false;
  std::uint64_t over_ = 0;
  double peak_ = 0;
};

/// The sample type --output-format asks for: 0 for "auto" (the input's, or the closest the
/// extension's container holds), else SF_FORMAT_FLOAT ("float"), SF_FORMAT_DOUBLE
/// ("double"), SF_FORMAT_PCM_16 ("pcm16"), SF_FORMAT_PCM_24 ("pcm24"), SF_FORMAT_PCM_32
/// ("pcm32"). Throws InputError naming --output-format.
int parse_output_subtype(const std::string& s);

/// The libsndfile format to write `out_path` in: the input's format, unless the file
/// extension names another container, then the closest valid subtype. Throws InputError
/// for an unknown extension or a combination libsndfile cannot write.
/// `subtype` (parse_output_subtype, not 0) asks for that sample type in the container; a
/// container that cannot hold it is an InputError naming the output and --output-format.
int output_format_for(const std::string& out_path, int input_format, int channels, double rate, int subtype = 0);

/// "WAV (Microsoft) / Signed 16 bit PCM" for a format code.
std::string format_name(int format);

}  // namespace chunkscope
