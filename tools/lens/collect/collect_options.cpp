// `lens collect`'s flags (see collect_options.hpp).
#include "collect/collect_options.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace lens::cli {

const char* const kCollectUsage =
    "usage: lens collect [--grpc HOST:PORT|off] [--http HOST:PORT|off] [--out DIR]\n"
    "                    [--max-bytes N] [--token T | --token-file PATH]\n"
    "                    [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
    "                    [--max-request-items N] [--max-request-memory N]\n"
    "                    [--grpc-max-streams N] [--grpc-max-connections N]\n"
    "                    [--http-request-timeout S] [--http-max-connections-per-peer N]\n"
    "                    [--max-memory-in-flight N]\n"
    "\n"
    "Receives OTLP over gRPC and HTTP (protobuf or JSON, gzip or not) and appends each\n"
    "request as one OTLP JSON line to traces.jsonl, metrics.jsonl or logs.jsonl under DIR.\n"
    "Stops cleanly on SIGINT or SIGTERM.\n"
    "\n"
    "options:\n"
    "  --grpc HOST:PORT  OTLP/gRPC address (default 127.0.0.1:4317; port 0 picks a free\n"
    "                    port; 'off' disables it)\n"
    "  --http HOST:PORT  OTLP/HTTP address (default 127.0.0.1:4318; same rules)\n"
    "  --out DIR         output directory, created if missing (default ./lens-otlp)\n"
    "  --max-bytes N     cap on the three files' total size; requests past it are dropped\n"
    "                    and answered with partial_success (suffix K, M or G; default 0 =\n"
    "                    no cap)\n"
    "  --token T         require 'Authorization: Bearer T' on every request (visible to\n"
    "                    other users in ps; prefer --token-file or LENS_COLLECT_TOKEN)\n"
    "  --token-file PATH read the token from PATH (surrounding whitespace ignored)\n"
    "  --tls-cert FILE   serve both protocols over TLS with this PEM certificate (chain)\n"
    "  --tls-key FILE    the PEM private key of --tls-cert\n"
    "  --tls-client-ca FILE  require client certificates signed by this PEM CA (mTLS)\n"
    "  --max-request-items N   items (resources, scopes, spans, logs, metrics, points,\n"
    "                    attributes, ...) one request may hold; more: RESOURCE_EXHAUSTED /\n"
    "                    HTTP 413 (default 1000000)\n"
    "  --max-request-memory N  estimated memory one decoded request may take (suffix K, M\n"
    "                    or G; default 128M); more: RESOURCE_EXHAUSTED / HTTP 413\n"
    "  --grpc-max-streams N    gRPC streams one connection may have open at once; a\n"
    "                    client queues the others (default 100)\n"
    "  --grpc-max-connections N  gRPC connections held at once; newer ones past it are\n"
    "                    closed (clients retry) (default 200)\n"
    "  --max-memory-in-flight N  estimated memory all requests in flight may take together\n"
    "                    (suffix K, M or G; default 160M); more: HTTP 503 + Retry-After /\n"
    "                    RESOURCE_EXHAUSTED + retry pushback, which exporters retry\n"
    "  --http-request-timeout S  seconds an HTTP request's headers and body may take to\n"
    "                    arrive; then its connection is closed (default 60)\n"
    "  --http-max-connections-per-peer N  HTTP connections one client address may hold at\n"
    "                    once; newer ones past it are closed (default 256)\n"
    "  --help            show this help\n"
    "\n"
    "Without --token or --token-file, the token is taken from the environment variable\n"
    "LENS_COLLECT_TOKEN when it is set and not empty.\n"
    "\n"
    "On start it prints one line on stdout:\n"
    "  lens collect: listening grpc=HOST:PORT http=HOST:PORT [tls=on|mtls] out=DIR\n";

const OptionSpec kCollectFlags{
    {"--grpc", "--http", "--out", "--max-bytes", "--token", "--token-file", "--tls-cert",
     "--tls-key", "--tls-client-ca", "--max-request-items", "--max-request-memory",
     "--grpc-max-streams", "--grpc-max-connections", "--http-request-timeout",
     "--http-max-connections-per-peer", "--max-memory-in-flight"},
    {"--help"}};

namespace {

constexpr const char* kDefaultGrpc = "127.0.0.1:4317";
constexpr const char* kDefaultHttp = "127.0.0.1:4318";
constexpr const char* kDefaultOut = "lens-otlp";

// Reads one of the --tls-* files and checks that it holds the PEM block `label` (e.g.
// "CERTIFICATE"; "PRIVATE KEY" also matches "EC PRIVATE KEY" and "RSA PRIVATE KEY").
std::optional<std::string> read_pem(const std::string& flag, const std::string& path,
                                    const std::string& label, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + flag + " '" + path + "' (" + std::strerror(errno) +
            "); accepted: a readable PEM file";
    return std::nullopt;
  }
  std::stringstream content;
  content << in.rdbuf();
  std::string pem = content.str();
  if (pem.find("-----BEGIN ") == std::string::npos ||
      pem.find(label + "-----") == std::string::npos) {
    error = "invalid file for " + flag + ": '" + path + "' holds no PEM " + label +
            "; accepted: a PEM file with a '-----BEGIN ... " + label + "-----' block";
    return std::nullopt;
  }
  return pem;
}

