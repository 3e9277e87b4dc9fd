// Spans: where a training step's time goes (docs/tracing.md).
//
// Quick start
//
//   #include "lens/span.hpp"
//
//   // 1. Describe each span site once: name, span group, the attribute keys it sets.
//   inline constexpr std::string_view kStepKeys[] = {"megatron.iteration"};
//   inline constexpr lens::SpanSite kTrainStep{"megatron.train_step", "step", kStepKeys};
//
//   // 2. Open a span for the rest of a scope; nothing is evaluated while the group is off.
//   void train_step(int iteration) {
//     LENS_SPAN(kTrainStep, {"megatron.iteration", iteration});
//     forward_backward();  // spans started in here are its children
//   }
//
//   // 3. A span that is not a scope (started here, ended elsewhere or by an exit hook):
//   lens::Span pretrain = lens::start_span("megatron.pretrain");
//   lens::SpanScope current(pretrain);  // its children start under it on this thread
//   ...
//   pretrain.end();
//
// Which groups record comes from the configuration (NEMO_LENS_SPAN_GROUPS, lens/groups.hpp);
// spans are recorded once setup_telemetry (lens/telemetry.hpp) made this rank an exporting one.
// Before that, on other ranks and after shutdown every call here costs about a nanosecond.
//
// Also here: ManagedSpan and ScopedSpan/LENS_SPAN_CM (guards without a site), trace_fn and
// LENS_TRACE_FUNCTION, redaction of attribute values, linked spans, context hand-off to other
// threads. Thread-safety: every free function may be called from any thread. A ManagedSpan,
// ScopedSpan, SpanScope or ContextScope attaches a context to the calling thread and must be
// destroyed on that thread, in reverse order of construction (scope guards; they cannot be moved).
// A lens::Span may be used and ended from any thread.
// With LENS_DISABLE defined this header is the dependency-free no-op surface of span_noop.hpp.
#pragma once

#if defined(LENS_DISABLE)
#include "lens/span_noop.hpp"
#else

#if defined(LENS_SPAN_NOOP_SURFACE)
#error "lens/span_noop.hpp was included before lens/span.hpp without LENS_DISABLE defined"
#endif
#define LENS_SPAN_REAL_SURFACE 1

#include <opentelemetry/context/context.h>
#include <opentelemetry/context/runtime_context.h>
#include <opentelemetry/nostd/shared_ptr.h>
#include <opentelemetry/nostd/unique_ptr.h>
#include <opentelemetry/trace/span.h>
#include <opentelemetry/trace/span_context.h>

#include <array>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "lens/attributes.hpp"
#include "lens/detail/span_state.hpp"
#include "lens/groups.hpp"
#include "lens/redaction.hpp"
#include "lens/span_site.hpp"

namespace lens {

// ---- Redaction and safe attributes (docs/tracing.md, "Attribute safety and redaction") --------------------------------------------------

// "[REDACTED]" iff `key` is exactly (case-sensitive) one of `keys` and `value` is a string;
// otherwise `value` unchanged. Decides by key name, never by content.
AttributeArg redact_value(std::string_view key, const AttributeArg& value,
                          const std::set<std::string>& keys = default_redact_keys()) noexcept;

// Sets `attributes` on `span`. A null or non-recording span ⇒ returns at once. Null values are
// skipped; string values are redacted by key (redact_value); arrays are set as arrays and the
// strings inside them are not redacted. Never throws (an allocation failure drops the attribute).
void safe_set_span_attributes(
    opentelemetry::trace::Span* span, AttributeList attributes,
    const std::set<std::string>& redact_keys = default_redact_keys()) noexcept;

// ---- Scoped spans ------------------------------------------------------------------------------

// Starts a span as the root of a new trace instead of a child of the current context: with
// `trace_id` as its trace id when that is not all zero (lens's id generator takes it; a tracer
// from elsewhere picks its own), and one link to `link` when that is valid. The sampler decides
// on the new trace id like for any root, so every rank that starts a root in the same trace id
// gets the same ratio decision (see lens::TraceSeed in lens/distributed.hpp).
// A span's status, as OpenTelemetry's (its numbering too).
enum class SpanStatusCode : std::uint8_t { unset = 0, ok = 1, error = 2 };

struct NewTrace {
  std::array<std::uint8_t, 16> trace_id{};
  opentelemetry::trace::SpanContext link = opentelemetry::trace::SpanContext::GetInvalid();
};

// managed_span (docs/tracing.md, "Group-gated spans"): a group-gated scope guard. When the group is off nothing happens —
// no tracer load, no clock read, no allocation — `operator bool` is false and context() invalid.
// When it is on, the span is started on the active tracer as a child of the current context,
// `attributes` are set through safe_set_span_attributes, and the span is current until the guard
// is destroyed. An exception escaping the scope sets status ERROR and adds an `exception` event:
// with the exception's type and what() when the code called record_exception(e) (for instance in
// a catch block that rethrows), else with type/message "unknown" (see detail::SpanState).
// Attribute expressions passed to a constructor are evaluated by the caller even when the group is
// off; LENS_SPAN evaluates them only when it is on.
class ManagedSpan {
 public:
  ManagedSpan(const SpanGroupHandle& group, std::string_view name,
              AttributeList attributes = {}) noexcept
      : state_(group.enabled(), name, attributes, true) {}
  // Looks the group up by name (a shared lock per call): prefer a cached SpanGroupHandle.
  ManagedSpan(std::string_view group, std::string_view name, AttributeList attributes = {}) noexcept
      : state_(is_span_group_enabled(group), name, attributes, true) {}
  // As the root of a new trace (see NewTrace) instead of a child of the current context.
  ManagedSpan(const SpanGroupHandle& group, std::string_view name, AttributeList attributes,
              const NewTrace& root) noexcept
      : state_(group.enabled(), name, attributes, root) {}
  // For LENS_SPAN: the gate was already read.
  explicit ManagedSpan(const detail::SpanStart& start) noexcept
      : state_(start.enabled, start.name, start.attributes, true, start.static_name) {}
  ManagedSpan(const ManagedSpan&) = delete;
  ManagedSpan& operator=(const ManagedSpan&) = delete;

