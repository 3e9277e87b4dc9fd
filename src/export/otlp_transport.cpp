// OTLP/gRPC and OTLP/HTTP transports (see otlp_transport.hpp).
#include "export/otlp_transport.hpp"

#include <curl/curl.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>
#include <opentelemetry/exporters/otlp/otlp_grpc_client.h>
#include <opentelemetry/exporters/otlp/otlp_grpc_exporter_options.h>
#include <opentelemetry/ext/http/common/url_parser.h>
#include <opentelemetry/proto/collector/logs/v1/logs_service.grpc.pb.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "core/parse.hpp"
#include "lens/otlp_json.hpp"
#include "lens/version.hpp"

namespace lens::exporters {
namespace {

namespace otlp = opentelemetry::exporter::otlp;
namespace logs_v1 = opentelemetry::proto::collector::logs::v1;
namespace metrics_v1 = opentelemetry::proto::collector::metrics::v1;
namespace trace_v1 = opentelemetry::proto::collector::trace::v1;
using google::protobuf::Message;

std::string user_agent() { return std::string("lens-cpp/") + kVersion; }

// The most an exporter reads of one answer: an Export*ServiceResponse is a few hundred bytes
// (partial_success and its message), so a receiver that answers more (an endless body or
// endless headers, a huge gRPC message) is cut off there instead of growing the training
// process. gRPC applies it to the message (its metadata is bounded by gRPC's own default, 8 KiB);
// curl to the body and, separately, to the headers.
constexpr std::size_t kMaxResponseBytes = 64 * 1024;

// The calls on the wire, so that cancel() can end them; after it, none starts.
template <class Call>
class InFlight {
 public:
  // False once cancelled.
  bool add(Call* call) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cancelled_) return false;
    calls_.insert(call);
    return true;
  }
  void remove(Call* call) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.erase(call);
  }
  template <class Cancel>
  void cancel(Cancel&& cancel_call) {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
    for (Call* call : calls_) cancel_call(call);
  }

 private:
  std::mutex mutex_;
  bool cancelled_ = false;
  std::set<Call*> calls_;
};

std::unique_ptr<Message> new_response(Signal signal) {
  switch (signal) {
    case Signal::traces:
      return std::make_unique<trace_v1::ExportTraceServiceResponse>();
    case Signal::metrics:
      return std::make_unique<metrics_v1::ExportMetricsServiceResponse>();
    case Signal::logs:
      break;
  }
  return std::make_unique<logs_v1::ExportLogsServiceResponse>();
}

// Copies the partial_success of an Export*ServiceResponse into `attempt`.
void read_partial_success(Signal signal, const Message& response, Attempt& attempt) {
  switch (signal) {
    case Signal::traces: {
      const auto& p = static_cast<const trace_v1::ExportTraceServiceResponse&>(response);
      attempt.rejected = p.partial_success().rejected_spans();
      attempt.rejected_message = p.partial_success().error_message();
      return;
    }
    case Signal::metrics: {
      const auto& p = static_cast<const metrics_v1::ExportMetricsServiceResponse&>(response);
      attempt.rejected = p.partial_success().rejected_data_points();
      attempt.rejected_message = p.partial_success().error_message();
      return;
    }
    case Signal::logs: {
      const auto& p = static_cast<const logs_v1::ExportLogsServiceResponse&>(response);
      attempt.rejected = p.partial_success().rejected_log_records();
      attempt.rejected_message = p.partial_success().error_message();
      return;
    }
  }
}

// gRPC writes its own ERROR line to stderr on every failed TLS handshake ("Handshake failed with
// fatal error SSL_ERROR_SSL: ... certificate verify failed"), once per attempt: a backend with a
// certificate lens cannot verify would write one line per batch into a training job's log,
// while lens reports each cause once itself. So gRPC's log is silenced, process-wide, from the
// first gRPC exporter on, unless GRPC_VERBOSITY asks for it.
void drop_grpc_log(gpr_log_func_args* /*args*/) {}
void quiet_grpc_log() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function(drop_grpc_log);
  });
}

Attempt failure(Attempt::Kind kind, std::string cause, std::string message) {
  Attempt attempt;
  attempt.kind = kind;
  attempt.cause = std::move(cause);
  attempt.message = std::move(message);
  return attempt;
}

