// Parent resolution off the hot path: the parent a span takes from an opentelemetry context (a
// third-party span, a ContextScope, a remote context). Thread-safety: acts on the calling
// thread's own state.
#include <opentelemetry/context/runtime_context.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/span_id.h>

#include <cstring>

#include "native/context_storage.hpp"
#include "native/span_depths.hpp"
#include "native/span_internal.hpp"

namespace lens::native {

namespace {

std::uint64_t span_id_value(const otel::trace::SpanId& id) noexcept {
  std::uint64_t value = 0;
  for (std::uint8_t byte : id.Id()) value = (value << 8) | byte;
  return value;
}

}  // namespace

// The ids go to `id_storage`, the trace state, when there is one, to `state_storage`.
Parent parent_from_context(
    const otel::context::Context& context, Identity& id_storage,
    otel::nostd::shared_ptr<otel::trace::TraceState>& state_storage) noexcept {
  Parent parent;
  const auto span = otel::trace::GetSpan(context);
  const otel::trace::SpanContext sc = span->GetContext();
  if (!sc.IsValid()) return parent;
  parent.id = &id_storage;
  parent.remote = sc.IsRemote();
  std::memcpy(id_storage.trace_id.data(), sc.trace_id().Id().data(), 16);
  id_storage.span_id = span_id_value(sc.span_id());
  id_storage.parent_span_id = 0;
  id_storage.flags = sc.trace_flags().flags();
  id_storage.depth = 0;  // unknown here: see parent_from_attached
  const auto state = sc.trace_state();
  if (state != nullptr && !state->Empty()) {
    state_storage = state;
    parent.trace_state = &state_storage;
  }
  return parent;
}

Parent parent_from_attached(ThreadSpans& spans, bool installed) noexcept {
  const Parent parent = parent_from_context(
      installed ? attached_context() : otel::context::RuntimeContext::GetCurrent(),
      spans.context_parent, spans.context_trace_state);
  // A local parent of unknown depth (a native span of another thread) counts as depth 0.
  if (parent.id != nullptr && !parent.remote) {
    spans.context_parent.depth = open_span_depth(spans.context_parent.span_id).value_or(0);
  }
  return parent;
}

}  // namespace lens::native
