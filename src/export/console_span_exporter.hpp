// exporter=console for traces: one compact JSON object per span on stdout, with the key shapes
// of the Python original's console output (SPEC Part 2 §G.2), so tools written for it read
// ours. Thread-safety: Export may be called from any thread; each batch is written whole
// under a lock and flushed.
#pragma once

#include <opentelemetry/sdk/trace/exporter.h>
#include <opentelemetry/sdk/trace/span_data.h>

#include <cstdio>
#include <memory>
#include <string>

namespace lens::exporters {

// The JSON line (without the newline) for one finished span.
std::string console_span_line(const opentelemetry::sdk::trace::SpanData& span);

// Writes to `out` (stdout by default).
std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> make_console_span_exporter(
    std::FILE* out = stdout);

}  // namespace lens::exporters
