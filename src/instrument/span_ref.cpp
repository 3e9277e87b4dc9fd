// lens/span_ref.hpp: the stack spans of language bindings, as calls into the native span path.
// Thread-safety: see the header (each span belongs to the thread that began it).
#include "lens/span_ref.hpp"

#include "native/thread_spans.hpp"

namespace lens::span_ref {

bool recording() noexcept { return native::active(); }

SpanRef begin(std::string_view name, AttributeList attributes, bool record_exception_events,
              bool static_name) noexcept {
  SpanRef span{nullptr, nullptr};
  if (!native::active()) return span;
  if (static_name && record_exception_events) {
    detail::begin_site_span(name, attributes, span);
  } else {
    detail::begin_span(name, attributes, record_exception_events, span);
  }
  return span;
}

SpanRef begin_root(std::string_view name, AttributeList attributes, const NewTrace& root,
                   bool record_exception_events) noexcept {
  if (!native::active()) return SpanRef{nullptr, nullptr};
  return native::handle_of(
      native::begin_root_span(name, attributes, root, record_exception_events));
}

void end(const SpanRef& span, std::int64_t unix_nanos) noexcept {
  if (span.thread == nullptr) return;
  if (unix_nanos != 0) native::set_end_time(native::started_of(span), unix_nanos);
  detail::end_span(span.thread, span.frame);
}

bool is_recording(const SpanRef& span) noexcept {
  return span.frame != nullptr && native::started_of(span).frame->data.recording();
}

opentelemetry::trace::SpanContext context(const SpanRef& span) noexcept {
  return span.frame != nullptr ? native::span_context(*native::started_of(span).frame)
                               : opentelemetry::trace::SpanContext::GetInvalid();
}

void set_attribute(const SpanRef& span, std::string_view key, const AttributeArg& value) noexcept {
  native::set_attribute(native::started_of(span), key, value);
}

void add_event(const SpanRef& span, std::string_view name, AttributeSpan attributes,
               std::int64_t unix_nanos) noexcept {
  native::add_event_at(native::started_of(span), name, attributes, unix_nanos);
}

void add_link(const SpanRef& span, const opentelemetry::trace::SpanContext& link) noexcept {
  native::add_link(native::started_of(span), link);
}

void set_status(const SpanRef& span, SpanStatusCode code, std::string_view description) noexcept {
  native::set_status(native::started_of(span), static_cast<native::StatusCode>(code), description);
}

void record_exception(const SpanRef& span, std::string_view type,
                      std::string_view message) noexcept {
  native::record_exception(native::started_of(span), type, message);
}

void update_name(const SpanRef& span, std::string_view name) noexcept {
  native::update_name(native::started_of(span), name);
}

void set_start_time(const SpanRef& span, std::int64_t unix_nanos) noexcept {
  native::set_start_time(native::started_of(span), unix_nanos);
}

void set_end_time(const SpanRef& span, std::int64_t unix_nanos) noexcept {
  native::set_end_time(native::started_of(span), unix_nanos);
}

}  // namespace lens::span_ref
