// Rank strategies (docs/strategies.md, "Rank strategies"): the registry, the built-ins bit-exact
// with the Python original (including every MD5 test vector) and should_export.
// Each test starts and ends with the built-in registry (reset_strategies_for_testing).
#include "lens/strategies.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/rank_info.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

using lens::test_support::failure_of;

using ::testing::HasSubstr;

class StrategiesTest : public ::testing::Test {
 protected:
  void SetUp() override { detail::reset_strategies_for_testing(); }
  void TearDown() override { detail::reset_strategies_for_testing(); }

  static Config config_with(std::string strategy) {
    Config config;
    config.rank_strategy = std::move(strategy);
    return config;
  }

  static RankInfo rank_of(int rank, int world_size) {
    auto info = RankInfo::make(rank, world_size);
    EXPECT_TRUE(info.ok()) << info.message();
    return *info;
  }

  static bool exports(const Config& config, const RankInfo& rank,
                      const RankStrategy* override_strategy = nullptr) {
    auto result = should_export(config, rank, override_strategy);
    EXPECT_TRUE(result.ok()) << result.message();
    return result.ok() && *result;
  }
};

bool even_rank(const StrategySettings& /*settings*/, const RankInfo& rank) {
  return rank.rank % 2 == 0;
}

// --- the built-ins ------------------------------------------------------------------------------

TEST_F(StrategiesTest, RegistryListsTheFourBuiltinsSorted) {
  const std::vector<std::string> expected = {"all_ranks", "first_rank_per_node", "sampled",
                                             "single_rank"};
  EXPECT_EQ(registered_rank_strategies(), expected);
  EXPECT_EQ(builtin_rank_strategies(), std::set<std::string>(expected.begin(), expected.end()));
}

// --- all_ranks ----------------------------------------------------------------------------------

TEST_F(StrategiesTest, AllRanksLookupReturnsACallableReturningTrue) {
  auto strategy = get_rank_strategy("all_ranks");
  ASSERT_TRUE(strategy.ok()) << strategy.message();
  ASSERT_TRUE(static_cast<bool>(*strategy));
  EXPECT_TRUE((*strategy)(StrategySettings{}, rank_of(0, 1)));
}

// --- first_rank_per_node, with LOCAL_RANK read by RankInfo::detect ------------------------------

TEST_F(StrategiesTest, FirstRankPerNodeFollowsLocalRank) {
  const Config config = config_with("first_rank_per_node");
  const auto detect = [](Env::Map vars) {
    auto info = RankInfo::detect(Env::from(std::move(vars)));
    EXPECT_TRUE(info.ok()) << info.message();
    return *info;
  };
  // Rank `rank` of 8, with its LOCAL_RANK and LOCAL_WORLD_SIZE.
  const auto of_eight = [&](int rank, int local_rank, int local_world_size) {
    return detect({{"RANK", std::to_string(rank)},
                   {"WORLD_SIZE", "8"},
                   {"LOCAL_RANK", std::to_string(local_rank)},
                   {"LOCAL_WORLD_SIZE", std::to_string(local_world_size)}});
  };
  // LOCAL_RANK=0 exports for global ranks 0 and 4.
  EXPECT_TRUE(exports(config, of_eight(0, 0, 4)));
  EXPECT_TRUE(exports(config, of_eight(4, 0, 4)));
  // LOCAL_RANK=3 or 5 does not.
  EXPECT_FALSE(exports(config, of_eight(3, 3, 4)));
  EXPECT_FALSE(exports(config, of_eight(5, 5, 8)));
  // LOCAL_RANK alone (no launcher rank variable) is honoured, as in the original.
  EXPECT_FALSE(exports(config, detect({{"LOCAL_RANK", "3"}})));
  EXPECT_TRUE(exports(config, detect({{"LOCAL_RANK", " 0 "}})));
  // Unset: a single node, so it exports.
  EXPECT_TRUE(exports(config, detect({})));
  EXPECT_TRUE(exports(config, detect({{"RANK", "2"}, {"WORLD_SIZE", "4"}})));
}

