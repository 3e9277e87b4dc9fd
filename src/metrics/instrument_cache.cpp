// The per-meter instrument cache (see lens/metrics.hpp). Keyed by the meter's address and the
// instrument set's type; entries remember the fork generation they were made in, so a forked
// child never records into instruments of its parent's providers.
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <typeindex>
#include <utility>

#include "core/fork_generation.hpp"
#include "lens/metrics.hpp"

namespace lens::metrics {
namespace {

struct Entry {
  std::shared_ptr<void> instruments;
  std::uint64_t generation = 0;
};

struct Cache {
  std::mutex mutex;
  std::map<std::pair<const void*, std::type_index>, Entry> entries;
  // Entries of a parent process: never used, never destroyed (their destructors would touch
  // the parent's SDK state).
  std::vector<std::shared_ptr<void>> inherited;
};

Cache& cache() {
  static auto* instance = new Cache();  // leaked: usable until the very end of the process
  return *instance;
}

}  // namespace

namespace detail {

std::shared_ptr<void> cached_instruments(
    opentelemetry::metrics::Meter& meter, const std::type_info& type, const char* domain,
    std::shared_ptr<void> (*make)(opentelemetry::metrics::Meter&)) {
  core::ensure_fork_handler();
  const std::uint64_t generation = core::fork_generation();
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  const auto key = std::make_pair(static_cast<const void*>(&meter), std::type_index(type));
  auto it = c.entries.find(key);
  if (it != c.entries.end()) {
    if (it->second.generation == generation) return it->second.instruments;
    c.inherited.push_back(std::move(it->second.instruments));
    c.entries.erase(it);
  }
  try {
    std::shared_ptr<void> made = make(meter);
    c.entries[key] = Entry{made, generation};
    return made;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lens: warning: Failed to create %s metric instruments: %s\n", domain,
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "lens: warning: Failed to create %s metric instruments\n", domain);
  }
  return nullptr;
}

}  // namespace detail

void clear_instrument_cache() noexcept {
  Cache& c = cache();
  std::map<std::pair<const void*, std::type_index>, Entry> old;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    const std::uint64_t generation = core::fork_generation();
    for (auto& [key, entry] : c.entries) {
      if (entry.generation != generation) c.inherited.push_back(std::move(entry.instruments));
    }
    old.swap(c.entries);
  }
  // Destroyed outside the lock: a gauge's destructor takes the SDK's registry lock.
}

}  // namespace lens::metrics
