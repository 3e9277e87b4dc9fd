// OTLP exporters for traces, metrics and logs over gRPC, HTTP/protobuf or HTTP/JSON, the protocol
// chosen per signal, with every OTEL_EXPORTER_OTLP_* setting applied explicitly from our parsed
// settings (endpoint, headers, timeout, compression, TLS files, insecure) rather than left to the
// library's own environment reading, so that what `lens config` shows is what is used.
//
// Spans go into lens's own recordable and are written into one request per batch on a reused
// protobuf arena (otlp_span_batch.hpp: the same request opentelemetry-cpp's OtlpRecordable would
// give, with a fraction of its allocations); metrics and logs use opentelemetry-cpp's recordables
// and request builders. otlp_transport.hpp sends them (opentelemetry-cpp's gRPC channel and curl
// HTTP client), with retries as OTLP prescribes bounded by the export timeout (otlp_retry.hpp).
// Every exporter counts its outcome in an ExportReport and reports each failure cause and each
// partial_success once on stderr. Thread-safety: the factories are stateless; the span exporter's
// Export may run on several threads at once (the native path's concurrent batches).
#pragma once

#include <memory>

#include "export/export_report.hpp"
#include "export/otlp_retry.hpp"
#include "lens/otel_settings.hpp"
#include "lens/result.hpp"

namespace lens::exporters {

// The exporter of signal S counts in `report` (one of its own that writes to stderr when null);
// `retry` is for tests; `temporality` (metrics only) is
// OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE.
template <Signal S>
ExporterPtr<S> make_otlp_exporter(
    const OtlpSignalSettings& settings, std::shared_ptr<ExportReport> report = nullptr,
    const RetryPolicy& retry = {},
    TemporalityPreference temporality = TemporalityPreference::cumulative);

}  // namespace lens::exporters
