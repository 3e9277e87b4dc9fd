// Counted collectives (lens/collectives.hpp): sequence numbers per group, entered and finished
// as a reader sees them while the collective is open, one group per name, the rank ranges text
// and the iteration noted for hang reports.
#include "lens/collectives.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace lens {
namespace {

TEST(CollectiveGroup, CountsEachCollectiveWithItsSequenceNumberOpenUntilFinished) {
  CollectiveGroup& group = collective_group("test.dp", {0, 1, 2, 3});
  EXPECT_EQ(group.name(), "test.dp");
  EXPECT_EQ(group.ranks(), (std::vector<std::int64_t>{0, 1, 2, 3}));
  CollectiveGroup::State before = group.state();
  EXPECT_EQ(before.seq, 0U);
  EXPECT_EQ(before.operation, nullptr);
  EXPECT_FALSE(before.inside());
  {
    CountedCollective first(group, "all_reduce", 4096);
    EXPECT_EQ(first.seq(), 1U);
    const CollectiveGroup::State open = group.state();
    EXPECT_TRUE(open.inside());
    EXPECT_EQ(open.seq, 1U);
    EXPECT_STREQ(open.operation, "all_reduce");
    EXPECT_EQ(open.bytes, 4096U);
    EXPECT_EQ(open.finished_seq, 0U);
    EXPECT_NE(open.entered_ticks, 0U);
  }
  const CollectiveGroup::State done = group.state();
  EXPECT_FALSE(done.inside());
  EXPECT_EQ(done.finished_seq, 1U);
  EXPECT_STREQ(done.finished_operation, "all_reduce");
  const std::uint64_t second = group.enter("broadcast", 8);
  EXPECT_EQ(second, 2U);
  EXPECT_STREQ(group.state().operation, "broadcast");
  EXPECT_STREQ(group.state().finished_operation, "all_reduce");
  group.finish(second);
  EXPECT_EQ(group.state().finished_seq, 2U);
  EXPECT_STREQ(group.state().finished_operation, "broadcast");
}

TEST(CollectiveGroup, OneGroupPerNameListedInRegistrationOrder) {
  CollectiveGroup& a = collective_group("test.pp", {0, 4});
  CollectiveGroup& again = collective_group("test.pp", {9});  // ranks of the first call kept
  EXPECT_EQ(&a, &again);
  EXPECT_EQ(again.ranks(), (std::vector<std::int64_t>{0, 4}));
  const std::vector<const CollectiveGroup*> listed = collective_groups();
  EXPECT_EQ(std::count(listed.begin(), listed.end(), &a), 1);
}

TEST(RankRanges, RunsOfConsecutiveRanksAreRanges) {
  EXPECT_EQ(rank_ranges({}), "");
  EXPECT_EQ(rank_ranges({3}), "3");
  EXPECT_EQ(rank_ranges({0, 1}), "0,1");
  EXPECT_EQ(rank_ranges({7, 0, 1, 2, 4, 5, 6}), "0-2,4-7");
  EXPECT_EQ(rank_ranges({0, 2, 2, 8, 9, 10}), "0,2,8-10");
}

TEST(CurrentIteration, IsTheLastNoted) {
  note_iteration_started(57);
  EXPECT_EQ(current_iteration(), 57);
  note_iteration_started(0);
  EXPECT_EQ(current_iteration(), 0);
}

}  // namespace
}  // namespace lens
