// A fast decoder for the common OTLP JSON trace and metrics lines, with simdjson: what lens
// collect, lens's file exporter and the Collector write (camelCase or snake_case names, ids as
// hex, 64-bit integers as strings or numbers, enums as integers). It accepts only a strict subset
// and declines everything else — unknown fields, repeated keys, enums as names, base64 bytes,
// span events and links, exemplars, exponential histograms and summaries, nulls, invalid JSON —
// so the caller decodes those lines the general way (otlp_json::decode) and gets its exact result
// and error messages. On what it accepts it gives the same message as otlp_json::decode (tested
// against it).
// Not thread-safe: one decoder per reading thread (it reuses the parser's buffers).
#pragma once

#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

#include <memory>
#include <string>

namespace lens::report {

class FastOtlpDecoder {
 public:
  enum class Result { declined, traces, metrics };

  FastOtlpDecoder();
  ~FastOtlpDecoder();
  FastOtlpDecoder(const FastOtlpDecoder&) = delete;
  FastOtlpDecoder& operator=(const FastOtlpDecoder&) = delete;

  // Decodes `line` into `traces` or `metrics` (the one it returns, cleared first); `declined`
  // when the line is not in the subset (then both hold an unspecified part of it). `line` may
  // grow (padding for simdjson): its content stays the same.
  Result decode(std::string& line,
                opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest& traces,
                opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest& metrics);

 private:
  struct Parser;
  std::unique_ptr<Parser> parser_;
};

}  // namespace lens::report
