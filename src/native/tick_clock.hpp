// The clock of the native span path: raw CPU ticks on the recording thread (one instruction,
// DESIGN.md property 2), turned into Unix nanoseconds on the export thread. x86-64 reads the
// time-stamp counter (invariant on every CPU this library targets), AArch64 the virtual counter;
// elsewhere the ticks are steady_clock nanoseconds. Thread-safety: read_ticks() anywhere;
// TickCalibration belongs to one thread (the export thread).
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace lens::native {

inline std::uint64_t read_ticks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#elif defined(__aarch64__)
  std::uint64_t value;
  asm volatile("mrs %0, cntvct_el0" : "=r"(value));
  return value;
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// Converts ticks to Unix nanoseconds: an anchor pair (ticks, system_clock) taken at construction
// and a tick rate measured against steady_clock over the longest interval seen so far, so the
// rate gets more exact the longer the process runs and a wall-clock step never bends it.
class TickCalibration {
 public:
  // Measures an initial rate over about `initial_window` (busy-waits that long).
  explicit TickCalibration(
      std::chrono::microseconds initial_window = std::chrono::microseconds(2000)) noexcept;

  // Re-measures the rate against the anchor (cheap: two clock reads).
  void refresh() noexcept;

  std::int64_t unix_nanos(std::uint64_t ticks) const noexcept;
  std::int64_t nanos_between(std::uint64_t start, std::uint64_t end) const noexcept;
  double nanos_per_tick() const noexcept { return nanos_per_tick_; }

 private:
  std::uint64_t anchor_ticks_;
  std::int64_t anchor_unix_ns_;
  std::int64_t anchor_steady_ns_;
  double nanos_per_tick_ = 1.0;
};

}  // namespace lens::native
