// Spans on the calling thread's span stack whose scope is not a C++ scope: a language binding's
// `with` block (lens's Python package), a begin/end callback pair. ManagedSpan and ScopedSpan
// (lens/span.hpp) are what C++ code wants; this is the same span path, opened and closed by hand.
//
//   lens::SpanRef span = lens::span_ref::begin("step", {{"iteration", 3}});
//   ...                                  // spans started here are its children
//   lens::span_ref::end(span);           // innermost first, on the same thread
//
// A SpanRef is two pointers and allocates nothing. Thread-safety: begin, end and every setter are
// for the thread that began the span, between its begin and its end; spans end in reverse order
// of their begins (a stack). A SpanRef whose members are null (nothing records now) accepts
// every call and does nothing.
#pragma once

#include <opentelemetry/trace/span_context.h>

#include <cstdint>
#include <string_view>

#include "lens/attributes.hpp"
#include "lens/detail/span_state.hpp"
#include "lens/span.hpp"

namespace lens {

using SpanRef = detail::SpanHandle;

namespace span_ref {

// True while setup_telemetry's span pipeline takes spans on this rank.
bool recording() noexcept;
// A span as a child of the current context. `static_name`: the name's characters live for the
// whole process (an interned name), and the record keeps their address instead of a copy.
// `record_exception_events` false: record_exception sets the status only (no `exception` event).
SpanRef begin(std::string_view name, AttributeList attributes = {},
              bool record_exception_events = true, bool static_name = false) noexcept;
// The root of a new trace (see lens::NewTrace).
SpanRef begin_root(std::string_view name, AttributeList attributes, const NewTrace& root,
                   bool record_exception_events = true) noexcept;
// Ends the span: at `unix_nanos` when not 0 (Unix time in nanoseconds), else now.
void end(const SpanRef& span, std::int64_t unix_nanos = 0) noexcept;

// Whether the span is recorded (the sampler kept it).
bool is_recording(const SpanRef& span) noexcept;
opentelemetry::trace::SpanContext context(const SpanRef& span) noexcept;
// Through the redaction rules of ManagedSpan::set_attribute.
void set_attribute(const SpanRef& span, std::string_view key, const AttributeArg& value) noexcept;
// An event at `unix_nanos` (0: now).
void add_event(const SpanRef& span, std::string_view name, AttributeSpan attributes = {},
               std::int64_t unix_nanos = 0) noexcept;
void add_link(const SpanRef& span, const opentelemetry::trace::SpanContext& link) noexcept;
void set_status(const SpanRef& span, SpanStatusCode code,
                std::string_view description = {}) noexcept;
// The `exception` event (type, message; unless the span was begun without exception events)
// and status ERROR with `message`.
void record_exception(const SpanRef& span, std::string_view type,
                      std::string_view message) noexcept;
void update_name(const SpanRef& span, std::string_view name) noexcept;
// The start time as Unix nanoseconds, for a phase recorded after it began.
void set_start_time(const SpanRef& span, std::int64_t unix_nanos) noexcept;
// The end time end() will record, as Unix nanoseconds (a span ended early inside its scope).
void set_end_time(const SpanRef& span, std::int64_t unix_nanos) noexcept;

}  // namespace span_ref
}  // namespace lens
