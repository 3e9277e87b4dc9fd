// The clock of the native span path: raw CPU ticks on the recording thread (one instruction,
// so that recording stays cheap), turned into Unix nanoseconds on the export thread. x86-64 reads the
// time-stamp counter (invariant on every CPU this library targets), AArch64 the virtual counter;
// elsewhere the ticks are steady_clock nanoseconds. Thread-safety: read_ticks() anywhere;
// TickCalibration belongs to one thread; SharedTickCalibration is for several (the span and log
// export threads).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

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

// Where a calibration reads its clocks: the real ones, or a test's.
struct ClockSource {
  std::uint64_t (*ticks)() noexcept;
  std::int64_t (*steady_ns)() noexcept;
  std::int64_t (*unix_ns)() noexcept;
};
ClockSource real_clocks() noexcept;

// Converts ticks to Unix nanoseconds. An anchor (ticks, steady_clock, system_clock) is taken at
// construction; the tick rate is measured against steady_clock over the longest interval seen so
// far, so it gets more exact the longer the process runs and a wall-clock step never bends it.
//
// Every clock reading is bracketed by two tick reads and the narrowest of a few tries is kept, so
// a thread preempted between the reads does not skew the rate. The conversion is piecewise
// linear: a refresh starts a segment where the newest one ends, with the new rate slewed by at
// most kMaxSlew towards steady_clock. So the conversion is continuous and increasing, and a tick
// converted once converts to the same nanosecond after any later refresh: two spans one after the
// other on a thread never overlap once converted, even when their records are converted in
// different passes with different rates. Segments are at least kMinSegment and 1/64 of the
// calibration's age apart, so the kSegments kept cover most of the process's life; a tick older
// than all of them (an extreme export backlog) is converted by the oldest one.
class TickCalibration {
 public:
  static constexpr std::size_t kSegments = 128;
  static constexpr std::chrono::milliseconds kMinSegment{10};
  static constexpr double kMaxSlew = 1e-3;

  // Measures an initial rate over about `initial_window` (busy-waits that long).
  explicit TickCalibration(
      std::chrono::microseconds initial_window = std::chrono::microseconds(2000),
      ClockSource clocks = real_clocks()) noexcept;

  // Re-measures the rate against the anchor (a few clock reads); starts a new segment when the
  // newest is old enough (see above).
  void refresh() noexcept;

  std::int64_t unix_nanos(std::uint64_t ticks) const noexcept;
  // unix_nanos(end) - unix_nanos(start), and 0 when end precedes start.
  std::int64_t nanos_between(std::uint64_t start, std::uint64_t end) const noexcept;
  double nanos_per_tick() const noexcept { return newest().nanos_per_tick; }
  std::size_t segment_count() const noexcept { return count_; }

 private:
  struct Reading {
    std::uint64_t ticks;
    std::int64_t steady_ns;
    std::int64_t unix_ns;  // read for the anchor only; 0 in a refresh's readings
  };
  struct Segment {
    std::uint64_t ticks;     // where it starts
    std::int64_t unix_ns;    // what those ticks convert to
    std::int64_t steady_ns;  // steady_clock when it was started
    double nanos_per_tick;
  };

  // The narrowest of a few bracketed tries; the Unix clock is read only `with_unix_clock` (the
  // anchor), so a refresh's bracket holds one clock read.
  Reading read(bool with_unix_clock) const noexcept;
  const Segment& newest() const noexcept { return segments_[newest_]; }
  const Segment& segment_for(std::uint64_t ticks) const noexcept;
  static std::int64_t convert(const Segment& segment, std::uint64_t ticks) noexcept;

  ClockSource clocks_;
  Reading anchor_;
  std::array<Segment, kSegments> segments_{};
  std::size_t newest_ = 0;
  std::size_t count_ = 0;
};

// One TickCalibration for the span and the log export thread of a setup, so that a log line and
// the span around it are converted by one function: a tick converts to the same nanosecond
// whichever thread converts it and whenever (see above), and ticks keep their order across both
// signals. One uncontended lock per conversion, on the export threads only.
class SharedTickCalibration {
 public:
  SharedTickCalibration() noexcept = default;
  SharedTickCalibration(const SharedTickCalibration&) = delete;
  SharedTickCalibration& operator=(const SharedTickCalibration&) = delete;

  void refresh() noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    calibration_.refresh();
  }
  std::int64_t unix_nanos(std::uint64_t ticks) const noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    return calibration_.unix_nanos(ticks);
  }
  std::int64_t nanos_between(std::uint64_t start, std::uint64_t end) const noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    return calibration_.nanos_between(start, end);
  }

 private:
  mutable std::mutex mutex_;
  TickCalibration calibration_;
};

}  // namespace lens::native