// Added to a TLS failure, or a connection closed during a TLS connect, when the client has no
// client certificate.
constexpr const char* kClientCertificateHint =
    "if the server requires a client certificate (mTLS), set OTEL_EXPORTER_OTLP_CLIENT_KEY and "
    "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE";

// Added to a timeout that passed before the TLS connection was established.
std::string tls_not_established(bool hint_client_certificate) {
  return std::string("; the TLS connection was not established before the timeout") +
         (hint_client_certificate ? std::string("; ") + kClientCertificateHint : std::string());
}

// A failed TLS handshake, recognised in the text gRPC or curl gives: retrying cannot fix a
// certificate, so it is a permanent failure with its own cause (`protocol`-tls-verify when the
// server's certificate could not be verified, else `protocol`-tls). With TLS 1.3 a server that
// refuses the client's certificate (or its absence) says so only after the client's side of the
// handshake, so an SSL error while writing or reading counts too — unless it is what a
// connection the server closed looks like (reset, EOF, broken pipe: retried as a network error).
// nullopt when `detail` does not speak of TLS or is such a network error. `handshake_failed`:
// the client library says the handshake failed; `hint_client_certificate`: the line suggests
// setting a client certificate (the client has none, and TLS was asked for).
std::optional<Attempt> tls_failure(const std::string& protocol, const std::string& detail,
                                   bool handshake_failed, bool hint_client_certificate) {
  const std::string lower = lens::detail::to_lower(detail);
  const auto has = [&lower](const char* word) { return lower.find(word) != std::string::npos; };
  const std::string shown = detail.empty() ? std::string() : " (" + detail.substr(0, 200) + ")";
  // A handshake the server never finishes is a timeout (retried), not a certificate problem.
  if (has("timed out") || has("timeout")) return std::nullopt;
  if (has("certificate verify failed") || has("certificate_verify_failed") ||
      has("certificate problem") || has("peer certificate") || has("unable to get local issuer") ||
      has("self-signed") || has("self signed") || has("subject name") ||
      has("does not match target host")) {
    return failure(Attempt::Kind::kPermanent, protocol + "-tls-verify",
                   "TLS handshake failed: certificate verification failed; check that "
                   "OTEL_EXPORTER_OTLP_CERTIFICATE is the CA that signed the server's certificate "
                   "and that the certificate names the endpoint's host" +
                       shown);
  }
  // A TLS alert is the server refusing the handshake (e.g. "tlsv13 alert certificate required").
  const bool closed = has("reset") || has("eof") || has("syscall") || has("broken pipe") ||
                      has("errno") || has("socket closed") || has("not connected") ||
                      has("handshaker shutdown");
  if (!handshake_failed && !has("alert") && !has("handshake failed") &&
      (closed || !(has("ssl") || has("tls")))) {
    return std::nullopt;
  }
  // A server that requires a client certificate and gets none ends the handshake without
  // saying why (curl: an SSL read or write error).
  return failure(
      Attempt::Kind::kPermanent, protocol + "-tls",
      "TLS handshake failed" + shown +
          (hint_client_certificate ? std::string("; ") + kClientCertificateHint : std::string()));
}

// What a failure adds for the person who configured the endpoint: the protocol variable to
// change when the receiver speaks the other protocol, and that an endpoint without a scheme
// meant TLS when a plain-text receiver refuses the handshake.
struct EndpointHints {
  explicit EndpointHints(const OtlpSignalSettings& s)
      : protocol_variable(s.protocol.source.rfind("env:", 0) == 0 ? s.protocol.source.substr(4)
                                                                  : "OTEL_EXPORTER_OTLP_PROTOCOL") {
    const std::string& endpoint = s.endpoint.value;
    const bool has_scheme = endpoint.find("://") != std::string::npos;
    if (!has_scheme && !s.insecure.value && s.protocol.value == OtlpProtocol::grpc) {
      schemeless_endpoint = endpoint;
    }
  }

