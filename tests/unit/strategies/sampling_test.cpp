// Sampling: the six standard samplers, parent-based behaviour, RankAwareSampler, the 1% composition
// of docs/strategies.md ("Samplers") measured over random trace ids, and the sampling-strategy
// registry with make_sampler.
#include "lens/sampling.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lens/config.hpp"
#include "lens/otel_settings.hpp"
#include "lens/rank_info.hpp"
#include "lens/strategies.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

using lens::test_support::failure_of;

using ::testing::HasSubstr;

using test_support::rank_of;

// A trace id whose bytes 8..15 hold `low` big-endian and bytes 0..7 hold `high`.
SamplingParams root_params(std::uint64_t low, std::uint64_t high = 0) {
  SamplingParams params;
  for (int i = 0; i < 8; ++i) {
    params.trace_id[static_cast<std::size_t>(7 - i)] = static_cast<std::uint8_t>(high >> (8 * i));
    params.trace_id[static_cast<std::size_t>(15 - i)] = static_cast<std::uint8_t>(low >> (8 * i));
  }
  params.name = "span";
  return params;
}

SamplingParams child_params(bool parent_sampled, bool parent_remote) {
  SamplingParams params = root_params(0);
  params.has_parent = true;
  params.parent_sampled = parent_sampled;
  params.parent_remote = parent_remote;
  return params;
}

constexpr auto kSample = SamplingDecision::record_and_sample;
constexpr auto kDrop = SamplingDecision::drop;

// --- the standard samplers -------------------------------------------------------------------

TEST(SamplingStandard, AlwaysOnAndAlwaysOff) {
  auto on = make_standard_sampler(SamplerKind::always_on, 1.0);
  auto off = make_standard_sampler(SamplerKind::always_off, 1.0);
  EXPECT_EQ(on->description(), "AlwaysOnSampler");
  EXPECT_EQ(off->description(), "AlwaysOffSampler");
  EXPECT_EQ(on->should_sample(root_params(~0ULL)), kSample);
  EXPECT_EQ(off->should_sample(root_params(0)), kDrop);
  // Not parent-based: the parent's flag is ignored.
  EXPECT_EQ(on->should_sample(child_params(false, true)), kSample);
  EXPECT_EQ(off->should_sample(child_params(true, true)), kDrop);
}

TEST(SamplingStandard, Descriptions) {
  EXPECT_EQ(make_standard_sampler(SamplerKind::traceidratio, 0.1)->description(),
            "TraceIdRatioBasedSampler{0.100000}");
  EXPECT_EQ(make_standard_sampler(SamplerKind::parentbased_always_on, 1.0)->description(),
            "ParentBased{AlwaysOnSampler}");
  EXPECT_EQ(make_standard_sampler(SamplerKind::parentbased_always_off, 1.0)->description(),
            "ParentBased{AlwaysOffSampler}");
  EXPECT_EQ(make_standard_sampler(SamplerKind::parentbased_traceidratio, 0.25)->description(),
            "ParentBased{TraceIdRatioBasedSampler{0.250000}}");
}

TEST(SamplingStandard, TraceIdRatioUsesTheLowEightBytesBigEndian) {
  auto half = make_standard_sampler(SamplerKind::traceidratio, 0.5);
  const std::uint64_t boundary = 1ULL << 63;  // 0.5 * 2^64
  EXPECT_EQ(half->should_sample(root_params(0)), kSample);
  EXPECT_EQ(half->should_sample(root_params(boundary - 1)), kSample);
  EXPECT_EQ(half->should_sample(root_params(boundary)), kDrop);
  EXPECT_EQ(half->should_sample(root_params(~0ULL)), kDrop);
  // The high bytes do not matter.
  EXPECT_EQ(half->should_sample(root_params(boundary - 1, ~0ULL)), kSample);
  EXPECT_EQ(half->should_sample(root_params(boundary, 0)), kDrop);
  // Byte order: 0x80 in byte 8 is the most significant bit.
  SamplingParams params = root_params(0);
  params.trace_id[8] = 0x80;
  EXPECT_EQ(half->should_sample(params), kDrop);
  params = root_params(0);
  params.trace_id[15] = 0xff;
  EXPECT_EQ(half->should_sample(params), kSample);
}

