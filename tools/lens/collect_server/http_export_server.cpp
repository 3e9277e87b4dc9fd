// `lens collect`'s OTLP/HTTP server (see http_export_server.hpp).
#include "collect_server/http_export_server.hpp"

#include <sys/socket.h>

#include <chrono>

#include "collect_server/connection_sweep.hpp"
#include "collect_server/http_connection_threads.hpp"

namespace lens::cli {
namespace {

// HTTP connections served at once, each on its own thread; more wait for a free thread.
constexpr std::size_t kMaxHttpConnections = 1024;
// Connections the kernel queues for the accept loop (capped by net.core.somaxconn).
constexpr int kHttpListenBacklog = 1024;

// An HTTPS server with the certificate and key of `tls` (and its client CA, which makes client
// certificates required); null when OpenSSL cannot use them (not PEM, or a key that is not the
// certificate's).
std::unique_ptr<httplib::Server> make_https_server(const TlsServerFiles& tls) {
  auto server = std::make_unique<httplib::SSLServer>(
      tls.certificate_path.c_str(), tls.key_path.c_str(),
      tls.client_ca_path.empty() ? nullptr : tls.client_ca_path.c_str());
  if (!server->is_valid()) return nullptr;
  return server;
}

}  // namespace

std::string tls_unusable() {
  return "cannot use the TLS certificate and key (--tls-cert, --tls-key): OpenSSL could not load "
         "them, or the key is not the certificate's";
}

bool HttpExportServer::tls_usable(const TlsServerFiles& tls) {
  return make_https_server(tls) != nullptr;
}

Result<std::unique_ptr<HttpExportServer>> HttpExportServer::start(
    RequestAccounting& accounting, const Endpoint& endpoint,
    const std::optional<TlsServerFiles>& tls, const HttpConnectionLimits& limits) {
  std::unique_ptr<httplib::Server> http =
      tls ? make_https_server(*tls) : std::make_unique<httplib::Server>();
  if (!http) return Error(tls_unusable());
  std::unique_ptr<HttpExportServer> server(new HttpExportServer(accounting, std::move(http)));
  auto listening = std::make_shared<socket_t>(INVALID_SOCKET);
  server->configure(listening);
  if (Status status = server->listen(endpoint, limits, listening); !status.ok()) {
    return Error(status.message());
  }
  return server;
}

HttpExportServer::~HttpExportServer() { stop(); }

void HttpExportServer::configure(const std::shared_ptr<socket_t>& listening_socket) {
  httplib::Server& server = *server_;
  // Only SO_REUSEADDR: cpp-httplib's default adds SO_REUSEPORT, which would let a second
  // collector bind the same port and take half of the requests.
  server.set_socket_options([listening_socket](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    *listening_socket = sock;
  });
  server.set_payload_max_length(kMaxRequestBytes);
  // A thread per connection instead of cpp-httplib's 8 workers: slow, idle or keep-alive
  // clients then hold only their own thread (see http_connection_threads.hpp).
  server.new_task_queue = [] { return new HttpConnectionThreads(kMaxHttpConnections); };
  // cpp-httplib waits out a connection's keep-alive timeout before a stop completes (the wait
  // does not look at the stop): an exporter that stays connected between exports would hold
  // every stop for the default 5 s. Idle connections close after 1 s instead; exporters simply
  // reconnect for their next export.
  server.set_keep_alive_timeout(1);
  // handler_ is made before the accept loop starts (listen), so requests always find it.
  for (Signal signal : {Signal::kTraces, Signal::kMetrics, Signal::kLogs}) {
    server.Post(std::string("/v1/") + signal_name(signal),
                [this, signal](const httplib::Request& req, httplib::Response& res,
                               const httplib::ContentReader& reader) {
                  handler_->handle(signal, req, res, reader);
                });
  }
  // Errors cpp-httplib answers itself (unknown path, bad request line, unsupported
  // Content-Encoding) get the same Status body as ours; ours already have a body.
  server.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                       httplib::Response& res) {
    return handler_->answer_server_error(req, res) ? httplib::Server::HandlerResponse::Handled
                                                   : httplib::Server::HandlerResponse::Unhandled;
  }));
}

Status HttpExportServer::listen(const Endpoint& endpoint, const HttpConnectionLimits& limits,
                                const std::shared_ptr<socket_t>& listening_socket) {
  httplib::Server& server = *server_;
  int port = endpoint.port;
  if (port == 0) {
    port = server.bind_to_any_port(endpoint.host);
  } else if (!server.bind_to_port(endpoint.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return Error("cannot listen for OTLP/HTTP on " + endpoint.to_string() +
                 " (--http): the address is in use or not on this machine");
  }
  // cpp-httplib listens with a backlog of 5: a burst of connections (200 clients at once, or
  // many ranks starting together) overflowed it, and the kernel dropped the SYNs past it, each a
  // retry one, three, seven seconds later, healthy clients included. listen() again raises it.
  if (*listening_socket != INVALID_SOCKET) ::listen(*listening_socket, kHttpListenBacklog);
  bound_ = Endpoint{endpoint.host, port};
  guard_ = std::make_unique<HttpConnectionGuard>(port, limits);
  handler_ = std::make_unique<HttpExportHandler>(accounting_, guard_.get());
  thread_ = std::thread([&server, &done = done_] {
    server.listen_after_bind();
    done.store(true);
  });
  // stop() only takes effect once the accept loop runs; wait for it so that an early stop
  // cannot leave the thread serving forever.
  const auto deadline = std::chrono::steady_clock::now() + kShutdownGrace;
  while (!server.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

void HttpExportServer::stop() {
  // Not started (the bind failed): nothing serves.
  if (stopped_ || !thread_.joinable()) return;
  stopped_ = true;
  server_->stop();
  // Requests in flight get the grace period; a connection still open after it (a client that
  // trickles its request, which cpp-httplib would wait for without end) is shut down, which
  // ends the read its worker is blocked in.
  const auto deadline = std::chrono::steady_clock::now() + kShutdownGrace;
  while (!done_.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  while (!done_.load()) {
    shut_down_connections_on_port(bound_.port);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  thread_.join();
  guard_->stop();
}

}  // namespace lens::cli