  Attempt explain(Attempt attempt) const {
    if (attempt.ok()) return attempt;
    const std::string lower = lens::detail::to_lower(attempt.message);
    if (lower.find("http1.x") != std::string::npos) {
      attempt.message +=
          "; the endpoint answers HTTP/1.x, not gRPC: for an OTLP/HTTP receiver "
          "(port 4318 by default) set " +
          protocol_variable + "=http/protobuf";
    } else if (lower.find("http/0.9") != std::string::npos) {
      attempt.message +=
          "; the endpoint does not answer HTTP/1.1 (a gRPC receiver?): for "
          "OTLP/gRPC (port 4317 by default) set " +
          protocol_variable + "=grpc";
    }
    const bool tls_or_unreachable =
        attempt.cause.find("-tls") != std::string::npos || attempt.cause == "grpc-UNAVAILABLE";
    if (!schemeless_endpoint.empty() && tls_or_unreachable) {
      attempt.message += "; the endpoint " + schemeless_endpoint +
                         " has no scheme, which means TLS: for a plain-text receiver use http://" +
                         schemeless_endpoint + " or OTEL_EXPORTER_OTLP_INSECURE=true";
    }
    return attempt;
  }

  std::string protocol_variable;
  std::string schemeless_endpoint;  // empty unless a scheme-less endpoint made it TLS
};

class GrpcTransport final : public OtlpTransport {
 public:
  GrpcTransport(const OtlpSignalSettings& s, Signal signal) : signal_(signal), hints_(s) {
    options_.endpoint = s.endpoint.value;
    // As the OTLP specification says: the scheme decides (https:// is TLS, http:// plain text);
    // OTEL_EXPORTER_OTLP_INSECURE only applies to an endpoint without one ("host:port"), which
    // is TLS unless it is true.
    const bool https = s.endpoint.value.rfind("https://", 0) == 0;
    const bool http = s.endpoint.value.rfind("http://", 0) == 0;
    options_.use_ssl_credentials = https || (!http && !s.insecure.value);
    options_.ssl_credentials_cacert_path = s.certificate.value;
    tls_.ca_path = s.certificate.value;
    tls_.client_key_path = s.client_key.value;
    tls_.client_certificate_path = s.client_certificate.value;
    options_.timeout = std::chrono::milliseconds(s.timeout_ms.value);
    // gRPC metadata keys must be lowercase (HTTP/2); an "Authorization=..." header would
    // otherwise fail every call.
    // The options' constructor read OTEL_EXPORTER_OTLP_HEADERS from the environment as given
    // (mixed case, which grpc++ aborts on): only our parsed settings count.
    options_.metadata.clear();
    for (const auto& header : s.headers.value) {
      options_.metadata.emplace(lens::detail::to_lower(header.key), header.value);
    }
    options_.compression = s.compression.value == "gzip" ? "gzip" : "";
    options_.user_agent = user_agent();
    // Retries are ours (otlp_retry.hpp); this build would ignore these anyway.
    options_.retry_policy_max_attempts = 0;
    target_ = s.endpoint.value + " (grpc)";
    quiet_grpc_log();
    channel_ = make_channel(options_, tls_, channel_error_);
    if (channel_) {
      trace_stub_ = trace_v1::TraceService::NewStub(channel_);
      metrics_stub_ = metrics_v1::MetricsService::NewStub(channel_);
      logs_stub_ = logs_v1::LogsService::NewStub(channel_);
    }
  }