TEST_F(StrategiesTest, FirstRankPerNodeIgnoresTheGlobalRank) {
  const Config config = config_with("first_rank_per_node");
  auto info = RankInfo::make(7, 8, 0, 4, 1);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(exports(config, *info));
  info = RankInfo::make(0, 8, 1, 4, 0);
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(exports(config, *info));
}

// --- a custom strategy --------------------------------------------------------------------------

TEST_F(StrategiesTest, CustomStrategyIsRetrievableListedAndDispatchable) {
  ASSERT_TRUE(register_rank_strategy("even", even_rank).ok());
  auto strategy = get_rank_strategy("even");
  ASSERT_TRUE(strategy.ok()) << strategy.message();
  using Fn = bool (*)(const StrategySettings&, const RankInfo&);
  ASSERT_NE(strategy->target<Fn>(), nullptr);
  EXPECT_EQ(*strategy->target<Fn>(), &even_rank);  // the very function registered

  EXPECT_THAT(registered_rank_strategies(), ::testing::Contains("even"));
  const auto names = registered_rank_strategies();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));

  const Config config = config_with("even");
  EXPECT_TRUE(exports(config, rank_of(0, 4)));
  EXPECT_FALSE(exports(config, rank_of(1, 4)));
  EXPECT_TRUE(exports(config, rank_of(2, 4)));
}

// --- registration errors and overrides ----------------------------------------------------------

TEST_F(StrategiesTest, EmptyNameIsRejected) {
  const Status status = register_rank_strategy("", even_rank);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("non-empty"));
  EXPECT_EQ(status.message(), "Rank strategy name must be non-empty");
}

TEST_F(StrategiesTest, EmptyCallableIsRejected) {
  const Status status = register_rank_strategy("nothing", RankStrategy{});
  EXPECT_EQ(failure_of(status), "Rank strategy 'nothing' is empty; expected a callable");
  EXPECT_FALSE(get_rank_strategy("nothing").ok());
}

TEST_F(StrategiesTest, DuplicateWithoutOverrideIsRejected) {
  ASSERT_TRUE(register_rank_strategy("even", even_rank).ok());
  const Status status = register_rank_strategy(
      "even", [](const StrategySettings&, const RankInfo&) { return false; });
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("already registered"));
  EXPECT_THAT(status.message(), HasSubstr("allow_override=true"));
  EXPECT_EQ(status.message(),
            "Rank strategy 'even' is already registered; pass allow_override=true to replace it");
  // The original stays.
  EXPECT_TRUE(exports(config_with("even"), rank_of(0, 2)));
}

TEST_F(StrategiesTest, OverrideReplacesACustomStrategy) {
  ASSERT_TRUE(register_rank_strategy("even", even_rank).ok());
  ASSERT_TRUE(register_rank_strategy(
                  "even", [](const StrategySettings&, const RankInfo&) { return false; }, true)
                  .ok());
  EXPECT_FALSE(exports(config_with("even"), rank_of(0, 2)));
}

TEST_F(StrategiesTest, OverridingABuiltinNeedsAllowOverride) {
  const Status status = register_rank_strategy(
      "all_ranks", [](const StrategySettings&, const RankInfo&) { return false; });
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("already registered"));
  EXPECT_TRUE(exports(config_with("all_ranks"), rank_of(0, 2)));

  ASSERT_TRUE(register_rank_strategy(
                  "all_ranks", [](const StrategySettings&, const RankInfo&) { return false; }, true)
                  .ok());
  EXPECT_FALSE(exports(config_with("all_ranks"), rank_of(0, 2)));
  // Still built-in: the frozen set does not change.
  EXPECT_EQ(builtin_rank_strategies().count("all_ranks"), 1U);
}

// --- unregistering ------------------------------------------------------------------------------