  explicit operator bool() const noexcept { return state_.started(); }
  // The span's context, to propagate or link to; invalid when the group was off or nothing is
  // recorded.
  opentelemetry::trace::SpanContext context() const noexcept {
    return state_.started() ? state_.context() : opentelemetry::trace::SpanContext::GetInvalid();
  }

  // Adds the `exception` event (exception.type = the demangled dynamic type, exception.message =
  // what()) and sets status ERROR with description what(). No-op when off.
  void record_exception(const std::exception& e) noexcept {
    if (state_.started()) state_.record_exception(e);
  }
  // Through safe_set_span_attributes (nulls skipped, strings redacted). No-op when off.
  void set_attribute(std::string_view key, const AttributeArg& value) noexcept {
    if (state_.started()) state_.set_attribute(key, value);
  }
  // Attributes follow the safe_set_span_attributes rules. No-op when off.
  void add_event(std::string_view name, AttributeList attributes = {}) noexcept {
    if (state_.started()) state_.add_event(name, attributes);
  }

 private:
  detail::SpanState state_;
};

// span_cm (docs/tracing.md, "Group-gated spans"): an ungated scope guard; always starts a span (non-recording when the
// active tracer is the no-op tracer). An exception escaping the scope sets status ERROR
// (description what() when known through record_exception, else "unknown exception"); the
// `exception` event is added only when `record_exception` is true.
class ScopedSpan {
 public:
  explicit ScopedSpan(std::string_view name, AttributeList attributes = {},
                      bool record_exception = true) noexcept
      : state_(name, attributes, record_exception) {}
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

  opentelemetry::trace::SpanContext context() const noexcept { return state_.context(); }
  // Status ERROR with what(); the `exception` event only when constructed with record_exception.
  void record_exception(const std::exception& e) noexcept { state_.record_exception(e); }
  void set_attribute(std::string_view key, const AttributeArg& value) noexcept {
    state_.set_attribute(key, value);
  }
  void add_event(std::string_view name, AttributeList attributes = {}) noexcept {
    state_.add_event(name, attributes);
  }

 private:
  detail::SpanState state_;
};

// ---- Function tracing (docs/tracing.md, "Group-gated spans") --------------------------------------------------------------

namespace detail {

template <class F>
class TracedFunction {
 public:
  TracedFunction(SpanGroupHandle group, std::string name, F f)
      : group_(group), name_(std::move(name)), f_(std::move(f)) {}

  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    return call(f_, std::forward<Args>(args)...);
  }
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    return call(f_, std::forward<Args>(args)...);
  }

 private:
  template <class G, class... Args>
  decltype(auto) call(G& f, Args&&... args) const {
    if (!group_.enabled()) {
      return std::invoke(f, std::forward<Args>(args)...);
    }
    ManagedSpan span(SpanStart{true, name_, {}});
    try {
      return std::invoke(f, std::forward<Args>(args)...);
    } catch (const std::exception& e) {
      span.record_exception(e);
      throw;
    }  // Other exception types: the guard records "unknown exception" as they pass.
  }

  SpanGroupHandle group_;
  std::string name_;
  F f_;
};

}  // namespace detail

