#include "src/io/audio_file.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <cmath>
#include <fmt/format.h>
#include <sndfile.h>
#include <unistd.h>
#include <sstream>
#include <vector>

#include "src/errors.hpp"
#include "src/io/input_file.hpp"

namespace chunkscope {
namespace {

SNDFILE* S(void* p) { return static_cast<SNDFILE*>(p); }

std::string lower_ext(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (!ext.empty() && ext[0] == '.') ext.erase(0, 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace

std::string format_name(int format) {
  SF_FORMAT_INFO major{}, sub{};
  major.format = format & SF_FORMAT_TYPEMASK;
  sub.format = format & SF_FORMAT_SUBMASK;
  std::string a = sf_command(nullptr, SFC_GET_FORMAT_INFO, &major, sizeof(major)) == 0 && major.name ? major.name : "?";
  std::string b = sf_command(nullptr, SFC_GET_FORMAT_INFO, &sub, sizeof(sub)) == 0 && sub.name ? sub.name : "?";
  return a + " / " + b;
}

AudioReader::AudioReader(const std::string& path, bool regular_only, const char* why) : path_(path) {
  const std::string what = fmt::format("input '{}'", path);
  const int fd = open_input(path, what, regular_only, why);
  SF_INFO si{};
  SNDFILE* f = sf_open_fd(fd, SFM_READ, &si, SF_TRUE);
  if (!f) {
    const std::string why_not = sf_strerror(nullptr);
    ::close(fd);
    throw InputError(fmt::format("{}: not a readable audio file ({})", what, why_not));
  }
  sf_ = f;
  info_.rate = si.samplerate;
  info_.channels = si.channels;
  info_.frames = si.frames;
  info_.format = si.format;
  info_.format_name = format_name(si.format);
  if (si.frames <= 0 || si.channels <= 0) {
    sf_close(f);
    sf_ = nullptr;
    throw InputError(fmt::format("input '{}': holds no audio frames", path));
  }
  if (!(si.samplerate >= 1 && si.samplerate <= 1000000)) {
    sf_close(f);
    sf_ = nullptr;
    throw InputError(fmt::format("input '{}': sample rate {} Hz is out of range (1 Hz .. 1 MHz)", path, si.samplerate));
  }
  // libsndfile clamps a WAV data chunk that runs past the end of the file and notes it in
  // its log; such a file is truncated, and reading it "to the end" would hide that.
  char log[4096] = {0};
  sf_command(f, SFC_GET_LOG_INFO, log, sizeof(log));
  bool truncated = false;
  std::istringstream lines{std::string(log)};
  for (std::string ln; std::getline(lines, ln);)
    if (ln.rfind("data", 0) == 0 && ln.find("should be") != std::string::npos) truncated = true;
  if (truncated) {
    sf_close(f);
    sf_ = nullptr;
    throw InputError(fmt::format("input '{}': file is truncated (its header promises more data than it holds)", path));
  }
}

AudioReader::~AudioReader() {
  if (sf_) sf_close(S(sf_));
}

template <class T>
std::int64_t AudioReader::read_impl(T* dst, std::int64_t frames) {
  if (frames <= 0) return 0;
  sf_count_t got;
  if constexpr (sizeof(T) == 4)
    got = sf_readf_float(S(sf_), reinterpret_cast<float*>(dst), frames);
  else
    got = sf_readf_double(S(sf_), reinterpret_cast<double*>(dst), frames);
  if (got < 0) got = 0;
  pos_ += got;
  if (got < frames && pos_ < info_.frames) {
    const int err = sf_error(S(sf_));
    throw TruncatedInput(fmt::format("input '{}': ended after {} of {} frames ({})", path_, pos_, info_.frames,
                                     err ? sf_error_number(err) : "unexpected end of file"));
  }
  return got;
}

int AudioReader::try_read(void* dst, bool f64, std::int64_t frames, std::int64_t* got) noexcept {
  *got = 0;
  if (frames <= 0) return 0;
  sf_count_t n = f64 ? sf_readf_double(S(sf_), static_cast<double*>(dst), frames)
                     : sf_readf_float(S(sf_), static_cast<float*>(dst), frames);
  if (n < 0) n = 0;
  pos_ += n;
  *got = n;
  return (n < frames && pos_ < info_.frames) ? -1 : 0;
}

std::int64_t AudioReader::read(float* dst, std::int64_t frames) { return read_impl(dst, frames); }
std::int64_t AudioReader::read(double* dst, std::int64_t frames) { return read_impl(dst, frames); }

void AudioReader::rewind() {
  sf_seek(S(sf_), 0, SEEK_SET);
  pos_ = 0;
}

int parse_output_subtype(const std::string& s) {
  if (s == "auto") return 0;
  if (s == "float") return SF_FORMAT_FLOAT;
  if (s == "double") return SF_FORMAT_DOUBLE;
  if (s == "pcm16") return SF_FORMAT_PCM_16;
  if (s == "pcm24") return SF_FORMAT_PCM_24;
  if (s == "pcm32") return SF_FORMAT_PCM_32;
  throw InputError(fmt::format("--output-format: '{}' is not auto, float, double, pcm16, pcm24 or pcm32", s));
}

int output_format_for(const std::string& out_path, int input_format, int channels, double rate, int subtype) {
  const std::string ext = lower_ext(out_path);
  int major = 0;
  if (ext == "wav") major = SF_FORMAT_WAV;
  else if (ext == "flac") major = SF_FORMAT_FLAC;
  else if (ext == "ogg" || ext == "oga") major = SF_FORMAT_OGG;
  else if (ext == "opus") major = SF_FORMAT_OGG;
  else if (ext == "aif" || ext == "aiff") major = SF_FORMAT_AIFF;
  else if (ext == "au" || ext == "snd") major = SF_FORMAT_AU;
  else if (ext == "caf") major = SF_FORMAT_CAF;
  else if (ext == "w64") major = SF_FORMAT_W64;
  else if (ext == "rf64") major = SF_FORMAT_RF64;
#ifdef SF_FORMAT_MPEG
  else if (ext == "mp3") major = SF_FORMAT_MPEG;
#endif
  else if (ext.empty()) major = input_format & SF_FORMAT_TYPEMASK;
  else
    throw InputError(fmt::format("output '{}': unknown extension '.{}' (wav, flac, ogg, opus, aiff, au, caf, w64, rf64{})",
                                 out_path, ext,
#ifdef SF_FORMAT_MPEG
                                 ", mp3"
#else
                                 ""
#endif
                                 ));
  SF_INFO si{};
  si.channels = channels;
  si.samplerate = static_cast<int>(rate);
  auto valid = [&](int f) {
    si.format = f;
    return sf_format_check(&si) != 0;
  };
  if (subtype != 0) {
    if (valid(major | subtype)) return major | subtype;
    SF_FORMAT_INFO sub{};
    sub.format = subtype;
    sf_command(nullptr, SFC_GET_FORMAT_INFO, &sub, sizeof sub);
    throw InputError(fmt::format("output '{}': --output-format: a .{} file cannot hold {} samples", out_path,
                                 ext.empty() ? "(input's container)" : ext, sub.name ? sub.name : "these"));
  }
  if (major == (input_format & SF_FORMAT_TYPEMASK) && ext != "opus" && valid(input_format)) return input_format;
  std::vector<int> subs = {input_format & SF_FORMAT_SUBMASK, SF_FORMAT_PCM_24, SF_FORMAT_PCM_16, SF_FORMAT_VORBIS};
  if (ext == "opus") subs = {SF_FORMAT_OPUS};
#ifdef SF_FORMAT_MPEG_LAYER_III
  if (ext == "mp3") subs = {SF_FORMAT_MPEG_LAYER_III};
#endif
  for (int s : subs)
    if (valid(major | s)) return major | s;
  throw InputError(fmt::format("output '{}': libsndfile cannot write this format with {} channels at {} Hz", out_path,
                               channels, rate));
}

AudioWriter::AudioWriter(const std::string& path, int format, double rate, int channels) : path_(path) {
  const std::string label = fmt::format("output '{}'", path);
  if (path == "-")
    throw InputError(fmt::format("{}: audio is not written to stdout (the report goes there); name a file, a FIFO "
                                 "or a device such as /dev/stdout",
                                 label));
  target_ = OutputTarget(path, label);
  SF_INFO si{};
  si.samplerate = static_cast<int>(rate);
  si.channels = channels;
  si.format = format;
  SNDFILE* f = sf_open_fd(target_.fd(), SFM_WRITE, &si, SF_FALSE);
  if (!f) {
    const std::string why = sf_strerror(nullptr);
    target_.abandon();
    throw InputError(fmt::format("{}: cannot write ({})", label, why));
  }
  sf_command(f, SFC_SET_CLIPPING, nullptr, SF_TRUE);
  sf_ = f;
  channels_ = channels;
  const int sub = format & SF_FORMAT_SUBMASK;
  integer_ = sub != SF_FORMAT_FLOAT && sub != SF_FORMAT_DOUBLE;
}

template <class T>
void AudioWriter::count_levels(const T* src, std::int64_t frames) {
  const std::size_t n = static_cast<std::size_t>(frames) * static_cast<std::size_t>(channels_);
  std::uint64_t over = 0;
  double peak = peak_;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = std::fabs(static_cast<double>(src[i]));
    over += a > 1.0 ? 1 : 0;
    peak = a > peak ? a : peak;
  }
  over_ += over;
  peak_ = peak;
}

AudioWriter::~AudioWriter() {
  if (sf_) sf_close(S(sf_));
  if (!committed_) target_.abandon();
}

void AudioWriter::write(const float* src, std::int64_t frames) {
  if (frames <= 0) return;
  count_levels(src, frames);
  if (sf_writef_float(S(sf_), src, frames) != frames)
    throw RuntimeFailure(fmt::format("output '{}': write failed ({})", path_, sf_strerror(S(sf_))));
  written_ += frames;
}

void AudioWriter::write(const double* src, std::int64_t frames) {
  if (frames <= 0) return;
  count_levels(src, frames);
  if (sf_writef_double(S(sf_), src, frames) != frames)
    throw RuntimeFailure(fmt::format("output '{}': write failed ({})", path_, sf_strerror(S(sf_))));
  written_ += frames;
}

void AudioWriter::commit() {
  if (committed_) return;
  const int rc = sf_close(S(sf_));
  sf_ = nullptr;
  if (rc != 0) {
    target_.abandon();
    throw RuntimeFailure(fmt::format("output '{}': close failed ({})", path_, sf_error_number(rc)));
  }
  target_.commit();
  committed_ = true;
}

}  // namespace chunkscope
