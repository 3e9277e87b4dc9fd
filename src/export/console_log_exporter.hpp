// exporter=console for logs: one compact JSON object per log record on stdout, with the keys
// of the Python original's console output (SPEC Part 2 §G.2): body, severity_number,
// severity_text, attributes, dropped_attributes, timestamp, observed_timestamp, trace_id,
// span_id, trace_flags, resource, event_name. Thread-safety: Export may be called from any
// thread; each batch is written whole under a lock and flushed.
#pragma once

#include <opentelemetry/sdk/logs/exporter.h>

#include <cstdio>
#include <memory>
#include <string>

#include "export/log_record_data.hpp"

namespace lens::exporters {

// The JSON line (without the newline) for one record.
std::string console_log_line(const LogRecordData& record);

std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> make_console_log_exporter(
    std::FILE* out = stdout);

}  // namespace lens::exporters