  Attempt send(const Message& request, Millis timeout) noexcept override {
    if (!channel_) {
      return failure(Attempt::Kind::kPermanent, "grpc-channel",
                     "cannot create a gRPC channel to " + options_.endpoint +
                         (channel_error_.empty() ? std::string() : ": " + channel_error_));
    }
    try {
      std::unique_ptr<grpc::ClientContext> context =
          otlp::OtlpGrpcClient::MakeClientContext(options_);
      context->set_deadline(std::chrono::system_clock::now() + timeout);
      if (!in_flight_.add(context.get())) return cancelled();
      auto response = new_response(signal_);
      const grpc::Status status = call(*context, request, *response);
      in_flight_.remove(context.get());
      if (options_.use_ssl_credentials && status.error_code() == grpc::StatusCode::UNAVAILABLE) {
        // gRPC reports a failed TLS handshake as UNAVAILABLE, like a receiver that is down.
        if (std::optional<Attempt> tls =
                tls_failure("grpc", status.error_message(),
                            /*handshake_failed=*/false, hint_client_certificate())) {
          return hints_.explain(std::move(*tls));
        }
      }
      if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
          status.error_message().find("larger than max") != std::string::npos) {
        // Not retried: the receiver may well have taken the data, and will answer so again.
        return failure(Attempt::Kind::kPermanent, "grpc-answer-too-large",
                       "the receiver's answer exceeded " +
                           std::to_string(kMaxResponseBytes / 1024) +
                           " KiB; lens stopped reading it and counts the export as failed (" +
                           status.error_message().substr(0, 200) + ")");
      }
      Attempt attempt =
          classify_grpc_status(status.error_code(), status.error_message(), status.error_details());
      if (attempt.ok()) read_partial_success(signal_, *response, attempt);
      // With TLS 1.3 a server that refuses a missing client certificate closes the connection
      // after the client's side of the handshake: gRPC says "Socket closed" (or "tcp handshaker
      // shutdown"), as for a server that went away. It cannot be told apart, but it can be
      // hinted at.
      if (options_.use_ssl_credentials && hint_client_certificate() &&
          status.error_code() == grpc::StatusCode::UNAVAILABLE &&
          (status.error_message().find("Socket closed") != std::string::npos ||
           status.error_message().find("handshaker shutdown") != std::string::npos)) {
        attempt.message += std::string("; ") + kClientCertificateHint;
      }
      // A deadline that passed while the channel was still connecting (a refused or stalled
      // handshake that gRPC retried) says nothing of TLS by itself: the last attempt of a
      // refused mTLS connect often ends this way, so it carries the same hint.
      if (options_.use_ssl_credentials &&
          status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
          channel_->GetState(/*try_to_connect=*/false) != GRPC_CHANNEL_READY) {
        attempt.message += tls_not_established(hint_client_certificate());
      }
      return hints_.explain(std::move(attempt));
    } catch (...) {
      return failure(Attempt::Kind::kPermanent, "grpc-internal", "out of memory");
    }
  }

  void cancel() noexcept override {
    in_flight_.cancel([](grpc::ClientContext* context) { context->TryCancel(); });
  }

 private:
  // The TLS files of OTEL_EXPORTER_OTLP_{CERTIFICATE,CLIENT_KEY,CLIENT_CERTIFICATE}.
  struct TlsFiles {
    std::string ca_path;
    std::string client_key_path;
    std::string client_certificate_path;
  };

  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is also the time gRPC gives one connection attempt (TCP,
  // TLS and HTTP/2 handshakes; 20 s by default), and an attempt at a port nobody listens on
  // only ends then: 2 s lets a TLS handshake to a distant or busy backend finish and still
  // finds a restarted collector within seconds (100 ms failed TLS handshakes that take longer,
  // as "tcp handshaker shutdown").
  // As OtlpGrpcClient::MakeChannel does (TLS with the CA file, gzip, user agent), plus client
  // certificates (mTLS; Debian's 1.19 is built without ENABLE_OTLP_GRPC_SSL_MTLS_PREVIEW, so
  // its options cannot carry them) and a reconnect backoff capped at 5 s: gRPC's default grows
  // to 120 s, so a collector restarted during a long outage would wait minutes for its first
  // data. On failure returns null with the reason in `error`.
  static std::shared_ptr<grpc::Channel> make_channel(const otlp::OtlpGrpcClientOptions& o,
                                                     const TlsFiles& tls, std::string& error) {
    const opentelemetry::ext::http::common::UrlParser url(o.endpoint);
    if (!url.success_ || url.host_.empty()) {
      error = "not a URL or host:port";
      return nullptr;
    }
    grpc::ChannelArguments args;
    args.SetUserAgentPrefix(o.user_agent);
    if (o.compression == "gzip") args.SetCompressionAlgorithm(GRPC_COMPRESS_GZIP);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
    args.SetMaxReceiveMessageSize(static_cast<int>(kMaxResponseBytes));
    std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
    if (o.use_ssl_credentials) {
      grpc::SslCredentialsOptions ssl;
      const std::pair<const std::string*, std::string*> files[] = {
          {&tls.ca_path, &ssl.pem_root_certs},
          {&tls.client_key_path, &ssl.pem_private_key},
          {&tls.client_certificate_path, &ssl.pem_cert_chain}};
      for (const auto& [path, pem] : files) {
        if (path->empty()) continue;
        if (!read_file(*path, *pem)) {
          error = "cannot read the TLS file '" + *path + "'";
          return nullptr;
        }
      }
      if (ssl.pem_private_key.empty() != ssl.pem_cert_chain.empty()) {
        error = "a client key needs a client certificate and the reverse";
        return nullptr;
      }
      credentials = grpc::SslCredentials(ssl);
    }
    return grpc::CreateCustomChannel(url.host_ + ":" + std::to_string(url.port_), credentials,
                                     args);
  }

  static bool read_file(const std::string& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::stringstream content;
    content << in.rdbuf();
    out = content.str();
    return !in.bad();
  }

  static Attempt cancelled() {
    return failure(Attempt::Kind::kPermanent, "shutdown", "the exporter was shut down");
  }

  grpc::Status call(grpc::ClientContext& context, const Message& request, Message& response) {
    switch (signal_) {
      case Signal::traces:
        return trace_stub_->Export(&context,
                                   static_cast<const trace_v1::ExportTraceServiceRequest&>(request),
                                   static_cast<trace_v1::ExportTraceServiceResponse*>(&response));
      case Signal::metrics:
        return metrics_stub_->Export(
            &context, static_cast<const metrics_v1::ExportMetricsServiceRequest&>(request),
            static_cast<metrics_v1::ExportMetricsServiceResponse*>(&response));
      case Signal::logs:
        break;
    }
    return logs_stub_->Export(&context,
                              static_cast<const logs_v1::ExportLogsServiceRequest&>(request),
                              static_cast<logs_v1::ExportLogsServiceResponse*>(&response));
  }

  // A failed TLS connect hints at a client certificate when the client has none and TLS was
  // asked for (https://); a scheme-less endpoint's TLS gets the scheme hint instead.
  bool hint_client_certificate() const noexcept {
    return tls_.client_certificate_path.empty() && hints_.schemeless_endpoint.empty();
  }

  const Signal signal_;
  const EndpointHints hints_;
  otlp::OtlpGrpcExporterOptions options_;
  TlsFiles tls_;
  std::string channel_error_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<trace_v1::TraceService::Stub> trace_stub_;
  std::unique_ptr<metrics_v1::MetricsService::Stub> metrics_stub_;
  std::unique_ptr<logs_v1::LogsService::Stub> logs_stub_;
  InFlight<grpc::ClientContext> in_flight_;
};

