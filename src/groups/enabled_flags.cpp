// Interned per-name enabled flags and the enabled set (see enabled_flags.hpp).
// Thread-safe: a shared_mutex guards the map and the set; the flags themselves are atomics.
#include "groups/enabled_flags.hpp"

#include <mutex>

namespace lens::detail {

const std::atomic<bool>& SpanGroupFlags::intern(std::string_view name,
                                                std::string_view* interned_name) {
  {
    std::shared_lock lock(mutex_);
    if (const auto it = flags_.find(name); it != flags_.end()) {
      *interned_name = it->first;
      return it->second;
    }
  }
  std::unique_lock lock(mutex_);
  // Created under the exclusive lock, so the initial value cannot miss a concurrent set_enabled.
  const auto [it, inserted] = flags_.try_emplace(std::string(name), enabled_.contains(name));
  *interned_name = it->first;
  return it->second;
}

void SpanGroupFlags::set_enabled(const std::set<std::string>& groups) {
  std::set<std::string, std::less<>> next(groups.begin(), groups.end());
  std::unique_lock lock(mutex_);
  // Relaxed stores: the flags gate nothing but themselves (see SpanGroupHandle::enabled).
  for (const auto& name : enabled_) {
    if (!next.contains(name)) {
      flags_.find(name)->second.store(false, std::memory_order_relaxed);
    }
  }
  for (const auto& name : next) {
    const auto [it, inserted] = flags_.try_emplace(name, true);
    if (!inserted) {
      it->second.store(true, std::memory_order_relaxed);
    }
  }
  enabled_ = std::move(next);
}

bool SpanGroupFlags::is_enabled(std::string_view name) const {
  std::shared_lock lock(mutex_);
  return enabled_.contains(name);
}

std::set<std::string> SpanGroupFlags::enabled() const {
  std::shared_lock lock(mutex_);
  return {enabled_.begin(), enabled_.end()};
}

}  // namespace lens::detail
