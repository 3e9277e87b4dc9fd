// A direct OTLP JSON encoder for ExportTraceServiceRequest: walks the message with the generated
// accessors and appends to one string the exact bytes otlp_json::encode's generic path writes;
// and the hex and base64 writers both paths use.
// Stateless and thread-safe.
#pragma once

#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

#include <string>
#include <string_view>

namespace lens::otlp_json {

// Appends the OTLP JSON line of `request` (no newline) to `out` and returns true, or leaves
// `out` as it was and returns false where it cannot promise the generic path's exact output;
// the caller then uses the generic path. That is the case for strings that are not valid UTF-8
// (which protobuf's printer drops or passes on to nlohmann, which throws), for attribute values
// nested deeper than protobuf's printer goes (it fails), and for a linked OTLP schema with
// fields this encoder does not know.
bool encode_trace_request_fast(
    const opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest& request,
    std::string& out);

// Appends `bytes` as lowercase hex (ids) or as padded standard base64 (other bytes), unquoted.
void append_hex(std::string_view bytes, std::string& out);
void append_base64(std::string_view bytes, std::string& out);

}  // namespace lens::otlp_json