std::string gzip(const std::string& data) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream sink(&out);
    google::protobuf::io::GzipOutputStream::Options options;
    options.format = google::protobuf::io::GzipOutputStream::GZIP;
    google::protobuf::io::GzipOutputStream stream(&sink, options);
    void* buffer = nullptr;
    int size = 0;
    std::size_t written = 0;
    while (written < data.size() && stream.Next(&buffer, &size)) {
      const std::size_t n =
          std::min<std::size_t>(static_cast<std::size_t>(size), data.size() - written);
      std::memcpy(buffer, data.data() + written, n);
      written += n;
      if (n < static_cast<std::size_t>(size)) stream.BackUp(static_cast<int>(size - n));
    }
    stream.Close();
  }
  return out;
}

// What one HTTP exchange gave back, within the response caps.
struct HttpAnswer {
  int status = 0;
  std::string body;
  std::string retry_after;
  std::string content_type;
  bool body_too_large = false;
  bool headers_too_large = false;
};

// The body of a google.rpc.Status (or its JSON form) that an error answer carries.
std::string http_status_message(const HttpAnswer& answer, bool json) {
  if (answer.status >= 200 && answer.status < 300) return {};
  if (json) {
    const auto parsed = nlohmann::json::parse(answer.body, nullptr, false);
    if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
      return parsed["message"].get<std::string>();
    }
    return {};
  }
  return rpc_status_message(answer.body);
}

std::string reason_suffix(const std::string& reason) {
  return reason.empty() ? std::string() : " (" + reason.substr(0, 200) + ")";
}

// curl callbacks: they stop the transfer (by taking fewer bytes than given) past the caps, so
// that a receiver answering an endless body or endless headers costs at most the caps.
std::size_t take_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& answer = *static_cast<HttpAnswer*>(user);
  const std::size_t n = size * count;
  if (answer.body.size() + n > kMaxResponseBytes) {
    answer.body_too_large = true;
    return 0;
  }
  answer.body.append(data, n);
  return n;
}

