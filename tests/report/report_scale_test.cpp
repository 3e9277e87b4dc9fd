// Large runs, with low limits on small fixture runs: the rank x iteration heatmaps that replace
// the timeline, the ranks the Perfetto trace and the per-rank charts keep, and the page that
// says so. Fixture: every step of a synchronous run lasts 290 ms + the slow rank's extra; the
// fast ranks spend 35 ms + that extra in communication, the slow rank 35 ms.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "report/heatmap.hpp"
#include "report/html_writer.hpp"
#include "report/perfetto_writer.hpp"
#include "report/rank_selection.hpp"
#include "report/summary.hpp"
#include "report_test_support.hpp"

namespace lens::report {
namespace {

using nlohmann::json;

RunAnalysis six_ranks_rank_2_slow() {
  return testing::analyze_spec({.ranks = 6, .iterations = 10, .slow_rank = 2, .slow_ms = 50});
}

TEST(ReportHeatmap, GroupsRanksAndIterationsAndKeepsTheDeviatingRank) {
  const RunAnalysis analysis = six_ranks_rank_2_slow();
  const Heatmap heatmap = build_heatmap(analysis, {.max_rows = 3, .max_columns = 4});
  EXPECT_EQ(heatmap.rows, (std::vector<std::pair<int, int>>{{0, 1}, {2, 3}, {4, 5}}));
  EXPECT_EQ(heatmap.columns,
            (std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 3}, {4, 6}, {7, 9}, {10, 10}}));
  ASSERT_EQ(heatmap.layers.size(), 2u);
  // Step time: 340 ms everywhere, so lo = hi and every cell is the middle byte.
  const HeatmapLayer& step = heatmap.layers[0];
  EXPECT_EQ(step.key, "step");
  EXPECT_DOUBLE_EQ(step.lo, 340.0);
  EXPECT_DOUBLE_EQ(step.hi, 340.0);
  EXPECT_EQ(step.cells, std::vector<std::uint8_t>(12, 128));
  // Communication: 85 ms on the fast ranks, 35 ms on rank 2; the row of ranks 2-3 shows rank 2,
  // the one furthest from the column's median (85).
  const HeatmapLayer& wait = heatmap.layers[1];
  EXPECT_EQ(wait.key, "wait");
  EXPECT_DOUBLE_EQ(wait.lo, 35.0);
  EXPECT_DOUBLE_EQ(wait.hi, 85.0);
  std::vector<std::uint8_t> expected(12, 255);
  for (std::size_t c = 0; c < 4; ++c) expected[4 + c] = 1;
  EXPECT_EQ(wait.cells, expected);
  EXPECT_DOUBLE_EQ(heatmap_value(wait, 1), 35.0);
  EXPECT_DOUBLE_EQ(heatmap_value(wait, 255), 85.0);
  EXPECT_TRUE(std::isnan(heatmap_value(wait, 0)));
}

TEST(ReportHeatmap, OneCellPerRankAndIterationWhenTheyFitAndHolesForMissingSteps) {
  const RunAnalysis analysis = testing::analyze_spec(
      {.ranks = 2, .iterations = 6, .iteration_stride = 2});  // iterations 1, 3, 5
  const Heatmap heatmap = build_heatmap(analysis);
  EXPECT_EQ(heatmap.rows, (std::vector<std::pair<int, int>>{{0, 0}, {1, 1}}));
  ASSERT_EQ(heatmap.columns.size(), 5u);  // 1-5, iterations 2 and 4 without steps
  EXPECT_EQ(heatmap.columns[1], (std::pair<std::int64_t, std::int64_t>{2, 2}));
  EXPECT_EQ(heatmap.layers[0].cells,
            (std::vector<std::uint8_t>{128, 0, 128, 0, 128, 128, 0, 128, 0, 128}));
}

TEST(ReportHeatmap, NoStepsNoHeatmap) {
  const RunAnalysis analysis = analyze(RunData{}, {});
  EXPECT_TRUE(build_heatmap(analysis).rows.empty());
}

TEST(ReportHeatmap, Base64IsStandardWithPadding) {
  EXPECT_EQ(base64({}), "");
  EXPECT_EQ(base64({'M', 'a', 'n'}), "TWFu");
  EXPECT_EQ(base64({1, 2}), "AQI=");
  EXPECT_EQ(base64({0xff}), "/w==");
  EXPECT_EQ(base64({0xfb, 0xff, 0xbf}), "+/+/");
}

TEST(ReportRankSelection, SmallRunsKeepEveryRank) {
  const RunAnalysis analysis = six_ranks_rank_2_slow();
  const RankSelection all = select_ranks(analysis, {});
  EXPECT_TRUE(all.all);
  EXPECT_EQ(all.describe(), "");
  for (int rank = 0; rank < 6; ++rank) EXPECT_TRUE(all.keeps(rank));
  EXPECT_TRUE(select_ranks(analysis, {.all_ranks_up_to = 2}, true).all);  // asked for all
}

