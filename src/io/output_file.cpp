#include "src/io/output_file.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <iomanip>
#include <iostream>
#include <optional>
#include <streambuf>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <cstdlib>
#include <vector>

#include "src/errors.hpp"
#include "src/io/input_file.hpp"

namespace chunkscope {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string folder_of(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

// "-", /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: the descriptor they name.
std::optional<int> descriptor_path(const std::string& path) {
  if (path == "-" || path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string pre(prefix);
    if (path.size() > pre.size() && path.compare(0, pre.size(), pre) == 0) {
      const std::string num = path.substr(pre.size());
      if (num.size() > 6 || num.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
      return std::stoi(num);
    }
  }
  return std::nullopt;
}

const char* kind_name(mode_t m) {
  if (S_ISDIR(m)) return "a folder";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "a regular file";
}

// The folder a new file goes into must exist, be a folder and be writable.
void check_parent_folder(const std::string& path, const std::string& label) {
  const std::string dir = folder_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) throw InputError(fmt::format("{}: folder '{}' does not exist", label, dir));
    if (errno == ENOTDIR) throw InputError(fmt::format("{}: '{}' is not a folder", label, dir));
    throw InputError(fmt::format("{}: folder '{}': {}", label, dir, std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: '{}' is not a folder", label, dir));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(fmt::format("{}: folder '{}' is not writable ({})", label, dir, std::strerror(errno)));
}

void ignore_sigpipe_once() {
  // A reader that goes away makes write() fail with EPIPE (one line, exit 3) instead of
  // killing the process without a word.
  static const bool done = [] {
    std::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)done;
}

// Opens a device, FIFO or socket for writing. A FIFO without a reader is waited for up to
// kPipeWaitMs (O_NONBLOCK open fails with ENXIO until a reader has it open).
int open_stream(const std::string& path, const std::string& label, bool fifo) {
  ignore_sigpipe_once();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kPipeWaitMs);
  for (;;) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0) {
      const int fl = ::fcntl(fd, F_GETFL);
      if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
      return fd;
    }
    if (!(fifo && errno == ENXIO))
      throw RuntimeFailure(fmt::format("{}: cannot open for writing ({})", label, std::strerror(errno)));
    if (std::chrono::steady_clock::now() >= deadline)
      throw RuntimeFailure(
          fmt::format("{}: a FIFO with no reader (waited {} s for one to open it)", label, kPipeWaitMs / 1000));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

OutputKind check_output_path(const std::string& path, const std::string& label) {
  if (path.empty()) throw InputError(fmt::format("{}: empty path", label));
  if (const auto fd = descriptor_path(path)) {
    const int fl = ::fcntl(*fd, F_GETFL);
    if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY)
      throw InputError(fmt::format("{}: descriptor {} is not open for writing", label, *fd));
    return OutputKind::fd;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR)
      throw InputError(fmt::format("{}: cannot write ({})", label, std::strerror(errno)));
    check_parent_folder(path, label);
    return OutputKind::file;
  }
  if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a folder", label));
  if (S_ISBLK(st.st_mode)) throw InputError(fmt::format("{}: is a block device; chunkscope does not write to one", label));
  if (S_ISREG(st.st_mode)) {
    std::error_code ec;
    const fs::path real = fs::canonical(path, ec);  // a symlink: the file it points to is replaced
    check_parent_folder(ec ? path : real.string(), label);
    return OutputKind::file;
  }
  if (::access(path.c_str(), W_OK) != 0)
    throw InputError(fmt::format("{}: {} that is not writable ({})", label, kind_name(st.st_mode), std::strerror(errno)));
  return OutputKind::stream;
}

void check_output_folder(const std::string& dir, const std::string& label) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::path p(dir);
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) throw InputError(fmt::format("{}: not a folder", label));
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      throw InputError(fmt::format("{}: folder is not writable ({})", label, std::strerror(errno)));
    return;
  }
  // a folder to be created: its nearest existing ancestor must be a writable folder
  fs::path up = fs::absolute(p, ec).parent_path();
  while (!up.empty() && !fs::exists(up, ec) && up != up.root_path()) up = up.parent_path();
  if (!fs::is_directory(up, ec))
    throw InputError(fmt::format("{}: cannot create: '{}' is not a folder", label, up.string()));
  if (::access(up.c_str(), W_OK | X_OK) != 0)
    throw InputError(fmt::format("{}: cannot create: folder '{}' is not writable ({})", label, up.string(),
                                 std::strerror(errno)));
  // access() says yes to root everywhere, and nothing about file systems that hold no
  // folders (/proc, /sys, a read-only mount): make one, and remove it at once
  const std::string probe = (up / ".chunkscope-probe-XXXXXX").string();
  std::vector<char> name(probe.begin(), probe.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr)
    throw InputError(fmt::format("{}: cannot create a folder in '{}' ({})", label, up.string(), std::strerror(errno)));
  ::rmdir(name.data());
}

