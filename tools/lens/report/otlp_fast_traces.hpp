// A fast decoder for the common OTLP JSON trace line, with simdjson: what lens collect, lens's
// file exporter and the Collector write for spans (camelCase or snake_case names, ids as hex,
// 64-bit integers as strings or numbers, enums as integers). It accepts only a strict subset and
// declines everything else — unknown fields, repeated keys, enums as names, base64 bytes, span
// events and links, nulls, invalid JSON — so the caller decodes those lines the general way
// (otlp_json::decode) and gets its exact result and error messages. On what it accepts it gives
// the same message as otlp_json::decode (tested against it).
// Not thread-safe: one decoder per reading thread (it reuses the parser's buffers).
#pragma once

#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

#include <memory>
#include <string>

namespace lens::report {

class FastTraceDecoder {
 public:
  FastTraceDecoder();
  ~FastTraceDecoder();
  FastTraceDecoder(const FastTraceDecoder&) = delete;
  FastTraceDecoder& operator=(const FastTraceDecoder&) = delete;

  // Decodes `line` into `request` (cleared first); false when the line is not in the subset
  // (then `request` holds an unspecified part of it). `line` may grow (padding for simdjson):
  // its content stays the same.
  bool decode(std::string& line,
              opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest& request);

 private:
  struct Parser;
  std::unique_ptr<Parser> parser_;
};

}  // namespace lens::report