TEST_F(StrategiesTest, UnregisterRemovesACustomStrategy) {
  ASSERT_TRUE(register_rank_strategy("even", even_rank).ok());
  ASSERT_TRUE(unregister_rank_strategy("even").ok());
  EXPECT_THAT(registered_rank_strategies(), ::testing::Not(::testing::Contains("even")));
  EXPECT_FALSE(get_rank_strategy("even").ok());
}

TEST_F(StrategiesTest, UnregisterUnknownIsAnError) {
  const Status status = unregister_rank_strategy("nope");
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("not registered"));
  EXPECT_EQ(status.message(),
            "Rank strategy 'nope' is not registered. Registered strategies: [all_ranks, "
            "first_rank_per_node, sampled, single_rank].");
}

TEST_F(StrategiesTest, UnregisterBuiltinIsAnErrorAndItStays) {
  for (const std::string& name : builtin_rank_strategies()) {
    const Status status = unregister_rank_strategy(name);
    EXPECT_FALSE(status.ok()) << name;
    EXPECT_THAT(status.message(), HasSubstr("built-in"));
    EXPECT_EQ(status.message(),
              "Rank strategy '" + name + "' is built-in and cannot be unregistered");
  }
  EXPECT_EQ(registered_rank_strategies().size(), 4U);
  // Even an overridden built-in can never be removed (the built-in check comes first).
  ASSERT_TRUE(register_rank_strategy("sampled", even_rank, true).ok());
  EXPECT_THAT(unregister_rank_strategy("sampled").message(), HasSubstr("built-in"));
  EXPECT_TRUE(get_rank_strategy("sampled").ok());
}

// --- unknown names ------------------------------------------------------------------------------

TEST_F(StrategiesTest, UnknownStrategyAtDispatchNamesTheVariable) {
  Config config = config_with("foo");
  config.sources["rank_strategy"] = "env:NEMO_LENS_RANK_STRATEGY";
  auto result = should_export(config, rank_of(0, 1));
  ASSERT_EQ(failure_of(result),
            "Unknown rank strategy 'foo' in NEMO_LENS_RANK_STRATEGY. Registered strategies: "
            "[all_ranks, first_rank_per_node, sampled, single_rank].");
}

TEST_F(StrategiesTest, UnknownStrategyListsCustomNamesAndUsesTheConfigLabel) {
  ASSERT_TRUE(register_rank_strategy("even", even_rank).ok());
  const Config config = config_with("foo");
  auto result = should_export(config, rank_of(0, 1));
  ASSERT_EQ(failure_of(result), "Unknown rank strategy 'foo' in " +
                                    config.label_of("rank_strategy") +
                                    ". Registered strategies: [all_ranks, even, "
                                    "first_rank_per_node, sampled, single_rank].");
}

TEST_F(StrategiesTest, GetUnknownStrategyIsAnError) {
  auto result = get_rank_strategy("foo");
  ASSERT_EQ(failure_of(result),
            "Unknown rank strategy 'foo'. Registered strategies: [all_ranks, "
            "first_rank_per_node, sampled, single_rank].");
}

// --- a registered strategy at setup, and the per-call override ----------------------------------

TEST_F(StrategiesTest, RegisteredStrategyExportsOnlyOnTheMatchingRank) {
  ASSERT_TRUE(register_rank_strategy("only_two", [](const StrategySettings&, const RankInfo& rank) {
                return rank.rank == 2;
              }).ok());
  const Config config = config_with("only_two");
  EXPECT_TRUE(exports(config, rank_of(2, 4)));
  EXPECT_FALSE(exports(config, rank_of(0, 4)));
  EXPECT_FALSE(exports(config, rank_of(3, 4)));
}

TEST_F(StrategiesTest, PerCallOverrideBeatsTheNamedStrategy) {
  const RankStrategy never = [](const StrategySettings&, const RankInfo&) { return false; };
  EXPECT_FALSE(exports(config_with("all_ranks"), rank_of(0, 4), &never));
  const RankStrategy always = [](const StrategySettings&, const RankInfo&) { return true; };
  EXPECT_TRUE(exports(config_with("single_rank"), rank_of(0, 4), &always));
}

