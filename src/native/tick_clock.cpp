// TickCalibration (see tick_clock.hpp).
#include "native/tick_clock.hpp"

namespace lens::native {
namespace {

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t unix_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TickCalibration::TickCalibration(std::chrono::microseconds initial_window) noexcept
    : anchor_ticks_(read_ticks()), anchor_unix_ns_(unix_ns()), anchor_steady_ns_(steady_ns()) {
  const std::int64_t until = anchor_steady_ns_ + initial_window.count() * 1000;
  while (steady_ns() < until) {
  }
  refresh();
}

void TickCalibration::refresh() noexcept {
  const std::uint64_t ticks = read_ticks();
  const std::int64_t elapsed_ns = steady_ns() - anchor_steady_ns_;
  if (ticks > anchor_ticks_ && elapsed_ns > 0) {
    nanos_per_tick_ =
        static_cast<double>(elapsed_ns) / static_cast<double>(ticks - anchor_ticks_);
  }
}

std::int64_t TickCalibration::unix_nanos(std::uint64_t ticks) const noexcept {
  // Signed: a tick read on another core may precede the anchor by a few ticks.
  const double delta =
      static_cast<double>(static_cast<std::int64_t>(ticks - anchor_ticks_)) * nanos_per_tick_;
  return anchor_unix_ns_ + static_cast<std::int64_t>(delta);
}

std::int64_t TickCalibration::nanos_between(std::uint64_t start,
                                            std::uint64_t end) const noexcept {
  if (end <= start) return 0;
  return static_cast<std::int64_t>(static_cast<double>(end - start) * nanos_per_tick_);
}

}  // namespace lens::native
