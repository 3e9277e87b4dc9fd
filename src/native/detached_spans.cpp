// Detached spans (lens::Span): spans on no thread's stack, started on one thread, changed and
// ended on any. Thread-safety: each span's frame is guarded by its own mutex; its record goes
// into the ending thread's ring.
#include <mutex>
#include <new>

#include "core/fork_generation.hpp"
#include "native/span_depths.hpp"
#include "native/span_internal.hpp"
#include "native/tick_clock.hpp"

namespace lens::native {

DetachedSpan* begin_detached_span(std::string_view name, AttributeList attributes,
                                  const NewTrace* root,
                                  const otel::trace::SpanContext* link) noexcept {
  ThreadSpans* spans = calling_thread_attached();
  if (spans == nullptr) return nullptr;
  auto* span = new (std::nothrow) DetachedSpan();
  if (span == nullptr) return nullptr;
  try {
    span->registry = active_registry(spans->generation());
    if (span->registry == nullptr) {
      delete span;
      return nullptr;
    }
    span->fork_generation = spans->fork_generation();
    span->registry->add_detached(span);
  } catch (...) {
    delete span;
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(span->mutex);
  start_detached_frame(*spans, name, attributes, root, link, span->frame);
  // On no thread's stack: its children find its depth here.
  if (depth_tracking()) {
    remember_span_depth(span->frame.data.record.id.span_id, span->frame.data.record.id.depth);
  }
  return span;
}

otel::trace::SpanContext detached_span_context(DetachedSpan& span) noexcept {
  std::lock_guard<std::mutex> lock(span.mutex);
  return span_context(span.frame);
}

void end_detached_span(DetachedSpan* span) noexcept {
  if (span == nullptr) return;
  const std::uint64_t end_ticks = read_ticks();
  // A forked child never touches what it inherited (a lock may be held by a thread that is gone).
  if (span->fork_generation != core::fork_generation()) return;
  bool stopped = false;  // the pipeline no longer takes spans
  {
    std::lock_guard<std::mutex> lock(span->mutex);
    span->ended = true;
    FrameData& data = span->frame.data;
    forget_span_depth(data.record.id.span_id);
    if (data.recording()) {
      // Into this thread's ring while the pipeline takes spans.
      ThreadSpans* spans = calling_thread_state();
      if (spans == nullptr || spans->generation() != span->registry->generation()) {
        spans = detail::g_span_pipeline_generation.load(std::memory_order_acquire) ==
                        span->registry->generation()
                    ? calling_thread_attached()
                    : nullptr;
      }
      stopped = spans == nullptr || spans->closed.load(std::memory_order_relaxed);
      if (!stopped) span->written = write_ended(*spans, span->frame, end_ticks);
    }
  }
  // Stopped: the shutdown snapshot exports it (truncated), or did; the registry frees it then.
  if (stopped && span->registry->keep_for_snapshot(span)) return;
  span->registry->remove_detached(span);
  delete span->frame.data.record.extras;
  delete span;
}

}  // namespace lens::native
