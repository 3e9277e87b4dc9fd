// TLS failure recognition and endpoint hints of the OTLP transports (see otlp_failure_hints.hpp).
#include "export/otlp_failure_hints.hpp"

#include "core/parse.hpp"
#include "export/otlp_transport_shared.hpp"

namespace lens::exporters::transport {

std::string tls_not_established(bool hint_client_certificate) {
  return std::string("; the TLS connection was not established before the timeout") +
         (hint_client_certificate ? std::string("; ") + kClientCertificateHint : std::string());
}

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

EndpointHints::EndpointHints(const OtlpSignalSettings& s)
    : protocol_variable(s.protocol.source.rfind("env:", 0) == 0 ? s.protocol.source.substr(4)
                                                                : "OTEL_EXPORTER_OTLP_PROTOCOL") {
  const std::string& endpoint = s.endpoint.value;
  const bool has_scheme = endpoint.find("://") != std::string::npos;
  if (!has_scheme && !s.insecure.value && s.protocol.value == OtlpProtocol::grpc) {
    schemeless_endpoint = endpoint;
  }
}

Attempt EndpointHints::explain(Attempt attempt) const {
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

}  // namespace lens::exporters::transport
