// What the files of the native span path share beyond frame writes (span_frame_write.hpp): parent
// resolution's pieces, the registry new threads join, and the hot path's entries for detached
// spans. Not for other layers. Thread-safety: as each declaration says.
#pragma once

#include <opentelemetry/context/context.h>
#include <opentelemetry/trace/span_context.h>

#include <cstdint>
#include <memory>

#include "native/thread_spans.hpp"

namespace lens::native {

namespace otel = opentelemetry;

// ---- Parent resolution (span_parent.cpp) -----------------------------------------------------

struct Parent {
  const Identity* id = nullptr;  // the parent's trace id, span id and flags; null: a root
  bool remote = false;
  // The trace state children inherit: the parent frame's, or the thread's scratch (null: none).
  const otel::nostd::shared_ptr<otel::trace::TraceState>* trace_state = nullptr;
};

inline Parent parent_from_frame(const Frame& frame) noexcept {
  Parent parent;
  parent.id = &frame.data.record.id;
  if (frame.data.has(FrameData::kHasTraceState)) parent.trace_state = &frame.trace_state;
  return parent;
}

// The ids go to `id_storage`, the trace state, when there is one, to `state_storage`.
Parent parent_from_context(
    const otel::context::Context& context, Identity& id_storage,
    otel::nostd::shared_ptr<otel::trace::TraceState>& state_storage) noexcept;

// The parent of a span starting now on this thread: the innermost native span unless something
// was attached to the opentelemetry context after it started (a ContextScope, a third-party span).
// Out of line: rare, and keeps the hot path free of context objects.
[[gnu::noinline]] Parent parent_from_attached(ThreadSpans& spans, bool installed) noexcept;

// ---- Threads and the active registry (span_threads.cpp) -------------------------------------

// The registry new threads join, when it is the pipeline of `generation`; else null.
std::shared_ptr<SpanRegistry> active_registry(std::uint64_t generation);
// Gives the calling thread a fresh state in the active registry of `generation` and keeps it
// (older states with spans still open too); null when there is none or memory runs out.
ThreadSpans* attach_thread(std::uint64_t generation) noexcept;

// ---- From the hot path (thread_spans.cpp) ----------------------------------------------------

// The calling thread's state for the active pipeline, attaching the thread when needed; null when
// no pipeline takes spans.
ThreadSpans* calling_thread_attached() noexcept;
// The calling thread's current state, whatever its pipeline (null before its first span).
ThreadSpans* calling_thread_state() noexcept;
// The calling thread has exited: no more spans through its fast state.
void clear_calling_thread() noexcept;
// Fills `frame`, a detached span's own: the root of a new trace with `root`, else a child of the
// calling thread's current context; linked to `link` when that is valid.
void start_detached_frame(ThreadSpans& spans, std::string_view name, AttributeList attributes,
                          const NewTrace* root, const otel::trace::SpanContext* link,
                          Frame& frame) noexcept;
// Writes the record of a recording span that ended (its trace state into the extras first) into
// `spans`' ring, counted as ended, or as dropped when the ring is full; true when written.
bool write_ended(ThreadSpans& spans, Frame& frame, std::uint64_t end_ticks) noexcept;

// ---- The sequence lock's read side (span_registry.cpp) ---------------------------------------

// Copies an open span's frame into `copy`: its data, without the frame's extras pointer; with
// `with_extras` (the reader may follow the frame's pointers: the owner thread, or a detached
// span's lock holder) also its extras and its trace state.
void copy_open(ThreadSpans::OpenSpan& copy, const Frame& frame, bool with_extras);

}  // namespace lens::native
