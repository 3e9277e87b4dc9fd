// OTLP exporters for traces, metrics and logs: opentelemetry-cpp's gRPC and HTTP exporters, the
// protocol chosen per signal, with every OTEL_EXPORTER_OTLP_* setting applied explicitly from our
// parsed settings (endpoint, headers, timeout, compression, TLS files, insecure) rather than left
// to the library's own environment reading, so that what `lens config` shows is what is used.
// Thread-safety: the factories are stateless.
#pragma once

#include <opentelemetry/sdk/logs/exporter.h>
#include <opentelemetry/sdk/metrics/push_metric_exporter.h>
#include <opentelemetry/sdk/trace/exporter.h>

#include <memory>

#include "lens/otel_settings.hpp"
#include "lens/result.hpp"

namespace lens::exporters {

// What this build of opentelemetry-cpp cannot do with `settings` (Debian's is built without gRPC
// client certificates); the error names the variable, its value and what is accepted.
Status check_otlp_settings(const OtlpSignalSettings& settings, Signal signal);

std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> make_otlp_span_exporter(
    const OtlpSignalSettings& settings);

// `temporality` is OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE.
std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> make_otlp_metric_exporter(
    const OtlpSignalSettings& settings, TemporalityPreference temporality);

std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> make_otlp_log_record_exporter(
    const OtlpSignalSettings& settings);

}  // namespace lens::exporters
