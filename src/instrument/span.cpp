// The enabled path of the span primitives (lens/span.hpp): starting, describing and ending spans
// on the active tracer, attribute conversion and redaction, linked spans.
// Thread-safety: no shared state of its own; a SpanState belongs to the thread that created it.
#include "lens/span.hpp"

#include <cxxabi.h>
#include <opentelemetry/common/attribute_value.h>
#include <opentelemetry/nostd/span.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/default_span.h>
#include <opentelemetry/trace/span_context_kv_iterable.h>
#include <opentelemetry/trace/span_metadata.h>
#include <opentelemetry/trace/span_startoptions.h>
#include <opentelemetry/trace/tracer.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <typeinfo>

#include "lens/propagation.hpp"
#include "native/thread_spans.hpp"

namespace lens {
namespace {

namespace otel = opentelemetry;
using OtelValue = otel::common::AttributeValue;

bool is_redacted_key(std::string_view key, const std::set<std::string>& keys) noexcept {
  // A linear scan avoids building a std::string for the lookup; a big custom set uses the tree.
  if (keys.size() <= 32) {
    return std::any_of(keys.begin(), keys.end(), [key](const std::string& k) { return k == key; });
  }
  try {
    return keys.contains(std::string(key));
  } catch (...) {
    return true;  // cannot tell: err on the side of not leaking
  }
}

// Calls fn(otel value) for a non-null argument. Int64 and double arrays are viewed in place; bool
// and string arrays need a contiguous copy (std::vector<bool> is packed), which lives through fn.
template <class Fn>
void with_otel_value(const AttributeArg& value, Fn&& fn) {
  using Kind = AttributeArg::Kind;
  switch (value.kind()) {
    case Kind::kNull:
      return;
    case Kind::kBool:
      fn(OtelValue(value.as_bool()));
      return;
    case Kind::kInt64:
      fn(OtelValue(value.as_int64()));
      return;
    case Kind::kUInt64:
      fn(OtelValue(value.as_uint64()));
      return;
    case Kind::kDouble:
      fn(OtelValue(value.as_double()));
      return;
    case Kind::kString: {
      const std::string_view s = value.as_string();
      fn(OtelValue(otel::nostd::string_view(s.data(), s.size())));
      return;
    }
    case Kind::kBoolArray: {
      const auto& v = value.as_bool_array();
      const std::unique_ptr<bool[]> copy(new bool[v.size() == 0 ? 1 : v.size()]);
      std::copy(v.begin(), v.end(), copy.get());
      fn(OtelValue(otel::nostd::span<const bool>(copy.get(), v.size())));
      return;
    }
    case Kind::kInt64Array: {
      const auto& v = value.as_int64_array();
      fn(OtelValue(otel::nostd::span<const std::int64_t>(v.data(), v.size())));
      return;
    }
    case Kind::kDoubleArray: {
      const auto& v = value.as_double_array();
      fn(OtelValue(otel::nostd::span<const double>(v.data(), v.size())));
      return;
    }
    case Kind::kStringArray: {
      const auto& v = value.as_string_array();
      std::vector<otel::nostd::string_view> views;
      views.reserve(v.size());
      for (const auto& s : v) {
        views.emplace_back(s.data(), s.size());
      }
      fn(OtelValue(otel::nostd::span<const otel::nostd::string_view>(views.data(), views.size())));
      return;
    }
  }
}

// The demangled dynamic type of `e`, e.g. "std::runtime_error".
std::string type_name(const std::exception& e) {
  const char* mangled = typeid(e).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = (status == 0 && demangled != nullptr) ? demangled : mangled;
  std::free(demangled);  // NOLINT(cppcoreguidelines-no-malloc): __cxa_demangle uses malloc
  return name;
}

// type_name, or empty when memory runs out while demangling (the event then keeps status and
// message only).
std::string type_name_or_empty(const std::exception& e) noexcept {
  try {
    return type_name(e);
  } catch (...) {
    return {};
  }
}

}  // namespace

AttributeArg redact_value(std::string_view key, const AttributeArg& value,
                          const std::set<std::string>& keys) noexcept {
  if (value.is_string() && is_redacted_key(key, keys)) {
    return AttributeArg(kRedacted);
  }
  return value;
}

void safe_set_span_attributes(otel::trace::Span* span, AttributeList attributes,
                              const std::set<std::string>& redact_keys) noexcept {
  if (span == nullptr || !span->IsRecording()) {
    return;
  }
  for (const auto& [key, value] : attributes) {
    const otel::nostd::string_view otel_key(key.data(), key.size());
    try {
      with_otel_value(redact_value(key, value, redact_keys),
                      [&](const OtelValue& v) { span->SetAttribute(otel_key, v); });
    } catch (...) {  // allocation failure for an array copy: drop this attribute
    }
  }
}

namespace detail {

SpanState::SpanState(bool enabled, std::string_view name, AttributeList attributes,
                     const NewTrace& root) noexcept {
  if (!enabled) return;
  if (!native::active()) {
    mode_ = Mode::kUnrecorded;
    return;
  }
  mode_ = Mode::kNative;
  handle_ = native::handle_of(native::begin_root_span(name, attributes, root));
}

otel::trace::SpanContext SpanState::context() const noexcept {
  if (mode_ == Mode::kNative && handle_.frame != nullptr) {
    return native::span_context(*native::started_of(handle_).frame);
  }
  return otel::trace::SpanContext::GetInvalid();
}

void SpanState::record_exception(const std::exception& e) noexcept {
  if (mode_ != Mode::kNative) return;
  native::record_exception(native::started_of(handle_), type_name_or_empty(e), e.what());
}

void SpanState::set_attribute(std::string_view key, const AttributeArg& value) noexcept {
  if (mode_ == Mode::kNative) native::set_attribute(native::started_of(handle_), key, value);
}

void SpanState::add_event(std::string_view name, AttributeList attributes) noexcept {
  if (mode_ == Mode::kNative) native::add_event(native::started_of(handle_), name, attributes);
}

}  // namespace detail

// ---- Span -----------------------------------------------------------------------------------

otel::trace::SpanContext Span::context() const noexcept {
  return impl_ != nullptr ? native::detached_span_context(*native::detached_of(impl_))
                          : otel::trace::SpanContext::GetInvalid();
}

void Span::set_attribute(std::string_view key, const AttributeArg& value) noexcept {
  if (impl_ == nullptr) return;
  native::change_detached_span(*native::detached_of(impl_), [&](const native::Started& span) {
    native::set_attribute(span, key, value);
  });
}

void Span::add_event(std::string_view name, AttributeList attributes) noexcept {
  if (impl_ == nullptr) return;
  native::change_detached_span(*native::detached_of(impl_), [&](const native::Started& span) {
    native::add_event(span, name, attributes);
  });
}

void Span::record_exception(const std::exception& e) noexcept {
  if (impl_ == nullptr) return;
  const std::string type = type_name_or_empty(e);
  native::change_detached_span(*native::detached_of(impl_), [&](const native::Started& span) {
    native::record_exception(span, type, e.what());
  });
}

void Span::set_error(std::string_view description) noexcept {
  if (impl_ == nullptr) return;
  native::change_detached_span(*native::detached_of(impl_), [&](const native::Started& span) {
    native::set_status(span, native::StatusCode::kError, description);
  });
}

void Span::set_status(SpanStatusCode code, std::string_view description) noexcept {
  if (impl_ == nullptr) return;
  native::change_detached_span(*native::detached_of(impl_), [&](const native::Started& span) {
    native::set_status(span, static_cast<native::StatusCode>(code), description);
  });
}

void Span::add_event(std::string_view name, AttributeSpan attributes,
                     std::int64_t unix_nanos) noexcept {
  if (impl_ == nullptr) return;
  native::change_detached_span(*native::detached_of(impl_), [&](const native::Started& span) {
    native::add_event_at(span, name, attributes, unix_nanos);
  });
}

void Span::add_link(const otel::trace::SpanContext& link) noexcept {
  if (impl_ == nullptr) return;
  native::change_detached_span(*native::detached_of(impl_),
                               [&](const native::Started& span) { native::add_link(span, link); });
}

void Span::update_name(std::string_view name) noexcept {
  if (impl_ == nullptr) return;
  native::change_detached_span(*native::detached_of(impl_), [&](const native::Started& span) {
    native::update_name(span, name);
  });
}

void Span::set_start_time(std::int64_t unix_nanos) noexcept {
  if (impl_ == nullptr) return;
  native::change_detached_span(*native::detached_of(impl_), [&](const native::Started& span) {
    native::set_start_time(span, unix_nanos);
  });
}

void Span::end() noexcept {
  native::end_detached_span(native::detached_of(std::exchange(impl_, nullptr)));
}

void Span::end(std::int64_t unix_nanos) noexcept {
  if (impl_ != nullptr && unix_nanos != 0) {
    native::change_detached_span(*native::detached_of(impl_), [&](const native::Started& span) {
      native::set_end_time(span, unix_nanos);
    });
  }
  end();
}

Span start_span(std::string_view name, AttributeList attributes) noexcept {
  return Span(
      native::open_span_of(native::begin_detached_span(name, attributes, nullptr, nullptr)));
}

Span start_span(std::string_view name, AttributeList attributes, const NewTrace& root) noexcept {
  return Span(native::open_span_of(native::begin_detached_span(name, attributes, &root, nullptr)));
}

SpanScope::SpanScope(const Span& span) noexcept {
  if (!span) return;
  try {
    const otel::nostd::shared_ptr<otel::trace::Span> view(
        new otel::trace::DefaultSpan(span.context()));
    otel::context::Context current = otel::context::RuntimeContext::GetCurrent();
    token_ = otel::context::RuntimeContext::Attach(otel::trace::SetSpan(current, view));
  } catch (...) {  // out of memory: the span is not made current
  }
}

SpanScope::~SpanScope() = default;

// ---- Linked spans ----------------------------------------------------------------------------

Span create_linked_span(std::string_view name, const otel::context::Context* remote_context,
                        AttributeList attributes) noexcept {
  if (remote_context == nullptr) {
    return Span(
        native::open_span_of(native::begin_detached_span(name, attributes, nullptr, nullptr)));
  }
  const otel::trace::SpanContext remote = otel::trace::GetSpan(*remote_context)->GetContext();
  return Span(
      native::open_span_of(native::begin_detached_span(name, attributes, nullptr, &remote)));
}

Span create_linked_span(std::string_view name,
                        const std::map<std::string, std::string>* remote_carrier,
                        AttributeList attributes) noexcept {
  if (remote_carrier == nullptr || remote_carrier->empty()) {
    return create_linked_span(name, nullptr, attributes);
  }
  // An empty base: only a span context extracted from the carrier may become the link, never the
  // caller's current span.
  const otel::context::Context remote = extract_context(*remote_carrier, otel::context::Context{});
  return create_linked_span(name, &remote, attributes);
}

Span create_linked_span(std::string_view name, std::nullptr_t, AttributeList attributes) noexcept {
  return create_linked_span(name, static_cast<const otel::context::Context*>(nullptr), attributes);
}

}  // namespace lens
