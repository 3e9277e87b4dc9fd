// Tests of the span-group registry, resolution, enabled state and handles (lens/groups.hpp,
// docs/span-groups.md): presets, resolution and its errors, enabled state, registration across
// namespaces and lenient resolution.
// Every test starts from reset_span_groups_for_testing(): just `lens`, nothing enabled.
#include "lens/groups.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "unit/support/test_support.hpp"

namespace lens {
namespace {

using lens::test_support::failure_of;

using Groups = std::set<std::string>;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const Groups kBase = {"checkpoint",      "evaluate",   "forward_backward", "job",
                      "load_checkpoint", "model_init", "optimizer",        "step"};
constexpr const char* kBaseOptions =
    "[all, checkpoint, default, evaluate, forward_backward, job, load_checkpoint, model_init, "
    "optimizer, per_step, step]";

class SpanGroupTest : public ::testing::Test {
 protected:
  void SetUp() override { detail::reset_span_groups_for_testing(); }
  void TearDown() override { detail::reset_span_groups_for_testing(); }
};

Groups resolved(std::string_view spec) {
  auto result = resolve_span_groups(spec);
  EXPECT_TRUE(result.ok()) << result.message();
  return result.ok() ? *result : Groups{};
}

std::string resolve_error(std::string_view spec) {
  auto result = resolve_span_groups(spec);
  EXPECT_FALSE(result.ok());
  return result.message();
}

// ---- Base vocabulary ---------------------------------------------------------------------------

TEST_F(SpanGroupTest, BaseVocabularyIsRegisteredUnderLensOnFirstUse) {
  EXPECT_THAT(span_group_namespaces(), ElementsAre("lens"));
  EXPECT_THAT(registered_span_groups(),
              ElementsAre("checkpoint", "evaluate", "forward_backward", "job", "load_checkpoint",
                          "model_init", "optimizer", "step"));
}

TEST_F(SpanGroupTest, GroupConstantsHaveTheirNames) {
  EXPECT_EQ(groups::kNamespace, "lens");
  EXPECT_EQ(groups::kJob, "job");
  EXPECT_EQ(groups::kCheckpoint, "checkpoint");
  EXPECT_EQ(groups::kEvaluate, "evaluate");
  EXPECT_EQ(groups::kModelInit, "model_init");
  EXPECT_EQ(groups::kLoadCheckpoint, "load_checkpoint");
  EXPECT_EQ(groups::kStep, "step");
  EXPECT_EQ(groups::kForwardBackward, "forward_backward");
  EXPECT_EQ(groups::kOptimizer, "optimizer");
  EXPECT_EQ(Groups(groups::kLensGroups.begin(), groups::kLensGroups.end()), kBase);
  EXPECT_EQ(groups::kPresetDefault, "default");
  EXPECT_EQ(groups::kPresetPerStep, "per_step");
  EXPECT_EQ(groups::kPresetAll, "all");
}

TEST_F(SpanGroupTest, BasePresetsAreDefaultPerStepAndAll) {
  const std::map<std::string, Groups> expected = {
      {"all", kBase}, {"default", {"checkpoint", "evaluate", "job"}}, {"per_step", kBase}};
  EXPECT_EQ(span_group_presets(), expected);
  EXPECT_EQ(resolved("default"), Groups({"job", "checkpoint", "evaluate"}));
  const Groups per_step = resolved("per_step");
  EXPECT_TRUE(per_step.contains("step"));
  EXPECT_TRUE(per_step.contains("forward_backward"));
  EXPECT_TRUE(per_step.contains("optimizer"));
  EXPECT_EQ(resolved("all"), kBase);
}

// ---- Resolution --------------------------------------------------------------------------------

TEST_F(SpanGroupTest, SingleGroupResolvesToItself) {
  EXPECT_EQ(resolved("step"), Groups({"step"}));
}

TEST_F(SpanGroupTest, CommaListResolvesToEachGroup) {
  EXPECT_EQ(resolved("job,step,optimizer"), Groups({"job", "step", "optimizer"}));
}

TEST_F(SpanGroupTest, PresetAndGroupMixResolvesToTheUnion) {
  EXPECT_EQ(resolved("default,step"), Groups({"job", "checkpoint", "evaluate", "step"}));
}

TEST_F(SpanGroupTest, ResolutionIsCaseInsensitive) {
  EXPECT_EQ(resolved("DEFAULT"), resolved("default"));
  EXPECT_EQ(resolved("Step,FORWARD_backward"), Groups({"step", "forward_backward"}));
  EXPECT_EQ(resolved("ALL"), kBase);
}

TEST_F(SpanGroupTest, ResolutionToleratesWhitespace) {
  EXPECT_EQ(resolved("job , checkpoint"), Groups({"job", "checkpoint"}));
  EXPECT_EQ(resolved("  job\t,\n step  "), Groups({"job", "step"}));
}

TEST_F(SpanGroupTest, EveryIndividualGroupResolvesToItself) {
  for (const auto group : groups::kLensGroups) {
    EXPECT_EQ(resolved(group), Groups({std::string(group)})) << group;
  }
}

TEST_F(SpanGroupTest, EmptySpecsResolveToTheEmptySet) {
  EXPECT_THAT(resolved(""), IsEmpty());
  EXPECT_THAT(resolved(","), IsEmpty());
  EXPECT_THAT(resolved(" , "), IsEmpty());
  EXPECT_THAT(resolved("  "), IsEmpty());
}

TEST_F(SpanGroupTest, DuplicatesAndEmptyPartsAreHarmless) {
  EXPECT_EQ(resolved("step,,step, STEP ,"), Groups({"step"}));
  EXPECT_EQ(resolved("default,job"), Groups({"job", "checkpoint", "evaluate"}));
}

TEST_F(SpanGroupTest, UnknownNameIsAnErrorListingTheValidOptions) {
  EXPECT_EQ(
      resolve_error("unknown_group"),
      std::string("Unknown span group or preset: 'unknown_group'. Valid options: ") + kBaseOptions);
}

TEST_F(SpanGroupTest, UnknownErrorNamesTheFirstUnknownPartLowerCased) {
  EXPECT_EQ(resolve_error("job, Full ,bogus"),
            std::string("Unknown span group or preset: 'full'. Valid options: ") + kBaseOptions);
}

TEST_F(SpanGroupTest, NoneIsNotAKeyword) {
  EXPECT_EQ(resolve_error("none"),
            std::string("Unknown span group or preset: 'none'. Valid options: ") + kBaseOptions);
}

TEST_F(SpanGroupTest, ValidOptionsIncludeRegisteredGroupsAndPresets) {
  ASSERT_TRUE(register_span_groups("rl", {"rollout"}, {{"rl_all", {"rollout", "step"}}}).ok());
  EXPECT_EQ(resolve_error("x"),
            "Unknown span group or preset: 'x'. Valid options: [all, checkpoint, default, "
            "evaluate, forward_backward, job, load_checkpoint, model_init, optimizer, per_step, "
            "rl_all, rollout, step]");
}

// ---- Enabled state -----------------------------------------------------------------------------

TEST_F(SpanGroupTest, EverythingIsDisabledInitially) {
  EXPECT_THAT(enabled_span_groups(), IsEmpty());
  for (const auto group : groups::kLensGroups) {
    EXPECT_FALSE(is_span_group_enabled(group)) << group;
  }
  EXPECT_FALSE(is_span_group_enabled("anything"));
}

TEST_F(SpanGroupTest, SettingGroupsEnablesExactlyThem) {
  set_enabled_span_groups({"job", "step"});
  EXPECT_EQ(enabled_span_groups(), Groups({"job", "step"}));
  for (const auto group : groups::kLensGroups) {
    EXPECT_EQ(is_span_group_enabled(group), group == "job" || group == "step") << group;
  }
}

TEST_F(SpanGroupTest, SettingGroupsReplacesThePreviousSet) {
  set_enabled_span_groups({"job", "step"});
  set_enabled_span_groups({"optimizer"});
  EXPECT_EQ(enabled_span_groups(), Groups({"optimizer"}));
  EXPECT_FALSE(is_span_group_enabled("job"));
  EXPECT_FALSE(is_span_group_enabled("step"));
  EXPECT_TRUE(is_span_group_enabled("optimizer"));
}

TEST_F(SpanGroupTest, SettingTheEmptySetClearsEverything) {
  set_enabled_span_groups({"job", "step"});
  set_enabled_span_groups({});
  EXPECT_THAT(enabled_span_groups(), IsEmpty());
  EXPECT_FALSE(is_span_group_enabled("job"));
  EXPECT_FALSE(is_span_group_enabled("step"));
}

TEST_F(SpanGroupTest, UnknownNamesAreFalse) {
  set_enabled_span_groups(resolved("all"));
  EXPECT_FALSE(is_span_group_enabled("microbatch"));
  EXPECT_FALSE(is_span_group_enabled(""));
}

TEST_F(SpanGroupTest, LookupsAreCaseSensitiveAndNamesAreUsedAsGiven) {
  set_enabled_span_groups({"step", "Custom"});
  EXPECT_TRUE(is_span_group_enabled("step"));
  EXPECT_FALSE(is_span_group_enabled("STEP"));
  EXPECT_TRUE(is_span_group_enabled("Custom"));
  EXPECT_FALSE(is_span_group_enabled("custom"));
  EXPECT_EQ(enabled_span_groups(), Groups({"Custom", "step"}));
}

TEST_F(SpanGroupTest, EnabledStateIsIndependentOfTheRegistry) {
  set_enabled_span_groups({"step"});
  ASSERT_TRUE(unregister_span_groups("lens").ok());
  EXPECT_TRUE(is_span_group_enabled("step"));
}

TEST_F(SpanGroupTest, ResetDisablesEverythingAndRestoresOnlyLens) {
  ASSERT_TRUE(register_span_groups("rl", {"rollout"}).ok());
  set_enabled_span_groups({"step", "rollout"});
  const auto handle = span_group_handle("rollout");
  detail::reset_span_groups_for_testing();
  EXPECT_THAT(span_group_namespaces(), ElementsAre("lens"));
  EXPECT_THAT(enabled_span_groups(), IsEmpty());
  EXPECT_FALSE(handle.enabled());
}

// ---- Handles ------------------------------------------------------------------------------------

TEST_F(SpanGroupTest, DefaultHandleIsNeverEnabled) {
  const SpanGroupHandle handle;
  EXPECT_FALSE(handle.enabled());
  EXPECT_EQ(handle.name(), "");
  set_enabled_span_groups({""});
  EXPECT_FALSE(handle.enabled());
}

TEST_F(SpanGroupTest, HandleFlagFlipsWithSetEnabledSpanGroups) {
  const auto step = span_group_handle(groups::kStep);
  const auto job = span_group_handle(groups::kJob);
  EXPECT_FALSE(step.enabled());
  set_enabled_span_groups({"step"});
  EXPECT_TRUE(step.enabled());
  EXPECT_FALSE(job.enabled());
  set_enabled_span_groups({"job"});
  EXPECT_FALSE(step.enabled());
  EXPECT_TRUE(job.enabled());
  set_enabled_span_groups({});
  EXPECT_FALSE(step.enabled());
  EXPECT_FALSE(job.enabled());
}

TEST_F(SpanGroupTest, HandleMadeAfterSetSeesTheCurrentState) {
  set_enabled_span_groups({"evaluate"});
  EXPECT_TRUE(span_group_handle("evaluate").enabled());
  EXPECT_FALSE(span_group_handle("checkpoint").enabled());
}

TEST_F(SpanGroupTest, HandleCreatedBeforeRegistrationWorksAfter) {
  const auto rollout = span_group_handle("rollout");
  EXPECT_EQ(resolve_error("rollout"),
            std::string("Unknown span group or preset: 'rollout'. Valid options: ") + kBaseOptions);
  ASSERT_TRUE(register_span_groups("rl", {"rollout"}).ok());
  set_enabled_span_groups(resolved("rollout"));
  EXPECT_TRUE(rollout.enabled());
}

TEST_F(SpanGroupTest, HandlesOfOneNameShareOneInternedFlag) {
  const std::string name = "step";
  const auto a = span_group_handle(name);
  const auto b = span_group_handle(std::string_view("step"));
  EXPECT_EQ(a.name(), "step");
  EXPECT_EQ(a.name().data(), b.name().data());
  EXPECT_NE(a.name().data(), name.data());
  set_enabled_span_groups({"step"});
  EXPECT_TRUE(a.enabled());
  EXPECT_TRUE(b.enabled());
}

TEST_F(SpanGroupTest, HandlesAreCaseSensitive) {
  const auto lower = span_group_handle("step");
  const auto upper = span_group_handle("STEP");
  set_enabled_span_groups({"STEP"});
  EXPECT_FALSE(lower.enabled());
  EXPECT_TRUE(upper.enabled());
}

TEST_F(SpanGroupTest, StaticSiteHandleIdiomWorks) {
  const auto site = [] {
    static const auto handle = span_group_handle(groups::kOptimizer);
    return handle.enabled();
  };
  EXPECT_FALSE(site());
  set_enabled_span_groups({"optimizer"});
  EXPECT_TRUE(site());
}

// ---- Registration -------------------------------------------------------------------------------

TEST_F(SpanGroupTest, EmptyRegistryHasNoGroupsAndAllIsEmpty) {
  ASSERT_TRUE(unregister_span_groups("lens").ok());
  EXPECT_THAT(registered_span_groups(), IsEmpty());
  EXPECT_THAT(span_group_namespaces(), IsEmpty());
  EXPECT_EQ(span_group_presets(), (std::map<std::string, Groups>{{"all", {}}}));
  EXPECT_THAT(resolved("all"), IsEmpty());
  const auto lenient_all = resolve_span_groups_lenient("all");
  EXPECT_THAT(lenient_all.enabled, IsEmpty());
  EXPECT_THAT(lenient_all.unknown, IsEmpty());
  const auto lenient = resolve_span_groups_lenient("default,step");
  EXPECT_THAT(lenient.enabled, IsEmpty());
  EXPECT_THAT(lenient.unknown, ElementsAre("default", "step"));
  EXPECT_EQ(resolve_error("step"), "Unknown span group or preset: 'step'. Valid options: [all]");
}

TEST_F(SpanGroupTest, RegisteredGroupsBecomeResolvable) {
  ASSERT_TRUE(register_span_groups("mega", {"layer", "tile"}, {{"fine", {"layer"}}}).ok());
  EXPECT_THAT(span_group_namespaces(), ElementsAre("lens", "mega"));
  EXPECT_EQ(resolved("tile"), Groups({"tile"}));
  EXPECT_EQ(resolved("fine"), Groups({"layer"}));
  Groups all = kBase;
  all.insert({"layer", "tile"});
  EXPECT_EQ(resolved("all"), all);
}

TEST_F(SpanGroupTest, RegisteredNamesAreTrimmedAndLowerCased) {
  ASSERT_TRUE(
      register_span_groups("  MeGa ", {"  LAYER  ", "Tile"}, {{" Fine ", {" LAYER", "step "}}})
          .ok());
  EXPECT_THAT(span_group_namespaces(), ElementsAre("lens", "mega"));
  const auto all = registered_span_groups();
  EXPECT_EQ(std::count(all.begin(), all.end(), "layer"), 1);
  EXPECT_EQ(std::count(all.begin(), all.end(), "tile"), 1);
  EXPECT_EQ(span_group_presets().at("fine"), Groups({"layer", "step"}));
  EXPECT_TRUE(unregister_span_groups(" Mega").ok());
}

TEST_F(SpanGroupTest, EmptyNamespaceIsRejected) {
  for (const std::string_view ns : {"", "   "}) {
    const Status status = register_span_groups(ns, {"layer"});
    EXPECT_EQ(failure_of(status), "Span group namespace must be a non-empty string");
  }
}

TEST_F(SpanGroupTest, EmptyGroupNameIsRejected) {
  const Status status = register_span_groups("mega", {"layer", "  "});
  EXPECT_EQ(failure_of(status), "Span group namespace 'mega' has an empty group name");
  const Status in_preset = register_span_groups("mega", {"layer"}, {{"fine", {"layer", ""}}});
  EXPECT_EQ(in_preset.message(),
            "Preset 'fine' of span group namespace 'mega' has an empty group name");
  const Status preset_name = register_span_groups("mega", {"layer"}, {{" ", {"layer"}}});
  EXPECT_EQ(preset_name.message(), "Span group namespace 'mega' has an empty preset name");
}

TEST_F(SpanGroupTest, AllIsReservedAsAGroupName) {
  const Status status = register_span_groups("mega", {"quiet", " ALL "});
  EXPECT_EQ(failure_of(status),
            "Span group namespace 'mega' uses 'all' as a group name; 'all' is reserved: it "
            "always means every registered group");
}

TEST_F(SpanGroupTest, AllIsReservedAsAPresetName) {
  const Status status = register_span_groups("mega", {"layer"}, {{"All", {"layer"}}});
  EXPECT_EQ(failure_of(status),
            "Span group namespace 'mega' uses 'all' as a preset name; 'all' is reserved: it "
            "always means every registered group");
}

TEST_F(SpanGroupTest, PresetNamingAnUnregisteredGroupIsRejected) {
  const Status status = register_span_groups("mega", {"layer"}, {{"fine", {"layer", "typo"}}});
  EXPECT_EQ(failure_of(status),
            "Preset 'fine' of span group namespace 'mega' names group 'typo', which is not "
            "among its groups and no other namespace has registered it; register the library "
            "that owns the group first");
  EXPECT_THAT(span_group_namespaces(), ElementsAre("lens"));
}

TEST_F(SpanGroupTest, ReregisteringANamespaceIsRejected) {
  ASSERT_TRUE(register_span_groups("mega", {"layer"}).ok());
  const Status status = register_span_groups("MEGA", {"tile"});
  EXPECT_EQ(failure_of(status),
            "Span group namespace 'mega' is already registered; pass allow_override to replace "
            "it");
  const Status lens_again = register_span_groups("lens", {"job"});
  EXPECT_EQ(lens_again.message(),
            "Span group namespace 'lens' is already registered; pass allow_override to replace "
            "it");
}

TEST_F(SpanGroupTest, ClaimingAnotherNamespacesGroupIsRejected) {
  const Status status = register_span_groups("rl", {"rollout", "step"});
  EXPECT_EQ(failure_of(status),
            "Span group 'step' of namespace 'rl' is already registered by namespace 'lens'");
  ASSERT_TRUE(register_span_groups("mega", {"layer"}).ok());
  EXPECT_EQ(register_span_groups("rl", {"layer"}).message(),
            "Span group 'layer' of namespace 'rl' is already registered by namespace 'mega'");
}

TEST_F(SpanGroupTest, FailedRegistrationChangesNothing) {
  const auto before = span_group_presets();
  EXPECT_FALSE(register_span_groups("rl", {"rollout", "step"}, {{"default", {"rollout"}}}).ok());
  EXPECT_FALSE(register_span_groups("rl", {"rollout"}, {{"default", {"rollout", "x"}}}).ok());
  EXPECT_THAT(span_group_namespaces(), ElementsAre("lens"));
  EXPECT_EQ(span_group_presets(), before);
}

TEST_F(SpanGroupTest, OverrideLetsTwoNamespacesShareAGroup) {
  ASSERT_TRUE(register_span_groups("rl", {"step"}, {}, /*allow_override=*/true).ok());
  EXPECT_EQ(resolved("step"), Groups({"step"}));
  const auto all = registered_span_groups();
  EXPECT_EQ(std::count(all.begin(), all.end(), "step"), 1);
  ASSERT_TRUE(unregister_span_groups("lens").ok());
  EXPECT_THAT(registered_span_groups(), ElementsAre("step"));
}

TEST_F(SpanGroupTest, OverrideReplacesANamespaceWholesale) {
  ASSERT_TRUE(register_span_groups("mega", {"layer", "tile"}, {{"fine", {"layer"}}}).ok());
  ASSERT_TRUE(register_span_groups("mega", {"block"}, {}, /*allow_override=*/true).ok());
  const auto all = span_group_presets().at("all");
  EXPECT_TRUE(all.contains("block"));
  EXPECT_FALSE(all.contains("layer"));
  EXPECT_FALSE(all.contains("tile"));
  EXPECT_FALSE(span_group_presets().contains("fine"));
  EXPECT_FALSE(resolve_span_groups("fine").ok());
}

TEST_F(SpanGroupTest, OverrideCannotReferenceTheGroupsItDrops) {
  ASSERT_TRUE(register_span_groups("mega", {"layer", "tile"}).ok());
  const Status status =
      register_span_groups("mega", {"layer"}, {{"fine", {"layer", "tile"}}}, true);
  EXPECT_EQ(failure_of(status),
            "Preset 'fine' of span group namespace 'mega' names group 'tile', which is not "
            "among its groups and no other namespace has registered it; register the library "
            "that owns the group first");
  EXPECT_EQ(resolved("tile"), Groups({"tile"}));  // the old registration is intact
}

TEST_F(SpanGroupTest, OverrideMayReferenceAnotherNamespacesGroups) {
  ASSERT_TRUE(register_span_groups("rl", {"rollout"}).ok());
  ASSERT_TRUE(
      register_span_groups("rl", {"rollout"}, {{"custom", {"rollout", "step"}}}, true).ok());
  EXPECT_EQ(resolved("custom"), Groups({"rollout", "step"}));
}

TEST_F(SpanGroupTest, OverrideOfAnUnknownNamespaceRegistersIt) {
  ASSERT_TRUE(register_span_groups("rl", {"rollout"}, {}, true).ok());
  EXPECT_THAT(span_group_namespaces(), ElementsAre("lens", "rl"));
}

// ---- Unregistration ----------------------------------------------------------------------------

TEST_F(SpanGroupTest, UnregisteringAnUnknownNamespaceIsAnError) {
  const Status status = unregister_span_groups("nope");
  EXPECT_EQ(failure_of(status), "Span group namespace 'nope' is not registered");
}

TEST_F(SpanGroupTest, UnregisteringRemovesOnlyThatNamespace) {
  ASSERT_TRUE(register_span_groups("mega", {"layer"}).ok());
  ASSERT_TRUE(register_span_groups("rl", {"rollout"}).ok());
  ASSERT_TRUE(unregister_span_groups("mega").ok());
  EXPECT_THAT(span_group_namespaces(), ElementsAre("lens", "rl"));
  EXPECT_FALSE(span_group_presets().at("all").contains("layer"));
  EXPECT_TRUE(span_group_presets().at("all").contains("rollout"));
  EXPECT_EQ(unregister_span_groups("mega").message(),
            "Span group namespace 'mega' is not registered");
}

TEST_F(SpanGroupTest, LensCanBeUnregisteredAndRegisteredAgain) {
  ASSERT_TRUE(unregister_span_groups("lens").ok());
  EXPECT_THAT(registered_span_groups(), IsEmpty());
  EXPECT_FALSE(resolve_span_groups("default").ok());
  ASSERT_TRUE(register_lens_span_groups().ok());
  EXPECT_THAT(span_group_namespaces(), ElementsAre("lens"));
  EXPECT_EQ(resolved("default"), Groups({"job", "checkpoint", "evaluate"}));
  EXPECT_EQ(resolved("per_step"), kBase);
}

TEST_F(SpanGroupTest, RegisteringLensTwiceIsHarmless) {
  ASSERT_TRUE(register_lens_span_groups().ok());
  ASSERT_TRUE(register_lens_span_groups().ok());
  EXPECT_THAT(span_group_namespaces(), ElementsAre("lens"));
  EXPECT_EQ(registered_span_groups().size(), 8u);
}

TEST_F(SpanGroupTest, RegisteringLensOverAnotherLensRegistrationFails) {
  ASSERT_TRUE(register_span_groups("lens", {"job"}, {}, true).ok());
  const Status status = register_lens_span_groups();
  EXPECT_EQ(failure_of(status),
            "Span group namespace 'lens' is already registered; pass allow_override to replace "
            "it");
}

// ---- Presets across namespaces -----------------------------------------------------------------

TEST_F(SpanGroupTest, PresetsUnionAcrossNamespaces) {
  ASSERT_TRUE(register_span_groups("rl", {"rollout"}, {{"default", {"rollout"}}}).ok());
  EXPECT_EQ(span_group_presets().at("default"),
            Groups({"job", "checkpoint", "evaluate", "rollout"}));
  EXPECT_EQ(resolved("default"), Groups({"job", "checkpoint", "evaluate", "rollout"}));
  // A later registration does not displace an earlier one.
  ASSERT_TRUE(register_span_groups("gym", {"episode"}, {{"default", {"episode"}}}).ok());
  EXPECT_EQ(resolved("default"), Groups({"job", "checkpoint", "evaluate", "rollout", "episode"}));
}

TEST_F(SpanGroupTest, APresetMayBorrowAnotherNamespacesGroup) {
  ASSERT_TRUE(register_span_groups("rl", {"rollout"}, {{"custom", {"rollout", "step"}}}).ok());
  EXPECT_EQ(resolved("custom"), Groups({"rollout", "step"}));
  // Borrowing does not transfer ownership.
  ASSERT_TRUE(unregister_span_groups("lens").ok());
  EXPECT_THAT(registered_span_groups(), ElementsAre("rollout"));
}

TEST_F(SpanGroupTest, UnregisteringAnOwnerPrunesBorrowingPresets) {
  ASSERT_TRUE(register_span_groups("rl", {"rollout"}, {{"custom", {"rollout", "step"}}}).ok());
  ASSERT_TRUE(unregister_span_groups("lens").ok());
  const auto presets = span_group_presets();
  EXPECT_EQ(presets,
            (std::map<std::string, Groups>{{"all", {"rollout"}}, {"custom", {"rollout"}}}));
  EXPECT_EQ(resolved("custom"), Groups({"rollout"}));
  for (const auto& [name, members] : presets) {
    for (const auto& member : members) {
      EXPECT_TRUE(presets.at("all").contains(member)) << name << ": " << member;
    }
  }
}

TEST_F(SpanGroupTest, OverridePrunesADroppedGroupFromBorrowingPresets) {
  ASSERT_TRUE(register_span_groups("mega", {"layer"}).ok());
  ASSERT_TRUE(register_span_groups("rl", {"rollout"}, {{"default", {"rollout", "layer"}}}).ok());
  ASSERT_TRUE(register_span_groups("mega", {"other"}, {}, true).ok());
  const auto presets = span_group_presets();
  EXPECT_EQ(presets.at("default"), Groups({"job", "checkpoint", "evaluate", "rollout"}));
  EXPECT_FALSE(presets.at("all").contains("layer"));
}

TEST_F(SpanGroupTest, APresetEmptiedByPruningStillResolves) {
  ASSERT_TRUE(register_span_groups("rl", {"rollout"}, {{"base_only", {"step"}}}).ok());
  ASSERT_TRUE(unregister_span_groups("lens").ok());
  EXPECT_EQ(span_group_presets().at("base_only"), Groups{});
  EXPECT_THAT(resolved("base_only"), IsEmpty());
}

// ---- Lenient resolution ------------------------------------------------------------------------

TEST_F(SpanGroupTest, LenientResolutionReportsUnknownEntriesInsteadOfFailing) {
  const auto resolution = resolve_span_groups_lenient("job,not_yet_imported");
  EXPECT_EQ(resolution.enabled, Groups({"job"}));
  EXPECT_THAT(resolution.unknown, ElementsAre("not_yet_imported"));
}

TEST_F(SpanGroupTest, LenientUnknownsKeepOrderWithoutDuplicates) {
  const auto resolution = resolve_span_groups_lenient("zeta, ALPHA ,zeta,default,alpha,,Beta");
  EXPECT_EQ(resolution.enabled, Groups({"job", "checkpoint", "evaluate"}));
  EXPECT_THAT(resolution.unknown, ElementsAre("zeta", "alpha", "beta"));
}

TEST_F(SpanGroupTest, LenientResolutionOfKnownSpecsMatchesStrict) {
  for (const std::string_view spec : {"", "default", "per_step,job", "ALL", " step , optimizer "}) {
    const auto resolution = resolve_span_groups_lenient(spec);
    EXPECT_EQ(resolution.enabled, resolved(spec)) << spec;
    EXPECT_THAT(resolution.unknown, IsEmpty()) << spec;
  }
}

TEST_F(SpanGroupTest, LenientResolutionPicksUpLateRegistration) {
  EXPECT_THAT(resolve_span_groups_lenient("per_step,trace_region").unknown,
              ElementsAre("trace_region"));
  ASSERT_TRUE(register_span_groups("mega", {"trace_region"}).ok());
  const auto resolution = resolve_span_groups_lenient("per_step,trace_region");
  Groups expected = kBase;
  expected.insert("trace_region");
  EXPECT_EQ(resolution.enabled, expected);
  EXPECT_THAT(resolution.unknown, IsEmpty());
}

// ---- Concurrency -------------------------------------------------------------------------------

TEST_F(SpanGroupTest, ConcurrentRegistrationResolutionAndChecksDoNotDeadlock) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  std::atomic<bool> stop{false};
  std::atomic<long> checks{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i) {
    readers.emplace_back([&stop, &checks] {
      const auto step = span_group_handle("step");
      long local = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        local += step.enabled() ? 1 : 0;
        local += is_span_group_enabled("job") ? 1 : 0;
        ++local;
      }
      checks.fetch_add(local);
    });
  }
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([t, &failures] {
      const std::string ns = "ns" + std::to_string(t);
      const std::vector<std::string> own = {ns + "_a", ns + "_b"};
      for (int round = 0; round < kRounds; ++round) {
        if (!register_span_groups(ns, own, {{"shared", {own[0], "step"}}}, round > 0).ok()) {
          failures.fetch_add(1);
        }
        auto all = resolve_span_groups("all,shared");
        if (!all.ok() || !all->contains(own[0]) || !all->contains(own[1])) {
          failures.fetch_add(1);
        }
        static_cast<void>(resolve_span_groups_lenient("shared,unknown_one"));
        static_cast<void>(span_group_presets());
        if (all.ok()) {
          set_enabled_span_groups(*all);
        }
        static_cast<void>(span_group_handle(own[round % 2]).enabled());
        if (round % 3 == 2 && !unregister_span_groups(ns).ok()) {
          failures.fetch_add(1);
        }
      }
      // Leave it registered.
      static_cast<void>(register_span_groups(ns, own, {{"shared", {own[0], "step"}}}, true));
    });
  }
  for (auto& writer : writers) {
    writer.join();
  }
  stop.store(true);
  for (auto& reader : readers) {
    reader.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(checks.load(), 0);

  Groups expected_all = kBase;
  Groups expected_shared = {"step"};
  for (int t = 0; t < kThreads; ++t) {
    const std::string ns = "ns" + std::to_string(t);
    expected_all.insert({ns + "_a", ns + "_b"});
    expected_shared.insert(ns + "_a");
  }
  EXPECT_EQ(resolved("all"), expected_all);
  EXPECT_EQ(resolved("shared"), expected_shared);
  EXPECT_EQ(span_group_namespaces().size(), static_cast<std::size_t>(kThreads + 1));
  set_enabled_span_groups(resolved("all"));
  EXPECT_EQ(enabled_span_groups(), expected_all);
  for (const auto& group : expected_all) {
    EXPECT_TRUE(span_group_handle(group).enabled()) << group;
  }
}

TEST_F(SpanGroupTest, ConcurrentHandleCreationInternsOneFlagPerName) {
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::vector<const char*> addresses(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &addresses] {
      for (int i = 0; i < 100; ++i) {
        static_cast<void>(span_group_handle("interned_" + std::to_string(i)));
      }
      addresses[t] = span_group_handle("interned_42").name().data();
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  for (const char* address : addresses) {
    EXPECT_EQ(address, addresses[0]);
  }
  set_enabled_span_groups({"interned_42"});
  EXPECT_TRUE(span_group_handle("interned_42").enabled());
  EXPECT_FALSE(span_group_handle("interned_41").enabled());
}

}  // namespace
}  // namespace lens
