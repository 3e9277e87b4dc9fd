// OTLP/gRPC transport: opentelemetry-cpp's client context and generated stubs on a channel made
// as OtlpGrpcClient::MakeChannel makes it, plus client certificates and a bounded reconnect
// backoff (see otlp_transport.hpp). Thread-safety: send() from several threads at once; cancel()
// from any thread.
#include "export/otlp_grpc_transport.hpp"

#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>
#include <opentelemetry/exporters/otlp/otlp_grpc_client.h>
#include <opentelemetry/exporters/otlp/otlp_grpc_exporter_options.h>
#include <opentelemetry/ext/http/common/url_parser.h>
#include <opentelemetry/proto/collector/logs/v1/logs_service.grpc.pb.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>

#include "core/parse.hpp"
#include "export/otlp_failure_hints.hpp"
#include "export/otlp_transport_shared.hpp"

namespace lens::exporters {
namespace {

namespace otlp = opentelemetry::exporter::otlp;
namespace logs_v1 = opentelemetry::proto::collector::logs::v1;
namespace metrics_v1 = opentelemetry::proto::collector::metrics::v1;
namespace trace_v1 = opentelemetry::proto::collector::trace::v1;
using google::protobuf::Message;
// The pieces both transports share (otlp_transport_shared.hpp, otlp_failure_hints.hpp).
using namespace transport;

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
    options_.user_agent = transport::user_agent();
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
      if (!in_flight_.add(context.get())) return transport::cancelled();
      auto response = transport::new_response(signal_);
      const grpc::Status status = call(*context, request, *response);
      in_flight_.remove(context.get());
      return hints_.explain(result(status, *response));
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

  // The attempt that `status` (and, on success, `response`) makes, before the endpoint hints.
  Attempt result(const grpc::Status& status, const Message& response) const {
    if (options_.use_ssl_credentials && status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      // gRPC reports a failed TLS handshake as UNAVAILABLE, like a receiver that is down.
      if (std::optional<Attempt> tls =
              tls_failure("grpc", status.error_message(),
                          /*handshake_failed=*/false, hint_client_certificate())) {
        return std::move(*tls);
      }
    }
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
        status.error_message().find("larger than max") != std::string::npos) {
      // Not retried: the receiver may well have taken the data, and will answer so again.
      return failure(Attempt::Kind::kPermanent, "grpc-answer-too-large",
                     "the receiver's answer exceeded " + std::to_string(kMaxResponseBytes / 1024) +
                         " KiB; lens stopped reading it and counts the export as failed (" +
                         status.error_message().substr(0, 200) + ")");
    }
    Attempt attempt =
        classify_grpc_status(status.error_code(), status.error_message(), status.error_details());
    if (attempt.ok()) read_partial_success(signal_, response, attempt);
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
    return attempt;
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

}  // namespace

std::unique_ptr<OtlpTransport> make_grpc_transport(const OtlpSignalSettings& settings,
                                                   Signal signal) {
  return std::make_unique<GrpcTransport>(settings, signal);
}

}  // namespace lens::exporters
