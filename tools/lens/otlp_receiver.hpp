// The OTLP servers of `lens collect`: OTLP/gRPC (TraceService, MetricsService, LogsService
// Export) and OTLP/HTTP (POST /v1/traces, /v1/metrics, /v1/logs; binary protobuf or JSON,
// optionally gzip). Requests go to an OtlpSink; malformed ones are answered with
// INVALID_ARGUMENT / HTTP 400 and the servers keep serving.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "lens/result.hpp"
#include "otlp_sink.hpp"

namespace lens::cli {

// A listening address. `host` is without brackets ("::1"); port 0 picks a free port.
struct Endpoint {
  std::string host;
  int port = 0;

  // "127.0.0.1:4317" or "[::1]:4317".
  std::string to_string() const;
};

// Parses HOST:PORT ("127.0.0.1:4317", "localhost:0", "[::1]:4318").
std::optional<Endpoint> parse_endpoint(const std::string& text);

struct ReceiverOptions {
  std::optional<Endpoint> grpc;  // nullopt: no gRPC server
  std::optional<Endpoint> http;  // nullopt: no HTTP server
  std::string token;             // non-empty: "Authorization: Bearer <token>" required
};

struct ReceiverStats {
  std::uint64_t malformed = 0;        // undecodable bodies, wrong content types, bad paths
  std::uint64_t unauthenticated = 0;  // missing or wrong token
};

class OtlpReceiver {
 public:
  // Binds both servers and starts serving; an error names the address that failed.
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

  struct Impl;

 private:
  explicit OtlpReceiver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lens::cli
