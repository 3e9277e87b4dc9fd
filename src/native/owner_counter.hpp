// A counter written by one thread and read by others: a relaxed load and store, no
// read-modify-write, so counting on a hot path costs no locked instruction.
// Thread-safety: increment() from the owner thread only; get() from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace lens::native {

class OwnerCounter {
 public:
  void increment() noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  std::uint64_t get() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

}  // namespace lens::native
