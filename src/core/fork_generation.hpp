// Process-wide fork generation: a counter bumped in every forked child by a pthread_atfork child
// handler (registered once), so per-thread and per-object state can notice lazily that it was
// inherited from the parent. Thread-safe and lock-free; the handler only does one atomic add.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace lens::core {

namespace detail {
extern std::atomic<std::uint64_t> g_fork_generation;
}  // namespace detail

// Registers the child handler on first call (thread-safe, idempotent). Constructors of
// fork-aware components call it so the handler exists before any state worth resetting.
void ensure_fork_handler() noexcept;

// The number of fork() calls between the first process and this one (0 in the first process).
// Relaxed is enough: the value only changes in the child handler, before any other thread of
// the child exists.
inline std::uint64_t fork_generation() noexcept {
  return detail::g_fork_generation.load(std::memory_order_relaxed);
}

// Keeps `object` alive forever: for what a forked child inherited and must not destroy (its
// destructor could take a lock that a thread of the parent held at fork time). A lock-free list,
// reachable (no leak report).
void keep_forever(std::shared_ptr<void> object) noexcept;

}  // namespace lens::core
