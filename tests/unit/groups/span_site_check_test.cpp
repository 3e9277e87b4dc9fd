// No silent span sites: a LENS_SPAN site whose group no vocabulary registers is named once on
// stderr at its first pass; `all` is resolved at setup, so a group registered afterwards stays
// off; with the default groups a "step" site is off (docs/span-groups.md).
#include <gtest/gtest.h>

#include <string>

#include "lens/groups.hpp"
#include "lens/span.hpp"
#include "lens/telemetry.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

class SpanSiteCheck : public ::testing::Test {
 protected:
  void SetUp() override { detail::reset_span_groups_for_testing(); }
  void TearDown() override { detail::reset_span_groups_for_testing(); }
};

// One site, passed `times` times; returns the line of its LENS_SPAN.
int pass_unregistered_site(int times) {
  int line = 0;
  for (int i = 0; i < times; ++i) {
    line = __LINE__ + 1;
    LENS_SPAN(SpanSite("custom.operation", "custom_group"), {"i", i});
  }
  return line;
}

TEST_F(SpanSiteCheck, AnUnregisteredGroupIsReportedOnceWithTheSiteNameAndPlace) {
  ::testing::internal::CaptureStderr();
  const int line = pass_unregistered_site(3);
  static_cast<void>(pass_unregistered_site(2));  // the same site again: already reported
  const std::string err = ::testing::internal::GetCapturedStderr();
  // Once per process: under --gtest_repeat the site, resolved on its first pass, stays silent.
  static int runs = 0;
  EXPECT_EQ(err, runs++ != 0 ? std::string()
                             : "lens: warning: span site 'custom.operation' at " +
                                   std::string(__FILE__) + ":" + std::to_string(line) +
                                   " uses the span group 'custom_group', which no vocabulary "
                                   "registers, so it never records; register it with "
                                   "lens::register_span_groups() before the site first runs, or "
                                   "use a registered group\n");
}

TEST_F(SpanSiteCheck, ARegisteredGroupIsNotReportedEvenWhenOff) {
  set_enabled_span_groups({});
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 2; ++i) {
    LENS_SPAN(SpanSite("lens.step", groups::kStep));
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(SpanSiteCheck, AllMeansTheGroupsRegisteredAtSetupNotLaterOnes) {
  Config config = test_support::exporting_config("all-test", ExporterKind::none);
  config.metrics_enabled = false;
  config.span_groups = "all";
  SetupOverrides overrides;
  overrides.env = Env::from({});
  auto handle = setup_telemetry(config, test_support::rank_of(0, 1), {}, std::move(overrides));
  ASSERT_TRUE(handle.ok()) << handle.message();
  EXPECT_TRUE(is_span_group_enabled("step"));
  EXPECT_TRUE(is_span_group_enabled("job"));
  ASSERT_TRUE(register_span_groups("late", {"late_group"}).ok());
  EXPECT_FALSE(is_span_group_enabled("late_group"));
  EXPECT_FALSE(span_group_handle("late_group").enabled());
  // Enabling it after setup is explicit.
  std::set<std::string> enabled = enabled_span_groups();
  enabled.insert("late_group");
  set_enabled_span_groups(enabled);
  EXPECT_TRUE(span_group_handle("late_group").enabled());
  EXPECT_TRUE(handle->shutdown(std::chrono::milliseconds(2000)).ok());
}

TEST_F(SpanSiteCheck, TheDefaultGroupsLeaveStepOff) {
  auto groups = resolve_span_groups("default");
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ(*groups, (std::set<std::string>{"checkpoint", "evaluate", "job"}));
  auto per_step = resolve_span_groups("per_step");
  ASSERT_TRUE(per_step.ok());
  EXPECT_EQ(per_step->count("step"), 1U);
}

}  // namespace
}  // namespace lens
