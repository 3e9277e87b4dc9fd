// The HTML report in a real browser: headless Chromium loads it from a file, runs its script and
// dumps the DOM; the dump has one rank lane per rank (one line per run and chart on the comparison
// page) and the console shows no error. Skipped
// only when `chromium` is not on PATH.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "report/compare_html_writer.hpp"
#include "report/html_writer.hpp"
#include "report/rank_selection.hpp"
#include "report/run_builder.hpp"
#include "report/run_comparison.hpp"
#include "report/summary.hpp"
#include "report_test_support.hpp"
#include "support/run_process.hpp"
#include "synthetic_runs.hpp"

namespace lens::report {
namespace {

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((std::filesystem::path(dir) / program).c_str(), X_OK) == 0) {
      return true;
    }
  }
  return false;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

lens::testing::ProcessResult dump_dom(const std::filesystem::path& dir,
                                      const std::filesystem::path& html) {
  return lens::testing::run_process(
      "chromium",
      {"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
       "--no-first-run", "--disable-extensions", "--user-data-dir=" + (dir / "profile").string(),
       "--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + html.string()},
      std::nullopt, std::chrono::seconds(90));
}

// Writes the page of `analysis` to DIR/report.html and returns Chromium's DOM after its script ran.
lens::testing::ProcessResult render(const std::filesystem::path& dir, const RunAnalysis& analysis,
                                    const HtmlContext& context) {
  const auto html = dir / "report.html";
  {
    std::ofstream out(html);
    write_html(analysis, context, out);
  }
  return dump_dom(dir, html);
}

void expect_no_console_errors(const std::string& log) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.find(":CONSOLE"), std::string::npos) << line;
    EXPECT_EQ(line.find("Uncaught"), std::string::npos) << line;
  }
}

TEST(ReportChromium, TheReportRendersOneLanePerRankWithoutConsoleErrors) {
  if (!on_path("chromium")) GTEST_SKIP() << "chromium is not on PATH";
  testing::TempDir dir("chromium");
  const RunAnalysis analysis =
      testing::analyze_spec({.ranks = 4, .iterations = 20, .slow_rank = 1, .slow_ms = 80});
  HtmlContext context;
  context.source_dir = dir.path().string();
  context.summary_lines = summary_lines(analysis);
  const lens::testing::ProcessResult result = render(dir.path(), analysis, context);
  // After the script ran: the body is marked and the timeline has one lane per rank.
  EXPECT_NE(result.out.find("data-rendered=\"true\""), std::string::npos) << result.err;
  EXPECT_EQ(count(result.out, "class=\"rank-lane\""), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NE(result.out.find("class=\"rank-lane\" data-rank=\"" + std::to_string(rank) + "\""),
              std::string::npos);
  }
  EXPECT_NE(result.out.find("class=\"metric-chart\""), std::string::npos);
  expect_no_console_errors(result.err);
}

TEST(ReportChromium, ALargeRunDrawsHeatmapsInsteadOfLanesWithoutConsoleErrors) {
  if (!on_path("chromium")) GTEST_SKIP() << "chromium is not on PATH";
  testing::TempDir dir("chromium-heatmap");
  const RunAnalysis analysis =
      testing::analyze_spec({.ranks = 6, .iterations = 20, .slow_rank = 2, .slow_ms = 80});
  HtmlContext context;
  context.source_dir = dir.path().string();
  context.summary_lines = summary_lines(analysis);
  context.timeline_lanes_max = 4;  // 6 ranks are "many"
  context.detail_ranks = select_ranks(analysis, {.all_ranks_up_to = 4, .typical_ranks = 2});
  const lens::testing::ProcessResult result = render(dir.path(), analysis, context);
  ASSERT_FALSE(result.timed_out) << result.err;
  EXPECT_NE(result.out.find("data-rendered=\"true\""), std::string::npos) << result.err;
  EXPECT_EQ(count(result.out, "class=\"rank-lane\""), 0u);
  EXPECT_EQ(count(result.out, "<canvas class=\"heatmap\""), 2u);
  EXPECT_NE(result.out.find("data-layer=\"step\" data-rows=\"6\" data-columns=\"20\""),
            std::string::npos);
  EXPECT_NE(result.out.find("data-layer=\"wait\""), std::string::npos);
  expect_no_console_errors(result.err);
}