TEST_F(StrategiesTest, PerCallOverrideNeverConsultsTheRegistry) {
  // An unknown configured name is not an error when an override is given.
  const RankStrategy always = [](const StrategySettings&, const RankInfo&) { return true; };
  EXPECT_TRUE(exports(config_with("no_such_strategy"), rank_of(1, 4), &always));
}

TEST_F(StrategiesTest, EmptyOverrideIsAnError) {
  const RankStrategy empty;
  auto result = should_export(config_with("all_ranks"), rank_of(0, 1), &empty);
  ASSERT_EQ(failure_of(result), "Rank strategy override is empty; expected a callable");
}

TEST_F(StrategiesTest, ThrowingStrategyBecomesAnError) {
  ASSERT_TRUE(register_rank_strategy("boom", [](const StrategySettings&, const RankInfo&) -> bool {
                throw std::runtime_error("no topology");
              }).ok());
  auto result = should_export(config_with("boom"), rank_of(0, 1));
  ASSERT_EQ(failure_of(result), "Rank strategy 'boom' failed: no topology");

  ASSERT_TRUE(
      register_rank_strategy("boom_int", [](const StrategySettings&, const RankInfo&) -> bool {
        throw 42;
      }).ok());
  result = should_export(config_with("boom_int"), rank_of(0, 1));
  ASSERT_EQ(failure_of(result), "Rank strategy 'boom_int' failed: unknown exception");

  const RankStrategy throwing = [](const StrategySettings&, const RankInfo&) -> bool {
    throw std::logic_error("bad override");
  };
  result = should_export(config_with("all_ranks"), rank_of(0, 1), &throwing);
  ASSERT_EQ(failure_of(result), "Rank strategy override failed: bad override");
}

TEST_F(StrategiesTest, StrategyMayUseTheRegistry) {
  // Strategies run outside the registry lock.
  ASSERT_TRUE(register_rank_strategy("nested", [](const StrategySettings&, const RankInfo&) {
                return registered_rank_strategies().size() == 5;
              }).ok());
  EXPECT_TRUE(exports(config_with("nested"), rank_of(0, 1)));
}

// --- the exporting ranks of all_ranks and single_rank -------------------------------------------

TEST_F(StrategiesTest, AllRanksExportsEverywhere) {
  const Config config = config_with("all_ranks");
  EXPECT_TRUE(exports(config, rank_of(0, 4)));
  EXPECT_TRUE(exports(config, rank_of(3, 4)));
}

TEST_F(StrategiesTest, SingleRankDefaultIsTheLastRank) {
  Config config = config_with("single_rank");
  config.export_rank = -1;
  EXPECT_TRUE(exports(config, rank_of(3, 4)));
  EXPECT_FALSE(exports(config, rank_of(0, 4)));
  config.export_rank = -7;  // every negative value means the last rank
  EXPECT_TRUE(exports(config, rank_of(3, 4)));
  EXPECT_TRUE(exports(Config{}, rank_of(3, 4)));  // the default config: single_rank, -1
}

TEST_F(StrategiesTest, SingleRankExplicitRank) {
  Config config = config_with("single_rank");
  config.export_rank = 0;
  EXPECT_TRUE(exports(config, rank_of(0, 4)));
  EXPECT_FALSE(exports(config, rank_of(1, 4)));
  // An export_rank outside the world exports from nobody.
  config.export_rank = 4;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_FALSE(exports(config, rank_of(rank, 4)));
  }
}

// --- sampled and the MD5 bucket -----------------------------------------------------------------

TEST_F(StrategiesTest, SampledIsDeterministic) {
  Config config = config_with("sampled");
  config.export_sample_rate = 0.5;
  for (int rank = 0; rank < 10; ++rank) {
    EXPECT_EQ(exports(config, rank_of(rank, 10)), exports(config, rank_of(rank, 10)));
  }
}

