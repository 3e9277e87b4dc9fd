// Where and how `lens collect`'s servers listen: the address, the TLS files, and the gRPC
// stream limits. Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

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

// TLS for both servers: the server's certificate chain and private key (PEM), and optionally
// the CA that client certificates must be signed by (mTLS: a client without one is refused).
// The files are given by path (cpp-httplib loads them) and their content (gRPC takes PEM text).
struct TlsServerFiles {
  std::string certificate_path;
  std::string key_path;
  std::string client_ca_path;  // empty: no client certificates asked for
  std::string certificate_pem;
  std::string key_pem;
  std::string client_ca_pem;
};

// Streams (calls) gRPC clients may hold open, sending nothing: each costs the server about
// 12 KiB, so at most connections x per_connection x 12 KiB in total (234 MiB by default).
struct GrpcStreamLimits {
  static constexpr int kDefaultPerConnection = 100;
  static constexpr std::size_t kDefaultConnections = 200;
  int per_connection = kDefaultPerConnection;     // --grpc-max-streams (HTTP/2 SETTINGS)
  std::size_t connections = kDefaultConnections;  // --grpc-max-connections
};

}  // namespace lens::cli
