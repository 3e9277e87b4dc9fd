// The console exporter's lines (exporter=console), with the key shapes of the Python original's
// console output (docs/exporters.md, "Console"), so tools written for it read ours: one compact JSON object
// per span and per log record, one per metrics collection (resource_metrics -> scope_metrics ->
// metrics -> data -> data_points). Ids are "0x"+hex, timestamps UTC ISO-8601 with microseconds,
// attribute keys sorted so that a line never depends on hashing. Invalid UTF-8 in a value
// becomes U+FFFD; a line may still throw on out of memory. Stateless.
#pragma once

#include <opentelemetry/sdk/metrics/export/metric_producer.h>
#include <opentelemetry/sdk/trace/span_data.h>

#include <nlohmann/json.hpp>
#include <string>

#include "export/log_record_data.hpp"

namespace lens::exporters {

// The JSON line (without the newline) for one span, one collection or one log record.
std::string console_line(const opentelemetry::sdk::trace::SpanData& span);
std::string console_line(const opentelemetry::sdk::metrics::ResourceMetrics& data);
std::string console_line(const LogRecordData& record);

}  // namespace lens::exporters
