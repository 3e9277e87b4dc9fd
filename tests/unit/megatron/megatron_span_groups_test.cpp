// Tests of the Megatron span-group vocabulary (lens/megatron/span_groups.hpp, docs/span-groups.md,
// "Vocabularies"): constants, presets and resolution, adapted to the registry (no stub class:
// before registration the groups are unknown).
// Every test starts from reset_span_groups_for_testing(): just `lens`, nothing enabled.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lens/groups.hpp"
#include "lens/megatron/span_groups.hpp"
#include "unit/support/test_support.hpp"

namespace lens::megatron {
namespace {

using lens::test_support::failure_of;

using Groups = std::set<std::string>;
using ::testing::ElementsAre;

const Groups kBase = {"checkpoint",      "evaluate",   "forward_backward", "job",
                      "load_checkpoint", "model_init", "optimizer",        "step"};
const Groups kMegatronOnly = {"microbatch",         "layer",        "communication",
                              "activation_offload", "data_loading", "first_iteration",
                              "trace_region",       "inference"};

Groups all16() {
  Groups all = kBase;
  all.insert(kMegatronOnly.begin(), kMegatronOnly.end());
  return all;
}

class MegatronSpanGroupTest : public ::testing::Test {
 protected:
  void SetUp() override { ::lens::detail::reset_span_groups_for_testing(); }
  void TearDown() override { ::lens::detail::reset_span_groups_for_testing(); }
};

Groups resolved(std::string_view spec) {
  auto result = ::lens::resolve_span_groups(spec);
  EXPECT_TRUE(result.ok()) << result.message();
  return result.ok() ? *result : Groups{};
}

// ---- Constants ---------------------------------------------------------------------------------

TEST_F(MegatronSpanGroupTest, MegatronGroupConstantsHaveTheExpectedValues) {
  EXPECT_EQ(groups::kNamespace, "megatron");
  EXPECT_EQ(groups::kMicrobatch, "microbatch");
  EXPECT_EQ(groups::kLayer, "layer");
  EXPECT_EQ(groups::kCommunication, "communication");
  EXPECT_EQ(groups::kActivationOffload, "activation_offload");
  EXPECT_EQ(groups::kDataLoading, "data_loading");
  EXPECT_EQ(groups::kFirstIteration, "first_iteration");
  EXPECT_EQ(groups::kTraceRegion, "trace_region");
  EXPECT_EQ(groups::kInference, "inference");
  EXPECT_EQ(groups::kPresetProfiling, "profiling");
}

TEST_F(MegatronSpanGroupTest, ExactlyEightMegatronOnlyGroupsNoneCollidingWithBase) {
  const Groups own(groups::kMegatronGroups.begin(), groups::kMegatronGroups.end());
  EXPECT_EQ(own.size(), 8u);
  EXPECT_EQ(own, kMegatronOnly);
  for (const auto& group : own) {
    EXPECT_FALSE(kBase.contains(group)) << group;
  }
}

// The Megatron vocabulary's base groups and presets are lens's own constants (the same
// characters, not copies: groups_test.cpp checks their values).
TEST_F(MegatronSpanGroupTest, BaseConstantsAreInherited) {
  const std::pair<std::string_view, std::string_view> inherited[] = {
      {groups::kJob, ::lens::groups::kJob},
      {groups::kCheckpoint, ::lens::groups::kCheckpoint},
      {groups::kEvaluate, ::lens::groups::kEvaluate},
      {groups::kModelInit, ::lens::groups::kModelInit},
      {groups::kLoadCheckpoint, ::lens::groups::kLoadCheckpoint},
      {groups::kStep, ::lens::groups::kStep},
      {groups::kForwardBackward, ::lens::groups::kForwardBackward},
      {groups::kOptimizer, ::lens::groups::kOptimizer},
      {groups::kPresetDefault, ::lens::groups::kPresetDefault},
      {groups::kPresetPerStep, ::lens::groups::kPresetPerStep},
      {groups::kPresetAll, ::lens::groups::kPresetAll}};
  for (const auto& [megatron, base] : inherited) {
    EXPECT_EQ(megatron.data(), base.data()) << megatron;
  }
}

// ---- ALL_GROUPS --------------------------------------------------------------------------------

TEST_F(MegatronSpanGroupTest, AllSpanGroupsIsBaseUnionMegatronGroups) {
  EXPECT_EQ(all_span_groups(), all16());
  EXPECT_EQ(all_span_groups().size(), 16u);
}

// ---- Presets -----------------------------------------------------------------------------------

TEST_F(MegatronSpanGroupTest, PresetsAreExactlyDefaultPerStepProfilingAll) {
  std::vector<std::string> names;
  for (const auto& [name, members] : span_group_presets()) {
    names.push_back(name);
  }
  EXPECT_THAT(names, ElementsAre("all", "default", "per_step", "profiling"));
}

TEST_F(MegatronSpanGroupTest, EveryPresetIsASubsetOfAllGroups) {
  for (const auto& [name, members] : span_group_presets()) {
    EXPECT_TRUE(std::includes(all_span_groups().begin(), all_span_groups().end(), members.begin(),
                              members.end()))
        << name;
  }
}

TEST_F(MegatronSpanGroupTest, DefaultIsASubsetOfPerStep) {
  const auto& presets = span_group_presets();
  EXPECT_TRUE(std::includes(presets.at("per_step").begin(), presets.at("per_step").end(),
                            presets.at("default").begin(), presets.at("default").end()));
}

TEST_F(MegatronSpanGroupTest, AllAndProfilingAreEveryGroup) {
  EXPECT_EQ(span_group_presets().at("all"), all16());
  EXPECT_EQ(span_group_presets().at("profiling"), all16());
}

TEST_F(MegatronSpanGroupTest, DefaultPresetContents) {
  const auto& preset = span_group_presets().at("default");
  EXPECT_EQ(preset, Groups({"job", "checkpoint", "evaluate", "first_iteration", "inference"}));
  EXPECT_FALSE(preset.contains("step"));
  EXPECT_FALSE(preset.contains("forward_backward"));
  EXPECT_FALSE(preset.contains("microbatch"));
}

TEST_F(MegatronSpanGroupTest, PerStepPresetContents) {
  EXPECT_EQ(span_group_presets().at("per_step"),
            Groups({"job", "checkpoint", "evaluate", "model_init", "load_checkpoint", "step",
                    "forward_backward", "optimizer", "communication", "data_loading",
                    "first_iteration", "inference"}));
}

TEST_F(MegatronSpanGroupTest, FineGrainedGroupsAreOnlyInAllAndProfiling) {
  for (const std::string group : {"microbatch", "layer", "activation_offload", "trace_region"}) {
    for (const auto& [name, members] : span_group_presets()) {
      EXPECT_EQ(members.contains(group), name == "all" || name == "profiling")
          << group << " in " << name;
    }
  }
}

TEST_F(MegatronSpanGroupTest, MegatronPresetsAreDistinctFromTheBasePresets) {
  const auto base = ::lens::span_group_presets();
  EXPECT_NE(base.at("default"), span_group_presets().at("default"));
  EXPECT_NE(base.at("per_step"), span_group_presets().at("per_step"));
  EXPECT_FALSE(base.contains("profiling"));
  EXPECT_EQ(&span_group_presets(), &span_group_presets());  // one immutable table
}

// ---- Resolution --------------------------------------------------------------------------------

TEST_F(MegatronSpanGroupTest, BeforeRegistrationMegatronNamesAreUnknown) {
  const std::string options =
      "Valid options: [all, checkpoint, default, evaluate, forward_backward, job, "
      "load_checkpoint, model_init, optimizer, per_step, step]";
  for (const std::string name :
       {"microbatch", "layer", "communication", "activation_offload", "data_loading",
        "first_iteration", "trace_region", "inference", "profiling"}) {
    const auto result = ::lens::resolve_span_groups(name);
    EXPECT_FALSE(result.ok()) << name;
    EXPECT_EQ(result.message(), "Unknown span group or preset: '" + name + "'. " + options);
  }
  // The shared base groups resolve without Megatron.
  EXPECT_EQ(resolved("all"), kBase);
}

TEST_F(MegatronSpanGroupTest, RegistrationAddsTheMegatronNamespace) {
  const Status status = register_span_groups();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_THAT(::lens::span_group_namespaces(), ElementsAre("lens", "megatron"));
  const auto all = ::lens::registered_span_groups();
  EXPECT_EQ(Groups(all.begin(), all.end()), all16());
}

TEST_F(MegatronSpanGroupTest, AfterRegistrationPresetsResolveAsTheVocabularyDefines) {
  ASSERT_TRUE(register_span_groups().ok());
  EXPECT_EQ(resolved("default"), span_group_presets().at("default"));
  EXPECT_EQ(resolved("per_step"), span_group_presets().at("per_step"));
  EXPECT_EQ(resolved("profiling"), all16());
  EXPECT_EQ(resolved("all"), all_span_groups());
  EXPECT_EQ(resolved("default,microbatch"), Groups({"job", "checkpoint", "evaluate",
                                                    "first_iteration", "inference", "microbatch"}));
  // The registry's union of lens and megatron presets is exactly Megatron's table.
  EXPECT_EQ(::lens::span_group_presets(), span_group_presets());
}

TEST_F(MegatronSpanGroupTest, EveryGroupResolvesToItselfAfterRegistration) {
  ASSERT_TRUE(register_span_groups().ok());
  for (const auto& group : all_span_groups()) {
    EXPECT_EQ(resolved(group), Groups({group})) << group;
  }
}

TEST_F(MegatronSpanGroupTest, RegistrationIsIdempotent) {
  ASSERT_TRUE(register_span_groups().ok());
  const Status again = register_span_groups();
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_THAT(::lens::span_group_namespaces(), ElementsAre("lens", "megatron"));
  EXPECT_EQ(::lens::span_group_presets(), span_group_presets());
}

TEST_F(MegatronSpanGroupTest, ConcurrentRegistrationSucceedsEverywhere) {
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (std::size_t i = 0; i < ok.size(); ++i) {
    threads.emplace_back([i, &ok] { ok[i] = register_span_groups().ok() ? 1 : 0; });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(std::count(ok.begin(), ok.end(), 1), 8);
  EXPECT_EQ(::lens::span_group_presets(), span_group_presets());
}

TEST_F(MegatronSpanGroupTest, RegistrationNeedsTheLensNamespace) {
  ASSERT_TRUE(::lens::unregister_span_groups("lens").ok());
  const Status status = register_span_groups();
  EXPECT_EQ(failure_of(status),
            "Preset 'default' of span group namespace 'megatron' names group 'checkpoint', which "
            "is not among its groups and no other namespace has registered it; register the "
            "library that owns the group first");
  ASSERT_TRUE(::lens::register_lens_span_groups().ok());
  EXPECT_TRUE(register_span_groups().ok());
}

TEST_F(MegatronSpanGroupTest, RegistrationReportsAGroupClaimedByAnotherNamespace) {
  ASSERT_TRUE(::lens::register_span_groups("other", {"layer"}).ok());
  const Status status = register_span_groups();
  EXPECT_EQ(failure_of(status),
            "Span group 'layer' of namespace 'megatron' is already registered by namespace "
            "'other'");
}

TEST_F(MegatronSpanGroupTest, UnregisteringMegatronRestoresTheBaseVocabulary) {
  const auto base = ::lens::span_group_presets();
  ASSERT_TRUE(register_span_groups().ok());
  ASSERT_TRUE(::lens::unregister_span_groups(groups::kNamespace).ok());
  EXPECT_EQ(::lens::span_group_presets(), base);
  EXPECT_FALSE(::lens::resolve_span_groups("profiling").ok());
}

TEST_F(MegatronSpanGroupTest, HandlesFollowTheResolvedSpec) {
  const auto microbatch = ::lens::span_group_handle(groups::kMicrobatch);
  const auto first_iteration = ::lens::span_group_handle(groups::kFirstIteration);
  ASSERT_TRUE(register_span_groups().ok());
  ::lens::set_enabled_span_groups(resolved("default"));
  EXPECT_FALSE(microbatch.enabled());
  EXPECT_TRUE(first_iteration.enabled());
  ::lens::set_enabled_span_groups(resolved("profiling"));
  EXPECT_TRUE(microbatch.enabled());
  EXPECT_TRUE(::lens::is_span_group_enabled(groups::kTraceRegion));
}

TEST_F(MegatronSpanGroupTest, LenientResolutionWithoutMegatronReportsItsNames) {
  const auto resolution = ::lens::resolve_span_groups_lenient("per_step,trace_region,profiling");
  EXPECT_EQ(resolution.enabled, kBase);
  EXPECT_THAT(resolution.unknown, ElementsAre("trace_region", "profiling"));
}

}  // namespace
}  // namespace lens::megatron
