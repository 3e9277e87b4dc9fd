// `lens collect`'s OTLP/HTTP server: cpp-httplib, plain or TLS, a thread per connection, a
// listen backlog for bursts of clients, and the connection guard's deadlines and per-peer cap;
// requests go to an HttpExportHandler. Thread-safety: start, stop and the destructor from one
// thread; the counters from any.
#pragma once

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "collect_server/http_connection_guard.hpp"
#include "collect_server/http_export_handler.hpp"
#include "collect_server/listen_options.hpp"
#include "collect_server/request_accounting.hpp"
#include "lens/result.hpp"

namespace lens::cli {

class HttpExportServer {
 public:
  // Binds `endpoint` (HTTPS when `tls` is given) and starts serving; the error names the
  // address, or says that the TLS certificate and key cannot be used.
  static Result<std::unique_ptr<HttpExportServer>> start(RequestAccounting& accounting,
                                                         const Endpoint& endpoint,
                                                         const std::optional<TlsServerFiles>& tls,
                                                         const HttpConnectionLimits& limits);
  ~HttpExportServer();  // stops

  HttpExportServer(const HttpExportServer&) = delete;
  HttpExportServer& operator=(const HttpExportServer&) = delete;

  // Whether OpenSSL can use the certificate and key of `tls` (PEM, and a key that is the
  // certificate's).
  static bool tls_usable(const TlsServerFiles& tls);

  // The bound address (with the chosen port when 0 was asked for).
  const Endpoint& endpoint() const { return bound_; }

  // Stops accepting, lets requests in flight finish (kShutdownGrace), then shuts down the
  // connections still open. Idempotent.
  void stop();

  // Connections shut down past --http-request-timeout, and past
  // --http-max-connections-per-peer, so far.
  std::uint64_t timed_out() const { return guard_ ? guard_->timed_out() : 0; }
  std::uint64_t over_peer_cap() const { return guard_ ? guard_->over_peer_cap() : 0; }

 private:
  HttpExportServer(RequestAccounting& accounting, std::unique_ptr<httplib::Server> server)
      : accounting_(accounting), server_(std::move(server)) {}

  // The routes and the server's settings.
  void configure(const std::shared_ptr<socket_t>& listening_socket);
  // Binds and starts the accept loop's thread.
  Status listen(const Endpoint& endpoint, const HttpConnectionLimits& limits,
                const std::shared_ptr<socket_t>& listening_socket);

  RequestAccounting& accounting_;
  std::unique_ptr<httplib::Server> server_;
  Endpoint bound_;
  // Made once the port is known, before the accept loop starts.
  std::unique_ptr<HttpConnectionGuard> guard_;
  std::unique_ptr<HttpExportHandler> handler_;
  std::thread thread_;
  std::atomic<bool> done_{false};  // the accept loop and workers have ended
  bool stopped_ = false;
};

// The error of a TLS certificate and key that OpenSSL cannot use.
std::string tls_unusable();

}  // namespace lens::cli