// Wraps `f`: each call checks `group` at call time; when on, the call runs inside a ManagedSpan
// named `name` (no attributes), and an exception is recorded (std::exception: what() as the ERROR
// description; other types: "unknown exception") and rethrown. When off: a plain call. Arguments
// and the return value (void and references included) are forwarded.
template <class F>
auto trace_fn(const SpanGroupHandle& group, std::string_view name, F&& f) {
  return detail::TracedFunction<std::decay_t<F> >(group, std::string(name), std::forward<F>(f));
}
// Resolves the group name once, when wrapping.
template <class F>
auto trace_fn(std::string_view group, std::string_view name, F&& f) {
  return trace_fn(span_group_handle(group), name, std::forward<F>(f));
}

// ---- Spans that are not scopes ----------------------------------------------------------------

// A span started in one place and ended in another: a job span that lasts the whole run, a span
// ended by another thread or by an exit hook. start_span makes one as a child of the calling
// thread's current context; it is not made current (a SpanScope does that). It ends at end() or
// when destroyed, whichever comes first; moving hands it over. Not gated: check a group first.
// A default-constructed Span, or one started while no telemetry records spans, does nothing
// (operator bool false, context() invalid). Spans still open at telemetry shutdown are exported
// marked nemo.span.truncated. Thread-safety: any thread may call any method (they serialise on
// the span); the Span object itself is not to be moved while another thread uses it.
class Span {
 public:
  Span() noexcept = default;
  Span(Span&& other) noexcept : impl_(std::exchange(other.impl_, nullptr)) {}
  Span& operator=(Span&& other) noexcept {
    if (this != &other) {
      end();
      impl_ = std::exchange(other.impl_, nullptr);
    }
    return *this;
  }
  ~Span() { end(); }

  // True until end() when a span was started (recorded or dropped by the sampler).
  explicit operator bool() const noexcept { return impl_ != nullptr; }
  opentelemetry::trace::SpanContext context() const noexcept;
  // Through the redaction rules of ManagedSpan::set_attribute.
  void set_attribute(std::string_view key, const AttributeArg& value) noexcept;
  void add_event(std::string_view name, AttributeList attributes = {}) noexcept;
  // The `exception` event and status ERROR with what().
  void record_exception(const std::exception& e) noexcept;
  // Status ERROR with `description` (an interrupted run, a failed phase).
  void set_error(std::string_view description) noexcept;
  // Status as OpenTelemetry's SetStatus (a description only goes with ERROR).
  void set_status(SpanStatusCode code, std::string_view description = {}) noexcept;
  // An event at `unix_nanos` (Unix time in nanoseconds; 0: now).
  void add_event(std::string_view name, AttributeSpan attributes, std::int64_t unix_nanos) noexcept;
  void add_link(const opentelemetry::trace::SpanContext& link) noexcept;
  void update_name(std::string_view name) noexcept;
  // The start time as Unix nanoseconds, for a phase recorded after it began (0: when started).
  void set_start_time(std::int64_t unix_nanos) noexcept;
  // Ends the span now; later calls do nothing.
  void end() noexcept;
  // Ends the span with `unix_nanos` as its end time (0: now); later calls do nothing.
  void end(std::int64_t unix_nanos) noexcept;

 private:
  friend Span start_span(std::string_view, AttributeList) noexcept;
  friend Span start_span(std::string_view, AttributeList, const NewTrace&) noexcept;
  friend Span create_linked_span(std::string_view, const opentelemetry::context::Context*,
                                 AttributeList) noexcept;
  explicit Span(detail::OpenSpan* impl) noexcept : impl_(impl) {}
  detail::OpenSpan* impl_ = nullptr;
};

// A Span as a child of the current context.
Span start_span(std::string_view name, AttributeList attributes = {}) noexcept;
// A Span as the root of a new trace (see NewTrace).
Span start_span(std::string_view name, AttributeList attributes, const NewTrace& root) noexcept;

// Makes `span` the calling thread's current span for the guard's lifetime: spans started there
// are its children and propagation (inject_context, broadcast_trace_context) carries it. Destroy
// on the same thread, in reverse order of other scopes. Nothing happens for an empty Span.
class SpanScope {
 public:
  explicit SpanScope(const Span& span) noexcept;
  ~SpanScope();
  SpanScope(const SpanScope&) = delete;
  SpanScope& operator=(const SpanScope&) = delete;

 private:
  opentelemetry::nostd::unique_ptr<opentelemetry::context::Token> token_;
};

// ---- Linked spans (docs/tracing.md, "Linked spans") ------------------------------------------------------------------

