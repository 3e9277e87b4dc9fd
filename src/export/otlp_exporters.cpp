// OTLP exporter construction for the three signals (see otlp_exporters.hpp).
#include "export/otlp_exporters.hpp"

#include <opentelemetry/exporters/otlp/otlp_grpc_exporter_factory.h>
#include <opentelemetry/exporters/otlp/otlp_grpc_exporter_options.h>
#include <opentelemetry/exporters/otlp/otlp_grpc_log_record_exporter_factory.h>
#include <opentelemetry/exporters/otlp/otlp_grpc_log_record_exporter_options.h>
#include <opentelemetry/exporters/otlp/otlp_grpc_metric_exporter_factory.h>
#include <opentelemetry/exporters/otlp/otlp_grpc_metric_exporter_options.h>
#include <opentelemetry/exporters/otlp/otlp_http_exporter_factory.h>
#include <opentelemetry/exporters/otlp/otlp_http_exporter_options.h>
#include <opentelemetry/exporters/otlp/otlp_http_log_record_exporter_factory.h>
#include <opentelemetry/exporters/otlp/otlp_http_log_record_exporter_options.h>
#include <opentelemetry/exporters/otlp/otlp_http_metric_exporter_factory.h>
#include <opentelemetry/exporters/otlp/otlp_http_metric_exporter_options.h>

#include <string>

#include "lens/version.hpp"

namespace lens::exporters {
namespace {

namespace otlp = opentelemetry::exporter::otlp;

otlp::OtlpHeaders headers_of(const OtlpSignalSettings& s) {
  otlp::OtlpHeaders out;
  for (const auto& header : s.headers.value) {
    out.emplace(header.key, header.value);
  }
  return out;
}

// The gRPC options of the three signals share OtlpGrpcClientOptions.
void apply_grpc(const OtlpSignalSettings& s, otlp::OtlpGrpcClientOptions& options) {
  options.endpoint = s.endpoint.value;
  // TLS when the endpoint says https, unless OTEL_EXPORTER_OTLP_INSECURE asks otherwise.
  options.use_ssl_credentials = s.endpoint.value.rfind("https://", 0) == 0 && !s.insecure.value;
  options.ssl_credentials_cacert_path = s.certificate.value;
  options.timeout = std::chrono::milliseconds(s.timeout_ms.value);
  options.metadata = headers_of(s);
  options.compression = s.compression.value == "gzip" ? "gzip" : "";
  options.user_agent = std::string("lens-cpp/") + kVersion;
}

// The HTTP options of the three signals are distinct types with the same field names.
template <class Options>
void apply_http(const OtlpSignalSettings& s, Options& options) {
  options.url = s.endpoint.value;
  const bool json = s.protocol.value == OtlpProtocol::http_json;
  options.content_type =
      json ? otlp::HttpRequestContentType::kJson : otlp::HttpRequestContentType::kBinary;
  // OTLP/JSON: trace and span ids as hex strings, field names in lowerCamelCase.
  options.json_bytes_mapping = otlp::JsonBytesMappingKind::kHexId;
  options.use_json_name = true;
  options.console_debug = false;
  options.timeout = std::chrono::milliseconds(s.timeout_ms.value);
  options.http_headers = headers_of(s);
  options.ssl_insecure_skip_verify = s.insecure.value;
  options.ssl_ca_cert_path = s.certificate.value;
  options.ssl_client_key_path = s.client_key.value;
  options.ssl_client_cert_path = s.client_certificate.value;
  options.compression = s.compression.value == "gzip" ? "gzip" : "none";
}

otlp::PreferredAggregationTemporality temporality_of(TemporalityPreference preference) {
  switch (preference) {
    case TemporalityPreference::delta:
      return otlp::PreferredAggregationTemporality::kDelta;
    case TemporalityPreference::lowmemory:
      return otlp::PreferredAggregationTemporality::kLowMemory;
    case TemporalityPreference::cumulative:
      break;
  }
  return otlp::PreferredAggregationTemporality::kCumulative;
}

}  // namespace

Status check_otlp_settings(const OtlpSignalSettings& settings, Signal signal) {
  if (settings.protocol.value != OtlpProtocol::grpc) return {};
  for (const auto* file : {&settings.client_key, &settings.client_certificate}) {
    if (file->value.empty()) continue;
    std::string protocol_variable = "OTEL_EXPORTER_OTLP_";
    for (char c : to_string(signal)) protocol_variable += static_cast<char>(c - 'a' + 'A');
    protocol_variable += "_PROTOCOL";
    return Error(
        "Client certificates over gRPC are not supported by this build of "
        "opentelemetry-cpp (" +
        file->source.substr(4) + "='" + file->value + "'); accepted: " + protocol_variable +
        "=http/protobuf or http/json with client certificates, or grpc without them");
  }
  return {};
}

std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> make_otlp_span_exporter(
    const OtlpSignalSettings& settings) {
  if (settings.protocol.value == OtlpProtocol::grpc) {
    otlp::OtlpGrpcExporterOptions options;
    apply_grpc(settings, options);
    return otlp::OtlpGrpcExporterFactory::Create(options);
  }
  otlp::OtlpHttpExporterOptions options;
  apply_http(settings, options);
  return otlp::OtlpHttpExporterFactory::Create(options);
}

std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> make_otlp_metric_exporter(
    const OtlpSignalSettings& settings, TemporalityPreference temporality) {
  if (settings.protocol.value == OtlpProtocol::grpc) {
    otlp::OtlpGrpcMetricExporterOptions options;
    apply_grpc(settings, options);
    options.aggregation_temporality = temporality_of(temporality);
    return otlp::OtlpGrpcMetricExporterFactory::Create(options);
  }
  otlp::OtlpHttpMetricExporterOptions options;
  apply_http(settings, options);
  options.aggregation_temporality = temporality_of(temporality);
  return otlp::OtlpHttpMetricExporterFactory::Create(options);
}

std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> make_otlp_log_record_exporter(
    const OtlpSignalSettings& settings) {
  if (settings.protocol.value == OtlpProtocol::grpc) {
    otlp::OtlpGrpcLogRecordExporterOptions options;
    apply_grpc(settings, options);
    return otlp::OtlpGrpcLogRecordExporterFactory::Create(options);
  }
  otlp::OtlpHttpLogRecordExporterOptions options;
  apply_http(settings, options);
  return otlp::OtlpHttpLogRecordExporterFactory::Create(options);
}

}  // namespace lens::exporters
