// The HTML report in a real browser: headless Chromium loads it from a file, runs its script and
// dumps the DOM; the dump has one rank lane per rank and the console shows no error. Skipped
// only when `chromium` is not on PATH.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "report/html_writer.hpp"
#include "report/summary.hpp"
#include "report_test_support.hpp"
#include "support/run_process.hpp"

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

TEST(ReportChromium, TheReportRendersOneLanePerRankWithoutConsoleErrors) {
  if (!on_path("chromium")) GTEST_SKIP() << "chromium is not on PATH";
  testing::TempDir dir("chromium");
  const RunAnalysis analysis =
      testing::analyze_spec({.ranks = 4, .iterations = 20, .slow_rank = 1, .slow_ms = 80});
  HtmlContext context;
  context.source_dir = dir.path().string();
  context.summary_lines = summary_lines(analysis);
  const auto html = dir.path() / "report.html";
  {
    std::ofstream out(html);
    write_html(analysis, context, out);
  }
  const lens::testing::ProcessResult result = lens::testing::run_process(
      "chromium",
      {"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
       "--no-first-run", "--disable-extensions",
       "--user-data-dir=" + (dir.path() / "profile").string(), "--enable-logging=stderr", "--v=0",
       "--dump-dom", "file://" + html.string()},
      std::nullopt, std::chrono::seconds(90));
  ASSERT_FALSE(result.timed_out) << result.err;
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // After the script ran: the body is marked and the timeline has one lane per rank.
  EXPECT_NE(result.out.find("data-rendered=\"true\""), std::string::npos) << result.err;
  EXPECT_EQ(count(result.out, "class=\"rank-lane\""), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NE(result.out.find("class=\"rank-lane\" data-rank=\"" + std::to_string(rank) + "\""),
              std::string::npos);
  }
  EXPECT_NE(result.out.find("class=\"metric-chart\""), std::string::npos);
  std::istringstream lines(result.err);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.find(":CONSOLE"), std::string::npos) << line;
    EXPECT_EQ(line.find("Uncaught"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace lens::report
