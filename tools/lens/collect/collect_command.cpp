// `lens collect`: an OTLP receiver for one machine. Serves OTLP/gRPC and OTLP/HTTP on loopback
// by default, appends every request as one OTLP JSON line to traces.jsonl, metrics.jsonl or
// logs.jsonl under --out, shows a live per-rank summary on stderr and stops cleanly on SIGINT
// or SIGTERM. Exit status: 0 after a clean stop, 1 when it cannot start, 2 on invalid flags.
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "collect_server/otlp_receiver.hpp"
#include "collect_server/otlp_sink.hpp"

namespace lens::cli {
namespace {

constexpr const char* kDefaultGrpc = "127.0.0.1:4317";
constexpr const char* kDefaultHttp = "127.0.0.1:4318";
constexpr const char* kDefaultOut = "lens-otlp";

constexpr const char* kCollectUsage =
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

int fail(const std::string& message) {
  std::cerr << "lens: " << message << "\n";
  return 2;
}

// N, NK, NM or NG (powers of 1024).
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

// A token read from a file or the environment: surrounding whitespace (a trailing newline) is
// not part of it.
std::string trimmed(std::string text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

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

// --max-request-items, --max-request-memory, --grpc-max-streams and --grpc-max-connections;
// returns the error for the first bad one ("" when all are valid).
std::string parse_limits(const ParsedOptions& options, ReceiverOptions& receiver) {
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

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Rank labels in numeric order ("2" before "10"), anything else after them.
std::vector<std::pair<std::string, RankCounts>> sorted_ranks(
    const std::map<std::string, RankCounts>& ranks) {
  std::vector<std::pair<std::string, RankCounts>> out(ranks.begin(), ranks.end());
  auto numeric = [](const std::string& s) {
    return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  std::stable_sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    const bool na = numeric(a.first);
    const bool nb = numeric(b.first);
    if (na != nb) return na;
    if (na) return std::stol(a.first) < std::stol(b.first);
    return a.first < b.first;
  });
  return out;
}

std::string rank_text(const std::string& rank, const RankCounts& counts) {
  return "rank " + rank + ": " + std::to_string(counts.spans) + " spans, " +
         std::to_string(counts.points) + " points, " + std::to_string(counts.logs) + " logs";
}

std::string requests_text(const SinkStats& sink, const ReceiverStats& receiver) {
  const std::uint64_t rejected = receiver.malformed + receiver.unauthenticated;
  std::string text = std::to_string(sink.requests + rejected) + " requests";
  if (rejected != 0) text += ", " + std::to_string(rejected) + " rejected";
  if (sink.dropped_requests != 0) {
    text += ", " + std::to_string(sink.dropped_items) + " items dropped";
  }
  if (receiver.grpc_connections_refused != 0) {
    text += ", " + std::to_string(receiver.grpc_connections_refused) +
            " gRPC connections closed (--grpc-max-connections)";
  }
  if (receiver.over_budget != 0) {
    text += ", " + std::to_string(receiver.over_budget) +
            " refused for a retry (--max-memory-in-flight)";
  }
  if (receiver.http_timed_out != 0) {
    text += ", " + std::to_string(receiver.http_timed_out) +
            " HTTP connections closed (--http-request-timeout)";
  }
  if (receiver.http_over_peer_cap != 0) {
    text += ", " + std::to_string(receiver.http_over_peer_cap) +
            " HTTP connections closed (--http-max-connections-per-peer)";
  }
  if (sink.retry_requests != 0) {
    // Answered 503 / UNAVAILABLE: lost unless the client sent them again.
    text += ", " + std::to_string(sink.retry_items) + " items refused for a retry (write failed)";
  }
  return text;
}

// The live line: totals, then up to eight ranks.
std::string summary_line(const SinkStats& sink, const ReceiverStats& receiver) {
  constexpr std::size_t kShownRanks = 8;
  std::string line = "lens collect: " + requests_text(sink, receiver);
  const auto ranks = sorted_ranks(sink.ranks);
  for (std::size_t i = 0; i < ranks.size() && i < kShownRanks; ++i) {
    line += " | " + rank_text(ranks[i].first, ranks[i].second);
  }
  if (ranks.size() > kShownRanks) {
    line += " | +" + std::to_string(ranks.size() - kShownRanks) + " more ranks";
  }
  return line;
}

std::size_t terminal_width() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1) {
    return size.ws_col - 1;
  }
  return 200;
}

// What `lens collect`'s flags ask for.
struct CollectOptions {
  ReceiverOptions receiver;
  std::string out;
  std::uint64_t max_bytes = 0;
};

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

// All of `lens collect`'s flags, in the order their errors are reported.
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
  if (std::string error = parse_limits(options, collect.receiver); !error.empty()) return error;
  if (std::string error = parse_token(options, collect.receiver.token); !error.empty()) {
    return error;
  }
  return parse_tls(options, collect.receiver.tls);
}

