// The process-wide logger slot (see active_logger.hpp). Like the tracer slot, it is an atomic
// pointer to immutable holders that are never freed (each links to the one it replaced), so a
// reader never sees a destroyed holder and the slot can be reset in a fork()ed child. A retired
// pipeline's registry stays reachable that way, without its buffers (LogRegistry::release_threads).
#include "logs/active_logger.hpp"

#include <atomic>

#include "lens/log.hpp"

namespace lens::log::detail {
// Above every severity: nothing records until a logger and the bridge are both set.
constinit std::atomic<int> g_threshold{1000};
}  // namespace lens::log::detail

namespace lens::logs {
namespace {

struct Holder {
  ActiveLogger value;
  const Holder* previous;
};

std::atomic<const Holder*>& slot() {
  static std::atomic<const Holder*> current{new Holder{ActiveLogger{}, nullptr}};
  return current;
}

std::atomic<int>& bridge_level() {
  static std::atomic<int> level{0};
  return level;
}

void update_threshold() noexcept {
  const int level = bridge_level().load(std::memory_order_relaxed);
  const bool live = slot().load(std::memory_order_acquire)->value.registry != nullptr;
  log::detail::g_threshold.store(level > 0 && live ? level : 1000, std::memory_order_relaxed);
}

}  // namespace

const ActiveLogger* active_logger() noexcept {
  return &slot().load(std::memory_order_acquire)->value;
}

void set_active_logger(ActiveLogger logger) noexcept {
  auto& current = slot();
  const Holder* previous = current.load(std::memory_order_relaxed);
  const Holder* next = new Holder{std::move(logger), previous};
  // Release: a reader that sees the new holder sees the logger inside it fully built.
  while (!current.compare_exchange_weak(previous, next, std::memory_order_release,
                                        std::memory_order_relaxed)) {
    const_cast<Holder*>(next)->previous = previous;
  }
  update_threshold();
}

void clear_active_logger() noexcept { set_active_logger(ActiveLogger{}); }

void set_bridge_level(int severity) noexcept {
  bridge_level().store(severity, std::memory_order_relaxed);
  update_threshold();
}

}  // namespace lens::logs
