// The OTLP servers of `lens collect` (see otlp_receiver.hpp): the gRPC server
// (grpc_export_server.hpp) and the HTTP server (http_export_server.hpp) over one
// RequestAccounting (the sink, the token, the limits and budget, the counts); this file starts
// and stops them together.
#include "collect_server/otlp_receiver.hpp"

#include <mutex>
#include <utility>

#include "collect_server/grpc_export_server.hpp"
#include "collect_server/http_export_server.hpp"

namespace lens::cli {

struct OtlpReceiver::Impl {
  Impl(OtlpSink& sink, const ReceiverOptions& options)
      : accounting(sink, options.token, options.limits, options.max_memory_in_flight) {}

  RequestAccounting accounting;  // first: the servers use it until they are gone
  std::unique_ptr<GrpcExportServer> grpc;
  std::unique_ptr<HttpExportServer> http;
  std::mutex stop_mutex;
  bool stopped = false;
};

OtlpReceiver::OtlpReceiver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

OtlpReceiver::~OtlpReceiver() { stop(); }

Result<std::unique_ptr<OtlpReceiver>> OtlpReceiver::start(const ReceiverOptions& options,
                                                          OtlpSink& sink) {
  std::unique_ptr<OtlpReceiver> receiver(new OtlpReceiver(std::make_unique<Impl>(sink, options)));
  Impl& impl = *receiver->impl_;
  // gRPC would only find out at the first handshake: check the pair with OpenSSL first.
  if (options.tls && !HttpExportServer::tls_usable(*options.tls)) {
    return Error(tls_unusable());
  }
  if (options.grpc) {
    auto grpc =
        GrpcExportServer::start(impl.accounting, *options.grpc, options.tls, options.grpc_streams);
    if (!grpc.ok()) return Error(grpc.message());
    impl.grpc = std::move(*grpc);
  }
  if (options.http) {
    auto http = HttpExportServer::start(impl.accounting, *options.http, options.tls,
                                        options.http_connections);
    if (!http.ok()) return Error(http.message());
    impl.http = std::move(*http);
  }
  return receiver;
}

std::optional<Endpoint> OtlpReceiver::grpc_endpoint() const {
  if (!impl_->grpc) return std::nullopt;
  return impl_->grpc->endpoint();
}

std::optional<Endpoint> OtlpReceiver::http_endpoint() const {
  if (!impl_->http) return std::nullopt;
  return impl_->http->endpoint();
}

void OtlpReceiver::stop() {
  std::lock_guard<std::mutex> lock(impl_->stop_mutex);
  if (impl_->stopped) return;
  impl_->stopped = true;
  // HTTP first, then gRPC, whose connection cap's thread must be gone before the caller closes
  // its own descriptors (the sink's files).
  if (impl_->http) impl_->http->stop();
  if (impl_->grpc) impl_->grpc->stop();
}

ReceiverStats OtlpReceiver::stats() const {
  // The servers are set once at start and live as long as the receiver.
  return {impl_->accounting.malformed.load(),
          impl_->accounting.unauthenticated.load(),
          impl_->grpc ? impl_->grpc->connections_refused() : 0,
          impl_->http ? impl_->http->timed_out() : 0,
          impl_->http ? impl_->http->over_peer_cap() : 0,
          impl_->accounting.over_budget.load()};
}

}  // namespace lens::cli
