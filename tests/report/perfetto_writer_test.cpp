// The Perfetto / Chrome trace-event JSON: one process per rank named "rank N", every span a
// complete event with exact microsecond ts/dur, nesting spans on one thread, overlaps moved.
#include "report/perfetto_writer.hpp"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "report_test_support.hpp"

namespace lens::report {
namespace {

using nlohmann::json;

json write(const RunAnalysis& analysis) {
  std::ostringstream out;
  write_perfetto(analysis, out);
  return json::parse(out.str());  // throws (fails the test) when not JSON
}

TEST(ReportPerfetto, OneTrackPerRankWithEveryStep) {
  const RunAnalysis analysis = testing::analyze_spec({.ranks = 4, .iterations = 20});
  const json trace = write(analysis);
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  std::map<int, std::string> processes;
  std::map<int, std::string> threads;
  std::map<int, std::vector<const json*>> steps;
  std::size_t complete = 0;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "process_name") {
      processes[event["pid"].get<int>()] = event["args"]["name"];
    }
    if (event["ph"] == "M" && event["name"] == "thread_name") {
      threads[event["pid"].get<int>()] = event["args"]["name"];
    }
    if (event["ph"] == "X") {
      ++complete;
      if (event["name"] == "megatron.train_step") steps[event["pid"].get<int>()].push_back(&event);
    }
  }
  EXPECT_EQ(processes, (std::map<int, std::string>{
                           {1, "rank 0"}, {2, "rank 1"}, {3, "rank 2"}, {4, "rank 3"}}));
  EXPECT_EQ(threads, (std::map<int, std::string>{
                         {1, "rank 0"}, {2, "rank 1"}, {3, "rank 2"}, {4, "rank 3"}}));
  EXPECT_EQ(complete, analysis.span_count);
  ASSERT_EQ(steps.size(), 4u);
  for (const auto& [pid, events] : steps) {
    ASSERT_EQ(events.size(), 20u);
    for (std::size_t i = 0; i < events.size(); ++i) {
      const json& step = *events[i];
      // pretrain starts at the origin; iteration i at 2000 + (i - 1) * 500 ms.
      EXPECT_EQ(step["ts"].get<double>(), 2000000.0 + 500000.0 * static_cast<double>(i));
      EXPECT_EQ(step["dur"].get<double>(), 290000.0);
      EXPECT_EQ(step["tid"], 1);
      EXPECT_EQ(step["args"]["megatron.iteration"], static_cast<int>(i) + 1);
      EXPECT_EQ(step["args"]["span_id"].get<std::string>().size(), 16u);
    }
  }
}

TEST(ReportPerfetto, PhasesAreCategoriesAndMetricsAreCounters) {
  const json trace = write(testing::analyze_spec({.ranks = 1, .iterations = 5}));
  std::set<std::string> categories;
  std::set<std::string> counters;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == "X") categories.insert(event["cat"].get<std::string>());
    if (event["ph"] == "C") counters.insert(event["name"].get<std::string>());
  }
  EXPECT_EQ(categories,
            (std::set<std::string>{"span", "forward_backward", "data_loading", "communication",
                                   "pipeline", "optimizer", "checkpoint"}));
  EXPECT_EQ(counters, (std::set<std::string>{"loss", "tokens_per_sec", "grad_norm"}));
}

TEST(ReportPerfetto, AnOverlappingSpanGoesToAnotherThread) {
  RunData data;
  RankData& rank = data.ranks[0];
  auto add = [&](const std::string& id, std::int64_t start_us, std::int64_t end_us) {
    SpanRecord span;
    span.trace_id = "t";
    span.span_id = id;
    span.name = "span " + id;
    span.start_ns = start_us * 1000 + 500;  // sub-microsecond part: fractional ts
    span.end_ns = end_us * 1000 + 500;
    rank.spans.push_back(span);
  };
  add("a", 0, 100);
  add("b", 10, 50);   // nests in a
  add("c", 80, 150);  // overlaps a without nesting
  const json trace = write(analyze(std::move(data), {}));
  std::map<std::string, const json*> by_name;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == "X") by_name[event["name"]] = &event;
  }
  EXPECT_EQ((*by_name.at("span a"))["tid"], 1);
  EXPECT_EQ((*by_name.at("span b"))["tid"], 1);
  EXPECT_EQ((*by_name.at("span c"))["tid"], 2);
  EXPECT_EQ((*by_name.at("span b"))["ts"].get<double>(), 10.0);
  EXPECT_EQ((*by_name.at("span c"))["dur"].get<double>(), 70.0);
}

// A long string attribute is cut at 4096 bytes (at a character boundary) and says how long it
// was; a short one, and a value that is not a string, are as they were.
TEST(ReportPerfetto, LongAttributeValuesAreCut) {
  RunData data;
  SpanRecord span;
  span.trace_id = "t";
  span.span_id = "s";
  span.name = "with attributes";
  span.start_ns = 0;
  span.end_ns = 1000;
  span.attributes = {{"long", json(std::string(4095, 'x') + "\u00e9" + std::string(1000, 'y'))},
                     {"short", json("kept")},
                     {"number", json(7)}};
  data.ranks[0].spans.push_back(span);
  const json trace = write(analyze(std::move(data), {}));
  const json* event = nullptr;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") event = &e;
  }
  ASSERT_NE(event, nullptr);
  // The two-byte character that would straddle the cut is left out whole.
  EXPECT_EQ((*event)["args"]["long"], std::string(4095, 'x') + "... (5097 bytes)");
  EXPECT_EQ((*event)["args"]["short"], "kept");
  EXPECT_EQ((*event)["args"]["number"], 7);
}

// The span cap holds whatever the number of ranks: each rank kept writes its share, its
// earliest spans, and the writer says how many it left out.
TEST(ReportPerfetto, TheSpanCapHoldsForFewRanks) {
  RunData data;
  for (int rank = 0; rank < 2; ++rank) {
    for (int i = 0; i < 10; ++i) {
      SpanRecord span;
      span.trace_id = "t";
      span.span_id = std::to_string(i);
      span.name = "s" + std::to_string(i);
      span.start_ns = 1000 * i;
      span.end_ns = 1000 * i + 500;
      data.ranks[rank].spans.push_back(span);
    }
  }
  const RunAnalysis analysis = analyze(std::move(data), {});
  std::ostringstream out;
  EXPECT_EQ(write_perfetto(analysis, out, {}, 8), 12u);
  std::map<int, std::vector<std::string>> names;
  const json trace = json::parse(out.str());
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == "X") names[event["pid"].get<int>()].push_back(event["name"]);
  }
  const std::vector<std::string> earliest = {"s0", "s1", "s2", "s3"};
  EXPECT_EQ(names, (std::map<int, std::vector<std::string>>{{1, earliest}, {2, earliest}}));
}

}  // namespace
}  // namespace lens::report
