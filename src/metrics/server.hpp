#pragma once
// The HTTP side of live metrics: where to listen (--metrics-listen) and a read-only server
// (civetweb) that answers GET /metrics with what a provider renders, 404 for any other path
// and 405 for any other method. Not real-time: civetweb's own threads serve requests and
// call the provider, which only reads a snapshot (src/metrics/exporter.hpp).
#include <functional>
#include <memory>
#include <string>

#include "src/metrics/exposition.hpp"

namespace chunkscope::metrics {

/// An address to listen on: an IPv4 literal and a port.
struct ListenAddress {
  std::string host = "127.0.0.1";
  int port = 0;
  /// "127.0.0.1:9464"
  std::string text() const;
};

/// Parses --metrics-listen: "PORT", ":PORT" or "localhost:PORT" listen on loopback
/// (127.0.0.1); "ADDR:PORT" with an IPv4 address listens there (0.0.0.0: every interface,
/// only when the user writes it). Port 1..65535. Throws InputError naming `flag`, e.g.
/// "--metrics-listen: 'abc:9464': 'abc' is not an IPv4 address (e.g. 127.0.0.1:9464)".
ListenAddress parse_listen_address(const std::string& text, const char* flag = "--metrics-listen");

/// True when this build has the HTTP server (civetweb found at configure time).
bool server_available() noexcept;

/// Renders the exposition in a format; called on an HTTP thread, must be thread-safe.
using Provider = std::function<std::string(Format)>;

class MetricsServer {
 public:
  /// Starts listening on `addr` and serving `provider`. Throws RuntimeFailure naming `flag`
  /// when the address cannot be listened on (in use, not an address of this machine, a
  /// privileged port) or the build has no server. [allocates, blocks] (starts threads)
  MetricsServer(const ListenAddress& addr, Provider provider, const char* flag = "--metrics-listen");
  /// Stops the server: returns once no request is in flight.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// The address served ("127.0.0.1:9464").
  const ListenAddress& address() const { return addr_; }
  /// Requests answered so far (any status).
  std::uint64_t requests() const;

  struct Impl;

 private:
  ListenAddress addr_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace chunkscope::metrics
