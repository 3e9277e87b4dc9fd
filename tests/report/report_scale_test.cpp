// Large runs, with low limits on small fixture runs: the rank x iteration heatmaps that replace
// the timeline, the ranks the Perfetto trace and the per-rank charts keep, and the page that
// says so. Fixture: every step of a synchronous run lasts 290 ms + the slow rank's extra; the
// fast ranks spend 35 ms + that extra in communication, the slow rank 35 ms.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "report/chart_range.hpp"
#include "report/heatmap.hpp"
#include "report/html_writer.hpp"
#include "report/perfetto_writer.hpp"
#include "report/rank_selection.hpp"
#include "report/run_builder.hpp"
#include "report/summary.hpp"
#include "report_test_support.hpp"
#include "synthetic_runs.hpp"

namespace lens::report {
namespace {

using nlohmann::json;

std::size_t testing_count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

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

// A suspect's band covers the rows of its ranks: consecutive rows merge into one run, a strided
// group (here ranks 1, 3, 5 of rows holding 0-1, 2-3, 4-5, 6-7) gives one run per row.
TEST(ReportHeatmap, ABandCoversTheRowsOfTheSuspectsRanks) {
  Heatmap heatmap;
  heatmap.rows = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}};
  StallSuspect node;
  node.kind = SuspectKind::node;
  node.rank = 4;
  node.ranks = {4, 5, 6, 7};
  node.group = "node gpu-b";
  node.phase = Phase::data_loading;
  StallSuspect strided;
  strided.kind = SuspectKind::group;
  strided.rank = 1;
  strided.ranks = {1, 5, 9};
  strided.group = "data-parallel group [tp 1, pp 0]";
  StallSuspect rank;
  rank.rank = 3;
  rank.ranks = {3};
  StallSuspect outside;  // a rank without steps has no row
  outside.rank = 12;
  outside.ranks = {12};
  const std::vector<HeatmapBand> bands = heatmap_bands(heatmap, {node, strided, outside, rank});
  ASSERT_EQ(bands.size(), 3u);
  EXPECT_EQ(bands[0].kind, "node");
  EXPECT_EQ(bands[0].label, "node gpu-b (ranks 4-7)");
  EXPECT_EQ(bands[0].phase, "data_loading");
  EXPECT_EQ(bands[0].rows, (std::vector<std::pair<std::size_t, std::size_t>>{{2, 3}}));
  EXPECT_EQ(bands[1].label, "data-parallel group [tp 1, pp 0] (ranks 1, 5, 9)");
  EXPECT_EQ(bands[1].rows,
            (std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {2, 2}, {4, 4}}));
  EXPECT_EQ(bands[2].kind, "rank");
  EXPECT_EQ(bands[2].label, "rank 3");
  EXPECT_EQ(bands[2].rows, (std::vector<std::pair<std::size_t, std::size_t>>{{1, 1}}));
  // At most max_bands, the first suspects.
  EXPECT_EQ(heatmap_bands(heatmap, {node, strided, rank}, 1).size(), 1u);
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
  return testing::html_page(analysis, context);
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
  const json data = testing::page_data(html);
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