void create_output_folder(const std::string& dir, const std::string& label) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw RuntimeFailure(fmt::format("{}: cannot create ({})", label, ec ? ec.message() : "not a folder"));
}

// ------------------------------------------------------------------ OutputTarget

// The buffer behind OutputTarget::stream(): blocks of kStreamBuffer bytes go to the
// target's write(); the first failure is kept (the stream turns bad) for commit().
struct OutputTarget::Stream : std::streambuf {
  OutputTarget* owner;
  std::vector<char> buf;
  std::exception_ptr error;
  std::ostream os;

  explicit Stream(OutputTarget* o) : owner(o), buf(kStreamBuffer), os(this) { reset(); }
  void reset() { setp(buf.data(), buf.data() + buf.size()); }
  void put(std::string_view data) {
    if (error || data.empty()) return;
    try {
      owner->write(data);
    } catch (...) {
      error = std::current_exception();
    }
  }
  // Hands what is buffered to the target. False once a write has failed.
  bool drain() {
    put(std::string_view(pbase(), static_cast<std::size_t>(pptr() - pbase())));
    reset();
    return !error;
  }
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const auto room = epptr() - pptr();
    if (n <= room) {
      std::memcpy(pptr(), s, static_cast<std::size_t>(n));
      pbump(static_cast<int>(n));
      return n;
    }
    if (!drain()) return 0;
    if (static_cast<std::size_t>(n) >= buf.size()) {
      put(std::string_view(s, static_cast<std::size_t>(n)));
      return error ? 0 : n;
    }
    std::memcpy(pptr(), s, static_cast<std::size_t>(n));
    pbump(static_cast<int>(n));
    return n;
  }
  int sync() override { return drain() ? 0 : -1; }
};

OutputTarget::OutputTarget(const std::string& path, std::string label) : path_(path), label_(std::move(label)) {
  kind_ = check_output_path(path, label_);
  done_ = false;
  if (kind_ == OutputKind::fd) {
    fd_ = *descriptor_path(path);
    own_fd_ = false;
    ignore_sigpipe_once();
    return;
  }
  if (kind_ == OutputKind::stream) {
    struct stat st {};
    const bool fifo = ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
    fd_ = open_stream(path, label_, fifo);
    own_fd_ = true;
    return;
  }
  // a regular file or a new path
  std::error_code ec;
  const fs::path real = fs::exists(path, ec) ? fs::canonical(path, ec) : fs::path(path);
  target_ = ec ? path : real.string();
  const fs::path t(target_);
  const fs::path dir = t.has_parent_path() ? t.parent_path() : fs::path(".");
  mode_t keep_mode = 0;
  struct stat st {};
  const bool replacing = ::stat(target_.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  if (replacing) keep_mode = st.st_mode & 07777;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = attempt == 0 ? fmt::format(".{}.{}.partial", t.filename().string(), ::getpid())
                                          : fmt::format(".{}.{}.{}.partial", t.filename().string(), ::getpid(), attempt);
    tmp_ = (dir / name).string();
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) break;
    if (errno != EEXIST) {
      const int e = errno;
      tmp_.clear();
      throw RuntimeFailure(fmt::format("{}: cannot create a temporary file in '{}' ({})", label_, dir.string(),
                                       std::strerror(e)));
    }
  }
  if (fd_ < 0) {
    tmp_.clear();
    throw RuntimeFailure(fmt::format("{}: cannot create a temporary file in '{}'", label_, dir.string()));
  }
  own_fd_ = true;
  if (replacing) (void)::fchmod(fd_, keep_mode);  // the new file keeps the old one's permissions
}

OutputTarget::OutputTarget() = default;

OutputTarget::~OutputTarget() { abandon(); }

OutputTarget::OutputTarget(OutputTarget&& o) noexcept { *this = std::move(o); }

OutputTarget& OutputTarget::operator=(OutputTarget&& o) noexcept {
  if (this != &o) {
    abandon();
    kind_ = o.kind_;
    path_ = std::move(o.path_);
    label_ = std::move(o.label_);
    target_ = std::move(o.target_);
    tmp_ = std::move(o.tmp_);
    fd_ = o.fd_;
    own_fd_ = o.own_fd_;
    done_ = o.done_;
    stream_ = std::move(o.stream_);
    if (stream_) stream_->owner = this;
    o.fd_ = -1;
    o.own_fd_ = false;
    o.done_ = true;
    o.tmp_.clear();
  }
  return *this;
}

void OutputTarget::write(std::string_view data) {
  if (done_ || fd_ < 0) throw RuntimeFailure(fmt::format("{}: write after the output was closed", label_));
  if (kind_ == OutputKind::fd) {
    // what the program printed before goes first
    std::cout.flush();
    std::fflush(stdout);
  }
  if (!write_all(fd_, data)) throw RuntimeFailure(fmt::format("{}: write failed ({})", label_, std::strerror(errno)));
}

