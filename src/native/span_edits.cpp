// Changes to an open span: attributes, events, status, links, name and times, each bracketed by
// the frame's sequence lock; the span context a child or propagator sees. Thread-safety: called
// by the frame's owner thread (or under a detached span's lock).
#include <opentelemetry/trace/span_context.h>

#include "native/span_frame_write.hpp"
#include "native/tick_clock.hpp"

namespace lens::native {

namespace otel = opentelemetry;

// An attribute that did not fit in the payload, into the extras (out of line: rare).
[[gnu::noinline]] void spill_attribute(FrameData& data, std::string_view key,
                                       const AttributeArg& value) noexcept {
  change_extras(data, [&](SpanExtras& extras) { append_attribute(extras.attributes, key, value); });
}

// A name kept in the extras: longer than the payload at start, or changed by UpdateName.
[[gnu::noinline]] void set_name_override(FrameData& data, std::string_view name) noexcept {
  change_extras(data, [&](SpanExtras& extras) {
    extras.name.assign(name);
    data.record.has_name_override = true;
  });
}

[[gnu::noinline]] void add_link_to(FrameData& data, const otel::trace::SpanContext& link) noexcept {
  if (!link.IsValid()) return;
  change_extras(data, [&](SpanExtras& extras) { extras.links.push_back(link); });
}

void set_attribute(const Started& span, std::string_view key, const AttributeArg& value) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  FrameData& data = span.frame->data;
  std::size_t used = data.record.payload_size;
  std::uint16_t count = data.record.attribute_count;
  put_attribute(data, used, count, key, value);
  data.record.payload_size = static_cast<std::uint16_t>(used);
  data.record.attribute_count = count;
}

void add_event(const Started& span, std::string_view name, AttributeList attributes) noexcept {
  add_event_at(span, name, AttributeSpan(attributes.begin(), attributes.size()), 0);
}

void set_status(const Started& span, StatusCode code, std::string_view description) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  FrameData& data = span.frame->data;
  data.record.status = code;
  // A description only goes with ERROR (as opentelemetry's SetStatus).
  if (code == StatusCode::kError && !description.empty()) {
    change_extras(data, [&](SpanExtras& extras) { extras.status_description.assign(description); });
  } else if (data.record.extras != nullptr) {
    data.record.extras->status_description.clear();
  }
}

void record_exception(const Started& span, std::string_view type, std::string_view what) noexcept {
  if (span.frame == nullptr) return;
  span.frame->data.set(FrameData::kExceptionRecorded, true);
  if (span.frame->data.has(FrameData::kRecordExceptionEvents)) {
    add_event(span, "exception", {{"exception.type", type}, {"exception.message", what}});
  }
  set_status(span, StatusCode::kError, what);
}

void add_event_at(const Started& span, std::string_view name, AttributeSpan attributes,
                  std::int64_t unix_nanos) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  change_extras(span.frame->data, [&](SpanExtras& extras) {
    SpanExtras::Event event;
    event.name.assign(name);
    event.ticks = read_ticks();
    event.unix_nanos = unix_nanos;
    for (const auto& [key, value] : attributes) {
      append_attribute(event.attributes, key, redacted(key, value));
    }
    extras.events.push_back(std::move(event));
  });
}

void add_link(const Started& span, const otel::trace::SpanContext& link) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  add_link_to(span.frame->data, link);
}

void update_name(const Started& span, std::string_view name) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  set_name_override(span.frame->data, name);
}

void set_start_time(const Started& span, std::int64_t unix_nanos) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  change_extras(span.frame->data,
                [&](SpanExtras& extras) { extras.start_unix_nanos = unix_nanos; });
}

void set_end_time(const Started& span, std::int64_t unix_nanos) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  change_extras(span.frame->data, [&](SpanExtras& extras) { extras.end_unix_nanos = unix_nanos; });
}

otel::trace::SpanContext span_context(const Frame& frame) noexcept {
  const FrameData& data = frame.data;
  const otel::trace::TraceId trace_id(
      otel::nostd::span<const std::uint8_t, 16>(data.record.id.trace_id.data(), 16));
  const otel::trace::TraceFlags flags(
      static_cast<std::uint8_t>(data.record.id.flags & kFlagSampled));
  if (data.has(FrameData::kHasTraceState)) {
    return otel::trace::SpanContext(trace_id, span_id_of(data.record.id.span_id), flags, false,
                                    frame.trace_state);
  }
  return otel::trace::SpanContext(trace_id, span_id_of(data.record.id.span_id), flags, false);
}

}  // namespace lens::native