TEST(ReportRankSelection, LargeRunsKeepTheSuspectsThenTypicalRanks) {
  const RunAnalysis analysis = six_ranks_rank_2_slow();
  ASSERT_FALSE(analysis.stalls.suspects.empty());
  ASSERT_EQ(analysis.stalls.suspects[0].rank, 2);
  const RankSelection some = select_ranks(analysis, {.all_ranks_up_to = 4, .typical_ranks = 2});
  EXPECT_FALSE(some.all);
  EXPECT_EQ(some.suspects, std::vector<int>{2});
  EXPECT_EQ(some.typical, (std::vector<int>{0, 1}));  // every step lasts 340 ms: the first ranks
  EXPECT_EQ(some.ranks(), (std::vector<int>{2, 0, 1}));
  EXPECT_FALSE(some.keeps(3));
  EXPECT_EQ(some.describe(), "ranks 2 (stall suspect), 0, 1 (typical) of 6");
  // The span budget: the first rank always, then only what fits.
  const RankSelection one =
      select_ranks(analysis, {.all_ranks_up_to = 4, .typical_ranks = 2, .span_budget = 1});
  EXPECT_EQ(one.ranks(), std::vector<int>{2});
  EXPECT_EQ(one.describe(), "rank 2 (stall suspect) of 6");
  // Many spans make a run large too.
  EXPECT_FALSE(select_ranks(analysis, {.span_budget = 100}).all);
}

TEST(ReportRankSelection, TheTraceHasTheSelectedRanksOnly) {
  const RunAnalysis analysis = six_ranks_rank_2_slow();
  const RankSelection some = select_ranks(analysis, {.all_ranks_up_to = 4, .typical_ranks = 1});
  std::ostringstream out;
  write_perfetto(analysis, out, some);
  const json trace = json::parse(out.str());
  std::set<int> pids;
  std::size_t steps = 0;
  for (const json& event : trace["traceEvents"]) {
    pids.insert(event["pid"].get<int>());
    if (event["name"] == "megatron.train_step") ++steps;
  }
  EXPECT_EQ(pids, (std::set<int>{1, 3}));  // ranks 0 and 2
  EXPECT_EQ(steps, 20u);
}

std::string page(const RunAnalysis& analysis, std::size_t lanes_max) {
  HtmlContext context;
  context.source_dir = "/runs/x";
  context.perfetto_path = "/runs/x/trace.json";
  context.summary_lines = summary_lines(analysis);
  context.timeline_lanes_max = lanes_max;
  const RankSelectionLimits limits{.all_ranks_up_to = lanes_max, .typical_ranks = 2};
  context.detail_ranks = select_ranks(analysis, limits);
  context.perfetto_ranks = context.detail_ranks.describe();
  std::ostringstream out;
  write_html(analysis, context, out);
  return out.str();
}

json data_of(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"lens-data\">";
  const std::size_t start = html.find(open) + open.size();
  return json::parse(html.substr(start, html.find("</script>", start) - start));
}

TEST(ReportScaleHtml, PastTheLimitTheTimelineIsAHeatmapAndChartsKeepTheSelectedRanks) {
  const RunAnalysis analysis = six_ranks_rank_2_slow();
  const std::string html = page(analysis, 4);
  EXPECT_NE(html.find("<div id=\"heatmaps\"></div>"), std::string::npos);
  EXPECT_EQ(html.find("id=\"timeline\""), std::string::npos);
  EXPECT_NE(html.find("6 ranks (more than 4)"), std::string::npos);
  EXPECT_NE(html.find("Showing ranks 2 (stall suspect), 0, 1 (typical) of 6; the heatmaps above "
                      "show every rank."),
            std::string::npos);
  EXPECT_NE(html.find("The Perfetto trace /runs/x/trace.json has every span of ranks 2 (stall "
                      "suspect), 0, 1 (typical) of 6 (lens report --perfetto-all-ranks"),
            std::string::npos);
  const json data = data_of(html);
  EXPECT_TRUE(data["ranks"].empty());
  const json& heatmap = data["heatmap"];
  ASSERT_EQ(heatmap["rows"].size(), 6u);
  EXPECT_EQ(heatmap["rows"][2], json::parse("[2, 2]"));
  ASSERT_EQ(heatmap["columns"].size(), 10u);
  ASSERT_EQ(heatmap["layers"].size(), 2u);
  EXPECT_EQ(heatmap["layers"][1]["key"], "wait");
  EXPECT_EQ(heatmap["layers"][1]["lo"], 35.0);
  EXPECT_EQ(heatmap["layers"][1]["hi"], 85.0);
  // 60 cells: 10 of 255 (0xff) for rank 0, then 1s for rank 2 in row 3 of the bytes.
  const Heatmap expected = build_heatmap(analysis);
  EXPECT_EQ(heatmap["layers"][1]["cells"], base64(expected.layers[1].cells));
  std::set<int> step_ranks, breakdown_ranks, curve_ranks;
  for (const json& s : data["stepSeries"]) step_ranks.insert(s["rank"].get<int>());
  for (const json& s : data["breakdown"]) breakdown_ranks.insert(s["rank"].get<int>());
  for (const json& s : data["iterationCurves"][0]["series"])
    curve_ranks.insert(s["rank"].get<int>());
  EXPECT_EQ(step_ranks, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(breakdown_ranks, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(curve_ranks, (std::set<int>{0, 1, 2}));
}

TEST(ReportScaleHtml, SmallRunsKeepTheTimelineAndEveryRank) {
  const RunAnalysis analysis = six_ranks_rank_2_slow();
  const std::string html = page(analysis, 32);
  EXPECT_NE(html.find("<svg id=\"timeline\"></svg>"), std::string::npos);
  EXPECT_EQ(html.find("id=\"heatmaps\""), std::string::npos);
  EXPECT_EQ(html.find("Showing "), std::string::npos);
  EXPECT_NE(html.find("Every span is in the Perfetto trace /runs/x/trace.json"), std::string::npos);
  const json data = data_of(html);
  EXPECT_FALSE(data.contains("heatmap"));
  EXPECT_EQ(data["ranks"].size(), 6u);
  EXPECT_EQ(data["stepSeries"].size(), 6u);
}

}  // namespace
}  // namespace lens::report
