// The enabled path of the span primitives (lens/span.hpp): starting, describing and ending spans
// on the active tracer, attribute conversion and redaction, linked spans.
// Thread-safety: no shared state of its own; a SpanState belongs to the thread that created it.
#include "lens/span.hpp"

#include <cxxabi.h>
#include <opentelemetry/common/attribute_value.h>
#include <opentelemetry/common/key_value_iterable.h>
#include <opentelemetry/nostd/function_ref.h>
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
#include <new>
#include <typeinfo>

#include "core/next_trace_id.hpp"
#include "lens/detail/active_tracer.hpp"
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

// An AttributeList seen through the SDK's iterable interface, with the safe-attribute rules
// applied (nulls skipped, strings redacted), so events need no intermediate container.
class SafeAttributeView final : public otel::common::KeyValueIterable {
 public:
  SafeAttributeView(AttributeList attributes, const std::set<std::string>& redact_keys) noexcept
      : attributes_(attributes), redact_keys_(redact_keys) {}

  bool ForEachKeyValue(otel::nostd::function_ref<bool(otel::nostd::string_view, OtelValue)>
                           callback) const noexcept override {
    try {
      for (const auto& [key, value] : attributes_) {
        bool keep_going = true;
        // `&key = key`: a structured binding is not capturable before C++20 in Clang < 16.
        with_otel_value(
            redact_value(key, value, redact_keys_), [&, &key = key](const OtelValue& v) {
              keep_going = callback(otel::nostd::string_view(key.data(), key.size()), v);
            });
        if (!keep_going) {
          return false;
        }
      }
    } catch (...) {
      return false;  // allocation failure: the remaining attributes are dropped
    }
    return true;
  }

  size_t size() const noexcept override {
    return static_cast<size_t>(std::count_if(attributes_.begin(), attributes_.end(),
                                             [](const auto& kv) { return !kv.second.is_null(); }));
  }

 private:
  AttributeList attributes_;
  const std::set<std::string>& redact_keys_;
};

// The demangled dynamic type of `e`, e.g. "std::runtime_error".
std::string type_name(const std::exception& e) {
  const char* mangled = typeid(e).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = (status == 0 && demangled != nullptr) ? demangled : mangled;
  std::free(demangled);  // NOLINT(cppcoreguidelines-no-malloc): __cxa_demangle uses malloc
  return name;
}

constexpr std::string_view kUnknown = "unknown";
constexpr std::string_view kUnknownException = "unknown exception";

