// The lines of the text console (exporter=console with CONSOLE_FORMAT=text): short lines a
// person reads next to the trainer's own output, each starting with "[lens] ". A span is
//   [lens] <two spaces per depth level><name> <duration>[ key=value ...][ ERROR[: description]]
// a metrics collection is one line with one name=value per metric, a log record
//   [lens] log <SEVERITY> <body>[ key=value ...]
// and the resource is a line of its own (written once by the exporter, not per span). Strings
// are shown whole up to 60 characters (then cut, with "..."), numbers with 6 significant
// digits; a string with a space, quote, '=', '\' or control character is quoted with its
// specials escaped, so a line never spans two lines. At most 8 attributes are shown, by key,
// then "+N". Stateless; may throw on out of memory.
#pragma once

#include <opentelemetry/sdk/metrics/export/metric_producer.h>
#include <opentelemetry/sdk/resource/resource.h>
#include <opentelemetry/sdk/trace/span_data.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "core/span_depth.hpp"
#include "export/log_record_data.hpp"

namespace lens::exporters {

// The recordable of the text console's spans: the SDK's SpanData (final, hence held) and the
// span's depth.
class SpanDataWithDepth final : public opentelemetry::sdk::trace::Recordable,
                                public core::SpanDepthSink {
 public:
  const opentelemetry::sdk::trace::SpanData& span() const noexcept { return data_; }
  std::uint8_t depth() const noexcept { return depth_; }
  void set_depth(std::uint8_t depth) noexcept override { depth_ = depth; }

  void SetIdentity(const opentelemetry::trace::SpanContext& context,
                   opentelemetry::trace::SpanId parent) noexcept override {
    data_.SetIdentity(context, parent);
  }
  void SetAttribute(opentelemetry::nostd::string_view key,
                    const opentelemetry::common::AttributeValue& value) noexcept override {
    data_.SetAttribute(key, value);
  }
  void AddEvent(opentelemetry::nostd::string_view name, opentelemetry::common::SystemTimestamp at,
                const opentelemetry::common::KeyValueIterable& attributes) noexcept override {
    data_.AddEvent(name, at, attributes);
  }
  void AddLink(const opentelemetry::trace::SpanContext& context,
               const opentelemetry::common::KeyValueIterable& attributes) noexcept override {
    data_.AddLink(context, attributes);
  }
  void SetStatus(opentelemetry::trace::StatusCode code,
                 opentelemetry::nostd::string_view description) noexcept override {
    data_.SetStatus(code, description);
  }
  void SetName(opentelemetry::nostd::string_view name) noexcept override { data_.SetName(name); }
  void SetTraceFlags(opentelemetry::trace::TraceFlags flags) noexcept override {
    data_.SetTraceFlags(flags);
  }
  void SetSpanKind(opentelemetry::trace::SpanKind kind) noexcept override {
    data_.SetSpanKind(kind);
  }
  void SetResource(const opentelemetry::sdk::resource::Resource& resource) noexcept override {
    data_.SetResource(resource);
  }
  void SetStartTime(opentelemetry::common::SystemTimestamp start) noexcept override {
    data_.SetStartTime(start);
  }
  void SetDuration(std::chrono::nanoseconds duration) noexcept override {
    data_.SetDuration(duration);
  }
  explicit operator opentelemetry::sdk::trace::SpanData*() const override {
    return const_cast<opentelemetry::sdk::trace::SpanData*>(&data_);
  }
  void SetInstrumentationScope(const opentelemetry::sdk::instrumentationscope::InstrumentationScope&
                                   scope) noexcept override {
    data_.SetInstrumentationScope(scope);
  }

 private:
  opentelemetry::sdk::trace::SpanData data_;
  std::uint8_t depth_ = 0;
};

// "850 ns", "12.3 us", "41.2 ms", "3.21 s": three significant digits (whole seconds past 1000).
std::string text_duration(std::chrono::nanoseconds duration);

// The lines, without the newline.
std::string text_resource_line(const opentelemetry::sdk::resource::Resource& resource);
std::string text_line(const opentelemetry::sdk::trace::SpanData& span, std::uint8_t depth);
std::string text_line(const opentelemetry::sdk::metrics::ResourceMetrics& data);
std::string text_line(const LogRecordData& record);

}  // namespace lens::exporters