// Issue 32: a slow node of a 64-rank run is one suspect, one sentence (flagged at the top of the
// page), one row of the suspects' table and one band over its 8 rows of the heatmaps.
TEST(ReportScaleHtml, ASlowNodeIsOneBandOverItsRanksRows) {
  const RunAnalysis analysis = analyze(testing::make_synthetic_run(testing::slow_node_run()), {});
  ASSERT_EQ(analysis.stalls.suspects.size(), 1u);
  const std::string sentence = suspect_sentence(analysis.stalls.suspects[0], analysis.stalls);
  ASSERT_EQ(sentence.rfind("node gpu-b (ranks 8-15): +", 0), 0u) << sentence;
  const std::string html = page(analysis, 32);
  EXPECT_NE(html.find("<span class=\"flag\">" + html_escape(sentence) + "</span>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr class=\"straggler\"><td>node gpu-b: ranks 8-15</td>"),
            std::string::npos);
  EXPECT_NE(html.find("Outlined bands mark the stall suspects, each over its ranks' rows"),
            std::string::npos);
  const json bands = testing::page_data(html)["heatmap"]["bands"];
  const json expected = json::array({{{"kind", "node"},
                                      {"label", "node gpu-b (ranks 8-15)"},
                                      {"phase", "forward_backward"},
                                      {"ranks", "8-15"},
                                      {"rows", json::array({json::array({8, 15})})}}});
  EXPECT_EQ(bands, expected);
  // Grouped rows (4 ranks each): the band is rows 2-3.
  HtmlContext context;
  context.heatmap.max_rows = 16;
  context.summary_lines = summary_lines(analysis);
  EXPECT_EQ(
      testing::page_data(testing::html_page(analysis, context))["heatmap"]["bands"][0]["rows"],
      json::parse("[[2, 3]]"));
  // A page with a lane per rank marks the same ranks: lane i is rank i.
  EXPECT_EQ(testing::page_data(page(analysis, 64))["bands"], expected);
  // No suspect, no band and no word of them.
  const std::string quiet = page(testing::analyze_spec({.ranks = 40, .iterations = 10}), 32);
  EXPECT_EQ(testing::page_data(quiet)["heatmap"]["bands"], json::array());
  EXPECT_EQ(quiet.find("Outlined bands"), std::string::npos);
}

TEST(ReportScaleHtml, SmallRunsKeepTheTimelineAndEveryRank) {
  const RunAnalysis analysis = six_ranks_rank_2_slow();
  const std::string html = page(analysis, 32);
  EXPECT_NE(html.find("<svg id=\"timeline\"></svg>"), std::string::npos);
  EXPECT_EQ(html.find("id=\"heatmaps\""), std::string::npos);
  EXPECT_EQ(html.find("Showing "), std::string::npos);
  EXPECT_NE(html.find("Every span is in the Perfetto trace /runs/x/trace.json"), std::string::npos);
  const json data = testing::page_data(html);
  EXPECT_FALSE(data.contains("heatmap"));
  EXPECT_EQ(data["ranks"].size(), 6u);
  EXPECT_EQ(data["stepSeries"].size(), 6u);
}

