// exporter=file for metrics: each export (one collection) becomes one
// ExportMetricsServiceRequest in the OTLP JSON encoding, appended as one line to
// <file_path>/metrics.jsonl (the format of the Collector's file exporter and `lens collect`).
// Thread-safety: every member may be called from any thread.
#pragma once

#include <opentelemetry/sdk/metrics/push_metric_exporter.h>

#include <memory>

#include "lens/config.hpp"
#include "lens/result.hpp"

namespace lens::exporters {

inline constexpr const char* kMetricsFileName = "metrics.jsonl";

// Opens metrics.jsonl under config.file_path; temporality per
// OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE.
Result<std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter>> make_file_metric_exporter(
    const Config& config);

}  // namespace lens::exporters
