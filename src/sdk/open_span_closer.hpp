// OpenSpanCloser: a span processor that wraps the next processor (the batch processor) and, at
// Shutdown, ends every span still open (SPEC Part 2 §E.5) so the next processor exports it once.
// Thread-safety: all members may be called concurrently; one registry mutex (never held while
// calling the next processor) plus one small mutex per tracked span. Fork-safe: see below.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>

#include "opentelemetry/sdk/trace/processor.h"
#include "sdk/span_counts.hpp"

namespace lens::sdk {

// How it reaches live spans: OnStart only receives a Recordable, never the Span, so the closer
// owns the recordable path instead. MakeRecordable returns a tracking recordable that owns the
// next processor's recordable (the "inner" one) and forwards every call to it under its own
// mutex. OnStart registers it in a map keyed by span id; OnEnd removes it and hands the inner
// recordable to next->OnEnd. Shutdown takes the leftovers under the registry lock, then,
// newest-started first (children before parents), takes each inner recordable, sets
// nemo.span.truncated=true, adds the event nemo.span.truncated with
// nemo.span.truncated.reason="still open at telemetry shutdown", sets the duration to
// now - start, hands it to next->OnEnd and only then shuts the next processor down. Taking the
// inner recordable is the single hand-off point, so a span is exported exactly once: a user End
// after the force-end finds it gone and is ignored (the Span's later attribute calls are no-ops).
// Status is left untouched. Unlike Python's strong references, a Span whose last reference is
// dropped ends itself normally (opentelemetry-cpp's ~Span calls End()); only spans that are still
// alive and unended at shutdown are truncated.
//
// Fork safety: the registry (mutex, map, closed flag) is stamped with the process's fork
// generation. The first use in a forked child swaps in a fresh registry and deliberately leaks
// the inherited one (another parent thread may have held its lock mid-update), so the child
// never blocks on a lock held at fork time and never sees the parent's open spans. Recordables
// inherited from the parent are inert in the child: every call is a no-op and their OnEnd
// exports nothing.
class OpenSpanCloser final : public opentelemetry::sdk::trace::SpanProcessor {
 public:
  // `next` must not be null; it receives every recordable, started and ended spans alike.
  // `counts`, when given, counts every span started and every span ended (once, whether by
  // its owner or by the closer at shutdown).
  explicit OpenSpanCloser(std::unique_ptr<opentelemetry::sdk::trace::SpanProcessor> next,
                          std::shared_ptr<SpanCounts> counts = nullptr);
  ~OpenSpanCloser() override;

  OpenSpanCloser(const OpenSpanCloser&) = delete;
  OpenSpanCloser& operator=(const OpenSpanCloser&) = delete;

  std::unique_ptr<opentelemetry::sdk::trace::Recordable> MakeRecordable() noexcept override;
  void OnStart(opentelemetry::sdk::trace::Recordable& span,
               const opentelemetry::trace::SpanContext& parent_context) noexcept override;
  void OnEnd(std::unique_ptr<opentelemetry::sdk::trace::Recordable>&& span) noexcept override;
  // Forwards to the next processor only; never ends a live span.
  bool ForceFlush(
      std::chrono::microseconds timeout = (std::chrono::microseconds::max)()) noexcept override;
  // Ends the open spans (once; later calls sweep nothing), then shuts the next processor down.
  bool Shutdown(
      std::chrono::microseconds timeout = (std::chrono::microseconds::max)()) noexcept override;

  // Spans started and not yet ended (or force-ended) in this process.
  std::size_t open_span_count() const noexcept;
  // True once Shutdown ran in this process (a forked child starts open again).
  bool is_closed() const noexcept;
  opentelemetry::sdk::trace::SpanProcessor& next() noexcept { return *next_; }

  // Test hook, not API: holds the registry lock (to prove a forked child does not deadlock).
  std::unique_lock<std::mutex> lock_registry_for_testing() const;

  struct Registry;  // internal

 private:
  Registry& registry() const noexcept;

  std::unique_ptr<opentelemetry::sdk::trace::SpanProcessor> next_;
  std::shared_ptr<SpanCounts> counts_;
  mutable std::atomic<Registry*> registry_;
};

}  // namespace lens::sdk
