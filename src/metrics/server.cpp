#include "src/metrics/server.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "src/errors.hpp"

#if defined(CHUNKSCOPE_WITH_CIVETWEB)
#include <civetweb.h>
#endif

namespace chunkscope::metrics {

std::string ListenAddress::text() const { return fmt::format("{}:{}", host, port); }

ListenAddress parse_listen_address(const std::string& text, const char* flag) {
  const std::string shown = one_line(text);
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("{}: '{}': {} (e.g. 127.0.0.1:9464, or :9464 for loopback)", flag, shown, why));
  };
  if (text.empty()) throw bad("empty; give ADDR:PORT");
  ListenAddress a;
  std::string host, port;
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    port = text;
  } else {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.find(':') != std::string::npos || host.find('[') != std::string::npos)
    throw bad("IPv6 addresses are not supported; give an IPv4 address");
  if (port.empty()) throw bad("no port after the ':'");
  for (char c : port)
    if (c < '0' || c > '9') throw bad(fmt::format("'{}' is not a port number", one_line(port)));
  if (port.size() > 5 || std::stoi(port) < 1 || std::stoi(port) > 65535)
    throw bad(fmt::format("port {} is out of range 1..65535", one_line(port)));
  a.port = std::stoi(port);
  if (host.empty() || host == "localhost") {
    a.host = "127.0.0.1";
  } else {
    in_addr addr{};
    if (::inet_pton(AF_INET, host.c_str(), &addr) != 1)
      throw bad(fmt::format("'{}' is not an IPv4 address (host names other than localhost are not looked up)",
                            one_line(host)));
    a.host = host;
  }
  return a;
}

namespace {

// Binds a socket to the address the way the server will (SO_REUSEADDR) and says why it
// cannot be listened on; "" when it can.
std::string bind_problem(const ListenAddress& a) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fmt::format("cannot make a socket: {}", std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(a.port));
  ::inet_pton(AF_INET, a.host.c_str(), &sa.sin_addr);
  std::string why;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, 1) != 0) {
    const int e = errno;
    if (e == EADDRINUSE)
      why = fmt::format("port {} is already in use on {}", a.port, a.host);
    else if (e == EADDRNOTAVAIL)
      why = fmt::format("{} is not an address of this machine", a.host);
    else if (e == EACCES)
      why = fmt::format("port {} needs privileges this process does not have", a.port);
    else
      why = fmt::format("cannot listen on {}: {}", a.text(), std::strerror(e));
  }
  ::close(fd);
  return why;
}

}  // namespace

#if defined(CHUNKSCOPE_WITH_CIVETWEB)

bool server_available() noexcept { return true; }

struct MetricsServer::Impl {
  Provider provider;
  mg_context* ctx = nullptr;
  std::atomic<std::uint64_t> requests{0};
};

namespace {

void send(mg_connection* conn, int status, const char* content_type, const std::string& body,
          const char* allow = nullptr) {
  mg_response_header_start(conn, status);
  mg_response_header_add(conn, "Content-Type", content_type, -1);
  const std::string length = fmt::format("{}", body.size());
  mg_response_header_add(conn, "Content-Length", length.c_str(), -1);
  if (allow) mg_response_header_add(conn, "Allow", allow, -1);
  mg_response_header_add(conn, "Cache-Control", "no-store", -1);
  mg_response_header_send(conn);
  mg_write(conn, body.data(), body.size());
}

int handle(mg_connection* conn, void* cbdata) {
  auto* impl = static_cast<MetricsServer::Impl*>(cbdata);
  impl->requests.fetch_add(1, std::memory_order_relaxed);
  const mg_request_info* ri = mg_get_request_info(conn);
  const std::string uri = ri && ri->local_uri ? ri->local_uri : "";
  const std::string method = ri && ri->request_method ? ri->request_method : "";
  if (uri != "/metrics") {
    send(conn, 404, "text/plain; charset=utf-8", "not found: only GET /metrics is served\n");
    return 404;
  }
  if (method != "GET") {
    send(conn, 405, "text/plain; charset=utf-8", "method not allowed: only GET /metrics is served\n", "GET");
    return 405;
  }
  const char* accept = mg_get_header(conn, "Accept");
  const Format f = negotiate(accept ? accept : "");
  std::string body;
  try {
    body = impl->provider(f);
  } catch (const std::exception& e) {
    send(conn, 500, "text/plain; charset=utf-8", std::string("metrics: ") + e.what() + "\n");
    return 500;
  }
  send(conn, 200, content_type(f), body);
  return 200;
}

int quiet_log(const mg_connection*, const char*) { return 1; }  // no civetweb lines on stderr

}  // namespace

MetricsServer::MetricsServer(const ListenAddress& addr, Provider provider, const char* flag)
    : addr_(addr), impl_(std::make_unique<Impl>()) {
  impl_->provider = std::move(provider);
  if (const std::string why = bind_problem(addr); !why.empty())
    throw RuntimeFailure(fmt::format("{}: {}", flag, why));
  static std::once_flag init;
  std::call_once(init, [] { mg_init_library(0); });
  const std::string ports = addr.text();
  const char* options[] = {"listening_ports", ports.c_str(), "num_threads", "4", "request_timeout_ms", "10000",
                           "enable_keep_alive", "yes", nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = quiet_log;
  char err[256] = {0};
  mg_error_data error{};
  error.text = err;
  error.text_buffer_size = sizeof err;
  mg_init_data init_data{};
  init_data.callbacks = &callbacks;
  init_data.user_data = impl_.get();
  init_data.configuration_options = options;
  impl_->ctx = mg_start2(&init_data, &error);
  if (!impl_->ctx)
    throw RuntimeFailure(fmt::format("{}: cannot listen on {}: {}", flag, addr.text(), err[0] ? one_line(err) : "civetweb did not start"));
  mg_set_request_handler(impl_->ctx, "/", handle, impl_.get());
}

MetricsServer::~MetricsServer() {
  if (impl_ && impl_->ctx) mg_stop(impl_->ctx);
}

std::uint64_t MetricsServer::requests() const { return impl_->requests.load(std::memory_order_relaxed); }

#else  // no civetweb: the flag is answered with a clear error

bool server_available() noexcept { return false; }

struct MetricsServer::Impl {};

MetricsServer::MetricsServer(const ListenAddress& addr, Provider, const char* flag) : addr_(addr) {
  throw RuntimeFailure(fmt::format("{}: this build has no HTTP server (civetweb was not found when it was configured; "
                                   "install libcivetweb-dev and rebuild)",
                                   flag));
}
MetricsServer::~MetricsServer() = default;
std::uint64_t MetricsServer::requests() const { return 0; }

#endif

}  // namespace chunkscope::metrics
