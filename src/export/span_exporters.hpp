// Builds the span exporter that config.exporter names: OTLP over gRPC, HTTP/protobuf or
// HTTP/JSON (opentelemetry-cpp's exporters, every OTEL_EXPORTER_OTLP_* setting set explicitly
// from our parsed settings), or `none` (record, then discard — for overhead measurements).
// The only layer that does I/O. Thread-safety: the factory is stateless.
#pragma once

#include <opentelemetry/sdk/trace/exporter.h>

#include <memory>

#include "lens/config.hpp"
#include "lens/result.hpp"

namespace lens::exporters {

Result<std::unique_ptr<opentelemetry::sdk::trace::SpanExporter>> make_span_exporter(
    const Config& config);

// Accepts every batch and discards it (exporter=none).
std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> make_discarding_span_exporter();

}  // namespace lens::exporters
