// A log recordable that owns what it holds. opentelemetry-cpp 1.19's ReadWriteLogRecord keeps
// the body and attributes as non-owning views of the caller's strings, which dangle once a
// batch processor exports the record after the logging call returned; this one copies them at
// the call, like SpanData does for spans. Used by the console exporter and the tests.
// Thread-compatible (one writer, then readers).
#pragma once

#include <opentelemetry/logs/severity.h>
#include <opentelemetry/sdk/common/attribute_utils.h>
#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/logs/recordable.h>
#include <opentelemetry/sdk/resource/resource.h>
#include <opentelemetry/trace/span_id.h>
#include <opentelemetry/trace/trace_flags.h>
#include <opentelemetry/trace/trace_id.h>

#include <cstdint>
#include <map>
#include <string>

namespace lens::exporters {

class LogRecordData final : public opentelemetry::sdk::logs::Recordable {
 public:
  using Owned = opentelemetry::sdk::common::OwnedAttributeValue;

  void SetTimestamp(opentelemetry::common::SystemTimestamp timestamp) noexcept override {
    timestamp_ = timestamp;
  }
  void SetObservedTimestamp(opentelemetry::common::SystemTimestamp timestamp) noexcept override {
    observed_timestamp_ = timestamp;
  }
  void SetSeverity(opentelemetry::logs::Severity severity) noexcept override {
    severity_ = severity;
  }
  void SetBody(const opentelemetry::common::AttributeValue& message) noexcept override;
  void SetAttribute(opentelemetry::nostd::string_view key,
                    const opentelemetry::common::AttributeValue& value) noexcept override;
  void SetEventId(std::int64_t id, opentelemetry::nostd::string_view name) noexcept override;
  void SetTraceId(const opentelemetry::trace::TraceId& trace_id) noexcept override {
    trace_id_ = trace_id;
  }
  void SetSpanId(const opentelemetry::trace::SpanId& span_id) noexcept override {
    span_id_ = span_id;
  }
  void SetTraceFlags(const opentelemetry::trace::TraceFlags& flags) noexcept override {
    trace_flags_ = flags;
  }
  void SetResource(const opentelemetry::sdk::resource::Resource& resource) noexcept override {
    resource_ = &resource;
  }
  void SetInstrumentationScope(const opentelemetry::sdk::instrumentationscope::InstrumentationScope&
                                   scope) noexcept override {
    scope_ = &scope;
  }

  opentelemetry::common::SystemTimestamp timestamp() const noexcept { return timestamp_; }
  opentelemetry::common::SystemTimestamp observed_timestamp() const noexcept {
    return observed_timestamp_;
  }
  opentelemetry::logs::Severity severity() const noexcept { return severity_; }
  // Null until a body was set.
  const Owned* body() const noexcept { return has_body_ ? &body_ : nullptr; }
  const std::map<std::string, Owned>& attributes() const noexcept { return attributes_; }
  const std::string& event_name() const noexcept { return event_name_; }
  const opentelemetry::trace::TraceId& trace_id() const noexcept { return trace_id_; }
  const opentelemetry::trace::SpanId& span_id() const noexcept { return span_id_; }
  const opentelemetry::trace::TraceFlags& trace_flags() const noexcept { return trace_flags_; }
  // Null when the SDK did not set them.
  const opentelemetry::sdk::resource::Resource* resource() const noexcept { return resource_; }
  const opentelemetry::sdk::instrumentationscope::InstrumentationScope* scope() const noexcept {
    return scope_;
  }

 private:
  opentelemetry::common::SystemTimestamp timestamp_;
  opentelemetry::common::SystemTimestamp observed_timestamp_;
  opentelemetry::logs::Severity severity_ = opentelemetry::logs::Severity::kInvalid;
  Owned body_;
  bool has_body_ = false;
  std::map<std::string, Owned> attributes_;
  std::string event_name_;
  opentelemetry::trace::TraceId trace_id_;
  opentelemetry::trace::SpanId span_id_;
  opentelemetry::trace::TraceFlags trace_flags_;
  const opentelemetry::sdk::resource::Resource* resource_ = nullptr;
  const opentelemetry::sdk::instrumentationscope::InstrumentationScope* scope_ = nullptr;
};

}  // namespace lens::exporters
