// The OTLP servers of `lens collect`: OTLP/gRPC (TraceService, MetricsService, LogsService
// Export) and OTLP/HTTP (POST /v1/traces, /v1/metrics, /v1/logs; binary protobuf or JSON,
// optionally gzip). Requests go to an OtlpSink; malformed ones are answered with
// INVALID_ARGUMENT / HTTP 400 and the servers keep serving. Both servers speak plain text, or
// TLS (optionally requiring client certificates) with the same certificate.
// Thread-safety: stop() and stats() from any thread; the servers run on their own threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "collect_server/http_connection_guard.hpp"
#include "collect_server/listen_options.hpp"
#include "collect_server/otlp_sink.hpp"
#include "collect_server/request_limits.hpp"
#include "lens/result.hpp"

namespace lens::cli {

struct ReceiverOptions {
  std::optional<Endpoint> grpc;       // nullopt: no gRPC server
  std::optional<Endpoint> http;       // nullopt: no HTTP server
  std::string token;                  // non-empty: "Authorization: Bearer <token>" required
  std::optional<TlsServerFiles> tls;  // nullopt: plain text
  RequestLimits limits;               // per request, both protocols
  GrpcStreamLimits grpc_streams;
  HttpConnectionLimits http_connections;  // request deadline, connections per peer
  // Memory all requests in flight may take together (--max-memory-in-flight).
  std::uint64_t max_memory_in_flight = MemoryBudget::kDefaultBytes;
};

struct ReceiverStats {
  std::uint64_t malformed = 0;                 // undecodable bodies, wrong content types, bad paths
  std::uint64_t unauthenticated = 0;           // missing or wrong token
  std::uint64_t grpc_connections_refused = 0;  // shut down past --grpc-max-connections
  std::uint64_t http_timed_out = 0;            // shut down past --http-request-timeout
  std::uint64_t http_over_peer_cap = 0;        // shut down past --http-max-connections-per-peer
  std::uint64_t over_budget = 0;               // refused for a retry past --max-memory-in-flight
};

class OtlpReceiver {
 public:
  // Binds both servers and starts serving; an error names the address that failed, or says
  // that the TLS certificate and key cannot be used (not PEM, or not a pair).
  static Result<std::unique_ptr<OtlpReceiver>> start(const ReceiverOptions& options,
                                                     OtlpSink& sink);
  ~OtlpReceiver();  // stops

  OtlpReceiver(const OtlpReceiver&) = delete;
  OtlpReceiver& operator=(const OtlpReceiver&) = delete;

  // The bound addresses (with the chosen port when 0 was asked for); nullopt when disabled.
  std::optional<Endpoint> grpc_endpoint() const;
  std::optional<Endpoint> http_endpoint() const;

  // Stops accepting, lets requests in flight finish (bounded), and returns when both servers
  // are down. Idempotent.
  void stop();

  ReceiverStats stats() const;

 private:
  struct Impl;
  explicit OtlpReceiver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lens::cli
