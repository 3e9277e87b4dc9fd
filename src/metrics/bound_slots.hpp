// Per-thread slots of bound instruments (see lens/metrics.hpp): a SlotPool owns the slots of
// one series, hands each recording thread its own, registers it in the thread's table
// (detail::thread_slots) and takes it back when the thread exits, to give it to a later thread
// with its value intact. A pool made before a fork() is never touched in the child (a parent
// thread may have held its mutex): recordings there are dropped.
// Thread-safety: every member may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "lens/metrics.hpp"

namespace lens::metrics::detail {

// A fresh series id (never reused).
std::size_t next_series_id() noexcept;

// Empties the calling thread's cache of Counter::add / Histogram::record bindings (which also
// holds slot pointers): its slots are given back when it exits.
void forget_thread_lookups() noexcept;

class SlotPool : public std::enable_shared_from_this<SlotPool> {
 public:
  using Make = void* (*)(const void* context);  // throws on failure
  using Destroy = void (*)(void* slot) noexcept;

  // `context` is passed to `make` and must outlive the pool. The shared slot is made here.
  SlotPool(std::size_t series_id, Make make, Destroy destroy, const void* context);
  ~SlotPool();
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;

  // The calling thread's slot, now also in its table; null when it can have none (out of
  // memory, thread exiting, pool inherited across fork()).
  void* thread_slot() noexcept;

  // A slot for recordings without a slot of their own: written by many threads.
  void* shared_slot() const noexcept { return shared_; }

  // False in a forked child of the process that made the pool.
  bool usable() const noexcept;

  // Calls fn(slot) for every slot, the shared one included (collection side).
  template <class F>
  void for_each(F&& fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    fn(shared_);
    for (void* slot : all_) fn(slot);
  }

  // A thread that exits gives its slot back.
  void release(void* slot) noexcept;

 private:
  const std::size_t id_;
  const Make make_;
  const Destroy destroy_;
  const void* const context_;
  const std::uint64_t generation_;
  void* shared_ = nullptr;
  std::mutex mutex_;
  std::vector<void*> all_;   // guarded by mutex_
  std::vector<void*> free_;  // guarded by mutex_
};

}  // namespace lens::metrics::detail