// A positive count up to `max` ("" when `text` is not one).
std::optional<std::uint64_t> parse_count(const std::string& text, std::uint64_t max) {
  if (text.empty() || text.size() > 19 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const std::uint64_t value = std::stoull(text);
  if (value == 0 || value > max) return std::nullopt;
  return value;
}

// The count limits: --max-request-items, --grpc-max-streams, --grpc-max-connections,
// --http-request-timeout and --http-max-connections-per-peer; the error for the first bad one
// ("" when all are valid).
std::string parse_count_limits(const ParsedOptions& options, ReceiverOptions& receiver) {
  constexpr std::uint64_t kMaxStreams = 1u << 30;
  constexpr std::uint64_t kMaxConnections = 1'000'000;
  if (auto value = options.get("--max-request-items")) {
    auto count = parse_count(*value, std::numeric_limits<std::uint64_t>::max());
    if (!count) {
      return "invalid value for --max-request-items: '" + *value +
             "'; accepted: a whole number >= 1 (default 1000000)";
    }
    receiver.limits.max_items = *count;
  }
  if (auto value = options.get("--grpc-max-streams")) {
    auto count = parse_count(*value, kMaxStreams);
    if (!count) {
      return "invalid value for --grpc-max-streams: '" + *value + "'; accepted: 1 to " +
             std::to_string(kMaxStreams) + " (default 100)";
    }
    receiver.grpc_streams.per_connection = static_cast<int>(*count);
  }
  if (auto value = options.get("--grpc-max-connections")) {
    auto count = parse_count(*value, kMaxConnections);
    if (!count) {
      return "invalid value for --grpc-max-connections: '" + *value + "'; accepted: 1 to " +
             std::to_string(kMaxConnections) + " (default 200)";
    }
    receiver.grpc_streams.connections = static_cast<std::size_t>(*count);
  }
  if (auto value = options.get("--http-request-timeout")) {
    auto seconds = parse_count(*value, 86'400);
    if (!seconds) {
      return "invalid value for --http-request-timeout: '" + *value +
             "'; accepted: whole seconds, 1 to 86400 (default 60)";
    }
    receiver.http_connections.request_timeout = std::chrono::seconds(*seconds);
  }
  if (auto value = options.get("--http-max-connections-per-peer")) {
    auto count = parse_count(*value, kMaxConnections);
    if (!count) {
      return "invalid value for --http-max-connections-per-peer: '" + *value +
             "'; accepted: 1 to " + std::to_string(kMaxConnections) + " (default 256)";
    }
    receiver.http_connections.per_peer = static_cast<std::size_t>(*count);
  }
  return {};
}

// The memory limits: --max-memory-in-flight, then --max-request-memory.
std::string parse_memory_limits(const ParsedOptions& options, ReceiverOptions& receiver) {
  if (auto value = options.get("--max-memory-in-flight")) {
    auto bytes = parse_bytes(*value);
    if (!bytes || *bytes < (1u << 20)) {
      return "invalid value for --max-memory-in-flight: '" + *value +
             "'; accepted: a byte count >= 1M, optionally with suffix K, M or G (default 160M)";
    }
    receiver.max_memory_in_flight = *bytes;
  }
  if (auto value = options.get("--max-request-memory")) {
    auto bytes = parse_bytes(*value);
    if (!bytes || *bytes < (1u << 20)) {
      return "invalid value for --max-request-memory: '" + *value +
             "'; accepted: a byte count >= 1M, optionally with suffix K, M or G (default 128M)";
    }
    receiver.limits.max_memory = *bytes;
  }
  return {};
}

// --grpc and --http; the error for the first bad one ("" when both are valid).
std::string parse_endpoints(const ParsedOptions& options, ReceiverOptions& receiver) {
  for (const char* flag : {"--grpc", "--http"}) {
    const std::string value =
        options.get(flag).value_or(std::string(flag) == "--grpc" ? kDefaultGrpc : kDefaultHttp);
    std::optional<Endpoint> endpoint;
    if (value != "off") {
      endpoint = parse_endpoint(value);
      if (!endpoint) {
        return std::string("invalid value for ") + flag + ": '" + value +
               "'; accepted: HOST:PORT such as 127.0.0.1:" +
               (std::string(flag) == "--grpc" ? "4317" : "4318") +
               " or [::1]:PORT (port 0 picks a free port), or off";
      }
    }
    (std::string(flag) == "--grpc" ? receiver.grpc : receiver.http) = endpoint;
  }
  if (!receiver.grpc && !receiver.http) {
    return "--grpc and --http are both off; accepted: at least one HOST:PORT";
  }
  return {};
}

// --token, --token-file, or else LENS_COLLECT_TOKEN; the error never shows the token.
std::string parse_token(const ParsedOptions& options, std::string& token) {
  if (options.get("--token") && options.get("--token-file")) {
    return "--token and --token-file are both given; accepted: one of them";
  }
  const auto valid = [](const std::string& t) {
    return !t.empty() && t.find_first_of(" \t\r\n") == std::string::npos;
  };
  if (auto given = options.get("--token")) {
    if (!valid(*given)) {
      // Not echoed: a mistyped token is still close to the real one.
      return "invalid value for --token (value not shown); accepted: a non-empty token "
             "without spaces";
    }
    token = *given;
  } else if (auto path = options.get("--token-file")) {
    std::ifstream in(*path);
    std::stringstream content;
    content << in.rdbuf();
    if (!in) {
      return "cannot read --token-file '" + *path +
             "'; accepted: a readable file holding the token";
    }
    // The token itself is never printed.
    token = trimmed(content.str());
    if (!valid(token)) {
      return "invalid token in --token-file '" + *path +
             "' (value not shown); accepted: a non-empty token without spaces";
    }
  } else if (const char* env = std::getenv("LENS_COLLECT_TOKEN"); env != nullptr && *env != 0) {
    token = trimmed(env);
    if (!valid(token)) {
      return "invalid token in LENS_COLLECT_TOKEN (value not shown); accepted: a non-empty token "
             "without spaces";
    }
  }
  return {};
}

// --tls-cert, --tls-key and --tls-client-ca, read and checked as PEM files.
std::string parse_tls(const ParsedOptions& options, std::optional<TlsServerFiles>& tls) {
  const auto tls_cert = options.get("--tls-cert");
  const auto tls_key = options.get("--tls-key");
  const auto tls_client_ca = options.get("--tls-client-ca");
  if (tls_cert.has_value() != tls_key.has_value()) {
    return std::string(tls_cert ? "--tls-cert is given without --tls-key"
                                : "--tls-key is given without --tls-cert") +
           "; accepted: both (a PEM certificate and its private key), or neither";
  }
  if (tls_client_ca && !tls_cert) {
    return "--tls-client-ca is given without --tls-cert and --tls-key; accepted: client "
           "certificates only over TLS";
  }
  if (!tls_cert) return {};
  TlsServerFiles files;
  files.certificate_path = *tls_cert;
  files.key_path = *tls_key;
  std::string error;
  const auto certificate = read_pem("--tls-cert", *tls_cert, "CERTIFICATE", error);
  if (!certificate) return error;
  const auto key = read_pem("--tls-key", *tls_key, "PRIVATE KEY", error);
  if (!key) return error;
  files.certificate_pem = *certificate;
  files.key_pem = *key;
  if (tls_client_ca) {
    const auto client_ca = read_pem("--tls-client-ca", *tls_client_ca, "CERTIFICATE", error);
    if (!client_ca) return error;
    files.client_ca_path = *tls_client_ca;
    files.client_ca_pem = *client_ca;
  }
  tls = std::move(files);
  return {};
}

}  // namespace

std::optional<std::uint64_t> parse_bytes(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::uint64_t multiplier = 1;
  std::string digits = text;
  switch (text.back()) {
    case 'K':
    case 'k':
      multiplier = 1ull << 10;
      break;
    case 'M':
    case 'm':
      multiplier = 1ull << 20;
      break;
    case 'G':
    case 'g':
      multiplier = 1ull << 30;
      break;
    default:
      break;
  }
  if (multiplier != 1) digits.pop_back();
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
      digits.size() > 19) {
    return std::nullopt;
  }
  const unsigned long long value = std::stoull(digits);
  if (value > std::numeric_limits<std::uint64_t>::max() / multiplier) {
    return std::nullopt;
  }
  return value * multiplier;
}

std::string trimmed(std::string text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::string parse_collect_options(const ParsedOptions& options, CollectOptions& collect) {
  if (std::string error = parse_endpoints(options, collect.receiver); !error.empty()) {
    return error;
  }
  collect.out = options.get("--out").value_or(kDefaultOut);
  if (collect.out.empty()) return "invalid value for --out: ''; accepted: a directory path";
  if (auto value = options.get("--max-bytes")) {
    auto bytes = parse_bytes(*value);
    if (!bytes) {
      return "invalid value for --max-bytes: '" + *value +
             "'; accepted: a byte count >= 0, optionally with suffix K, M or G (0 = no cap)";
    }
    collect.max_bytes = *bytes;
  }
  if (std::string error = parse_count_limits(options, collect.receiver); !error.empty()) {
    return error;
  }
  if (std::string error = parse_memory_limits(options, collect.receiver); !error.empty()) {
    return error;
  }
  if (std::string error = parse_token(options, collect.receiver.token); !error.empty()) {
    return error;
  }
  return parse_tls(options, collect.receiver.tls);
}

}  // namespace lens::cli