TEST(SamplingStandard, TraceIdRatioExtremes) {
  auto all = make_standard_sampler(SamplerKind::traceidratio, 1.0);
  auto above = make_standard_sampler(SamplerKind::traceidratio, 2.0);
  auto none = make_standard_sampler(SamplerKind::traceidratio, 0.0);
  auto negative = make_standard_sampler(SamplerKind::traceidratio, -1.0);
  auto tiny = make_standard_sampler(SamplerKind::traceidratio, 1e-30);
  for (std::uint64_t low : {0ULL, 1ULL, 1ULL << 32, ~0ULL}) {
    EXPECT_EQ(all->should_sample(root_params(low)), kSample);
    EXPECT_EQ(above->should_sample(root_params(low)), kSample);
    EXPECT_EQ(none->should_sample(root_params(low)), kDrop);
    EXPECT_EQ(negative->should_sample(root_params(low)), kDrop);
  }
  // ratio * 2^64 is a fraction of one: only the all-zero low half is below it.
  EXPECT_EQ(tiny->should_sample(root_params(0)), kSample);
  EXPECT_EQ(tiny->should_sample(root_params(1)), kDrop);
}

TEST(SamplingStandard, TraceIdRatioFractionIsTheRatio) {
  auto sampler = make_standard_sampler(SamplerKind::traceidratio, 0.1);
  std::mt19937_64 random(12345);
  int kept = 0;
  constexpr int kTraces = 100000;
  for (int i = 0; i < kTraces; ++i) {
    if (sampler->should_sample(root_params(random(), random())) == kSample) {
      ++kept;
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / kTraces, 0.1, 0.005);
}

// --- parent-based behaviour ----------------------------------------------------------------------

TEST(SamplingParentBased, FollowsTheParentsSampledFlag) {
  for (SamplerKind kind : {SamplerKind::parentbased_always_on, SamplerKind::parentbased_always_off,
                           SamplerKind::parentbased_traceidratio}) {
    auto sampler = make_standard_sampler(kind, 0.0);
    for (bool remote : {false, true}) {
      EXPECT_EQ(sampler->should_sample(child_params(true, remote)), kSample) << to_string(kind);
      EXPECT_EQ(sampler->should_sample(child_params(false, remote)), kDrop) << to_string(kind);
    }
  }
}

TEST(SamplingParentBased, UsesTheRootSamplerWithoutAParent) {
  EXPECT_EQ(make_standard_sampler(SamplerKind::parentbased_always_on, 1.0)
                ->should_sample(root_params(~0ULL)),
            kSample);
  EXPECT_EQ(make_standard_sampler(SamplerKind::parentbased_always_off, 1.0)
                ->should_sample(root_params(0)),
            kDrop);
  auto ratio = make_standard_sampler(SamplerKind::parentbased_traceidratio, 0.5);
  EXPECT_EQ(ratio->should_sample(root_params((1ULL << 63) - 1)), kSample);
  EXPECT_EQ(ratio->should_sample(root_params(1ULL << 63)), kDrop);
  // With a sampled parent, the same trace id is kept regardless of the ratio.
  SamplingParams params = child_params(true, false);
  params.trace_id = root_params(~0ULL).trace_id;
  EXPECT_EQ(ratio->should_sample(params), kSample);
}

TEST(SamplingDefault, FollowsOtelSettings) {
  OtelSettings otel;
  EXPECT_EQ(make_default_sampler(otel)->description(), "ParentBased{AlwaysOnSampler}");
  otel.traces_sampler.value = SamplerKind::always_off;
  EXPECT_EQ(make_default_sampler(otel)->description(), "AlwaysOffSampler");
  otel.traces_sampler.value = SamplerKind::traceidratio;
  otel.traces_sampler_arg.value = 0.25;
  EXPECT_EQ(make_default_sampler(otel)->description(), "TraceIdRatioBasedSampler{0.250000}");
  otel.traces_sampler.value = SamplerKind::parentbased_traceidratio;
  otel.traces_sampler_arg.value = std::nullopt;  // no argument: ratio 1.0
  EXPECT_EQ(make_default_sampler(otel)->description(),
            "ParentBased{TraceIdRatioBasedSampler{1.000000}}");
}

// --- RankAwareSampler ---------------------------------------------------------------------------

TEST(SamplingRankAware, RateOneSamplesAndRateZeroDrops) {
  auto on = make_standard_sampler(SamplerKind::always_on, 1.0);
  for (int rank = 0; rank < 16; ++rank) {
    const RankAwareSampler keep(rank_of(rank, 16), 1.0, on);
    EXPECT_TRUE(keep.rank_kept());
    EXPECT_EQ(keep.should_sample(root_params(123)), kSample);
    const RankAwareSampler drop(rank_of(rank, 16), 0.0, on);
    EXPECT_FALSE(drop.rank_kept());
    EXPECT_EQ(drop.should_sample(root_params(123)), kDrop);
  }
}

TEST(SamplingRankAware, KeepsTheRanksWhoseBucketIsBelowTheRate) {
  auto on = make_standard_sampler(SamplerKind::always_on, 1.0);
  std::vector<int> kept;
  for (int rank = 0; rank < 16; ++rank) {
    const RankAwareSampler sampler(rank_of(rank, 16), 0.1, on);
    EXPECT_EQ(sampler.rank_kept(), sampled_rank_bucket(rank) < 0.1);
    if (sampler.rank_kept()) {
      kept.push_back(rank);
    }
  }
  EXPECT_EQ(kept, (std::vector<int>{3, 5, 6}));
  // Strict less-than at the bucket itself (rank 3: 0.0883).
  EXPECT_FALSE(RankAwareSampler(rank_of(3, 4), 0.0883, on).rank_kept());
}

TEST(SamplingRankAware, DescriptionHasTheRankAndRate) {
  auto on = make_standard_sampler(SamplerKind::always_on, 1.0);
  const RankAwareSampler sampler(rank_of(3, 8), 0.5, on);
  EXPECT_THAT(sampler.description(), HasSubstr("RankAwareSampler"));
  EXPECT_THAT(sampler.description(), HasSubstr("0.5"));
  EXPECT_EQ(sampler.description(), "RankAwareSampler(rank=3, rate=0.5)");
  EXPECT_EQ(RankAwareSampler(rank_of(0, 1), 1.0, on).description(),
            "RankAwareSampler(rank=0, rate=1.0)");
  EXPECT_EQ(RankAwareSampler(rank_of(7, 8), 0.25, on).description(),
            "RankAwareSampler(rank=7, rate=0.25)");
  EXPECT_EQ(RankAwareSampler(rank_of(7, 8), 0.1, on).description(),
            "RankAwareSampler(rank=7, rate=0.1)");
  EXPECT_EQ(RankAwareSampler(rank_of(7, 8), 0.0, on).description(),
            "RankAwareSampler(rank=7, rate=0.0)");
}

TEST(SamplingRankAware, KeptRankDelegatesDroppedRankDrops) {
  auto off = make_standard_sampler(SamplerKind::always_off, 1.0);
  const RankAwareSampler kept_off(rank_of(3, 16), 0.1, off);  // rank 3 kept at 0.1
  ASSERT_TRUE(kept_off.rank_kept());
  EXPECT_EQ(kept_off.should_sample(root_params(0)), kDrop);  // the delegate decides

  auto parent_based = make_standard_sampler(SamplerKind::parentbased_always_on, 1.0);
  const RankAwareSampler kept(rank_of(3, 16), 0.1, parent_based);
  EXPECT_EQ(kept.should_sample(root_params(0)), kSample);
  EXPECT_EQ(kept.should_sample(child_params(false, true)), kDrop);  // parent-based delegate
  EXPECT_EQ(kept.should_sample(child_params(true, true)), kSample);

  const RankAwareSampler dropped(rank_of(0, 16), 0.1, parent_based);  // rank 0: 0.7850
  ASSERT_FALSE(dropped.rank_kept());
  EXPECT_EQ(dropped.should_sample(root_params(0)), kDrop);
  // A dropped rank drops everything, even under a sampled remote parent.
  EXPECT_EQ(dropped.should_sample(child_params(true, true)), kDrop);
}

TEST(SamplingRankAware, NullDelegateIsParentBasedAlwaysOn) {
  const RankAwareSampler sampler(rank_of(0, 1), 1.0, nullptr);
  ASSERT_NE(sampler.delegate(), nullptr);
  EXPECT_EQ(sampler.delegate()->description(), "ParentBased{AlwaysOnSampler}");
  EXPECT_EQ(sampler.should_sample(root_params(5)), kSample);
  EXPECT_EQ(sampler.should_sample(child_params(false, false)), kDrop);
}

// --- shapes: the fixed rule each sampler states for the span hot path ---------------------------

TEST(SamplingShape, EachStandardSamplerStatesItsRule) {
  const std::pair<SamplerKind, SamplerShape> at_one[] = {
      {SamplerKind::always_on, SamplerShape::always_sample},
      {SamplerKind::always_off, SamplerShape::always_drop},
      {SamplerKind::traceidratio, SamplerShape::always_sample},
      {SamplerKind::parentbased_always_on, SamplerShape::parent_or_sample},
      {SamplerKind::parentbased_always_off, SamplerShape::parent_or_drop},
      {SamplerKind::parentbased_traceidratio, SamplerShape::parent_or_sample}};
  for (const auto& [kind, shape] : at_one) {
    SCOPED_TRACE(std::string(to_string(kind)));
    EXPECT_EQ(make_standard_sampler(kind, 1.0)->shape(), shape);
  }
  // A ratio strictly between 0 and 1 looks at the trace id: no fixed rule.
  EXPECT_EQ(make_standard_sampler(SamplerKind::traceidratio, 0.5)->shape(), SamplerShape::custom);
  EXPECT_EQ(make_standard_sampler(SamplerKind::parentbased_traceidratio, 0.5)->shape(),
            SamplerShape::custom);
  EXPECT_EQ(make_standard_sampler(SamplerKind::traceidratio, 0.0)->shape(),
            SamplerShape::always_drop);
  EXPECT_EQ(make_standard_sampler(SamplerKind::parentbased_traceidratio, 0.0)->shape(),
            SamplerShape::parent_or_drop);
  EXPECT_EQ(make_standard_sampler(SamplerKind::traceidratio, 2.0)->shape(),
            SamplerShape::always_sample);
}

TEST(SamplingShape, RankAwareDropsItsRankOrTakesTheDelegatesRule) {
  auto ratio = make_standard_sampler(SamplerKind::traceidratio, 0.5);
  auto off = make_standard_sampler(SamplerKind::parentbased_always_off, 1.0);
  EXPECT_EQ(RankAwareSampler(rank_of(0, 16), 0.1, ratio).shape(), SamplerShape::always_drop);
  EXPECT_EQ(RankAwareSampler(rank_of(3, 16), 0.1, ratio).shape(), SamplerShape::custom);
  EXPECT_EQ(RankAwareSampler(rank_of(3, 16), 0.1, off).shape(), SamplerShape::parent_or_drop);
  EXPECT_EQ(RankAwareSampler(rank_of(3, 16), 0.1, nullptr).shape(), SamplerShape::parent_or_sample);
}

TEST(SamplingShape, ASamplerThatStatesNoRuleIsCustom) {
  class Named final : public Sampler {
   public:
    SamplingDecision should_sample(const SamplingParams& params) const noexcept override {
      return params.name == "keep" ? SamplingDecision::record_and_sample : SamplingDecision::drop;
    }
    std::string description() const override { return "Named"; }
  };
  EXPECT_EQ(Named().shape(), SamplerShape::custom);
  // Around it, parent-based and rank-aware samplers have no fixed rule either.
  EXPECT_EQ(RankAwareSampler(rank_of(0, 1), 1.0, std::make_shared<Named>()).shape(),
            SamplerShape::custom);
}

// --- the 1% composition: rank-aware sampling times OTEL_TRACES_SAMPLER ---------------------------

TEST(SamplingComposition, AllRanksRankAwareTenthAndTraceIdRatioTenthKeepAboutOnePercent) {
  constexpr int kRanks = 100;
  constexpr int kTraces = 200000;
  Config config;
  config.rank_strategy = "all_ranks";
  config.sampling_strategy = "rank_aware";
  config.export_sample_rate = 0.1;
  config.otel.traces_sampler.value = SamplerKind::traceidratio;
  config.otel.traces_sampler_arg.value = 0.1;

  std::vector<std::shared_ptr<const Sampler>> samplers;
  int kept_ranks = 0;
  for (int rank = 0; rank < kRanks; ++rank) {
    const RankInfo info = rank_of(rank, kRanks);
    auto exporting = should_export(config, info);
    ASSERT_TRUE(exporting.ok() && *exporting);
    auto sampler = make_sampler(config, info);
    ASSERT_TRUE(sampler.ok()) << sampler.message();
    auto rank_aware = std::dynamic_pointer_cast<const RankAwareSampler>(*sampler);
    ASSERT_NE(rank_aware, nullptr);
    kept_ranks += rank_aware->rank_kept() ? 1 : 0;
    samplers.push_back(*sampler);
  }
  // About 10% of ranks (9 of ranks 0-99: 3, 5, 6, 31, 55, 64, 74, 77, 99).
  EXPECT_EQ(kept_ranks, 9);

  std::mt19937_64 random(20240601);
  std::int64_t sampled_pairs = 0;
  std::int64_t sampled_traces = 0;
  bool consistent = true;
  for (int trace = 0; trace < kTraces; ++trace) {
    const SamplingParams params = root_params(random(), random());
    int sampled_here = 0;
    for (const auto& sampler : samplers) {
      if (sampler->should_sample(params) == kSample) {
        ++sampled_here;
      }
    }
    sampled_pairs += sampled_here;
    sampled_traces += sampled_here > 0 ? 1 : 0;
    // A trace is kept on every kept rank or on none: the trace-id decision is shared.
    consistent = consistent && (sampled_here == 0 || sampled_here == kept_ranks);
  }
  EXPECT_TRUE(consistent);
  const double pair_fraction =
      static_cast<double>(sampled_pairs) / (static_cast<double>(kRanks) * kTraces);
  const double trace_fraction = static_cast<double>(sampled_traces) / kTraces;
  // 10% of traces (binomial sd ~ 0.00067 over 200000) on 9% of ranks: 0.009 of all pairs.
  EXPECT_NEAR(trace_fraction, 0.1, 0.004);
  EXPECT_NEAR(pair_fraction, 0.1 * kept_ranks / kRanks, 0.0004);
  EXPECT_NEAR(pair_fraction, 0.01, 0.003);  // "about 1%"
}

// --- the sampling-strategy registry and make_sampler ---------------------------------------------

class SamplingStrategiesTest : public ::testing::Test {
 protected:
  void SetUp() override { detail::reset_strategies_for_testing(); }
  void TearDown() override { detail::reset_strategies_for_testing(); }
};

TEST_F(SamplingStrategiesTest, RankAwareIsBuiltin) {
  EXPECT_EQ(registered_sampling_strategies(), (std::vector<std::string>{"rank_aware"}));
  const Status status = unregister_sampling_strategy("rank_aware");
  EXPECT_EQ(failure_of(status),
            "Sampling strategy 'rank_aware' is built-in and cannot be unregistered");
  EXPECT_EQ(registered_sampling_strategies().size(), 1U);
}

TEST_F(SamplingStrategiesTest, EmptyStrategyGivesTheDefaultSampler) {
  Config config;
  auto sampler = make_sampler(config, rank_of(0, 1));
  ASSERT_TRUE(sampler.ok()) << sampler.message();
  EXPECT_EQ(std::dynamic_pointer_cast<const RankAwareSampler>(*sampler), nullptr);
  EXPECT_EQ((*sampler)->description(), "ParentBased{AlwaysOnSampler}");

  config.otel.traces_sampler.value = SamplerKind::traceidratio;
  config.otel.traces_sampler_arg.value = 0.5;
  sampler = make_sampler(config, rank_of(0, 1));
  ASSERT_TRUE(sampler.ok()) << sampler.message();
  EXPECT_EQ((*sampler)->description(), "TraceIdRatioBasedSampler{0.500000}");
}

TEST_F(SamplingStrategiesTest, RankAwareInstallsARankAwareSamplerAroundTheDefault) {
  Config config;
  config.sampling_strategy = "rank_aware";
  config.export_sample_rate = 0.5;
  auto sampler = make_sampler(config, rank_of(3, 8));
  ASSERT_TRUE(sampler.ok()) << sampler.message();
  auto rank_aware = std::dynamic_pointer_cast<const RankAwareSampler>(*sampler);
  ASSERT_NE(rank_aware, nullptr);
  EXPECT_EQ(rank_aware->description(), "RankAwareSampler(rank=3, rate=0.5)");
  EXPECT_EQ(rank_aware->rate(), 0.5);
  EXPECT_EQ(rank_aware->rank(), 3);
  EXPECT_EQ(rank_aware->delegate()->description(), "ParentBased{AlwaysOnSampler}");
}

TEST_F(SamplingStrategiesTest, UnknownStrategyNamesTheVariable) {
  Config config;
  config.sampling_strategy = "x";
  config.sources["sampling_strategy"] = "env:NEMO_LENS_SAMPLING_STRATEGY";
  auto sampler = make_sampler(config, rank_of(0, 1));
  ASSERT_EQ(failure_of(sampler),
            "Unknown sampling strategy 'x' in NEMO_LENS_SAMPLING_STRATEGY. Registered "
            "strategies: [rank_aware].");
}

TEST_F(SamplingStrategiesTest, CustomFactoryReceivesSettingsRankAndDefaultSampler) {
  std::string seen_default;
  int seen_rank = -1;
  StrategySettings seen_settings;
  ASSERT_TRUE(
      register_sampling_strategy("custom", [&](const StrategySettings& settings,
                                               const RankInfo& rank,
                                               std::shared_ptr<const Sampler> default_sampler) {
        seen_default = default_sampler->description();
        seen_rank = rank.rank;
        seen_settings = settings;
        return make_standard_sampler(SamplerKind::always_off, 1.0);
      }).ok());
  EXPECT_EQ(registered_sampling_strategies(), (std::vector<std::string>{"custom", "rank_aware"}));
  Config config;
  config.sampling_strategy = "custom";
  config.export_rank = 3;
  config.export_sample_rate = 0.25;
  config.otel.traces_sampler.value = SamplerKind::always_on;
  auto sampler = make_sampler(config, rank_of(2, 4));
  ASSERT_TRUE(sampler.ok()) << sampler.message();
  EXPECT_EQ((*sampler)->description(), "AlwaysOffSampler");
  EXPECT_EQ(seen_default, "AlwaysOnSampler");
  EXPECT_EQ(seen_rank, 2);
  EXPECT_EQ(seen_settings.export_rank, 3);
  EXPECT_EQ(seen_settings.export_sample_rate, 0.25);
}

TEST_F(SamplingStrategiesTest, RegistryErrorsUseTheRankStrategyWording) {
  const auto factory = [](const StrategySettings&, const RankInfo&,
                          std::shared_ptr<const Sampler> default_sampler) {
    return default_sampler;
  };
  EXPECT_EQ(register_sampling_strategy("", factory).message(),
            "Sampling strategy name must be non-empty");
  EXPECT_EQ(register_sampling_strategy("rank_aware", factory).message(),
            "Sampling strategy 'rank_aware' is already registered; pass allow_override=true to "
            "replace it");
  EXPECT_EQ(register_sampling_strategy("empty", SamplingStrategyFactory{}).message(),
            "Sampling strategy 'empty' is empty; expected a callable");
  EXPECT_EQ(unregister_sampling_strategy("nope").message(),
            "Sampling strategy 'nope' is not registered. Registered strategies: [rank_aware].");
  ASSERT_TRUE(register_sampling_strategy("mine", factory).ok());
  EXPECT_THAT(register_sampling_strategy("mine", factory).message(),
              HasSubstr("already registered"));
  ASSERT_TRUE(unregister_sampling_strategy("mine").ok());
  EXPECT_EQ(registered_sampling_strategies(), (std::vector<std::string>{"rank_aware"}));
}

TEST_F(SamplingStrategiesTest, RankAwareCanBeOverriddenButNotRemoved) {
  ASSERT_TRUE(register_sampling_strategy(
                  "rank_aware",
                  [](const StrategySettings&, const RankInfo&, std::shared_ptr<const Sampler>) {
                    return make_standard_sampler(SamplerKind::always_off, 1.0);
                  },
                  true)
                  .ok());
  Config config;
  config.sampling_strategy = "rank_aware";
  auto sampler = make_sampler(config, rank_of(0, 1));
  ASSERT_TRUE(sampler.ok());
  EXPECT_EQ((*sampler)->description(), "AlwaysOffSampler");
  EXPECT_THAT(unregister_sampling_strategy("rank_aware").message(), HasSubstr("built-in"));
  detail::reset_strategies_for_testing();
  sampler = make_sampler(config, rank_of(0, 1));
  ASSERT_TRUE(sampler.ok());
  EXPECT_NE(std::dynamic_pointer_cast<const RankAwareSampler>(*sampler), nullptr);
}

TEST_F(SamplingStrategiesTest, ThrowingOrNullFactoryIsAnError) {
  ASSERT_TRUE(register_sampling_strategy(
                  "throws",
                  [](const StrategySettings&, const RankInfo&,
                     std::shared_ptr<const Sampler>) -> std::shared_ptr<const Sampler> {
                    throw std::runtime_error("no sampler today");
                  })
                  .ok());
  ASSERT_TRUE(register_sampling_strategy("null", [](const StrategySettings&, const RankInfo&,
                                                    std::shared_ptr<const Sampler>) {
                return std::shared_ptr<const Sampler>();
              }).ok());
  Config config;
  config.sampling_strategy = "throws";
  auto sampler = make_sampler(config, rank_of(0, 1));
  ASSERT_EQ(failure_of(sampler), "Sampling strategy 'throws' failed: no sampler today");
  config.sampling_strategy = "null";
  sampler = make_sampler(config, rank_of(0, 1));
  ASSERT_EQ(failure_of(sampler),
            "Sampling strategy 'null' returned no sampler; expected a non-null sampler");
}

TEST_F(SamplingStrategiesTest, ResetRestoresBothRegistries) {
  const auto factory = [](const StrategySettings&, const RankInfo&,
                          std::shared_ptr<const Sampler> s) { return s; };
  ASSERT_TRUE(register_sampling_strategy("mine", factory).ok());
  ASSERT_TRUE(register_rank_strategy("mine", [](const StrategySettings&, const RankInfo&) {
                return true;
              }).ok());
  detail::reset_strategies_for_testing();
  EXPECT_EQ(registered_sampling_strategies(), (std::vector<std::string>{"rank_aware"}));
  EXPECT_EQ(registered_rank_strategies().size(), 4U);
}

}  // namespace
}  // namespace lens
