// Thread ownership and activation: each thread's span states (the current one and older ones
// with spans still open), the registry new threads join, and what a forked child forgets.
// Thread-safety: the thread states are the calling thread's; the active registry is guarded.
#include <mutex>
#include <new>

#include "core/fork_generation.hpp"
#include "native/span_internal.hpp"

namespace lens::native {

namespace {

// Lets go of a thread's state: no more writes; the export thread drains it and forgets it.
void forget(std::shared_ptr<ThreadSpans>& spans) noexcept {
  if (spans == nullptr) return;
  spans->exited.store(true, std::memory_order_release);
  if (spans->fork_generation() != core::fork_generation()) {
    core::keep_forever(std::move(spans));
  }
  spans.reset();
}

// Owns the calling thread's states: the current one and older ones with spans still open.
struct ThreadOwner {
  std::shared_ptr<ThreadSpans> current;
  std::vector<std::shared_ptr<ThreadSpans>> retired;

  ~ThreadOwner() {
    clear_calling_thread();
    forget(current);
    for (auto& spans : retired) forget(spans);
  }

  std::shared_ptr<ThreadSpans> find(const ThreadSpans* spans) const noexcept {
    if (current.get() == spans) return current;
    for (const auto& r : retired) {
      if (r.get() == spans) return r;
    }
    return nullptr;
  }
};
thread_local ThreadOwner t_owner;

// The registry new threads join. Replaced (the old one kept reachable) in a forked child.
struct ActiveRegistry {
  std::mutex mutex;
  std::shared_ptr<SpanRegistry> registry;
  ActiveRegistry* previous = nullptr;
};
std::atomic<ActiveRegistry*> g_registry{new ActiveRegistry()};

}  // namespace

// The registry new threads join, when it is the pipeline of `generation`; else null.
std::shared_ptr<SpanRegistry> active_registry(std::uint64_t generation) {
  ActiveRegistry* holder = g_registry.load(std::memory_order_acquire);
  std::shared_ptr<SpanRegistry> registry;
  {
    std::lock_guard<std::mutex> lock(holder->mutex);
    registry = holder->registry;
  }
  if (registry == nullptr || registry->generation() != generation) return nullptr;
  return registry;
}

ThreadSpans* attach_thread(std::uint64_t generation) noexcept {
  try {
    const std::shared_ptr<SpanRegistry> registry = active_registry(generation);
    if (registry == nullptr) return nullptr;
    std::shared_ptr<ThreadSpans> spans = registry->add_thread();
    if (spans == nullptr) return nullptr;
    ThreadOwner& owner = t_owner;
    if (owner.current != nullptr) {
      if (owner.current->depth() > 0) {
        owner.retired.push_back(std::move(owner.current));
      } else {
        forget(owner.current);
      }
    }
    for (auto& r : owner.retired) {
      if (r->depth() == 0) forget(r);
    }
    std::erase(owner.retired, nullptr);
    owner.current = std::move(spans);
    return owner.current.get();
  } catch (...) {
    return nullptr;
  }
}

void activate(std::shared_ptr<SpanRegistry> registry) noexcept {
  use_context_storage();
  const std::uint64_t generation = registry->generation();
  ActiveRegistry* holder = g_registry.load(std::memory_order_acquire);
  {
    std::lock_guard<std::mutex> lock(holder->mutex);
    holder->registry = std::move(registry);
  }
  detail::g_span_pipeline_generation.store(generation, std::memory_order_release);
}

void deactivate() noexcept {
  detail::g_span_pipeline_generation.store(0, std::memory_order_release);
  ActiveRegistry* holder = g_registry.load(std::memory_order_acquire);
  std::shared_ptr<SpanRegistry> old;
  {
    std::lock_guard<std::mutex> lock(holder->mutex);
    old = std::move(holder->registry);
  }
}

void reset_after_fork() noexcept {
  detail::g_span_pipeline_generation.store(0, std::memory_order_relaxed);
  auto* fresh = new (std::nothrow) ActiveRegistry();
  if (fresh == nullptr) return;
  fresh->previous = g_registry.load(std::memory_order_relaxed);
  g_registry.store(fresh, std::memory_order_release);
}

}  // namespace lens::native
