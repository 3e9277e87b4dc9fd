// TickCalibration (see tick_clock.hpp).
#include "native/tick_clock.hpp"

#include <algorithm>

namespace lens::native {
namespace {

std::uint64_t real_ticks() noexcept { return read_ticks(); }

std::int64_t real_steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t real_unix_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Tries per reading: one preemption between the tick and clock reads is common on a busy host,
// several in a row (within a microsecond) are not.
constexpr int kReadTries = 5;
// Segments are at least this fraction of the calibration's age apart (see the header).
constexpr std::int64_t kAgeFraction = 64;

}  // namespace

ClockSource real_clocks() noexcept { return {&real_ticks, &real_steady_ns, &real_unix_ns}; }

TickCalibration::TickCalibration(std::chrono::microseconds initial_window,
                                 ClockSource clocks) noexcept
    : clocks_(clocks), anchor_(read(true)) {
  const std::int64_t until = anchor_.steady_ns + initial_window.count() * 1000;
  while (clocks_.steady_ns() < until) {
  }
  const Reading now = read(false);
  double rate = 1.0;
  if (now.ticks > anchor_.ticks && now.steady_ns > anchor_.steady_ns) {
    rate = static_cast<double>(now.steady_ns - anchor_.steady_ns) /
           static_cast<double>(now.ticks - anchor_.ticks);
  }
  segments_[0] = {anchor_.ticks, anchor_.unix_ns, anchor_.steady_ns, rate};
  count_ = 1;
}

TickCalibration::Reading TickCalibration::read(bool with_unix_clock) const noexcept {
  Reading best{};
  std::uint64_t best_spread = ~std::uint64_t{0};
  for (int attempt = 0; attempt < kReadTries; ++attempt) {
    const std::uint64_t before = clocks_.ticks();
    const std::int64_t steady = clocks_.steady_ns();
    const std::int64_t unix = with_unix_clock ? clocks_.unix_ns() : 0;
    const std::uint64_t after = clocks_.ticks();
    // Ticks going backwards (a migration between cores whose counters disagree) rank last.
    const std::uint64_t spread = after >= before ? after - before : ~std::uint64_t{0};
    if (attempt == 0 || spread < best_spread) {
      best_spread = spread;
      best = {after >= before ? before + spread / 2 : before, steady, unix};
    }
  }
  return best;
}

void TickCalibration::refresh() noexcept {
  const Reading now = read(false);
  const Segment& last = newest();
  const std::int64_t age_ns = now.steady_ns - anchor_.steady_ns;
  const std::int64_t spacing_ns =
      std::max<std::int64_t>(std::chrono::nanoseconds(kMinSegment).count(), age_ns / kAgeFraction);
  if (now.ticks <= last.ticks || now.steady_ns - last.steady_ns < spacing_ns) return;
  const double long_rate =
      static_cast<double>(age_ns) / static_cast<double>(now.ticks - anchor_.ticks);
  // Continue where the newest segment ends; make up the distance to steady_clock over about one
  // spacing, at most kMaxSlew of the rate.
  const std::int64_t here = convert(last, now.ticks);
  const std::int64_t target = anchor_.unix_ns + age_ns;
  const double correction = std::clamp(
      static_cast<double>(target - here) / static_cast<double>(spacing_ns), -kMaxSlew, kMaxSlew);
  newest_ = (newest_ + 1) % kSegments;
  segments_[newest_] = {now.ticks, here, now.steady_ns, long_rate * (1.0 + correction)};
  count_ = std::min(count_ + 1, kSegments);
}

const TickCalibration::Segment& TickCalibration::segment_for(std::uint64_t ticks) const noexcept {
  std::size_t index = newest_;
  for (std::size_t k = 1; k < count_; ++k) {
    // Signed: a tick read on another core may precede a segment's start by a few ticks.
    if (static_cast<std::int64_t>(ticks - segments_[index].ticks) >= 0) return segments_[index];
    index = index == 0 ? kSegments - 1 : index - 1;
  }
  return segments_[index];  // the oldest, extended backwards
}

std::int64_t TickCalibration::convert(const Segment& segment, std::uint64_t ticks) noexcept {
  const double delta = static_cast<double>(static_cast<std::int64_t>(ticks - segment.ticks)) *
                       segment.nanos_per_tick;
  return segment.unix_ns + static_cast<std::int64_t>(delta);
}

std::int64_t TickCalibration::unix_nanos(std::uint64_t ticks) const noexcept {
  return convert(segment_for(ticks), ticks);
}

std::int64_t TickCalibration::nanos_between(std::uint64_t start, std::uint64_t end) const noexcept {
  return std::max<std::int64_t>(0, unix_nanos(end) - unix_nanos(start));
}

}  // namespace lens::native
