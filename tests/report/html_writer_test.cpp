// The HTML page: self-contained (no network reference at all), data escaped against HTML and
// script injection, the stall attribution and the summary present, curves per iteration.
#include "report/html_writer.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "report/summary.hpp"
#include "report_test_support.hpp"

namespace lens::report {
namespace {

std::string page(const RunAnalysis& analysis) {
  HtmlContext context;
  context.source_dir = "/runs/x";
  context.perfetto_path = "/runs/x/trace.json";
  context.summary_lines = summary_lines(analysis);
  return testing::html_page(analysis, context);
}

TEST(ReportHtml, CurvesAreAgainstTheIterationOnePointPerStep) {
  RunBuilder builder;
  const testing::RunSpec spec{.ranks = 2, .iterations = 20, .slow_rank = 1, .slow_ms = 100};
  for (const auto& request : testing::make_traces(spec)) builder.on_traces(request);
  RunData data = builder.take();
  data.ranks.at(0).resource.emplace_back("dl.batch_size", 8);
  data.ranks.at(0).resource.emplace_back("dl.sequence_length", 39);
  data.ranks.at(1).gauges["lens.spans.dropped"] = {{testing::kOriginNs, 3.0}};
  data.ranks.at(1).gauges["megatron.training.loss"] = {{testing::kOriginNs, 2.5}};
  const nlohmann::json json = testing::page_data(page(analyze(std::move(data), {})));

  const nlohmann::json& curves = json["iterationCurves"];
  ASSERT_EQ(curves.size(), 2u) << curves.dump();
  EXPECT_EQ(curves[0]["name"], "megatron.loss");
  ASSERT_EQ(curves[0]["series"].size(), 2u);
  const nlohmann::json& loss = curves[0]["series"][1]["points"];
  ASSERT_EQ(loss.size(), 20u);
  EXPECT_EQ(loss[0], nlohmann::json::parse("[1, 9.9]"));
  EXPECT_EQ(loss[19], nlohmann::json::parse("[20, 8.0]"));
  // 8 x 39 tokens per 390 ms step (rank 0 only: rank 1 has no batch size).
  EXPECT_EQ(curves[1]["name"], "tokens/s");
  ASSERT_EQ(curves[1]["series"].size(), 1u);
  EXPECT_EQ(curves[1]["series"][0]["points"][4], nlohmann::json::parse("[5, 800.0]"));

  // Exact: median, p90 and max of the step spans (both ranks wait for the slow one).
  ASSERT_EQ(json["stepQuantiles"].size(), 20u);
  EXPECT_EQ(json["stepQuantiles"][0], nlohmann::json::parse("[1, 390.0, 390.0, 390.0]"));

  ASSERT_EQ(json["selfMetrics"].size(), 1u);
  EXPECT_EQ(json["selfMetrics"][0]["name"], "lens.spans.dropped");
  for (const auto& metric : json["metrics"]) EXPECT_NE(metric["name"], "lens.spans.dropped");
  ASSERT_EQ(json["metrics"].size(), 1u);
  EXPECT_EQ(json["metrics"][0]["name"], "megatron.training.loss");
}

TEST(ReportHtml, LoadsNothingFromTheNetwork) {
  const std::string html = page(testing::analyze_spec({.ranks = 4, .iterations = 20}));
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("//cdn"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=)", std::regex::icase)));
  EXPECT_EQ(html.find("@import"), std::string::npos);
  // Only fragment references (the timeline's clip path) are allowed in url(...).
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(url\(\s*['"]?[^#'"\s])")));
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_NE(html.find("<script>"), std::string::npos);
}

TEST(ReportHtml, ShowsTheRunTheStragglerAndTheResources) {
  const std::string html =
      page(testing::analyze_spec({.ranks = 4, .iterations = 20, .slow_rank = 2, .slow_ms = 100}));
  EXPECT_NE(html.find("run id: <b>run-fixture</b>"), std::string::npos);
  EXPECT_NE(html.find("service: <b>megatron-lm</b>"), std::string::npos);
  EXPECT_NE(html.find("world size: <b>4</b>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"flag\">rank 2 spends +100.0 ms per step in "
                      "forward_backward from iteration 1 on; the other ranks wait for it in "
                      "communication (20% of the run; 95% CI +100.0 to +100.0 ms)</span>"),
            std::string::npos);
  EXPECT_NE(html.find("<h2>Stall attribution</h2>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"straggler\"><td class=\"num\">2</td><td>forward_backward</td>"
                      "<td class=\"num\">+100.0</td><td class=\"num\">1-20</td>"),
            std::string::npos);
  // The per-rank medians table still marks the rank.
  EXPECT_NE(html.find("<tr class=\"straggler\"><td class=\"num\">2</td><td class=\"num\">20"),
            std::string::npos);
  EXPECT_NE(html.find("<td>node0</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>8 on host</td>"), std::string::npos);
}

TEST(ReportHtml, EscapesDataInMarkupAndInTheScriptBlock) {
  RunBuilder builder;
  auto traces = testing::make_traces({.ranks = 2, .iterations = 2});
  auto* resource = traces[0].mutable_resource_spans(0)->mutable_resource();
  for (auto& attribute : *resource->mutable_attributes()) {
    if (attribute.key() == "host.name") {
      attribute.mutable_value()->set_string_value("<img src=x onerror=alert(1)>");
    }
    if (attribute.key() == "nemo.run.id") {
      attribute.mutable_value()->set_string_value("r\"'&");
    }
  }
  auto* span = traces[0].mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  span->set_name("</script><script>alert(2)</script>\xe2\x80\xa8");
  for (const auto& request : traces) builder.on_traces(request);
  const std::string html = page(analyze(builder.take(), {}));
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_NE(html.find("r&quot;&#39;&amp;"), std::string::npos);
  EXPECT_EQ(html.find("alert(2)</script>"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script\\u003e\\u003cscript\\u003ealert(2)"), std::string::npos);
  EXPECT_NE(html.find("\\u2028"), std::string::npos);
  // Exactly the page's own two script elements.
  std::size_t scripts = 0;
  for (std::size_t at = html.find("<script"); at != std::string::npos;
       at = html.find("<script", at + 1)) {
    ++scripts;
  }
  EXPECT_EQ(scripts, 2u);
}

TEST(ReportHtml, ScriptSafeJsonKeepsTheValue) {
  const std::string json = nlohmann::json{{"a", "</script>&\xe2\x80\xa9"}}.dump();
  const std::string safe = script_safe_json(json);
  EXPECT_EQ(safe.find('<'), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(safe), nlohmann::json::parse(json));
}

}  // namespace
}  // namespace lens::report
