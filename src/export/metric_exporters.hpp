// Builds the metric exporter that config.exporter names: OTLP (opentelemetry-cpp's gRPC or
// HTTP exporter from the parsed OTEL_EXPORTER_OTLP_METRICS_* settings), console JSON lines,
// OTLP JSON lines in <file_path>/metrics.jsonl, or none (collect, then discard). Every one
// asks for the temporality of OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE.
// Thread-safety: the factories are stateless.
#pragma once

#include <opentelemetry/sdk/metrics/push_metric_exporter.h>

#include <memory>

#include "export/export_report.hpp"
#include "lens/config.hpp"
#include "lens/result.hpp"

namespace lens::exporters {

// `report` counts every export's outcome and reports failures (one of its own when null).
Result<std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter>> make_metric_exporter(
    const Config& config, std::shared_ptr<ExportReport> report = nullptr);

// Accepts every export and discards it (exporter=none).
std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> make_discarding_metric_exporter(
    TemporalityPreference temporality);

}  // namespace lens::exporters