// Issue 36: past table_ranks_max ranks the per-rank tables keep the ranks that stand out and
// summarize the rest.
TEST(ReportScaleHtml, PastTheTableLimitTheTablesKeepTheTopRanksAndTheDistribution) {
  const RunAnalysis analysis = six_ranks_rank_2_slow();
  HtmlContext context;
  context.summary_lines = summary_lines(analysis);
  context.timeline_lanes_max = 4;
  context.detail_ranks = select_ranks(analysis, {.all_ranks_up_to = 4, .typical_ranks = 1});
  context.table_ranks_max = 4;
  context.table_top_ranks = 2;
  const std::string html = testing::html_page(analysis, context);
  // Per-rank medians: rank 2 (the straggler: +50 ms in forward_backward), then rank 0 (every
  // step lasts 340 ms: no excess, the first rank), then the distribution over the 6 ranks.
  const std::size_t medians = html.find("<h2>Per-rank medians</h2>");
  ASSERT_NE(medians, std::string::npos);
  const std::string table = html.substr(medians, html.find("</table>", medians) - medians);
  EXPECT_EQ(testing_count(table, "<tr class=\"straggler\"><td class=\"num\">"), 1u);
  EXPECT_NE(table.find("<tr class=\"straggler\"><td class=\"num\">2</td>"), std::string::npos);
  EXPECT_NE(table.find("<tr><td class=\"num\">0</td>"), std::string::npos);
  EXPECT_EQ(table.find("<tr><td class=\"num\">1</td>"), std::string::npos);
  EXPECT_NE(table.find("<tr class=\"distribution\"><th colspan=\"15\">all 6 ranks (vs across "
                       "ranks in %)</th></tr>"),
            std::string::npos);
  // steps 10; step median min 340 ... (every step lasts 340 ms).
  EXPECT_NE(table.find("<tr class=\"distribution\"><th>max</th><td class=\"num\">10.0</td>"
                       "<td class=\"num\">340.0</td>"),
            std::string::npos)
      << table;
  EXPECT_NE(html.find("<p class=\"note\">6 ranks (more than 4): the table shows 2 ranks, the "
                      "stragglers first, then those with the largest excess over the median "
                      "across ranks, then the distribution of each column over all ranks; "
                      "stragglers by the threshold: 1 of 6 ranks.</p>"),
            std::string::npos);
  // Completeness: every rank complete, so no rank row; the totals per signal.
  EXPECT_NE(html.find("<tr class=\"distribution\"><th>all 6 ranks</th><td>spans</td>"
                      "<td class=\"num\">"),
            std::string::npos);
  // Resources: the rows of the charts' ranks (2, 0), then the distribution.
  const std::size_t resources = html.find("<h3>Per rank</h3>");
  ASSERT_NE(resources, std::string::npos);
  const std::string rows = html.substr(resources, html.find("</table>", resources) - resources);
  EXPECT_EQ(testing_count(rows, "<tr><td class=\"num\">"), 2u);
  EXPECT_NE(rows.find("<tr class=\"distribution\"><th colspan=\"13\">all 6 ranks, on 1 hosts"
                      "</th></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<p class=\"note\">6 ranks (more than 4): the rows of the ranks in the "
                      "charts (ranks 2 (stall suspect), 0 (typical) of 6), then the distribution "
                      "over all ranks of steps, step median and spans.</p>"),
            std::string::npos);
  // Every rank in the charts (a caller that did not select): the first table_top_ranks rows.
  context.detail_ranks = RankSelection{};
  EXPECT_NE(testing::html_page(analysis, context)
                .find("6 ranks (more than 4): the rows of the first 2 ranks, then the "
                      "distribution over all ranks of steps, step median and spans."),
            std::string::npos);
}

