// Span exporter construction (see span_exporters.hpp).
#include "export/span_exporters.hpp"

#include <opentelemetry/exporters/otlp/otlp_grpc_exporter_factory.h>
#include <opentelemetry/exporters/otlp/otlp_grpc_exporter_options.h>
#include <opentelemetry/exporters/otlp/otlp_http_exporter_factory.h>
#include <opentelemetry/exporters/otlp/otlp_http_exporter_options.h>
#include <opentelemetry/sdk/trace/span_data.h>

#include <atomic>

#include "export/console_span_exporter.hpp"
#include "lens/version.hpp"

namespace lens::exporters {
namespace {

namespace otlp = opentelemetry::exporter::otlp;
namespace sdktrace = opentelemetry::sdk::trace;

class DiscardingSpanExporter final : public sdktrace::SpanExporter {
 public:
  std::unique_ptr<sdktrace::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<sdktrace::SpanData>();
  }
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>&) noexcept override {
    return shut_down_.load(std::memory_order_relaxed)
               ? opentelemetry::sdk::common::ExportResult::kFailure
               : opentelemetry::sdk::common::ExportResult::kSuccess;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_relaxed);
    return true;
  }

 private:
  std::atomic<bool> shut_down_{false};
};

otlp::OtlpHeaders headers_of(const OtlpSignalSettings& s) {
  otlp::OtlpHeaders out;
  for (const auto& header : s.headers.value) {
    out.emplace(header.key, header.value);
  }
  return out;
}

std::unique_ptr<sdktrace::SpanExporter> make_grpc(const OtlpSignalSettings& s) {
  otlp::OtlpGrpcExporterOptions options;
  options.endpoint = s.endpoint.value;
  // TLS when the endpoint says https, unless OTEL_EXPORTER_OTLP_INSECURE asks otherwise.
  options.use_ssl_credentials = s.endpoint.value.rfind("https://", 0) == 0 && !s.insecure.value;
  options.ssl_credentials_cacert_path = s.certificate.value;
  options.timeout = std::chrono::milliseconds(s.timeout_ms.value);
  options.metadata = headers_of(s);
  options.compression = s.compression.value == "gzip" ? "gzip" : "";
  options.user_agent = std::string("lens-cpp/") + kVersion;
  return otlp::OtlpGrpcExporterFactory::Create(options);
}

std::unique_ptr<sdktrace::SpanExporter> make_http(const OtlpSignalSettings& s, bool json) {
  otlp::OtlpHttpExporterOptions options;
  options.url = s.endpoint.value;
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
  return otlp::OtlpHttpExporterFactory::Create(options);
}

}  // namespace

std::unique_ptr<sdktrace::SpanExporter> make_discarding_span_exporter() {
  return std::make_unique<DiscardingSpanExporter>();
}

Result<std::unique_ptr<sdktrace::SpanExporter>> make_span_exporter(const Config& config) {
  if (config.exporter == "none") {
    return make_discarding_span_exporter();
  }
  if (config.exporter == "console") {
    return make_console_span_exporter(stdout);
  }
  if (config.exporter == "otlp") {
    const OtlpSignalSettings& s = config.otel.traces;
    switch (s.protocol.value) {
      case OtlpProtocol::grpc:
        // Debian's opentelemetry-cpp is built without gRPC client certificates (mTLS).
        for (const auto* file : {&s.client_key, &s.client_certificate}) {
          if (!file->value.empty()) {
            return Error(
                "Client certificates over gRPC are not supported by this build of "
                "opentelemetry-cpp (" +
                file->source.substr(4) + "='" + file->value +
                "'); accepted: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf or "
                "http/json with client certificates, or grpc without them");
          }
        }
        return make_grpc(s);
      case OtlpProtocol::http_protobuf:
        return make_http(s, /*json=*/false);
      case OtlpProtocol::http_json:
        return make_http(s, /*json=*/true);
    }
  }
  return Error("Exporter '" + config.exporter + "' in " + config.label_of("exporter") +
               " is not available for traces in this build; accepted: otlp, console, none");
}

}  // namespace lens::exporters