// One header line at a time, the status line and the blank line included.
struct HeaderReader {
  HttpAnswer* answer;
  std::size_t bytes = 0;
};
std::size_t take_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& reader = *static_cast<HeaderReader*>(user);
  const std::size_t n = size * count;
  reader.bytes += n;
  if (reader.bytes > kMaxResponseBytes) {
    reader.answer->headers_too_large = true;
    return 0;
  }
  std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (after "100 Continue", or a redirect that is not followed): its headers
    // replace the previous ones'.
    reader.answer->retry_after.clear();
    reader.answer->content_type.clear();
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  const std::string key = lens::detail::to_lower(line.substr(0, colon));
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
    value.remove_suffix(1);
  }
  if (key == "retry-after") reader.answer->retry_after.assign(value);
  if (key == "content-type") reader.answer->content_type.assign(value);
  return n;
}

// A curl easy handle in its own multi handle: the multi handle lets cancel() wake a transfer
// at once (curl_multi_wakeup) and keeps the connection for the next export.
struct CurlChannel {
  CurlChannel() : easy(curl_easy_init()), multi(curl_multi_init()) {}
  ~CurlChannel() {
    if (multi != nullptr) curl_multi_cleanup(multi);
    if (easy != nullptr) curl_easy_cleanup(easy);
  }
  CurlChannel(const CurlChannel&) = delete;
  CurlChannel& operator=(const CurlChannel&) = delete;
  CURL* easy;
  CURLM* multi;
};

// OTLP/HTTP over libcurl directly: what it reads of an answer is bounded (kMaxResponseBytes of
// body, the same of headers), which opentelemetry-cpp's curl client does not allow.
class HttpTransport final : public OtlpTransport {
 public:
  HttpTransport(const OtlpSignalSettings& s, Signal signal)
      : signal_(signal),
        url_(s.endpoint.value),
        json_(s.protocol.value == OtlpProtocol::http_json),
        tls_(url_.rfind("https://", 0) == 0),
        // As opentelemetry-cpp's curl client did: OTEL_EXPORTER_OTLP_INSECURE skips the
        // verification of an https:// endpoint's certificate.
        skip_verify_(s.insecure.value),
        ca_path_(s.certificate.value),
        client_key_path_(s.client_key.value),
        client_certificate_path_(s.client_certificate.value),
        gzip_(s.compression.value == "gzip"),
        hints_(s) {
    static std::once_flag curl_ready;
    std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    for (const auto& header : s.headers.value) {
      headers_.push_back(header.key + ": " + header.value);
    }
    headers_.push_back(std::string("Content-Type: ") +
                       (json_ ? "application/json" : "application/x-protobuf"));
    headers_.push_back("User-Agent: " + user_agent());
    if (gzip_) headers_.push_back("Content-Encoding: gzip");
    headers_.push_back("Expect:");  // no wait for "100 Continue" before a large body
    target_ = url_ + (json_ ? " (http/json)" : " (http/protobuf)");
  }

  ~HttpTransport() override { cancel(); }

