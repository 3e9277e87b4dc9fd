// The remembered depths of open spans (see span_depths.hpp); open_span_depth is in
// thread_spans.cpp.
#include "native/span_depths.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>

#include "core/fork_generation.hpp"

namespace lens::native {
namespace {

struct RememberedDepths {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, std::uint8_t> depths;
  std::atomic<std::size_t> size{0};  // read without the lock: empty means nothing to look up
  std::uint64_t fork_generation = core::fork_generation();
};

std::atomic<RememberedDepths*> g_table{nullptr};

// This process's table; null when out of memory. A forked child starts a new one (the parent's
// lock may be held by a thread the child does not have, and its spans are not the child's); the
// parent's is kept, unused.
RememberedDepths* table() noexcept {
  RememberedDepths* current = g_table.load(std::memory_order_acquire);
  if (current != nullptr && current->fork_generation == core::fork_generation()) return current;
  core::ensure_fork_handler();
  auto* fresh = new (std::nothrow) RememberedDepths();
  if (fresh == nullptr) return nullptr;
  if (!g_table.compare_exchange_strong(current, fresh, std::memory_order_acq_rel)) {
    delete fresh;  // another thread installed one first
    return current;
  }
  if (current != nullptr) {
    try {
      core::keep_forever(std::shared_ptr<void>(current, [](void*) {}));
    } catch (...) {
    }
  }
  return fresh;
}

std::atomic<bool> g_tracking{false};

}  // namespace

void set_depth_tracking(bool on) noexcept { g_tracking.store(on, std::memory_order_relaxed); }
bool depth_tracking() noexcept { return g_tracking.load(std::memory_order_relaxed); }

void remember_span_depth(std::uint64_t span_id, std::uint8_t depth) noexcept {
  RememberedDepths* t = table();
  if (t == nullptr) return;
  std::lock_guard<std::mutex> lock(t->mutex);
  try {
    t->depths[span_id] = depth;
  } catch (...) {
    return;  // out of memory: its children count from depth 1
  }
  t->size.store(t->depths.size(), std::memory_order_release);
}

void forget_span_depth(std::uint64_t span_id) noexcept {
  RememberedDepths* t = table();
  if (t == nullptr || t->size.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::mutex> lock(t->mutex);
  t->depths.erase(span_id);
  t->size.store(t->depths.size(), std::memory_order_release);
}

std::optional<std::uint8_t> remembered_span_depth(std::uint64_t span_id) noexcept {
  RememberedDepths* t = table();
  if (t == nullptr || t->size.load(std::memory_order_acquire) == 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(t->mutex);
  const auto it = t->depths.find(span_id);
  if (it == t->depths.end()) return std::nullopt;
  return it->second;
}

}  // namespace lens::native