// Readies the process for serving before any thread starts; returns the stop signals (SIGINT,
// SIGTERM), blocked so that they are taken with sigtimedwait and every thread inherits the mask.
sigset_t prepare_process() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not end the collector
  // A file size limit (ulimit -f) makes a write fail with EFBIG, answered like a full disk,
  // instead of ending the collector.
  std::signal(SIGXFSZ, SIG_IGN);
  // gRPC 1.51 stops accepting for good when accept() fails with EMFILE; connections past
  // --grpc-max-connections are accepted before they are closed, so keep the open-file limit as
  // high as this process may set it.
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  return stop_signals;
}

// The start line on stdout, and a warning for each address off loopback without a token.
void print_listening(const OtlpReceiver& server, const CollectOptions& collect) {
  auto bound = [](const std::optional<Endpoint>& e) { return e ? e->to_string() : "off"; };
  const ReceiverOptions& receiver = collect.receiver;
  std::error_code ec;
  const std::filesystem::path out_path = std::filesystem::absolute(collect.out, ec);
  std::cout << "lens collect: listening grpc=" << bound(server.grpc_endpoint())
            << " http=" << bound(server.http_endpoint())
            << (receiver.tls ? (receiver.tls->client_ca_pem.empty() ? " tls=on" : " tls=mtls") : "")
            << " out=" << (ec ? collect.out : out_path.lexically_normal().string()) << std::endl;
  for (const auto& endpoint : {server.grpc_endpoint(), server.http_endpoint()}) {
    if (endpoint && !is_loopback(endpoint->host) && receiver.token.empty()) {
      std::cerr << "lens collect: warning: listening on " << endpoint->to_string()
                << " without --token; anyone who can reach it can write to " << collect.out << "\n";
    }
  }
}

// The live summary until a stop signal: rewritten in place on a terminal, else a line every few
// seconds when it changed (log files stay readable). True when a line is left open on the
// terminal.
bool show_summary_until_stopped(const sigset_t& stop_signals, const OtlpSink& sink,
                                const OtlpReceiver& server) {
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  const timespec wait = tty ? timespec{0, 500'000'000} : timespec{5, 0};
  std::string last_line;
  int signal_number = -1;
  while (signal_number < 0) {
    signal_number = sigtimedwait(&stop_signals, nullptr, &wait);
    if (signal_number < 0 && errno != EAGAIN && errno != EINTR) {
      break;
    }
    const std::string line = summary_line(sink.stats(), server.stats());
    if (line == last_line) continue;
    last_line = line;
    if (tty) {
      std::cerr << "\r" << line.substr(0, terminal_width()) << "\x1b[K" << std::flush;
    } else if (signal_number < 0) {
      std::cerr << line << "\n";
    }
  }
  return tty && !last_line.empty();
}

// The totals once stopped, and a line per rank.
void print_stopped(const SinkStats& stats, const ReceiverStats& receiver_stats,
                   const std::string& out) {
  std::cerr << "lens collect: stopped; " << requests_text(stats, receiver_stats) << " ("
            << receiver_stats.malformed << " malformed, " << receiver_stats.unauthenticated
            << " unauthenticated, " << stats.dropped_requests << " dropped); " << stats.bytes
            << " bytes in " << out << "\n";
  for (const auto& [rank, counts] : sorted_ranks(stats.ranks)) {
    std::cerr << "lens collect: " << rank_text(rank, counts) << "\n";
  }
}

}  // namespace

int collect_command(const std::vector<std::string>& args) {
  const OptionSpec spec{
      {"--grpc", "--http", "--out", "--max-bytes", "--token", "--token-file", "--tls-cert",
       "--tls-key", "--tls-client-ca", "--max-request-items", "--max-request-memory",
       "--grpc-max-streams", "--grpc-max-connections", "--http-request-timeout",
       "--http-max-connections-per-peer", "--max-memory-in-flight"},
      {"--help"}};
  auto parsed = parse_command_options(args, spec, "collect", kCollectUsage);
  if (const int* exit_status = std::get_if<int>(&parsed)) return *exit_status;
  CollectOptions collect;
  if (std::string error = parse_collect_options(std::get<ParsedOptions>(parsed), collect);
      !error.empty()) {
    return fail(error);
  }

  const sigset_t stop_signals = prepare_process();
  auto sink = OtlpSink::open(collect.out, collect.max_bytes);
  if (!sink.ok()) {
    std::cerr << "lens collect: " << sink.message() << "\n";
    return 1;
  }
  auto receiver = OtlpReceiver::start(collect.receiver, **sink);
  if (!receiver.ok()) {
    std::cerr << "lens collect: " << receiver.message() << "\n";
    return 1;
  }
  OtlpReceiver& server = **receiver;
  print_listening(server, collect);
  const bool line_open = show_summary_until_stopped(stop_signals, **sink, server);

  server.stop();  // requests in flight finish and are written before the files close
  const SinkStats stats = (*sink)->stats();
  const ReceiverStats receiver_stats = server.stats();
  sink->reset();
  if (line_open) std::cerr << "\n";
  print_stopped(stats, receiver_stats, collect.out);
  return 0;
}

}  // namespace lens::cli