  Attempt send(const Message& request, Millis timeout) noexcept override {
    try {
      std::string body = json_ ? otlp_json::encode(request) : request.SerializeAsString();
      if (gzip_) body = gzip(body);
      std::unique_ptr<CurlChannel> channel = take_channel();
      if (channel->easy == nullptr || channel->multi == nullptr) {
        return failure(Attempt::Kind::kPermanent, "http-create",
                       "cannot create the HTTP request (curl)");
      }
      HttpAnswer answer;
      HeaderReader header_reader{&answer};
      char error[CURL_ERROR_SIZE] = {};
      curl_slist* header_list = nullptr;
      for (const std::string& header : headers_) {
        curl_slist* grown = curl_slist_append(header_list, header.c_str());
        if (grown == nullptr) break;
        header_list = grown;
      }
      CURL* easy = channel->easy;
      curl_easy_reset(easy);
      curl_easy_setopt(easy, CURLOPT_URL, url_.c_str());
      curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
      curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(easy, CURLOPT_POST, 1L);
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      curl_easy_setopt(easy, CURLOPT_HTTPHEADER, header_list);
      curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
      curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error);
      curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, take_body);
      curl_easy_setopt(easy, CURLOPT_WRITEDATA, &answer);
      curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, take_header);
      curl_easy_setopt(easy, CURLOPT_HEADERDATA, &header_reader);
      // An announced Content-Length over the cap ends the transfer before any body is read.
      curl_easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(kMaxResponseBytes));
      if (tls_) {
        if (!ca_path_.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, ca_path_.c_str());
        if (!client_key_path_.empty()) {
          curl_easy_setopt(easy, CURLOPT_SSLKEY, client_key_path_.c_str());
        }
        if (!client_certificate_path_.empty()) {
          curl_easy_setopt(easy, CURLOPT_SSLCERT, client_certificate_path_.c_str());
        }
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, skip_verify_ ? 0L : 1L);
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, skip_verify_ ? 0L : 2L);
      }
      const CURLcode code = perform(*channel);
      curl_slist_free_all(header_list);
      if (code == CURLE_OK) {
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        answer.status = static_cast<int>(status);
      }
      // The TLS connection was up: a reused one (no new connect), or a new one whose
      // handshake (curl's "app connect") finished.
      long new_connections = 0;
      curl_off_t tls_connect_time = 0;
      curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &new_connections);
      curl_easy_getinfo(easy, CURLINFO_APPCONNECT_TIME_T, &tls_connect_time);
      const bool tls_connected = !tls_ || new_connections == 0 || tls_connect_time > 0;
      // A connection whose answer was cut short cannot carry the next request.
      if (code == CURLE_OK) give_back(std::move(channel));
      std::string reason = error[0] != '\0' ? error : curl_easy_strerror(code);
      return hints_.explain(result(code, answer, reason, tls_connected));
    } catch (const std::exception& e) {
      return failure(Attempt::Kind::kPermanent, "encode",
                     std::string("cannot encode the request: ") + e.what());
    } catch (...) {
      return failure(Attempt::Kind::kPermanent, "encode", "cannot encode the request");
    }
  }

  void cancel() noexcept override {
    cancelled_.store(true, std::memory_order_release);
    in_flight_.cancel([](CURLM* multi) { curl_multi_wakeup(multi); });
  }

 private:
  // Runs the transfer on this thread; CURLE_ABORTED_BY_CALLBACK when cancel() ended it.
  CURLcode perform(CurlChannel& channel) {
    if (curl_multi_add_handle(channel.multi, channel.easy) != CURLM_OK) return CURLE_FAILED_INIT;
    CURLcode code = CURLE_ABORTED_BY_CALLBACK;
    if (in_flight_.add(channel.multi)) {
      for (;;) {
        int running = 0;
        if (curl_multi_perform(channel.multi, &running) != CURLM_OK) {
          code = CURLE_FAILED_INIT;
          break;
        }
        int left = 0;
        bool done = false;
        while (CURLMsg* message = curl_multi_info_read(channel.multi, &left)) {
          if (message->msg == CURLMSG_DONE) {
            code = message->data.result;
            done = true;
          }
        }
        if (done || running == 0) break;
        if (cancelled_.load(std::memory_order_acquire)) {
          code = CURLE_ABORTED_BY_CALLBACK;
          break;
        }
        curl_multi_poll(channel.multi, nullptr, 0, 1000, nullptr);
      }
      in_flight_.remove(channel.multi);
    }
    curl_multi_remove_handle(channel.multi, channel.easy);
    return code;
  }

  // `tls_connected`: the TLS handshake finished (always true without TLS).
  Attempt result(CURLcode code, const HttpAnswer& answer, const std::string& reason,
                 bool tls_connected) const {
    if (answer.body_too_large || answer.headers_too_large || code == CURLE_FILESIZE_EXCEEDED) {
      // Not retried: the receiver may well have taken the data, and a receiver that answers
      // this way will again.
      return failure(Attempt::Kind::kPermanent, "http-answer-too-large",
                     std::string("the receiver's answer exceeded ") +
                         std::to_string(kMaxResponseBytes / 1024) + " KiB of " +
                         (answer.headers_too_large ? "headers" : "body") +
                         "; lens stopped reading it and counts the export as failed");
    }
    if (code == CURLE_ABORTED_BY_CALLBACK) {
      return failure(Attempt::Kind::kPermanent, "shutdown", "the exporter was shut down");
    }
    if (code == CURLE_OPERATION_TIMEDOUT) {
      return failure(
          Attempt::Kind::kRetryable, "http-timeout",
          "no answer before the timeout" + reason_suffix(reason) +
              (tls_ && !tls_connected ? tls_not_established(client_certificate_path_.empty())
                                      : std::string()));
    }
    if (code != CURLE_OK) {
      const bool handshake = code == CURLE_SSL_CONNECT_ERROR ||
                             code == CURLE_PEER_FAILED_VERIFICATION ||
                             code == CURLE_SSL_CERTPROBLEM || code == CURLE_SSL_CACERT_BADFILE;
      // curl reports a certificate it cannot verify as a handshake failure or, with TLS 1.3,
      // a client certificate the server refused as an error reading the answer.
      if (tls_) {
        if (std::optional<Attempt> refused =
                tls_failure("http", reason, handshake, client_certificate_path_.empty())) {
          return *refused;
        }
        if (handshake) {
          return failure(Attempt::Kind::kPermanent, "http-tls",
                         "TLS handshake failed" + reason_suffix(reason));
        }
      }
      // (An answer in HTTP/0.9, a gRPC port, is CURLE_UNSUPPORTED_PROTOCOL: a connection
      // error below, with the protocol hint.)
      if (code == CURLE_URL_MALFORMAT || code == CURLE_FAILED_INIT || code == CURLE_OUT_OF_MEMORY) {
        return failure(Attempt::Kind::kPermanent, "http-create",
                       "cannot create the HTTP request" + reason_suffix(reason));
      }
      // With TLS 1.3 a server that refuses a missing client certificate may just close the
      // connection: that cannot be told from a network error, but it can be hinted at.
      return failure(
          Attempt::Kind::kRetryable, "http-connect",
          "cannot connect or the connection broke" + reason_suffix(reason) +
              (tls_ && client_certificate_path_.empty() ? std::string("; ") + kClientCertificateHint
                                                        : std::string()));
    }
    const bool json = answer.content_type.find("json") != std::string::npos ||
                      (answer.content_type.empty() && json_);
    Attempt attempt =
        classify_http_status(answer.status, answer.retry_after, http_status_message(answer, json));
    if (attempt.ok() && !answer.body.empty()) {
      auto response = new_response(signal_);
      const bool parsed = json ? otlp_json::decode(answer.body, *response).ok()
                               : response->ParseFromString(answer.body);
      if (parsed) read_partial_success(signal_, *response, attempt);
    }
    return attempt;
  }

  std::unique_ptr<CurlChannel> take_channel() {
    {
      std::lock_guard<std::mutex> lock(channels_mutex_);
      if (!idle_channels_.empty()) {
        std::unique_ptr<CurlChannel> channel = std::move(idle_channels_.back());
        idle_channels_.pop_back();
        return channel;
      }
    }
    return std::make_unique<CurlChannel>();
  }
  void give_back(std::unique_ptr<CurlChannel> channel) {
    std::lock_guard<std::mutex> lock(channels_mutex_);
    idle_channels_.push_back(std::move(channel));
  }

  const Signal signal_;
  const std::string url_;
  const bool json_;
  const bool tls_;
  const bool skip_verify_;
  const std::string ca_path_;
  const std::string client_key_path_;
  const std::string client_certificate_path_;
  const bool gzip_;
  const EndpointHints hints_;
  std::vector<std::string> headers_;
  std::mutex channels_mutex_;
  std::vector<std::unique_ptr<CurlChannel>> idle_channels_;  // at most one per concurrent send
  std::atomic<bool> cancelled_{false};
  InFlight<CURLM> in_flight_;
};

}  // namespace

std::unique_ptr<OtlpTransport> make_otlp_transport(const OtlpSignalSettings& settings,
                                                   Signal signal) {
  if (settings.protocol.value == OtlpProtocol::grpc) {
    return std::make_unique<GrpcTransport>(settings, signal);
  }
  return std::make_unique<HttpTransport>(settings, signal);
}

}  // namespace lens::exporters
