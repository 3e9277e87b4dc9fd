// The recording side of lens/metrics.hpp's bound instruments: the per-thread slot table, the
// counter and histogram slots and their series, inline because BoundCounter::add and
// BoundHistogram::record compile into the caller (a few nanoseconds each). Not API: included by
// lens/metrics.hpp, which must be included instead.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace lens::metrics::detail {

// The calling thread's slots, indexed by series id (ids are never reused, so an entry of a
// destroyed instrument is never looked at again). Trivial, so access needs no TLS wrapper.
struct ThreadSlots {
  void** slots = nullptr;
  std::size_t size = 0;
};
inline thread_local ThreadSlots thread_slots;

// One attribute set of an instrument.
struct SeriesBase {
  std::size_t id = 0;
};

inline void* cached_slot(const SeriesBase& series) noexcept {
  const ThreadSlots& table = thread_slots;
  return series.id < table.size ? table.slots[series.id] : nullptr;
}

template <class T>
struct alignas(64) CounterSlot {
  std::atomic<T> value{};
};

// A thread's own slot has one writer: a plain load and store, no read-modify-write.
template <class T>
inline void add_to_own_slot(void* slot, T value) noexcept {
  std::atomic<T>& v = static_cast<CounterSlot<T>*>(slot)->value;
  v.store(v.load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
}

// First recording of a thread into a series (or a recording without a slot of its own).
void counter_add_slow(SeriesBase& series, std::uint64_t value) noexcept;
void counter_add_slow(SeriesBase& series, double value) noexcept;

template <class T>
using HistogramSum = std::conditional_t<std::is_same_v<T, double>, double, std::int64_t>;

// Guarded by `busy` against the collector, which drains it; uncontended on the recording path.
template <class T>
struct alignas(64) HistogramSlot {
  std::atomic<bool> busy{false};
  std::uint64_t count = 0;
  HistogramSum<T> sum{};
  T min{};
  T max{};
  std::uint64_t* buckets = nullptr;  // boundaries + 1 counters, on cache lines of their own
};

struct HistogramSeriesBase : SeriesBase {
  const double* bounds = nullptr;
  std::size_t bound_count = 0;
};

// A value equal to a boundary falls in the bucket that boundary closes (as in the SDK).
inline std::size_t bucket_of(const HistogramSeriesBase& series, double value) noexcept {
  return static_cast<std::size_t>(
      std::lower_bound(series.bounds, series.bounds + series.bound_count, value) - series.bounds);
}

template <class T>
inline void histogram_put(HistogramSlot<T>& slot, T value, std::size_t bucket) noexcept {
  while (slot.busy.exchange(true, std::memory_order_acquire)) {
    while (slot.busy.load(std::memory_order_relaxed)) {
    }
  }
  if (slot.count == 0) {
    slot.min = value;
    slot.max = value;
  } else {
    slot.min = std::min(slot.min, value);
    slot.max = std::max(slot.max, value);
  }
  ++slot.count;
  slot.sum += static_cast<HistogramSum<T>>(value);
  ++slot.buckets[bucket];
  slot.busy.store(false, std::memory_order_release);
}

void histogram_record_slow(HistogramSeriesBase& series, std::uint64_t value) noexcept;
void histogram_record_slow(HistogramSeriesBase& series, double value) noexcept;

template <class T>
struct CounterCore;
template <class T>
struct HistogramCore;

// The SDK rejects negative, NaN and infinite histogram values and negative counter increments.
template <class T>
inline bool acceptable(T value) noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    return value >= 0 && value <= std::numeric_limits<T>::max();
  } else {
    return true;
  }
}

}  // namespace lens::metrics::detail
