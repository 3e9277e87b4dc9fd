// Builds the span exporter that config.exporter names: OTLP over gRPC, HTTP/protobuf or
// HTTP/JSON (otlp_exporters.hpp: every OTEL_EXPORTER_OTLP_* setting set explicitly from our
// parsed settings, retries, failures reported), console, file, or `none` (record, then discard —
// for overhead measurements). Every exporter's outcomes are counted in an ExportReport.
// The only layer that does I/O. Thread-safety: the factory is stateless.
#pragma once

#include <opentelemetry/sdk/trace/exporter.h>

#include <memory>

#include "export/export_report.hpp"
#include "lens/config.hpp"
#include "lens/result.hpp"

namespace lens::exporters {

// `report` (not null) receives the counts and the failure lines; the handle's stats read it.
Result<std::unique_ptr<opentelemetry::sdk::trace::SpanExporter>> make_span_exporter(
    const Config& config, std::shared_ptr<ExportReport> report);
// The same with a report of its own that writes to stderr.
Result<std::unique_ptr<opentelemetry::sdk::trace::SpanExporter>> make_span_exporter(
    const Config& config);

// Accepts every batch and discards it (exporter=none).
std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> make_discarding_span_exporter();

}  // namespace lens::exporters
