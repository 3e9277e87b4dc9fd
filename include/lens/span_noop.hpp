// The no-op span surface (docs/tracing.md, "Building without the library"): the names of
// lens/span.hpp with no dependency on opentelemetry-cpp or liblens, for builds with LENS_DISABLE
// (lens/span.hpp then includes only this) or for code that vendors it. Scope guards do nothing,
// trace_fn returns its callable unchanged, macros expand to statements that evaluate none of their
// arguments.
// Thread-safety: stateless; everything may be used from any thread.
//
// ODR: everything here lives in the inline namespace lens::noop_v1, so lens::ManagedSpan names
// lens::noop_v1::ManagedSpan in a LENS_DISABLE translation unit and mangles differently from the
// real lens::ManagedSpan; one program may link translation units of both kinds. A translation unit
// sees only one surface: including both headers there is an #error, and a LENS_DISABLE unit must
// not include lens/groups.hpp (is_span_group_enabled would be ambiguous) nor lens/attributes.hpp
// (AttributeArg and AttributeList would be; so neither lens/log.hpp nor lens/metrics.hpp).
#pragma once

#if defined(LENS_SPAN_REAL_SURFACE)
#error "lens/span_noop.hpp included after the real lens/span.hpp in the same translation unit"
#endif
#define LENS_SPAN_NOOP_SURFACE 1

#include <array>
#include <concepts>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "lens/redaction.hpp"
#include "lens/span_site.hpp"