SpanPtr start_linked(std::string_view name, const otel::trace::SpanContext* link,
                     AttributeList attributes) noexcept {
  const detail::TracerPtr tracer = detail::active_tracer();
  const otel::nostd::string_view span_name(name.data(), name.size());
  SpanPtr span;
  if (link != nullptr && link->IsValid()) {
    using NoAttributes = std::initializer_list<std::pair<otel::nostd::string_view, OtelValue>>;
    span = tracer->StartSpan(span_name, NoAttributes{}, {{*link, NoAttributes{}}});
  } else {
    span = tracer->StartSpan(span_name);
  }
  safe_set_span_attributes(span.get(), attributes);
  return span;
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

void SpanState::start_opentelemetry(std::string_view name, AttributeList attributes,
                                    bool record_exception_events) noexcept {
  mode_ = Mode::kOpenTelemetry;
  new (otel_storage_)
      OtelPath{active_tracer()->StartSpan(otel::nostd::string_view(name.data(), name.size())),
               nullptr, std::uncaught_exceptions(), record_exception_events, false};
  safe_set_span_attributes(otel().span.get(), attributes);
  auto context = otel::context::RuntimeContext::GetCurrent();
  otel().token = otel::context::RuntimeContext::Attach(otel::trace::SetSpan(context, otel().span));
}

SpanState::SpanState(bool enabled, std::string_view name, AttributeList attributes,
                     const NewTrace& root) noexcept {
  if (!enabled) return;
  if (native::active()) {
    mode_ = Mode::kNative;
    native_span_ = native::begin_root_span(name, attributes, root);
    return;
  }
  mode_ = Mode::kOpenTelemetry;
  const int uncaught_at_start = std::uncaught_exceptions();
  const detail::TracerPtr tracer = active_tracer();
  const otel::nostd::string_view span_name(name.data(), name.size());
  otel::trace::StartSpanOptions options;
  // An invalid SpanContext would mean "the current span"; this marks the new span a root.
  options.parent = otel::context::Context{}.SetValue(otel::trace::kIsRootSpanKey, true);
  core::request_next_trace_id(root.trace_id);
  new (otel_storage_) OtelPath();
  otel().uncaught_at_start = uncaught_at_start;
  if (root.link.IsValid()) {
    using NoAttributes = std::initializer_list<std::pair<otel::nostd::string_view, OtelValue>>;
    otel().span =
        tracer->StartSpan(span_name, NoAttributes{}, {{root.link, NoAttributes{}}}, options);
  } else {
    otel().span = tracer->StartSpan(span_name, options);
  }
  core::clear_next_trace_id();  // a tracer with another id generator left it untaken
  safe_set_span_attributes(otel().span.get(), attributes);
  auto context = otel::context::RuntimeContext::GetCurrent();
  otel().token = otel::context::RuntimeContext::Attach(otel::trace::SetSpan(context, otel().span));
}

void SpanState::end_opentelemetry() noexcept {
  if (std::uncaught_exceptions() > otel().uncaught_at_start && !otel().exception_recorded) {
    if (otel().record_exception_events) {
      otel().span->AddEvent(
          "exception", {{"exception.type",
                         OtelValue(otel::nostd::string_view(kUnknown.data(), kUnknown.size()))},
                        {"exception.message",
                         OtelValue(otel::nostd::string_view(kUnknown.data(), kUnknown.size()))}});
    }
    otel().span->SetStatus(
        otel::trace::StatusCode::kError,
        otel::nostd::string_view(kUnknownException.data(), kUnknownException.size()));
  }
  otel().token.reset();  // restores the previous context (Token's destructor detaches)
  otel().span->End();
  otel().~OtelPath();
}

otel::trace::Span* SpanState::span() const noexcept {
  if (mode_ != Mode::kNative) return otel().span.get();
  if (otel::trace::Span* view = native::view(native_span_)) return view;
  static auto* const nothing =
      new SpanPtr(new otel::trace::DefaultSpan(otel::trace::SpanContext::GetInvalid()));
  return nothing->get();
}

void SpanState::record_exception(const std::exception& e) noexcept {
  const char* what = e.what();
  if (mode_ == Mode::kNative) {
    std::string type;
    try {
      type = type_name(e);
    } catch (...) {  // allocation failure while demangling: status and message only
    }
    native::record_exception(native_span_, type, what);
    return;
  }
  otel().exception_recorded = true;
  if (otel().record_exception_events && otel().span->IsRecording()) {
    try {
      const std::string type = type_name(e);
      otel().span->AddEvent("exception",
                            {{"exception.type", OtelValue(otel::nostd::string_view(type))},
                             {"exception.message", OtelValue(otel::nostd::string_view(what))}});
    } catch (...) {  // allocation failure while demangling: status only
    }
  }
  otel().span->SetStatus(otel::trace::StatusCode::kError, otel::nostd::string_view(what));
}

void SpanState::set_attribute(std::string_view key, const AttributeArg& value) noexcept {
  if (mode_ == Mode::kNative) {
    native::set_attribute(native_span_, key, value);
    return;
  }
  safe_set_span_attributes(otel().span.get(), {{key, value}});
}

void SpanState::add_event(std::string_view name, AttributeList attributes) noexcept {
  if (mode_ == Mode::kNative) {
    native::add_event(native_span_, name, attributes);
    return;
  }
  if (!otel().span->IsRecording()) {
    return;
  }
  const otel::nostd::string_view event_name(name.data(), name.size());
  if (attributes.size() == 0) {
    otel().span->AddEvent(event_name);
    return;
  }
  otel().span->AddEvent(event_name, SafeAttributeView(attributes, default_redact_keys()));
}

}  // namespace detail

SpanPtr create_linked_span(std::string_view name, const otel::context::Context* remote_context,
                           AttributeList attributes) noexcept {
  if (remote_context == nullptr) {
    return start_linked(name, nullptr, attributes);
  }
  const otel::trace::SpanContext remote = otel::trace::GetSpan(*remote_context)->GetContext();
  return start_linked(name, &remote, attributes);
}

SpanPtr create_linked_span(std::string_view name,
                           const std::map<std::string, std::string>* remote_carrier,
                           AttributeList attributes) noexcept {
  if (remote_carrier == nullptr || remote_carrier->empty()) {
    return start_linked(name, nullptr, attributes);
  }
  // An empty base: only a span context extracted from the carrier may become the link, never the
  // caller's current span.
  const otel::context::Context remote = extract_context(*remote_carrier, otel::context::Context{});
  return create_linked_span(name, &remote, attributes);
}

SpanPtr create_linked_span(std::string_view name, std::nullptr_t,
                           AttributeList attributes) noexcept {
  return start_linked(name, nullptr, attributes);
}

}  // namespace lens
