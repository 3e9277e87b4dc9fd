// The process-wide tracer slot read by the instrumentation primitives (see
// lens/detail/active_tracer.hpp). The slot is an atomic pointer to an immutable holder that
// is never freed, so reads and writes are lock-free — which keeps the slot safe to reset in
// a fork()ed child. Each holder links to the one it replaced, so every holder stays reachable
// (no leak reports) and the memory is bounded by the number of setups and shutdowns.
#include "lens/detail/active_tracer.hpp"

#include <opentelemetry/trace/noop.h>

#include <atomic>

namespace lens::detail {
namespace {

struct Holder {
  TracerPtr tracer;
  const Holder* previous;
};

const TracerPtr& noop_tracer() {
  // Built through its concrete type: NoopTracer relies on enable_shared_from_this.
  static const auto* tracer =
      new TracerPtr(opentelemetry::nostd::shared_ptr<opentelemetry::trace::NoopTracer>(
          new opentelemetry::trace::NoopTracer()));
  return *tracer;
}

std::atomic<const Holder*>& slot() {
  static std::atomic<const Holder*> current{new Holder{noop_tracer(), nullptr}};
  return current;
}

}  // namespace

TracerPtr active_tracer() noexcept { return slot().load(std::memory_order_acquire)->tracer; }

void set_active_tracer(TracerPtr tracer) noexcept {
  auto& current = slot();
  const Holder* previous = current.load(std::memory_order_relaxed);
  const Holder* next = new Holder{tracer == nullptr ? noop_tracer() : std::move(tracer), previous};
  // Release: a reader that sees the new holder sees the tracer inside it fully built. A racing
  // setter may link to a stale `previous`; that holder then stays reachable through the chain
  // of the other setter, so nothing is ever freed while a reader may hold it.
  while (!current.compare_exchange_weak(previous, next, std::memory_order_release,
                                        std::memory_order_relaxed)) {
    const_cast<Holder*>(next)->previous = previous;
  }
}

}  // namespace lens::detail
