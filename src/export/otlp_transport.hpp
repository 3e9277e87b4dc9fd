// One attempt to deliver one Export*ServiceRequest over OTLP/gRPC or OTLP/HTTP, with the answer
// classified for retrying (otlp_retry.hpp) and its partial_success read.
//
// gRPC is built from opentelemetry-cpp's own parts — its gRPC client context (OtlpGrpcClient::
// MakeClientContext: metadata, deadline) and generated stubs; the channel is made as
// OtlpGrpcClient::MakeChannel makes it plus a bounded reconnect backoff. HTTP uses libcurl
// directly (TLS, client certificates, timeout), because opentelemetry-cpp's curl client reads
// whole answers, however large. Every answer is read up to 64 KiB (HTTP body, HTTP headers, gRPC
// message): past that the export fails, not retried. opentelemetry-cpp's exporters are not
// used because they hide what lens needs:
// they return only success or failure (no status code, no Retry-After or RetryInfo, no
// partial_success), and as Debian builds 1.19 they neither retry nor gzip HTTP bodies, and their
// http/json encoding writes 64-bit integers as JSON numbers. Bodies are encoded here: binary
// protobuf, or the OTLP JSON mapping of otlp_json.hpp; gzip through protobuf's zlib stream.
// Thread-safety: send() may run on several threads at once; cancel() from any thread.
#pragma once

#include <google/protobuf/message.h>

#include <memory>
#include <string>

#include "export/otlp_retry.hpp"
#include "lens/otel_settings.hpp"

namespace lens::exporters {

class OtlpTransport {
 public:
  virtual ~OtlpTransport() = default;

  // Sends `request` (the Export*ServiceRequest of the transport's signal) and waits at most
  // `timeout` for the answer.
  virtual Attempt send(const google::protobuf::Message& request, Millis timeout) noexcept = 0;

  // Ends the attempts in flight (shutdown); later sends fail at once.
  virtual void cancel() noexcept = 0;

  // "http://host:4318/v1/traces (http/json)" — for messages; never contains header values.
  const std::string& target() const noexcept { return target_; }

 protected:
  std::string target_;
};

std::unique_ptr<OtlpTransport> make_otlp_transport(const OtlpSignalSettings& settings,
                                                   Signal signal);

}  // namespace lens::exporters
