// exporter=file for logs: each exported batch becomes one ExportLogsServiceRequest in the
// OTLP JSON encoding, appended as one line to <file_path>/logs.jsonl.
// Thread-safety: every member may be called from any thread.
#pragma once

#include <opentelemetry/sdk/logs/exporter.h>

#include <memory>

#include "lens/config.hpp"
#include "lens/result.hpp"

namespace lens::exporters {

inline constexpr const char* kLogsFileName = "logs.jsonl";

// Opens logs.jsonl under config.file_path.
Result<std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter>> make_file_log_exporter(
    const Config& config);

}  // namespace lens::exporters
