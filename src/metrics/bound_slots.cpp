// Slot pools and the per-thread slot tables (see bound_slots.hpp).
#include "metrics/bound_slots.hpp"

#include <atomic>
#include <new>
#include <utility>

#include "core/fork_generation.hpp"

namespace lens::metrics::detail {
namespace {

std::atomic<std::size_t> g_next_series_id{0};

// Set once the thread's releaser has run: later recordings of that thread (from destructors of
// other thread_local objects) use the shared slot.
thread_local bool tl_exiting = false;

struct Held {
  std::weak_ptr<SlotPool> pool;
  void* slot;
  std::uint64_t generation;
};

// Gives a thread's slots back when it exits and frees its table.
struct ThreadReleaser {
  std::vector<Held> held;
  ~ThreadReleaser() {
    tl_exiting = true;
    forget_thread_lookups();
    const std::uint64_t generation = core::fork_generation();
    for (Held& h : held) {
      // Pools of a parent process are never touched in a forked child.
      if (h.generation != generation) continue;
      if (auto pool = h.pool.lock()) pool->release(h.slot);
    }
    ThreadSlots& table = thread_slots;
    delete[] table.slots;
    table.slots = nullptr;
    table.size = 0;
  }
};

ThreadReleaser& releaser() {
  thread_local ThreadReleaser instance;
  return instance;
}

// Makes room for `id` in the calling thread's table.
void grow_table(std::size_t id) {
  ThreadSlots& table = thread_slots;
  if (id < table.size) return;
  std::size_t size = table.size == 0 ? 64 : table.size;
  while (size <= id) size *= 2;
  void** slots = new void*[size]();
  for (std::size_t i = 0; i < table.size; ++i) slots[i] = table.slots[i];
  delete[] table.slots;
  table.slots = slots;
  table.size = size;
}

}  // namespace

std::size_t next_series_id() noexcept {
  return g_next_series_id.fetch_add(1, std::memory_order_relaxed);
}

SlotPool::SlotPool(std::size_t series_id, Make make, Destroy destroy, const void* context)
    : id_(series_id),
      make_(make),
      destroy_(destroy),
      context_(context),
      generation_((core::ensure_fork_handler(), core::fork_generation())) {
  shared_ = make_(context_);
}

SlotPool::~SlotPool() {
  destroy_(shared_);
  for (void* slot : all_) destroy_(slot);
}

bool SlotPool::usable() const noexcept { return generation_ == core::fork_generation(); }

void* SlotPool::thread_slot() noexcept {
  if (tl_exiting || !usable()) return nullptr;
  try {
    ThreadReleaser& r = releaser();
    r.held.reserve(r.held.size() + 1);
    grow_table(id_);
    void* slot = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      all_.reserve(all_.size() + 1);
      if (!free_.empty()) {
        slot = free_.back();
        free_.pop_back();
      } else {
        slot = make_(context_);
        all_.push_back(slot);
      }
    }
    r.held.push_back(Held{weak_from_this(), slot, generation_});
    thread_slots.slots[id_] = slot;
    return slot;
  } catch (...) {
    return nullptr;  // out of memory: the caller records into the shared slot
  }
}

void SlotPool::release(void* slot) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    free_.push_back(slot);
  } catch (...) {
    // Out of memory: the slot stays counted, only not reused.
  }
}

}  // namespace lens::metrics::detail
