// The process-wide tracer slot read by the instrumentation primitives (see
// lens/detail/active_tracer.hpp). The slot is an atomic pointer to an immutable holder that
// is never freed, so reads and writes are lock-free — which keeps the slot safe to reset in
// a fork()ed child. Holders are replaced only by setup and shutdown, so the leak is bounded by
// the number of setups in the process.
#include "lens/detail/active_tracer.hpp"

#include <opentelemetry/trace/noop.h>

#include <atomic>

namespace lens::detail {
namespace {

struct Holder {
  TracerPtr tracer;
};

const Holder* noop_holder() {
  // Built through its concrete type: NoopTracer relies on enable_shared_from_this.
  static const Holder* holder =
      new Holder{TracerPtr(opentelemetry::nostd::shared_ptr<opentelemetry::trace::NoopTracer>(
          new opentelemetry::trace::NoopTracer()))};
  return holder;
}

std::atomic<const Holder*>& slot() {
  static std::atomic<const Holder*> current{noop_holder()};
  return current;
}

}  // namespace

TracerPtr active_tracer() noexcept { return slot().load(std::memory_order_acquire)->tracer; }

void set_active_tracer(TracerPtr tracer) noexcept {
  // Release: a reader that sees the new holder sees the tracer inside it fully built.
  slot().store(tracer == nullptr ? noop_holder() : new Holder{std::move(tracer)},
               std::memory_order_release);
}

}  // namespace lens::detail