// A Span `name` with the current context as parent and, when `remote_context` holds a valid span
// context, one link (without attributes) to it. Attributes follow the redaction rules. Not made
// current; it ends at end() or destruction. Not gated.
Span create_linked_span(std::string_view name,
                        const opentelemetry::context::Context* remote_context,
                        AttributeList attributes = {}) noexcept;
// As above with the remote context extracted (W3C, lens/propagation.hpp) from `remote_carrier`; a
// null or empty carrier, or one without a valid traceparent, yields an unlinked span.
Span create_linked_span(std::string_view name,
                        const std::map<std::string, std::string>* remote_carrier,
                        AttributeList attributes = {}) noexcept;
// An unlinked span (create_linked_span(name, nullptr) would otherwise be ambiguous).
Span create_linked_span(std::string_view name, std::nullptr_t,
                        AttributeList attributes = {}) noexcept;

// ---- Context hand-off to other threads ---------------------------------------------------------

// The calling thread's current context (its active span, baggage, ...), to hand to another thread.
inline opentelemetry::context::Context capture_context() noexcept {
  return opentelemetry::context::RuntimeContext::GetCurrent();
}

// Attaches a captured context to the calling thread for the guard's lifetime, so spans started
// there are children of the capturing thread's span. Destroy on the same thread.
class ContextScope {
 public:
  explicit ContextScope(const opentelemetry::context::Context& context) noexcept
      : token_(opentelemetry::context::RuntimeContext::Attach(context)) {}
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  opentelemetry::nostd::unique_ptr<opentelemetry::context::Token> token_;  // detaches when reset
};

// Captures the current context now; the returned callable attaches it around each call (for thread
// pools and std::thread). Arguments and the return value are forwarded.
template <class F>
auto wrap_with_context(F&& f) {
  return [context = capture_context(),
          fn = std::forward<F>(f)](auto&&... args) mutable -> decltype(auto) {
    ContextScope scope(context);
    return std::invoke(fn, std::forward<decltype(args)>(args)...);
  };
}

}  // namespace lens

// ---- Macros ------------------------------------------------------------------------------------

#define LENS_DETAIL_CONCAT_IMPL(a, b) a##b
#define LENS_DETAIL_CONCAT(a, b) LENS_DETAIL_CONCAT_IMPL(a, b)

// LENS_SPAN(site, {"key", value}, ...): a ManagedSpan for the rest of the enclosing scope, named
// and gated by `site`, a lens::SpanSite (lens/span_site.hpp). The site is read once, on the first
// pass (a function-local static holds it with its group's handle); each pass then costs one
// relaxed load and a branch when the group is off, and the attribute expressions are evaluated
// only when it is on. An ad-hoc site: LENS_SPAN(lens::SpanSite("name", "group"), ...); a name
// that changes from pass to pass wants lens::ManagedSpan instead. The site's name must have
// static storage (a literal, __func__, a constexpr catalogue): its spans carry its address.
#define LENS_SPAN(site, ...) \
  LENS_SPAN_NAMED(LENS_DETAIL_CONCAT(lens_span_, __COUNTER__), site __VA_OPT__(, ) __VA_ARGS__)

// As LENS_SPAN, naming the guard `var` (e.g. to call var.set_attribute or var.record_exception).
#define LENS_SPAN_NAMED(var, site, ...) \
  LENS_DETAIL_SPAN(var, LENS_DETAIL_CONCAT(var, _lens_site), site __VA_OPT__(, ) __VA_ARGS__)

#define LENS_DETAIL_SPAN(var, gate, site_expr, ...)                                                \
  static const ::lens::detail::SiteGate gate{site_expr, __FILE__, __LINE__};                       \
  ::lens::ManagedSpan var(                                                                         \
      gate.handle.enabled() ? ::lens::detail::SpanStart{true, gate.site.name, {__VA_ARGS__}, true} \
                            : ::lens::detail::SpanStart{})

// LENS_SPAN_CM(name, {"key", value}, ...): an ungated ScopedSpan for the rest of the scope.
#define LENS_SPAN_CM(name, ...)                                      \
  LENS_SPAN_CM_NAMED(LENS_DETAIL_CONCAT(lens_span_cm_, __COUNTER__), \
                     name __VA_OPT__(, ) __VA_ARGS__)
#define LENS_SPAN_CM_NAMED(var, name, ...) ::lens::ScopedSpan var((name), {__VA_ARGS__})

// At the top of a function body: a ManagedSpan named after the function, i.e. its unqualified
// name as given by __func__ ("operator()" in a lambda; no class or namespace). The guard is named
// `lens_function_span`. Use LENS_SPAN for a qualified or custom name.
#define LENS_TRACE_FUNCTION(group) \
  LENS_SPAN_NAMED(lens_function_span, (::lens::SpanSite{__func__, group}))

#endif  // LENS_DISABLE