std::ostream& OutputTarget::stream() {
  if (!stream_) stream_ = std::make_unique<Stream>(this);
  return stream_->os;
}

void OutputTarget::commit() {
  if (done_) return;
  if (stream_ && !stream_->drain()) {
    const std::exception_ptr e = stream_->error;
    abandon();
    std::rethrow_exception(e);
  }
  if (kind_ == OutputKind::fd) {
    done_ = true;
    return;
  }
  const int fd = fd_;
  fd_ = -1;
  own_fd_ = false;
  if (::close(fd) != 0) {
    const int e = errno;
    abandon();
    throw RuntimeFailure(fmt::format("{}: write failed when closing ({})", label_, std::strerror(e)));
  }
  if (kind_ == OutputKind::file) {
    if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
      const int e = errno;
      abandon();
      throw RuntimeFailure(fmt::format("{}: cannot move into place ({})", label_, std::strerror(e)));
    }
    tmp_.clear();
  }
  done_ = true;
}

void OutputTarget::abandon() noexcept {
  if (stream_) stream_->reset();  // what is buffered is dropped with the output
  if (own_fd_ && fd_ >= 0) ::close(fd_);
  fd_ = -1;
  own_fd_ = false;
  if (!tmp_.empty()) {
    ::unlink(tmp_.c_str());
    tmp_.clear();
  }
  done_ = true;
}

void write_text_output(const std::string& path, std::string_view text, const std::string& label) {
  OutputTarget t(path, label);
  t.write(text);
  t.commit();
}

void write_json_file(const std::string& path, const json& j, const std::string& label) {
  // the same text as j.dump(2) and a newline, serialised into the stream
  write_streamed_output(path, label, [&](std::ostream& o) { o << std::setw(2) << j << '\n'; });
}

void write_streamed_output(const std::string& path, const std::string& label,
                           const std::function<void(std::ostream&)>& fill) {
  OutputTarget t(path, label.empty() ? fmt::format("output '{}'", path) : label);
  fill(t.stream());
  t.commit();
}

// ------------------------------------------------------------------ collisions

namespace {

struct Identity {
  enum class Kind { none, node, descriptor, name } kind = Kind::none;
  dev_t dev = 0;
  ino_t ino = 0;
  int fd = -1;
  std::string name;
  bool operator==(const Identity& o) const {
    if (kind != o.kind) return false;
    switch (kind) {
      case Kind::none: return false;
      case Kind::node: return dev == o.dev && ino == o.ino;
      case Kind::descriptor: return fd == o.fd;
      case Kind::name: return name == o.name;
    }
    return false;
  }
};

Identity identify(const std::string& path, bool output) {
  Identity id;
  if (path.empty()) return id;
  if (output) {
    if (const auto fd = descriptor_path(path)) {
      // a descriptor's open file, when it can be seen (stdout redirected to a file)
      struct stat st {};
      if (::fstat(*fd, &st) == 0 && S_ISREG(st.st_mode)) {
        id.kind = Identity::Kind::node;
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        return id;
      }
      id.kind = Identity::Kind::descriptor;
      id.fd = *fd;
      return id;
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode)) return id;  // /dev/null twice loses nothing
    id.kind = Identity::Kind::node;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    return id;
  }
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  id.kind = Identity::Kind::name;
  id.name = (ec ? fs::absolute(path).lexically_normal() : p.lexically_normal()).string();
  return id;
}

}  // namespace

void check_distinct_paths(const std::vector<PathRole>& inputs, const std::vector<PathRole>& outputs) {
  std::vector<Identity> in_ids, out_ids;
  for (const auto& i : inputs) in_ids.push_back(identify(i.path, false));
  for (const auto& o : outputs) out_ids.push_back(identify(o.path, true));
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const auto& o = outputs[k];
    if (o.path.empty()) continue;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (out_ids[k] == in_ids[i])
        throw InputError(fmt::format("{} '{}' is the same file as {} '{}': refusing to overwrite an input", o.option,
                                     o.path, inputs[i].option, inputs[i].path));
    for (std::size_t j = 0; j < k; ++j)
      if (out_ids[k] == out_ids[j])
        throw InputError(fmt::format("{} '{}' is the same file as {} '{}': give each output its own path", o.option,
                                     o.path, outputs[j].option, outputs[j].path));
  }
}

int finish_stdout(int exit_code) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;  // std::cout writes through stdout (synced)
  const int e = errno;
  std::cout.flush();
  const bool bad = !flushed || std::ferror(stdout) || std::cout.fail();
  if (bad && exit_code == 0) {
    std::cerr << fmt::format("chunkscope: stdout: write failed ({})\n",
                             e != 0 ? std::strerror(e) : "the output could not be written");
    return kExitRuntime;
  }
  return exit_code;
}

}  // namespace chunkscope
