// TickCalibration against simulated clocks: a preempted reading is not used, a converted tick
// never moves and ticks stay in order across refreshes that change the rate, the conversion
// follows steady_clock after its rate changes (slewed, bounded), the kept segments cover most of
// the calibration's life, and the arithmetic at the edges. The real clocks are checked end to end
// in native_spans_test (spans one after the other never overlap once exported).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "native/tick_clock.hpp"

namespace lens::native {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kUnixOffset = 1'700'000'000'000'000'000;
constexpr std::int64_t kTicksPerNano = 3;

// A simulated machine: true time advances a few nanoseconds per clock read; the tick counter
// runs at 3 ticks per true nanosecond; steady_clock runs at 1 + ppm * 1e-6 of true time from
// `shift_at` on (an NTP slew of CLOCK_MONOTONIC); a stall makes the next steady_clock read happen
// that much later (the reading thread preempted between its tick and clock reads).
struct Simulated {
  std::int64_t true_ns = 1'000'000'000;
  std::int64_t stall_ns = 0;
  std::int64_t shift_at = 0;
  std::int64_t steady_at_shift = 0;
  double ppm = 0;

  std::int64_t steady_of(std::int64_t t) const {
    return steady_at_shift + static_cast<std::int64_t>(std::llround(
                                 static_cast<double>(t - shift_at) * (1.0 + ppm * 1e-6)));
  }
  // Changes steady_clock's rate from now on, continuously.
  void set_ppm(double value) {
    steady_at_shift = steady_of(true_ns);
    shift_at = true_ns;
    ppm = value;
  }
};
Simulated sim;

std::uint64_t sim_ticks() noexcept {
  sim.true_ns += 7;
  return static_cast<std::uint64_t>(sim.true_ns * kTicksPerNano);
}
std::int64_t sim_steady() noexcept {
  sim.true_ns += 5 + sim.stall_ns;
  sim.stall_ns = 0;
  return sim.steady_of(sim.true_ns);
}
std::int64_t sim_unix() noexcept {
  sim.true_ns += 5;
  return kUnixOffset + sim.true_ns;
}
constexpr ClockSource kSimulated{&sim_ticks, &sim_steady, &sim_unix};

class TickCalibrationTest : public ::testing::Test {
 protected:
  void SetUp() override { sim = Simulated{}; }
  static std::uint64_t ticks_now() {
    return static_cast<std::uint64_t>(sim.true_ns * kTicksPerNano);
  }
};

TEST_F(TickCalibrationTest, APreemptedReadingDoesNotSkewTheRate) {
  TickCalibration calibration(1000us, kSimulated);
  sim.true_ns += 100'000'000;
  sim.stall_ns = 2'000'000;  // the first try of the next reading is preempted for 2 ms
  calibration.refresh();
  EXPECT_EQ(calibration.segment_count(), 2U);
  sim.true_ns += 5'000'000;
  const std::uint64_t ticks = ticks_now();
  // One reading of tick and clocks taken unbracketed would have put the 2 ms into a 100 ms
  // interval: 2 % of the rate, a 2 ms error here.
  EXPECT_NEAR(static_cast<double>(calibration.unix_nanos(ticks)),
              static_cast<double>(kUnixOffset + sim.true_ns), 30.0);
}

TEST_F(TickCalibrationTest, AConvertedTickNeverMovesAndTicksStayInOrderAcrossRateChanges) {
  TickCalibration calibration(2000us, kSimulated);
  std::mt19937 random(7);
  struct Converted {
    std::uint64_t ticks;
    std::int64_t unix_ns;
  };
  std::vector<Converted> converted;
  for (int pass = 0; pass < 400; ++pass) {
    sim.true_ns += std::uniform_int_distribution<std::int64_t>(1'000'000, 30'000'000)(random);
    if (pass % 40 == 0) sim.set_ppm(pass % 80 == 0 ? 300.0 : -250.0);
    // A span that ends now is converted in this pass; the next one starts a tick later and is
    // converted in the next pass, after the rate changed.
    const std::uint64_t end = ticks_now();
    const std::int64_t end_ns = calibration.unix_nanos(end);
    converted.push_back({end, end_ns});
    calibration.refresh();
    EXPECT_EQ(calibration.unix_nanos(end), end_ns) << "pass " << pass;
    EXPECT_GE(calibration.unix_nanos(end + 1), end_ns) << "pass " << pass;
  }
  EXPECT_EQ(calibration.segment_count(), TickCalibration::kSegments);
  // Every conversion of the last 60 passes (the last ~1 s) is still the same.
  for (std::size_t i = converted.size() - 60; i < converted.size(); ++i) {
    EXPECT_EQ(calibration.unix_nanos(converted[i].ticks), converted[i].unix_ns) << i;
  }
  // And the whole conversion increases.
  for (std::size_t i = 1; i < converted.size(); ++i) {
    EXPECT_LT(calibration.unix_nanos(converted[i - 1].ticks),
              calibration.unix_nanos(converted[i].ticks))
        << i;
  }
}

TEST_F(TickCalibrationTest, FollowsSteadyClockAfterItsRateChangesSlewingAtMostTheBound) {
  TickCalibration calibration(2000us, kSimulated);
  const std::int64_t anchor_unix = calibration.unix_nanos(ticks_now());
  const std::int64_t anchor_steady = sim.steady_of(sim.true_ns);
  sim.set_ppm(500.0);
  for (int pass = 0; pass < 500; ++pass) {  // 10 s, a pass every 20 ms
    sim.true_ns += 20'000'000;
    calibration.refresh();
    // Nanoseconds per tick: 1/3 before the change, (1 + 500e-6)/3 after; a segment's rate is the
    // long-run rate slewed by at most 1e-3.
    const double relative = calibration.nanos_per_tick() * kTicksPerNano;
    EXPECT_GE(relative, 1.0 - 1.0001e-3) << pass;
    EXPECT_LE(relative, (1.0 + 500e-6) * (1.0 + 1.0001e-3)) << pass;
  }
  const std::int64_t expected = anchor_unix + (sim.steady_of(sim.true_ns) - anchor_steady);
  EXPECT_NEAR(static_cast<double>(calibration.unix_nanos(ticks_now())),
              static_cast<double>(expected), 1000.0);
}

TEST_F(TickCalibrationTest, SegmentsAreSpacedByTheMinimumAndByTheAgeSoTheKeptOnesCoverMostOfIt) {
  TickCalibration calibration(2000us, kSimulated);
  for (int pass = 0; pass < 1000; ++pass) {  // 1 s, a refresh every millisecond
    sim.true_ns += 1'000'000;
    calibration.refresh();
  }
  // One per 10 ms up to 640 ms of age, then one per 1/64 of the age: 64 + 64 * ln(1000 / 640).
  EXPECT_GE(calibration.segment_count(), 90U);
  EXPECT_LE(calibration.segment_count(), 94U);

  // The 128 segments kept reach back to about e^-2 of the age: a tick from the first second
  // converts as it did then until the calibration is about 7 s old...
  const std::uint64_t old = ticks_now();
  const std::int64_t old_ns = calibration.unix_nanos(old);
  sim.set_ppm(200.0);
  for (int pass = 0; pass < 600; ++pass) {
    sim.true_ns += 10'000'000;
    calibration.refresh();
  }
  EXPECT_EQ(calibration.segment_count(), TickCalibration::kSegments);
  EXPECT_EQ(calibration.unix_nanos(old), old_ns);
  // ... and after that by the oldest segment kept (from ~9 s), extended backwards over ~8 s at a
  // rate up to 200 ppm off: microseconds, not the 1.6 ms a whole 200 ppm would make.
  for (int pass = 0; pass < 600; ++pass) {
    sim.true_ns += 100'000'000;
    calibration.refresh();
  }
  EXPECT_NEAR(static_cast<double>(calibration.unix_nanos(old)), static_cast<double>(old_ns),
              10'000.0);
}

TEST_F(TickCalibrationTest, TicksBeforeTheAnchorAndDurationsConvertExactly) {
  TickCalibration calibration(2000us, kSimulated);
  const std::uint64_t ticks = ticks_now();
  const std::int64_t at = calibration.unix_nanos(ticks);
  // 3 ticks per nanosecond, measured over 2 ms within a few nanoseconds.
  EXPECT_NEAR(static_cast<double>(calibration.unix_nanos(ticks - 3'000'000)),
              static_cast<double>(at - 1'000'000), 10.0);
  EXPECT_NEAR(static_cast<double>(calibration.nanos_between(ticks, ticks + 3'000'000)), 1'000'000.0,
              10.0);
  EXPECT_EQ(calibration.nanos_between(ticks + 3'000'000, ticks), 0);
  EXPECT_EQ(calibration.nanos_between(ticks, ticks), 0);
}

}  // namespace
}  // namespace lens::native