// Issue 32: a slow node of 64 ranks is one outlined band over its 8 rows on each heatmap, named
// in the legend under it.
TEST(ReportChromium, ASlowNodeIsOneBandOnEachHeatmap) {
  if (!on_path("chromium")) GTEST_SKIP() << "chromium is not on PATH";
  testing::TempDir dir("chromium-band");
  const RunAnalysis analysis = analyze(testing::make_synthetic_run(testing::slow_node_run()), {});
  ASSERT_EQ(analysis.stalls.suspects.size(), 1u);
  HtmlContext context;
  context.source_dir = dir.path().string();
  context.summary_lines = summary_lines(analysis);
  context.detail_ranks = select_ranks(analysis, RankSelectionLimits{});
  const lens::testing::ProcessResult result = render(dir.path(), analysis, context);
  ASSERT_FALSE(result.timed_out) << result.err;
  EXPECT_NE(result.out.find("data-rendered=\"true\""), std::string::npos) << result.err;
  EXPECT_EQ(count(result.out, "<canvas class=\"heatmap\""), 2u);
  EXPECT_EQ(count(result.out, "<span class=\"heatmap-band\""), 2u);
  EXPECT_EQ(count(result.out,
                  "<span class=\"heatmap-band\" data-kind=\"node\" "
                  "data-ranks=\"8-15\" data-rows=\"8-15\">"),
            2u);
  EXPECT_NE(result.out.find("1 node gpu-b (ranks 8-15), forward_backward</span>"),
            std::string::npos);
  expect_no_console_errors(result.err);
  // With a lane per rank: one bar at the left over lanes 8-15, and the same legend.
  context.timeline_lanes_max = 64;
  const lens::testing::ProcessResult lanes = render(dir.path(), analysis, context);
  ASSERT_FALSE(lanes.timed_out) << lanes.err;
  EXPECT_NE(lanes.out.find("data-rendered=\"true\""), std::string::npos) << lanes.err;
  EXPECT_EQ(count(lanes.out, "class=\"rank-lane\""), 64u);
  EXPECT_EQ(count(lanes.out, "class=\"lane-band\""), 1u);
  EXPECT_EQ(count(lanes.out,
                  "<span class=\"timeline-band\" data-kind=\"node\" "
                  "data-ranks=\"8-15\" data-rows=\"8-15\">"),
            1u);
  expect_no_console_errors(lanes.err);
}

TEST(ReportChromium, TheComparisonDrawsOneLinePerRunAndChartWithoutConsoleErrors) {
  if (!on_path("chromium")) GTEST_SKIP() << "chromium is not on PATH";
  testing::TempDir dir("chromium-compare");
  std::vector<ComparedRun> runs;
  for (const auto& spec : {testing::RunSpec{.ranks = 2, .iterations = 20, .run_id = "a"},
                           testing::RunSpec{.ranks = 4,
                           .iterations = 12,
                           .slow_rank = 1,
                           .slow_ms = 40,
                           .run_id = "b",
                           .loss_start = 9.0},
                           testing::RunSpec{.ranks = 1, .iterations = 80, .run_id = "c"}}) {
    RunBuilder builder;
    for (const auto& request : testing::make_traces(spec)) builder.on_traces(request);
    runs.push_back(compare_run(builder.take(), "/runs/" + spec.run_id));
  }
  const auto html = dir.path() / "compare.html";
  {
    std::ofstream out(html);
    write_comparison_html(runs, {}, out);
  }
  const lens::testing::ProcessResult result = dump_dom(dir.path(), html);
  ASSERT_FALSE(result.timed_out) << result.err;
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("data-rendered=\"true\""), std::string::npos) << result.err;
  EXPECT_EQ(count(result.out, "class=\"run-line\""), 6u);  // 3 runs x (step time, loss)
  for (const char* color : {"#4e79a7", "#e15759", "#59a14f"}) {
    EXPECT_EQ(count(result.out, std::string("stroke=\"") + color + "\""), 2u) << color;
  }
  expect_no_console_errors(result.err);
}

}  // namespace
}  // namespace lens::report