// A page at 4,000 ranks holds no per-rank row beyond the top ranks: its size and rows stay within
// those of a few dozen ranks (the heatmap's 256 rows and the tables' 20 rows).
TEST(ReportScaleHtml, TheTablesOfALargeRunAreBounded) {
  const RunAnalysis analysis = testing::analyze_spec({.ranks = 4000, .iterations = 3}, {}, false);
  HtmlContext context;
  context.summary_lines = summary_lines(analysis);
  context.detail_ranks = select_ranks(analysis, RankSelectionLimits{});
  const std::string html = testing::html_page(analysis, context);
  EXPECT_LE(testing_count(html, "<tr"), 100u);
  EXPECT_LT(html.size(), 200'000u);
  EXPECT_NE(html.find("4000 ranks (more than 1000): the table shows 20 ranks, the stragglers "
                      "first"),
            std::string::npos);
}

// Issue 36: an iteration of +-2^63, a span ending at 2^64-1 ns (read as INT64_MAX) and a metric
// point at time 0 are left out of the charts with a warning; the charts' range is the run's.
TEST(ReportChartRange, OutlyingIterationsAndTimesAreLeftOutOfTheChartsWithAWarning) {
  const testing::RunSpec spec{.ranks = 2, .iterations = 10};
  RunBuilder builder;
  for (const auto& request : testing::make_traces(spec)) builder.on_traces(request);
  for (const auto& request : testing::make_metrics(spec, true)) builder.on_metrics(request);
  RunData data = builder.take();
  const RunAnalysis baseline = analyze(RunData(data), {});
  for (int rank = 0; rank < 2; ++rank) {
    for (SpanRecord& span : data.ranks.at(rank).spans) {
      for (auto& [key, value] : span.attributes) {
        if (key == "megatron.iteration" && value == 10) {
          value = rank == 0 ? INT64_MIN : INT64_MAX;
        }
      }
    }
  }
  RankData& rank0 = data.ranks.at(0);
  SpanRecord endless = rank0.spans.front();
  endless.name = "megatron.train";
  endless.span_id = "00000000000000ff";
  endless.end_ns = INT64_MAX;
  rank0.spans.push_back(endless);
  auto& loss = rank0.gauges.at("megatron.training.loss");
  const std::size_t loss_points = loss.size();
  loss.push_back({0, 1.0});
  const RunAnalysis analysis = analyze(std::move(data), {});

  const ChartRange range = chart_range(analysis);
  const ChartRange expected = chart_range(baseline);
  EXPECT_EQ(expected.outlying_steps, 0u);
  EXPECT_EQ(expected.outlying_times, 0u);
  EXPECT_EQ(range.start_ns, expected.start_ns);
  EXPECT_EQ(range.end_ns, expected.end_ns);
  EXPECT_EQ(range.shown_first_iteration, 1);
  EXPECT_EQ(range.shown_last_iteration, 9);
  EXPECT_EQ(range.outlying_steps, 2u);
  EXPECT_EQ(range.outlying_times, 2u);
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.3f",
                static_cast<double>(expected.end_ns - expected.start_ns) / 1e9);
  const std::vector<std::string> warnings = {
      "charts leave out 2 steps with outlying iterations (furthest -9223372036854775808; the "
      "charts show iterations 1-9)",
      "charts leave out 2 spans and metric points with outlying times (furthest "
      "9223372036854775807 ns since the epoch; the charts show " +
          std::string(seconds) + " s from " + std::to_string(expected.start_ns) + " ns)"};
  EXPECT_EQ(chart_range_warnings(range), warnings);
  EXPECT_TRUE(chart_range_warnings(expected).empty());

  // The page: the charts span what the run without outliers spans, and say what they left out.
  const std::string html = page(analysis, 32);
  const json page_data = testing::page_data(html);
  const json baseline_data = testing::page_data(page(baseline, 32));
  EXPECT_EQ(page_data["endMs"], baseline_data["endMs"]);
  EXPECT_EQ(page_data["stepQuantiles"].size(), 9u);
  EXPECT_EQ(page_data["stepQuantiles"].back()[0], 9);
  for (const json& series : page_data["stepSeries"]) {
    EXPECT_EQ(series["points"].size(), 9u);
    EXPECT_EQ(series["points"].back()[0], 9);
  }
  EXPECT_EQ(page_data["ranks"][0]["job"], baseline_data["ranks"][0]["job"]);
  // The timeline is drawn against time: the step with the outlying iteration stays, in place.
  ASSERT_EQ(page_data["ranks"][0]["steps"].size(), 10u);
  EXPECT_EQ(page_data["ranks"][0]["steps"][9][0], baseline_data["ranks"][0]["steps"][9][0]);
  EXPECT_EQ(page_data["ranks"][0]["steps"][9][2], INT64_MIN);
  for (const json& metric : page_data["metrics"]) {
    if (metric["name"] != "megatron.training.loss") continue;
    EXPECT_EQ(metric["series"][0]["points"].size(), loss_points);
    EXPECT_EQ(metric["series"][0]["points"], baseline_data["metrics"][0]["series"][0]["points"]);
  }
  for (const std::string& warning : warnings) {
    EXPECT_NE(html.find("<li>" + html_escape(warning) + "</li>"), std::string::npos) << warning;
  }
  // A large run's heatmap spans iterations 1-9, one column each.
  const json heatmap = testing::page_data(page(analysis, 1))["heatmap"];
  ASSERT_EQ(heatmap["columns"].size(), 9u);
  EXPECT_EQ(heatmap["columns"][0], json::parse("[1, 1]"));
  EXPECT_EQ(heatmap["columns"][8], json::parse("[9, 9]"));
}

}  // namespace
}  // namespace lens::report