namespace lens {
inline namespace noop_v1 {

// Stands in for opentelemetry::context::Context.
struct NoopContext {};
// Stands in for opentelemetry::trace::SpanContext: never valid.
struct NoopSpanContext {
  constexpr bool IsValid() const noexcept { return false; }
};

// Accepts the argument types of the real lens::AttributeArg; keeps only strings (for
// redact_value). Non-owning, like the real one.
class AttributeArg {
 public:
  constexpr AttributeArg() noexcept = default;
  constexpr AttributeArg(std::nullptr_t) noexcept {}
  constexpr AttributeArg(std::monostate) noexcept {}
  template <class T>
  requires std::same_as<T, bool> || std::integral<T> || std::floating_point<T>
  constexpr AttributeArg(T) noexcept : is_null_(false) {}
  constexpr AttributeArg(const char* value) noexcept
      : is_null_(value == nullptr),
        is_string_(value != nullptr),
        string_(value == nullptr ? std::string_view() : std::string_view(value)) {}
  constexpr AttributeArg(std::string_view value) noexcept
      : is_null_(false), is_string_(true), string_(value) {}
  AttributeArg(const std::string& value) noexcept
      : is_null_(false), is_string_(true), string_(value) {}
  AttributeArg(const std::vector<bool>&) noexcept : is_null_(false) {}
  AttributeArg(const std::vector<std::int64_t>&) noexcept : is_null_(false) {}
  AttributeArg(const std::vector<double>&) noexcept : is_null_(false) {}
  AttributeArg(const std::vector<std::string>&) noexcept : is_null_(false) {}

  constexpr bool is_null() const noexcept { return is_null_; }
  constexpr bool is_string() const noexcept { return is_string_; }
  constexpr std::string_view as_string() const noexcept { return string_; }

 private:
  bool is_null_ = true;
  bool is_string_ = false;
  std::string_view string_;
};

using AttributeList = std::initializer_list<std::pair<std::string_view, AttributeArg>>;

// Real logic (pure): "[REDACTED]" iff `key` is one of `keys` and `value` is a string.
inline AttributeArg redact_value(
    std::string_view key, const AttributeArg& value,
    const std::set<std::string>& keys = default_redact_keys()) noexcept {
  if (value.is_string()) {
    for (const auto& k : keys) {
      if (k == key) return AttributeArg(kRedacted);
    }
  }
  return value;
}

// No-op; accepts a null span.
inline void safe_set_span_attributes(
    const void* /*span*/, AttributeList /*attributes*/ = {},
    const std::set<std::string>& /*redact_keys*/ = default_redact_keys()) noexcept {}

// Always false.
constexpr bool is_span_group_enabled(std::string_view /*name*/) noexcept { return false; }

class SpanGroupHandle {
 public:
  constexpr bool enabled() const noexcept { return false; }
  constexpr std::string_view name() const noexcept { return {}; }
};
constexpr SpanGroupHandle span_group_handle(std::string_view /*name*/) noexcept { return {}; }

// Runs nothing: the body runs, exceptions propagate, context() is invalid, operator bool false.
// Accepts whatever the real surface's NewTrace::link takes (a span context).
struct NoopLink {
  constexpr NoopLink() noexcept = default;
  template <class T>
  constexpr NoopLink(const T& /*context*/) noexcept {}  // NOLINT(google-explicit-constructor)
};
struct NewTrace {
  std::array<std::uint8_t, 16> trace_id{};
  NoopLink link{};
};

class ManagedSpan {
 public:
  constexpr ManagedSpan() noexcept = default;
  constexpr ManagedSpan(const SpanGroupHandle& /*group*/, std::string_view /*name*/,
                        AttributeList /*attributes*/, const NewTrace& /*root*/) noexcept {}
  constexpr ManagedSpan(const SpanGroupHandle& /*group*/, std::string_view /*name*/,
                        AttributeList /*attributes*/ = {}) noexcept {}
  constexpr ManagedSpan(std::string_view /*group*/, std::string_view /*name*/,
                        AttributeList /*attributes*/ = {}) noexcept {}
  ManagedSpan(const ManagedSpan&) = delete;
  ManagedSpan& operator=(const ManagedSpan&) = delete;

  constexpr explicit operator bool() const noexcept { return false; }
  constexpr NoopSpanContext context() const noexcept { return {}; }
  constexpr void record_exception(const std::exception& /*e*/) noexcept {}
  constexpr void set_attribute(std::string_view /*key*/, const AttributeArg& /*value*/) noexcept {}
  constexpr void add_event(std::string_view /*name*/, AttributeList /*attributes*/ = {}) noexcept {}
};

class ScopedSpan {
 public:
  constexpr explicit ScopedSpan(std::string_view /*name*/, AttributeList /*attributes*/ = {},
                                bool /*record_exception*/ = true) noexcept {}
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

  constexpr NoopSpanContext context() const noexcept { return {}; }
  constexpr void record_exception(const std::exception& /*e*/) noexcept {}
  constexpr void set_attribute(std::string_view /*key*/, const AttributeArg& /*value*/) noexcept {}
  constexpr void add_event(std::string_view /*name*/, AttributeList /*attributes*/ = {}) noexcept {}
};

// A span that is never started.
class Span {
 public:
  constexpr Span() noexcept = default;
  constexpr explicit operator bool() const noexcept { return false; }
  constexpr NoopSpanContext context() const noexcept { return {}; }
  constexpr void set_attribute(std::string_view /*key*/, const AttributeArg& /*value*/) noexcept {}
  constexpr void add_event(std::string_view /*name*/, AttributeList /*attributes*/ = {}) noexcept {}
  constexpr void record_exception(const std::exception& /*e*/) noexcept {}
  constexpr void set_error(std::string_view /*description*/) noexcept {}
  constexpr void end() noexcept {}
};
constexpr Span start_span(std::string_view /*name*/, AttributeList /*attributes*/ = {}) noexcept {
  return {};
}
constexpr Span start_span(std::string_view /*name*/, AttributeList /*attributes*/,
                          const NewTrace& /*root*/) noexcept {
  return {};
}
class SpanScope {
 public:
  constexpr explicit SpanScope(const Span& /*span*/) noexcept {}
  SpanScope(const SpanScope&) = delete;
  SpanScope& operator=(const SpanScope&) = delete;
};
// Accepts a context, a carrier or nullptr.
template <class Remote>
constexpr Span create_linked_span(std::string_view /*name*/, const Remote& /*remote*/,
                                  AttributeList /*attributes*/ = {}) noexcept {
  return {};
}

// Identity: returns `f` itself (the same object for an lvalue).
template <class F>
constexpr F&& trace_fn(std::string_view /*group*/, std::string_view /*name*/, F&& f) noexcept {
  return static_cast<F&&>(f);
}
template <class F>
constexpr F&& trace_fn(const SpanGroupHandle& /*group*/, std::string_view /*name*/,
                       F&& f) noexcept {
  return static_cast<F&&>(f);
}

constexpr NoopContext capture_context() noexcept { return {}; }
class ContextScope {
 public:
  constexpr explicit ContextScope(const NoopContext& /*context*/) noexcept {}
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
};
// Identity.
template <class F>
constexpr F&& wrap_with_context(F&& f) noexcept {
  return static_cast<F&&>(f);
}

}  // namespace noop_v1
}  // namespace lens

#if !defined(LENS_SPAN)
// Statements that evaluate none of their arguments. LENS_SPAN_NAMED / LENS_SPAN_CM_NAMED declare
// an inert guard so code that reaches it (var.set_attribute, if (var)) still compiles.
#define LENS_SPAN(site, ...) static_cast<void>(0)
#define LENS_SPAN_NAMED(var, site, ...) [[maybe_unused]] ::lens::ManagedSpan var
#define LENS_SPAN_CM(name, ...) static_cast<void>(0)
#define LENS_SPAN_CM_NAMED(var, name, ...) [[maybe_unused]] ::lens::ManagedSpan var
#define LENS_TRACE_FUNCTION(group) static_cast<void>(0)
#endif
