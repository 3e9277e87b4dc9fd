// Counted collectives (lens/collectives.hpp): the per-group counters and the process-wide list
// of groups the hang watchdog reads. Thread-safety: counters are atomics written by the one
// thread running the group's collective; the list is appended under a mutex and read lock-free.
#include <algorithm>
#include <array>
#include <memory>
#include <mutex>

#include "lens/collectives.hpp"
#include "native/tick_clock.hpp"

namespace lens {
namespace {

struct Groups {
  std::mutex mutex;  // registration only
  std::array<std::atomic<CollectiveGroup*>, kMaxCollectiveGroups> listed{};
  std::atomic<std::size_t> count{0};
  std::vector<std::unique_ptr<CollectiveGroup>> unlisted;  // past the limit; under the mutex
};

Groups& groups() {
  // Never destroyed: groups are used until the process ends, from any thread.
  static Groups* all = new Groups();
  return *all;
}

std::atomic<std::int64_t> g_iteration{0};

}  // namespace

std::uint64_t CollectiveGroup::enter(const char* operation, std::uint64_t bytes) noexcept {
  operation_.store(operation, std::memory_order_relaxed);
  bytes_.store(bytes, std::memory_order_relaxed);
  entered_ticks_.store(native::read_ticks(), std::memory_order_relaxed);
  // One writer per group: a load and a store, no locked read-modify-write. Release: a reader
  // that sees the new number sees its operation, size and time.
  const std::uint64_t seq = seq_.load(std::memory_order_relaxed) + 1;
  seq_.store(seq, std::memory_order_release);
  return seq;
}

void CollectiveGroup::finish(std::uint64_t seq) noexcept {
  finished_operation_.store(operation_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  finished_seq_.store(seq, std::memory_order_release);
}

CollectiveGroup::State CollectiveGroup::state() const noexcept {
  State state;
  state.finished_seq = finished_seq_.load(std::memory_order_acquire);
  state.finished_operation = finished_operation_.load(std::memory_order_relaxed);
  state.seq = seq_.load(std::memory_order_acquire);
  state.operation = operation_.load(std::memory_order_relaxed);
  state.bytes = bytes_.load(std::memory_order_relaxed);
  state.entered_ticks = entered_ticks_.load(std::memory_order_relaxed);
  return state;
}

CollectiveGroup& collective_group(std::string_view name, std::vector<std::int64_t> ranks) {
  Groups& all = groups();
  std::lock_guard<std::mutex> lock(all.mutex);
  const std::size_t count = all.count.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < count; ++i) {
    CollectiveGroup* group = all.listed[i].load(std::memory_order_relaxed);
    if (group->name() == name) return *group;
  }
  for (const auto& group : all.unlisted) {
    if (group->name() == name) return *group;
  }
  auto group = std::make_unique<CollectiveGroup>(std::string(name), std::move(ranks));
  if (count < kMaxCollectiveGroups) {
    CollectiveGroup* listed = group.release();  // lives as long as the process
    all.listed[count].store(listed, std::memory_order_release);
    all.count.store(count + 1, std::memory_order_release);
    return *listed;
  }
  all.unlisted.push_back(std::move(group));
  return *all.unlisted.back();
}

std::vector<const CollectiveGroup*> collective_groups() {
  Groups& all = groups();
  const std::size_t count = all.count.load(std::memory_order_acquire);
  std::vector<const CollectiveGroup*> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    out.push_back(all.listed[i].load(std::memory_order_acquire));
  }
  return out;
}

void note_iteration_started(std::int64_t iteration) noexcept {
  g_iteration.store(iteration, std::memory_order_relaxed);
}

std::int64_t current_iteration() noexcept { return g_iteration.load(std::memory_order_relaxed); }

std::string rank_ranges(std::vector<std::int64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string text;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(ranks[i]);
    if (j > i) text += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

}  // namespace lens
