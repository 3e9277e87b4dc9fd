// What a failed OTLP export tells the person who configured it, for both transports: a TLS
// handshake failure recognised in the client library's text (permanent, with its own cause), the
// client-certificate hint, and the endpoint hints (protocol variable, scheme-less TLS).
// Thread-safety: pure functions; an EndpointHints is immutable once built.
#pragma once

#include <optional>
#include <string>

#include "export/otlp_retry.hpp"
#include "lens/otel_settings.hpp"

namespace lens::exporters::transport {

// Added to a TLS failure, or a connection closed during a TLS connect, when the client has no
// client certificate.
inline constexpr const char* kClientCertificateHint =
    "if the server requires a client certificate (mTLS), set OTEL_EXPORTER_OTLP_CLIENT_KEY and "
    "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE";

// Added to a timeout that passed before the TLS connection was established.
std::string tls_not_established(bool hint_client_certificate);

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
                                   bool handshake_failed, bool hint_client_certificate);

// What a failure adds for the person who configured the endpoint: the protocol variable to
// change when the receiver speaks the other protocol, and that an endpoint without a scheme
// meant TLS when a plain-text receiver refuses the handshake.
struct EndpointHints {
  explicit EndpointHints(const OtlpSignalSettings& s);

  // `attempt` with the hints that apply to it added to its message.
  Attempt explain(Attempt attempt) const;

  std::string protocol_variable;
  std::string schemeless_endpoint;  // empty unless a scheme-less endpoint made it TLS
};

}  // namespace lens::exporters::transport
