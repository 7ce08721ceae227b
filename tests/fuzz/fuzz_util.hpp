#pragma once
// What the fuzz targets share: a file in memory that the file readers read by path (so
// they run exactly as on disk, size limit and regular-file check included), and the one
// way a target reports a broken invariant (an abort, which libFuzzer keeps as a crash).
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>

namespace fuzzutil {

/// Prints the broken invariant and aborts: libFuzzer saves the input as a crash.
[[noreturn]] inline void broken(const char* fmt, ...) {
  std::fputs("fuzz invariant broken: ", stderr);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::abort();
}

#define FUZZ_CHECK(cond)                                                           \
  do {                                                                             \
    if (!(cond)) ::fuzzutil::broken("%s:%d: %s", __FILE__, __LINE__, #cond);       \
  } while (0)

/// A regular file that lives in memory (memfd), reachable by the path
/// /proc/self/fd/N; set() replaces its content.
class MemFile {
 public:
  MemFile() {
    fd_ = ::memfd_create("fuzz-input", MFD_CLOEXEC);
    if (fd_ < 0) broken("memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  ~MemFile() { ::close(fd_); }

  void set(std::string_view bytes) {
    if (::ftruncate(fd_, 0) != 0) broken("ftruncate failed");
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
      if (n <= 0) broken("pwrite failed");
      done += static_cast<std::size_t>(n);
    }
  }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace fuzzutil