TEST_F(StrategiesTest, SampledRateZeroExportsNobodyAndOneEverybody) {
  Config config = config_with("sampled");
  config.export_sample_rate = 0.0;
  for (int rank = 0; rank < 10; ++rank) {
    EXPECT_FALSE(exports(config, rank_of(rank, 10))) << rank;
  }
  config.export_sample_rate = 1.0;
  for (int rank = 0; rank < 10; ++rank) {
    EXPECT_TRUE(exports(config, rank_of(rank, 10))) << rank;
  }
}

TEST_F(StrategiesTest, SampledRateTenthOverSixteenRanksSelectsThreeFiveSix) {
  Config config = config_with("sampled");
  config.export_sample_rate = 0.1;
  std::vector<int> selected;
  for (int rank = 0; rank < 16; ++rank) {
    if (exports(config, rank_of(rank, 16))) {
      selected.push_back(rank);
    }
  }
  EXPECT_EQ(selected, (std::vector<int>{3, 5, 6}));
}

TEST_F(StrategiesTest, SampledIsStrictlyLessThan) {
  Config config = config_with("sampled");
  config.export_sample_rate = 0.0883;  // rank 3's bucket exactly
  EXPECT_FALSE(exports(config, rank_of(3, 4)));
  config.export_sample_rate = 0.0884;
  EXPECT_TRUE(exports(config, rank_of(3, 4)));
}

TEST(StrategiesSampledBucket, MatchesEveryTestVector) {
  const std::vector<std::pair<std::int64_t, double>> vectors = {
      {0, 0.7850},   {1, 0.8411},    {2, 0.9212},  {3, 0.0883},  {4, 0.1900},  {5, 0.0693},
      {6, 0.0412},   {7, 0.5555},    {8, 0.3101},  {9, 0.8374},  {10, 0.1824}, {11, 0.2650},
      {12, 0.8112},  {13, 0.4873},   {14, 0.6038}, {15, 0.7603}, {31, 0.0901}, {63, 0.7796},
      {127, 0.4850}, {1023, 0.7227}, {-1, 0.5592}};
  for (const auto& [rank, bucket] : vectors) {
    // Bit-exact: both sides are integer / 10000.0 in IEEE double.
    EXPECT_EQ(sampled_rank_bucket(rank), bucket) << "rank " << rank;
  }
}

TEST(StrategiesSampledBucket, Md5OfZeroMatchesTheReference) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  ASSERT_EQ(EVP_Digest("0", 1, digest.data(), &length, EVP_md5(), nullptr), 1);
  ASSERT_EQ(length, 16U);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    char byte[3];
    std::snprintf(byte, sizeof(byte), "%02x", digest[i]);
    hex += byte;
  }
  EXPECT_EQ(hex, "cfcd208495d565ef66e7dff9f98764da");
  // int("cfcd2084...", 16) % 10000 == 7850.
  EXPECT_EQ(sampled_rank_bucket(0), 0.7850);
}

TEST(StrategiesSampledBucket, StaysInRange) {
  for (std::int64_t rank = -1000; rank < 5000; ++rank) {
    const double bucket = sampled_rank_bucket(rank);
    EXPECT_GE(bucket, 0.0);
    EXPECT_LE(bucket, 0.9999);
  }
}

// --- thread safety ----------------------------------------------------------------------------

TEST_F(StrategiesTest, ConcurrentRegistrationAndDispatch) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &failures] {
      const std::string name = "custom_" + std::to_string(t);
      for (int i = 0; i < 200; ++i) {
        if (!register_rank_strategy(name, even_rank, true).ok()) {
          ++failures;
        }
        Config config;
        config.rank_strategy = "all_ranks";
        auto rank = RankInfo::make(0, 1);
        auto result = should_export(config, *rank);
        if (!result.ok() || !*result) {
          ++failures;
        }
        (void)registered_rank_strategies();
        if (!unregister_rank_strategy(name).ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(registered_rank_strategies().size(), 4U);
}

}  // namespace
}  // namespace lens
