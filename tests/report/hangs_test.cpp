// The ranks' hang reports as lens run and lens report read them: log records lens.hang and
// lens.hang.resumed in OTLP JSON lines, grouped into one line naming the odd rank out, newest
// report per rank, resumption, the run-id filter, summary.json's "hangs", and lens run's line
// once every rank reported (or after the settle time) and "progress resumed".
#include "report/hangs.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "run_hangs.hpp"

namespace lens::report {
namespace {

using nlohmann::json;

json hang_attribute(const std::string& key, json value) { return {{"key", key}, {"value", value}}; }
json hang_string(const std::string& s) { return {{"stringValue", s}}; }
json hang_double(double d) { return {{"doubleValue", d}}; }
json hang_int(std::int64_t i) { return {{"intValue", std::to_string(i)}}; }

// One logs.jsonl line: rank `rank`'s hang report number `report`, stuck in `stack`.
std::string hang_line(int rank, std::int64_t time_s, int report, double stalled_s,
                      const std::vector<std::pair<std::string, double>>& stack,
                      const std::string& run_id = "run-a") {
  json names = json::array();
  json ages = json::array();
  for (const auto& [name, age] : stack) {
    names.push_back(hang_string(name));
    ages.push_back(hang_double(age));
  }
  json record = {
      {"timeUnixNano", std::to_string(time_s * 1'000'000'000)},
      {"severityNumber", 13},
      {"body", hang_string("no step finished")},
      {"attributes",
       {hang_attribute("lens.hang.stalled_s", hang_double(stalled_s)),
        hang_attribute("lens.hang.timeout_s", hang_double(10.0)),
        hang_attribute("lens.hang.report", hang_int(report)),
        hang_attribute("lens.hang.steps", hang_int(12)),
        hang_attribute("lens.hang.span", hang_string(stack.empty() ? "" : stack.back().first)),
        hang_attribute("lens.hang.stack", {{"arrayValue", {{"values", names}}}}),
        hang_attribute("lens.hang.stack_open_s", {{"arrayValue", {{"values", ages}}}}),
        hang_attribute("lens.hang.other_threads",
                       {{"arrayValue", {{"values", {hang_string("loader.poll (0.5 s)")}}}}})}},
      {"eventName", "lens.hang"}};
  json request = {
      {"resourceLogs",
       {{{"resource",
          {{"attributes",
            {hang_attribute("dl.rank", hang_int(rank)),
             hang_attribute("nemo.run.id", hang_string(run_id))}}}},
         {"scopeLogs", {{{"logRecords", {record}}}}}}}}};
  return request.dump();
}

std::string resumed_line(int rank, std::int64_t time_s, double after_s) {
  json record = {{"timeUnixNano", std::to_string(time_s * 1'000'000'000)},
                 {"attributes",
                  {hang_attribute("lens.hang.stalled_s", hang_double(after_s)),
                   hang_attribute("lens.hang.reports", hang_int(2))}}};
  json request = {
      {"resourceLogs",
       {{{"resource", {{"attributes", {hang_attribute("dl.rank", hang_int(rank))}}}},
         {"scopeLogs", {{{"logRecords", {record}}}}}}}}};
  return request.dump();
}

const std::vector<std::pair<std::string, double>> kWaiting = {
    {"megatron.train_step", 42.1}, {"megatron.grad_sync.finish", 41.9}};
const std::vector<std::pair<std::string, double>> kLoading = {
    {"megatron.train_step", 42.2}, {"megatron.forward_backward", 42.1},
    {"megatron.data.next_batch", 41.84}};

TEST(HangLog, OneLineNamesTheOddRankOutFirst) {
  HangLog log;
  log.consume_line(hang_line(0, 100, 1, 42.0, kWaiting));
  log.consume_line(hang_line(3, 100, 1, 42.4, kLoading));
  log.consume_line(hang_line(1, 100, 1, 42.0, kWaiting));
  log.consume_line(hang_line(2, 100, 1, 41.7, kWaiting));
  log.consume_line(R"({"resourceSpans":[]})");  // not a log line: ignored
  EXPECT_EQ(log.records(), 4U);
  EXPECT_EQ(no_progress_line(log.ranks()),
            "no progress for 42 s: rank 3 in megatron.data.next_batch (41.8 s); ranks 0,1,2 in "
            "megatron.grad_sync.finish");
  const RankHang& three = log.ranks().at(3);
  EXPECT_EQ(three.stack.size(), 3U);
  EXPECT_EQ(three.stack[1].name, "megatron.forward_backward");
  EXPECT_DOUBLE_EQ(three.stack[1].open_s, 42.1);
  EXPECT_EQ(three.steps, 12);
  EXPECT_DOUBLE_EQ(three.timeout_s, 10.0);
  EXPECT_EQ(three.others, std::vector<std::string>{"loader.poll (0.5 s)"});

  const json summary = hangs_json(log.ranks());
  ASSERT_EQ(summary.size(), 4U);
  EXPECT_EQ(summary[3],
            json::parse(R"j({"rank":3,"report":1,"stalled_s":42.4,"timeout_s":10.0,"steps":12,
              "span":"megatron.data.next_batch","span_open_s":41.84,
              "stack":[{"name":"megatron.train_step","open_s":42.2},
                       {"name":"megatron.forward_backward","open_s":42.1},
                       {"name":"megatron.data.next_batch","open_s":41.84}],
              "other_threads":["loader.poll (0.5 s)"],"resumed":false,"resumed_after_s":null})j"));
  const std::string html = hangs_html(log.ranks());
  EXPECT_NE(html.find("<h2 id=\"hangs\">Hangs</h2>"), std::string::npos);
  EXPECT_NE(html.find("megatron.train_step (42.2 s) &gt; megatron.forward_backward (42.1 s) &gt; "
                      "megatron.data.next_batch (41.8 s)"),
            std::string::npos)
      << html;
}

TEST(HangLog, KeepsTheNewestReportAndNotesTheResumption) {
  HangLog log;
  log.consume_line(hang_line(0, 120, 2, 84.0, kWaiting));
  log.consume_line(hang_line(0, 100, 1, 42.0, kWaiting));  // older: ignored
  EXPECT_EQ(log.ranks().at(0).report, 2);
  log.consume_line(resumed_line(0, 130, 93.5));
  EXPECT_TRUE(log.ranks().at(0).resumed);
  EXPECT_DOUBLE_EQ(log.ranks().at(0).resumed_after_s, 93.5);
  EXPECT_EQ(no_progress_line(log.ranks()), "");  // nobody hangs now
  EXPECT_EQ(hangs_json(log.ranks())[0]["resumed_after_s"], 93.5);
  log.consume_line(hang_line(0, 200, 1, 10.4, kLoading));  // a new episode
  EXPECT_FALSE(log.ranks().at(0).resumed);
  EXPECT_EQ(no_progress_line(log.ranks()),
            "no progress for 10 s: rank 0 in megatron.data.next_batch (41.8 s)");
}

TEST(HangLog, ARunIdKeepsOnlyThatRun) {
  HangLog log(std::string("run-b"));
  log.consume_line(hang_line(0, 100, 1, 42.0, kWaiting, "run-a"));
  log.consume_line(hang_line(1, 100, 1, 42.0, {}, "run-b"));
  ASSERT_EQ(log.ranks().size(), 1U);
  EXPECT_EQ(no_progress_line(log.ranks()), "no progress for 42 s: rank 1 with no open span");
}

TEST(RunHangs, OneLineOnceEveryRankReportedOrAfterTheSettleTime) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("lens-run-hangs-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path logs = dir / "logs.jsonl";
  cli::RunHangs hangs(logs, 3);
  const auto t0 = cli::RunHangs::Clock::now();
  hangs.update();  // no file yet
  EXPECT_EQ(hangs.line_if_due(t0), "");
  {
    std::ofstream out(logs, std::ios::app);
    out << hang_line(0, 100, 1, 42.0, kWaiting) << "\n" << hang_line(2, 100, 1, 42.0, kWaiting);
  }
  hangs.update();  // rank 2's line has no newline yet: it waits
  EXPECT_EQ(hangs.line_if_due(t0), "");  // 1 of 3 ranks, not settled
  {
    std::ofstream out(logs, std::ios::app);
    out << "\n" << hang_line(1, 100, 1, 42.0, kLoading) << "\n";
  }
  hangs.update();
  EXPECT_EQ(hangs.line_if_due(t0 + std::chrono::milliseconds(10)),
            "no progress for 42 s: rank 1 in megatron.data.next_batch (41.8 s); ranks 0,2 in "
            "megatron.grad_sync.finish");
  EXPECT_EQ(hangs.line_if_due(t0 + std::chrono::seconds(5)), "");  // nothing new
  {
    std::ofstream out(logs, std::ios::app);
    out << resumed_line(1, 150, 60.2) << "\n";
  }
  hangs.update();
  const auto t1 = t0 + std::chrono::seconds(10);
  EXPECT_EQ(hangs.line_if_due(t1), "");  // ranks 0 and 2 still hang: wait to settle
  EXPECT_EQ(hangs.line_if_due(t1 + cli::RunHangs::kSettle),
            "no progress for 42 s: ranks 0,2 in megatron.grad_sync.finish");
  {
    std::ofstream out(logs, std::ios::app);
    out << resumed_line(0, 150, 60.0) << "\n" << resumed_line(2, 150, 61.0) << "\n";
  }
  hangs.update();
  const auto t2 = t1 + std::chrono::seconds(10);
  EXPECT_EQ(hangs.line_if_due(t2), "");
  EXPECT_EQ(hangs.line_if_due(t2 + cli::RunHangs::kSettle), "progress resumed after 61 s");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lens::report
