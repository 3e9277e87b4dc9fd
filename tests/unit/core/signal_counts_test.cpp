// core::SignalCounts, the one definition of a signal's outcome counters: the sum of a pipeline's
// part and an export report's part keeps every field (a field left out of operator+= would
// vanish from the stats), the live (atomic) form's snapshot, and the derived totals.
#include "core/signal_counts.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace lens::core {
namespace {

constexpr std::size_t kFields = sizeof(SignalCounts) / sizeof(std::uint64_t);
static_assert(sizeof(SignalCounts) == kFields * sizeof(std::uint64_t),
              "SignalCounts holds std::uint64_t counters only");
static_assert(sizeof(AtomicSignalCounts) == sizeof(SignalCounts),
              "AtomicSignalCounts has the same fields");

// Field i holds base + i.
SignalCounts numbered(std::uint64_t base) {
  std::uint64_t values[kFields];
  for (std::size_t i = 0; i < kFields; ++i) values[i] = base + i;
  SignalCounts counts;
  std::memcpy(&counts, values, sizeof(values));
  return counts;
}

TEST(SignalCounts, TheSumKeepsEveryField) {
  SignalCounts sum = numbered(100);
  sum += numbered(1000);
  std::uint64_t values[kFields];
  std::memcpy(values, &sum, sizeof(values));
  for (std::size_t i = 0; i < kFields; ++i) {
    EXPECT_EQ(values[i], 1100 + 2 * i) << "field " << i;
  }
}

TEST(SignalCounts, TheLiveCountersSnapshotEveryField) {
  AtomicSignalCounts live;
  const SignalCounts expected = numbered(40);
  for_each_count(live, expected, [](std::atomic<std::uint64_t>& counter, std::uint64_t value) {
    AtomicSignalCounts::add(counter, value + 2);
  });
  AtomicSignalCounts::sub(live.items_in_flight, 2);
  SignalCounts snapshot = live.load();
  EXPECT_EQ(snapshot.items_in_flight, expected.items_in_flight);
  snapshot.items_in_flight += 2;
  std::uint64_t values[kFields];
  std::memcpy(values, &snapshot, sizeof(values));
  for (std::size_t i = 0; i < kFields; ++i) {
    EXPECT_EQ(values[i], 40 + i + 2) << "field " << i;
  }
}

TEST(SignalCounts, APipelinesPartAndAReportsPartAddUp) {
  SignalCounts pipeline;
  pipeline.accepted = 7;
  pipeline.foreign_accepted = 3;
  pipeline.dropped_full_buffer = 2;
  pipeline.dropped_full_queue = 1;
  SignalCounts report;
  report.items_exported = 9;
  report.items_failed = 1;
  SignalCounts all = pipeline;
  all += report;
  EXPECT_EQ(all.handed_over(), 10u);
  EXPECT_EQ(all.refused(), 3u);
  EXPECT_EQ(all.items_exported, 9u);
  EXPECT_EQ(all.items_failed, 1u);
}

}  // namespace
}  // namespace lens::core
