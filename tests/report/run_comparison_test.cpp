// The comparison of runs: the per-iteration medians across ranks of step time and loss, the
// run's totals and legend label, and the page's data block and run table, with exact values
// from the fixture runs (report_fixtures.hpp: a step takes 290 ms, plus the slow rank's extra
// time; the loss of iteration i is loss_start - 0.1 i).
#include "report/run_comparison.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "report/compare_html_writer.hpp"
#include "report/run_builder.hpp"
#include "report_fixtures.hpp"

namespace lens::report {
namespace {

using Points = std::vector<std::pair<std::int64_t, double>>;

RunData run_data(const testing::RunSpec& spec) {
  RunBuilder builder;
  for (const auto& request : testing::make_traces(spec)) builder.on_traces(request);
  return builder.take();
}

TEST(RunComparison, StepTimeAndLossAreMediansAcrossRanksPerIteration) {
  // Not synchronous: rank 1 takes 290 + 30 ms, rank 0 290 ms, so the median is 305 ms.
  const ComparedRun run = compare_run(run_data({.ranks = 2,
                                                .iterations = 6,
                                                .slow_rank = 1,
                                                .slow_ms = 30,
                                                .synchronous = false,
                                                .iteration_stride = 2,
                                                .run_id = "run-a",
                                                .loss_start = 5.0}),
                                      "/runs/a");
  EXPECT_EQ(run.dir, "/runs/a");
  EXPECT_EQ(run.run_id, "run-a");
  EXPECT_EQ(run.ranks, 2u);
  EXPECT_EQ(run.iterations, 3u);
  EXPECT_EQ(run.first_iteration, 1);
  EXPECT_EQ(run.last_iteration, 5);
  EXPECT_EQ(run.step_ms, (Points{{1, 305.0}, {3, 305.0}, {5, 305.0}}));
  ASSERT_EQ(run.loss.size(), 3u);
  EXPECT_DOUBLE_EQ(run.loss[0].second, 4.9);
  EXPECT_DOUBLE_EQ(run.loss[2].second, 4.5);
  EXPECT_EQ(run.loss[2].first, 5);
  EXPECT_EQ(run.median_step_ms, 305.0);
  EXPECT_DOUBLE_EQ(*run.final_loss, 4.5);
  EXPECT_EQ(run_label(run), "run-a (/runs/a)");
  EXPECT_EQ(run_summary_line(run),
            "run-a (/runs/a): 2 ranks, 3 iterations (1-5), median step 305.0 ms, final loss "
            "4.5000");
}

TEST(RunComparison, AnOddNumberOfRanksTakesTheMiddleOne) {
  // Synchronous with a slow rank: every rank's step takes 290 + 100 ms.
  const ComparedRun sync =
      compare_run(run_data({.ranks = 3, .iterations = 2, .slow_rank = 2, .slow_ms = 100}), "d");
  EXPECT_EQ(sync.step_ms, (Points{{1, 390.0}, {2, 390.0}}));
  // Not synchronous: 290, 290 and 390 ms.
  const ComparedRun async = compare_run(
      run_data({.ranks = 3, .iterations = 2, .slow_rank = 2, .slow_ms = 100, .synchronous = false}),
      "d");
  EXPECT_EQ(async.step_ms, (Points{{1, 290.0}, {2, 290.0}}));
  EXPECT_EQ(async.median_step_ms, 290.0);
}

TEST(RunComparison, ARunWithoutStepsOrRunIdSaysSo) {
  RunData data;
  data.ranks[0].rank = 0;
  const ComparedRun run = compare_run(data, "empty");
  EXPECT_EQ(run.iterations, 0u);
  EXPECT_TRUE(run.step_ms.empty());
  EXPECT_EQ(run_label(run), "(no run id) (empty)");
  EXPECT_EQ(run_summary_line(run),
            "(no run id) (empty): 1 ranks, 0 iterations, median step -, final loss -");
}

TEST(RunComparison, ThePageDataHasOneColouredSeriesPerRunAndTheLegendNamesEach) {
  const std::vector<ComparedRun> runs = {
      compare_run(run_data({.ranks = 2, .iterations = 3, .run_id = "base"}), "/r/base"),
      compare_run(run_data({.ranks = 2,
                            .iterations = 2,
                            .slow_rank = 0,
                            .slow_ms = 10.5,
                            .run_id = "slow<b>",
                            .loss_start = 8.0}),
                  "/r/slow")};
  EXPECT_EQ(comparison_json(runs), nlohmann::json::parse(R"json({"runs": [
    {"label": "base (/r/base)", "color": "#4e79a7",
     "stepMs": [[1, 290.0], [2, 290.0], [3, 290.0]], "loss": [[1, 9.9], [2, 9.8], [3, 9.7]]},
    {"label": "slow<b> (/r/slow)", "color": "#e15759",
     "stepMs": [[1, 300.5], [2, 300.5]], "loss": [[1, 7.9], [2, 7.8]]}]})json"));

  std::ostringstream page;
  write_comparison_html(runs, {"DIR 'x' holds 2 runs"}, page);
  const std::string html = page.str();
  EXPECT_NE(html.find("<title>lens report: 2 runs compared</title>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"run-legend\"><td><span class=\"legend-swatch\" "
                      "style=\"background:#4e79a7\"></span>base (/r/base)</td><td>base</td>"
                      "<td>/r/base</td><td class=\"num\">2</td><td class=\"num\">3 (1-3)</td>"
                      "<td class=\"num\">290.0</td><td class=\"num\">9.7000</td></tr>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("style=\"background:#e15759\"></span>slow&lt;b&gt; (/r/slow)</td>"
                      "<td>slow&lt;b&gt;</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<li>DIR &#39;x&#39; holds 2 runs</li>"), std::string::npos) << html;
  // The data block cannot close its script element.
  EXPECT_EQ(html.find("slow<b>"), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"step-chart\"></svg>"), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"loss-chart\"></svg>"), std::string::npos);
}

}  // namespace
}  // namespace lens::report
