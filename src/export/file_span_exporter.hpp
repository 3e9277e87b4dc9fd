// exporter=file for traces: each exported batch becomes one ExportTraceServiceRequest in the
// OTLP JSON encoding, appended as one line to <file_path>/traces.jsonl. The file is opened
// O_APPEND and each line goes out in a single write(2), so rank processes sharing the
// directory never interleave lines. Thread-safety: every member may be called from any thread.
#pragma once

#include <opentelemetry/sdk/trace/exporter.h>

#include <memory>

#include "lens/config.hpp"
#include "lens/result.hpp"

namespace lens::exporters {

// The name of the span file inside config.file_path.
inline constexpr const char* kTracesFileName = "traces.jsonl";

// Creates config.file_path (with its parents) and opens traces.jsonl for appending; the error
// names the variable that set the path, the path and the OS error. Write failures later are
// failed exports (kFailure), reported once on stderr.
Result<std::unique_ptr<opentelemetry::sdk::trace::SpanExporter>> make_file_span_exporter(
    const Config& config);

}  // namespace lens::exporters
