#include "src/io/input_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/errors.hpp"

namespace chunkscope {

namespace {

const char* node_kind(mode_t m) {
  if (S_ISDIR(m)) return "a folder";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string human_bytes(std::size_t n) {
  if (n % (std::size_t{1} << 20) == 0) return fmt::format("{} MiB", n >> 20);
  if (n % (std::size_t{1} << 10) == 0) return fmt::format("{} KiB", n >> 10);
  return fmt::format("{} bytes", n);
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    const int f = fd;
    fd = -1;
    return f;
  }
};

}  // namespace

std::string read_text_file_bounded(const std::string& path, std::size_t limit, const std::string& what) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (f.fd < 0) throw InputError(fmt::format("{}: cannot open: {}", what, std::strerror(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw InputError(fmt::format("{}: cannot read: {}", what, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("{}: {}, not a regular file", what, node_kind(st.st_mode)));
  const auto too_big = [&](std::size_t n, bool at_least) {
    return InputError(fmt::format("{}: {}{} bytes, above the limit of {}", what, at_least ? "more than " : "", n,
                                  human_bytes(limit)));
  };
  if (static_cast<std::uintmax_t>(st.st_size) > limit) throw too_big(static_cast<std::size_t>(st.st_size), false);
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size) + 1);
  std::size_t have = 0;
  for (;;) {
    if (have == text.size()) {
      if (text.size() > limit) throw too_big(limit, true);  // the file grew while it was read
      text.resize(std::min(limit + 1, text.size() * 2 + 4096));
    }
    const ssize_t n = ::read(f.fd, text.data() + have, text.size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: read error: {}", what, std::strerror(errno)));
    }
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  if (have > limit) throw too_big(limit, true);
  text.resize(have);
  return text;
}

int open_input(const std::string& path, const std::string& what, bool regular_only, const char* why_regular) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (f.fd < 0) {
    if (errno == ENOENT) throw InputError(fmt::format("{}: no such file", what));
    if (errno == ENXIO) throw InputError(fmt::format("{}: a socket or a device that cannot be opened", what));
    throw InputError(fmt::format("{}: cannot read ({})", what, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw InputError(fmt::format("{}: cannot read ({})", what, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a directory", what));
  if (S_ISREG(st.st_mode)) {
    if (st.st_size == 0) throw InputError(fmt::format("{}: file is empty", what));
  } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
    if (regular_only)
      throw InputError(fmt::format("{}: {}, not a regular file{}", what, node_kind(st.st_mode),
                                   why_regular ? fmt::format(" ({})", why_regular) : std::string()));
    // wait, for a bounded time, for the first data (a FIFO: a writer that sends something)
    pollfd p{f.fd, POLLIN, 0};
    int rc = 0;
    do {
      rc = ::poll(&p, 1, kPipeWaitMs);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) throw InputError(fmt::format("{}: cannot wait for data ({})", what, std::strerror(errno)));
    if (rc == 0)
      throw InputError(fmt::format("{}: {} that gave no data within {} s{}", what, node_kind(st.st_mode),
                                   kPipeWaitMs / 1000, S_ISFIFO(st.st_mode) ? " (no writer?)" : ""));
    if (!(p.revents & POLLIN))
      throw InputError(fmt::format("{}: {} closed without data", what, node_kind(st.st_mode)));
  } else {
    throw InputError(fmt::format("{}: {}, not an audio file", what, node_kind(st.st_mode)));
  }
  const int fl = ::fcntl(f.fd, F_GETFL);
  if (fl >= 0) ::fcntl(f.fd, F_SETFL, fl & ~O_NONBLOCK);
  return f.release();
}

}  // namespace chunkscope
