// Builds the log record exporter that config.exporter names: OTLP (opentelemetry-cpp's gRPC or
// HTTP exporter from the parsed OTEL_EXPORTER_OTLP_LOGS_* settings — the protocol variables
// are honoured for logs too), console JSON lines, OTLP JSON lines in <file_path>/logs.jsonl,
// or none (discard). Thread-safety: the factories are stateless.
#pragma once

#include <opentelemetry/sdk/logs/exporter.h>

#include <memory>

#include "export/export_report.hpp"
#include "lens/config.hpp"
#include "lens/result.hpp"

namespace lens::exporters {

// `report` counts every export's outcome and reports failures (one of its own when null).
Result<std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter>> make_log_record_exporter(
    const Config& config, std::shared_ptr<ExportReport> report = nullptr);

// Accepts every batch and discards it (exporter=none).
std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> make_discarding_log_exporter();

}  // namespace lens::exporters
