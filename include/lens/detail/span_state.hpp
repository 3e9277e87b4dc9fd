// The inline part of lens/span.hpp's scoped spans: what LENS_SPAN and the guards compile into
// the caller (the site gate, the started state and the library's two span entry points). The
// library's span state is opaque here: handles to types only the library defines. Not API:
// included by lens/span.hpp, which must be included instead.
#pragma once

#include <opentelemetry/trace/span_context.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <string_view>

#include "lens/attributes.hpp"
#include "lens/groups.hpp"
#include "lens/span_site.hpp"

namespace lens {

struct NewTrace;

namespace detail {

// What LENS_SPAN hands a ManagedSpan once its gate has been read: `enabled` false means "off" and
// nothing else is looked at. Built by the macro so that the attribute expressions sit only in the
// enabled branch of a conditional; the initializer_list's array lives to the end of the
// full-expression, i.e. through the ManagedSpan constructor.
struct SpanStart {
  bool enabled = false;
  std::string_view name;
  AttributeList attributes;
  bool static_name = false;  // `name` has static storage (a site's): spans carry its address
};

// The handle of a site's group; on stderr, once, when no vocabulary registers the group (the
// site could never record). Defined in src/groups/site_check.cpp. Not API.
SpanGroupHandle checked_site_group_handle(const SpanSite& site, const char* file, int line);

// A LENS_SPAN site: its descriptor and its group's handle, resolved once per site (on its first
// pass, which is also when an unregistered group is reported).
struct SiteGate {
  explicit SiteGate(const SpanSite& s) : site(s), handle(span_group_handle(s.group)) {}
  SiteGate(const SpanSite& s, const char* file, int line)
      : site(s), handle(checked_site_group_handle(s, file, line)) {}
  SpanSite site;
  SpanGroupHandle handle;
};

// Opaque: a thread's stack of open spans, one span's frame on it, and a span on no thread's
// stack (lens::Span). Only the library defines them (its native span path).
struct SpanStack;
struct SpanFrame;
struct OpenSpan;

// The handle of one open span on the calling thread (null members: nothing to end).
struct SpanHandle {
  SpanStack* thread;
  SpanFrame* frame;
};

// The library's span entry points, called from SpanState's inline constructor and destructor.
// Non-zero while a span pipeline takes spans.
extern std::atomic<std::uint64_t> g_span_pipeline_generation;
// A span on the calling thread as a child of its current context, into `out`.
void begin_span(std::string_view name, AttributeList attributes, bool record_exception_events,
                SpanHandle& out) noexcept;
// The same for a LENS_SPAN site (exception events recorded): the name's characters have static
// storage, and the span's record keeps their address instead of a copy.
void begin_site_span(std::string_view name, AttributeList attributes, SpanHandle& out) noexcept;
void end_span(SpanStack* thread, SpanFrame* frame) noexcept;

// The started part of a scoped span, shared by ManagedSpan and ScopedSpan: a frame of the
// calling thread's span stack (see docs/design/native-spans.md) while setup_telemetry's
// span pipeline is live, a non-recording span otherwise (a rank that does not export, or before
// setup). The current context is the parent, attributes are set after start (samplers do not
// see them, as in NeMo Lens), and the span is the current span until destruction. Destruction: an
// exception propagating out of the scope (std::uncaught_exceptions() grew since construction)
// that record_exception() did not already describe is recorded as type "unknown", message
// "unknown", status ERROR "unknown exception" — the in-flight exception object is not reachable
// from a destructor. Then the previous context is restored and the span ended. The constructor
// and the destructor are one call each into the library (inline here: no second call level on
// the path every recorded span takes).
class SpanState {
 public:
  // `enabled` false: nothing is started (ManagedSpan's group was off); started() is false and
  // nothing else may be called.
  SpanState(bool enabled, std::string_view name, AttributeList attributes,
            bool record_exception_events, bool static_name = false) noexcept {
    if (!enabled) return;
    if (g_span_pipeline_generation.load(std::memory_order_acquire) != 0) [[likely]] {
      mode_ = Mode::kNative;
      if (static_name) {
        begin_site_span(name, attributes, handle_);
      } else {
        begin_span(name, attributes, record_exception_events, handle_);
      }
      return;
    }
    mode_ = Mode::kUnrecorded;
  }
  SpanState(std::string_view name, AttributeList attributes, bool record_exception_events) noexcept
      : SpanState(true, name, attributes, record_exception_events) {}
  // The root of a new trace (see NewTrace), made current like any other.
  SpanState(bool enabled, std::string_view name, AttributeList attributes,
            const NewTrace& root) noexcept;
  ~SpanState() {
    if (mode_ == Mode::kNative) [[likely]] {
      end_span(handle_.thread, handle_.frame);
    }
  }
  SpanState(const SpanState&) = delete;
  SpanState& operator=(const SpanState&) = delete;

  bool started() const noexcept { return mode_ != Mode::kOff; }
  // The span's context (ids, sampled flag, trace state); invalid when nothing is recorded.
  opentelemetry::trace::SpanContext context() const noexcept;
  void record_exception(const std::exception& e) noexcept;
  void set_attribute(std::string_view key, const AttributeArg& value) noexcept;
  void add_event(std::string_view name, AttributeList attributes) noexcept;

 private:
  // kUnrecorded: started with no span pipeline live (span() is a non-recording span). Only the
  // mode is set when the span is off (one store on the disabled path).
  enum class Mode : unsigned char { kOff, kUnrecorded, kNative };
  Mode mode_ = Mode::kOff;
  // Filled by begin_span (thread and frame null when nothing is recorded).
  SpanHandle handle_;
};

}  // namespace detail

}  // namespace lens
