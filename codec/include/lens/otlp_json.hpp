// The OTLP JSON encoding of any OTLP protobuf message (https://opentelemetry.io/docs/specs/otlp/
// #json-protobuf-encoding): lowerCamelCase field names, enums as integers, 64-bit integers as
// decimal strings, default values omitted, and — unlike protobuf's canonical JSON mapping —
// the bytes fields trace_id, span_id and parent_span_id as lowercase hex instead of base64.
// Generic over message types: the id fields are found through the message's descriptor; trace
// requests take a direct encoder with the same output (otlp_json_traces.hpp).
// Stateless and thread-safe.
#pragma once

#include <google/protobuf/message.h>

#include <string>
#include <string_view>

#include "lens/result.hpp"

namespace lens::otlp_json {

// One compact line (no newline) in the OTLP JSON encoding of `message` (any OTLP message, e.g.
// ExportTraceServiceRequest, ExportMetricsServiceRequest, ExportLogsServiceRequest).
// Strings that are not valid UTF-8 lose their invalid bytes (protobuf's printer drops them).
// Throws std::runtime_error only if protobuf cannot print the message at all.
std::string encode(const google::protobuf::Message& message);

// encode through protobuf's JSON printer and nlohmann for any message type, trace requests
// included: the reference the direct trace encoder is tested against.
std::string encode_generic(const google::protobuf::Message& message);

// Parses OTLP JSON into `message` (cleared first). Accepts lowerCamelCase or original
// snake_case field names, enums as names or integers, 64-bit integers as strings or numbers,
// ids as hex strings (either case; "" = unset), and ignores unknown fields. The error message
// names what is wrong, e.g. the path and value of an id that is not hex of the right length.
lens::Status decode(std::string_view json, google::protobuf::Message& message);

}  // namespace lens::otlp_json
