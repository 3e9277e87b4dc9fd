// Builders for hand-made OTLP protobuf messages in the codec tests: id bytes that read well as
// hex, an attribute appended to a repeated KeyValue field, and the trace request the codec
// tests start from.
#pragma once

#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>
#include <opentelemetry/proto/common/v1/common.pb.h>

#include <cstdint>
#include <string>

namespace lens::test_support {

// Bytes first, first + 1, ...: ids whose hex form is easy to read (0x01..0x10 and friends).
inline std::string bytes_from(int first, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += static_cast<char>(first + i);
  return out;
}

// A new attribute named `key` at the end of `to`; the caller sets its value.
inline opentelemetry::proto::common::v1::KeyValue* add_attribute(
    google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>* to,
    const std::string& key) {
  auto* attribute = to->Add();
  attribute->set_key(key);
  return attribute;
}

// service.name="trainer" on the resource of `items` (a ResourceSpans, ResourceMetrics or
// ResourceLogs), and a new scope named nemo.lens made by its add_scope_* member `add_scope`.
template <class ResourceItems, class ScopeItems>
ScopeItems* add_trainer_scope(ResourceItems* items, ScopeItems* (ResourceItems::*add_scope)()) {
  add_attribute(items->mutable_resource()->mutable_attributes(), "service.name")
      ->mutable_value()
      ->set_string_value("trainer");
  ScopeItems* scope = (items->*add_scope)();
  scope->mutable_scope()->set_name("nemo.lens");
  return scope;
}

// The trainer's resource and the nemo.lens 0.1.0 scope with one SERVER span "train_step" of
// 250 ms (attributes step=42 and loss=0.25, one dropped), an event "checkpoint" with the int
// attribute bytes=`event_bytes`, a link with the attribute kind="data" and flags 0x100, an
// error status "nan loss" and flags 0x301.
inline opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest train_step_request(
    const std::string& trace_state, int parent_first, std::int64_t event_bytes) {
  namespace trace = opentelemetry::proto::trace::v1;
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest request;
  trace::ResourceSpans* resource_spans = request.add_resource_spans();
  resource_spans->set_schema_url("https://opentelemetry.io/schemas/1.24.0");
  trace::ScopeSpans* scope_spans =
      add_trainer_scope(resource_spans, &trace::ResourceSpans::add_scope_spans);
  scope_spans->mutable_scope()->set_version("0.1.0");
  trace::Span* span = scope_spans->add_spans();
  span->set_trace_id(bytes_from(0x01, 16));
  span->set_span_id(bytes_from(0x11, 8));
  span->set_trace_state(trace_state);
  span->set_parent_span_id(bytes_from(parent_first, 8));
  span->set_name("train_step");
  span->set_kind(trace::Span::SPAN_KIND_SERVER);
  span->set_start_time_unix_nano(1700000000000000000);
  span->set_end_time_unix_nano(1700000000250000000);
  add_attribute(span->mutable_attributes(), "step")->mutable_value()->set_int_value(42);
  add_attribute(span->mutable_attributes(), "loss")->mutable_value()->set_double_value(0.25);
  span->set_dropped_attributes_count(1);
  trace::Span::Event* event = span->add_events();
  event->set_time_unix_nano(1700000000100000000);
  event->set_name("checkpoint");
  add_attribute(event->mutable_attributes(), "bytes")->mutable_value()->set_int_value(event_bytes);
  trace::Span::Link* link = span->add_links();
  link->set_trace_id(bytes_from(0xa1, 16));
  link->set_span_id(bytes_from(0xb1, 8));
  add_attribute(link->mutable_attributes(), "kind")->mutable_value()->set_string_value("data");
  link->set_flags(0x100);
  span->mutable_status()->set_code(trace::Status::STATUS_CODE_ERROR);
  span->mutable_status()->set_message("nan loss");
  span->set_flags(0x301);
  return request;
}

}  // namespace lens::test_support
