// The pthread_atfork child handler behind fork_generation(). Thread-safety: see the header.
#include "core/fork_generation.hpp"

#include <pthread.h>

#include <new>

namespace lens::core {

namespace detail {
constinit std::atomic<std::uint64_t> g_fork_generation{0};
}  // namespace detail

namespace {
// Async-signal-safe: one lock-free atomic add, no allocation, no lock.
void on_fork_child() noexcept { detail::g_fork_generation.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

void ensure_fork_handler() noexcept {
  // Function-local static: registered exactly once even with concurrent first callers.
  [[maybe_unused]] static const bool registered =
      pthread_atfork(nullptr, nullptr, &on_fork_child) == 0;
}

namespace {
struct Kept {
  std::shared_ptr<void> object;
  Kept* next;
};
std::atomic<Kept*> g_kept{nullptr};
}  // namespace

void keep_forever(std::shared_ptr<void> object) noexcept {
  auto* node = new (std::nothrow) Kept{std::move(object), nullptr};
  if (node == nullptr) return;
  node->next = g_kept.load(std::memory_order_relaxed);
  while (!g_kept.compare_exchange_weak(node->next, node, std::memory_order_release,
                                       std::memory_order_relaxed)) {
  }
}

}  // namespace lens::core
