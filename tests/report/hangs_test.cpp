// The ranks' hang reports as lens run and lens report read them: log records lens.hang and
// lens.hang.resumed in OTLP JSON lines, grouped into one line naming the odd rank out, newest
// report per rank, resumption, the run-id filter, summary.json's "hangs", and lens run's line
// once every rank reported (or after the settle time) and "progress resumed"; the verdict joined
// across ranks by process group and sequence number (missing rank, every rank inside, mismatch,
// start-up).
#include "report/hangs.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "run/run_hangs.hpp"

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
  json request = {{"resourceLogs",
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
  json request = {{"resourceLogs",
                   {{{"resource", {{"attributes", {hang_attribute("dl.rank", hang_int(rank))}}}},
                     {"scopeLogs", {{{"logRecords", {record}}}}}}}}};
  return request.dump();
}

const std::vector<std::pair<std::string, double>> kWaiting = {{"megatron.train_step", 42.1},
                                                              {"megatron.grad_sync.finish", 41.9}};
const std::vector<std::pair<std::string, double>> kLoading = {{"megatron.train_step", 42.2},
                                                              {"megatron.forward_backward", 42.1},
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
              "other_threads":["loader.poll (0.5 s)"],"startup":false,"iteration":null,
              "collectives":[],"resumed":false,"resumed_after_s":null})j"));
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
  hangs.update();                        // rank 2's line has no newline yet: it waits
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

// One group's state in a hang record (lens.hang.collective.* columns).
struct Group {
  std::string name;
  std::string ranks;
  std::string op;
  std::int64_t seq;
  std::int64_t finished_seq;
  std::string finished_op;
  double open_s;
};

using Stack = std::vector<std::pair<std::string, double>>;

// One rank's hang record with collective state: where it is stuck, each group's state.
struct CollectiveReport {
  int rank;
  Stack stack;
  std::vector<Group> groups;
  std::int64_t iteration;
  bool startup = false;
  double stalled_s = 42.0;
};

// The logs.jsonl line of `report`.
std::string collective_line(const CollectiveReport& report) {
  json request = json::parse(hang_line(report.rank, 100, 1, report.stalled_s, report.stack));
  json& attributes = request["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["attributes"];
  const auto column = [&](const std::string& key, auto value_of) {
    json values = json::array();
    for (const Group& group : report.groups) values.push_back(value_of(group));
    attributes.push_back(
        hang_attribute("lens.hang.collective." + key, {{"arrayValue", {{"values", values}}}}));
  };
  column("group", [](const Group& g) { return hang_string(g.name); });
  column("group_ranks", [](const Group& g) { return hang_string(g.ranks); });
  column("op", [](const Group& g) { return hang_string(g.op); });
  column("seq", [](const Group& g) { return hang_int(g.seq); });
  column("bytes", [](const Group&) { return hang_int(4096); });
  column("finished_seq", [](const Group& g) { return hang_int(g.finished_seq); });
  column("finished_op", [](const Group& g) { return hang_string(g.finished_op); });
  column("open_s", [](const Group& g) { return hang_double(g.open_s); });
  attributes.push_back(hang_attribute("lens.hang.iteration", hang_int(report.iteration)));
  attributes.push_back(hang_attribute("lens.hang.startup", {{"boolValue", report.startup}}));
  return request.dump();
}

// The verdicts of a log that read `reports`, in that order.
std::vector<std::string> verdicts_of(const std::vector<CollectiveReport>& reports) {
  HangLog log;
  for (const CollectiveReport& report : reports) log.consume_line(collective_line(report));
  return hang_verdicts(log.ranks());
}

TEST(HangVerdict, NamesTheGroupTheSequenceTheWaitingRanksAndTheMissingOne) {
  HangLog log;
  for (int rank : {0, 1, 2, 4, 5, 6, 7}) {
    log.consume_line(collective_line(
        {rank,
         kWaiting,
         {{"dp", "0-7", "all_reduce", 1234, 1233, "all_reduce", 611.6 + rank * 0.01},
          {"pp", "0,8", "send", 40, 40, "send", 0.0}},
         57}));
  }
  log.consume_line(
      collective_line({3,
                       {{"megatron.train_step", 641.0}, {"megatron.data.next_batch", 640.2}},
                       {{"dp", "0-7", "all_reduce", 1233, 1233, "all_reduce", 0.0},
                        {"pp", "0,8", "recv", 41, 41, "recv", 0.0}},
                       57}));
  EXPECT_EQ(hang_verdicts(log.ranks()),
            std::vector<std::string>{
                "hang in dp all_reduce #1234 (iteration 57): ranks 0-2,4-7 waiting 612 s; rank 3 "
                "never entered it — last finished all_reduce #1233, now in "
                "megatron.data.next_batch for 640 s"});
  const json rank3 = hangs_json(log.ranks())[3]["collectives"][0];
  EXPECT_EQ(rank3, json::parse(R"j({"group":"dp","group_ranks":"0-7","op":"all_reduce",
      "seq":1233,"bytes":4096,"finished_seq":1233,"finished_op":"all_reduce","inside":false,
      "open_s":0.0})j"));
  const std::string html = hangs_html(log.ranks());
  EXPECT_NE(html.find("<p class=\"hang-verdict\"><strong>hang in dp all_reduce #1234 (iteration "
                      "57): ranks 0-2,4-7 waiting 612 s; rank 3 never entered it"),
            std::string::npos)
      << html;
}

TEST(HangVerdict, EveryRankInsideNamesWhereEachIsTheOddOneFirst) {
  const Stack issuing = {{"megatron.train_step", 5.5}, {"megatron.grad_sync.start", 4.6}};
  EXPECT_EQ(verdicts_of({{0, kWaiting, {{"dp", "0-2", "all_reduce", 5, 4, "all_reduce", 4.5}}, 3},
                         {1, issuing, {{"dp", "0-2", "all_reduce", 5, 4, "all_reduce", 4.6}}, 3},
                         {2, kWaiting, {{"dp", "0-2", "all_reduce", 5, 4, "all_reduce", 4.4}}, 3}}),
            std::vector<std::string>{
                "hang in dp all_reduce #5 (iteration 3): every rank of dp entered it and none "
                "finished (stuck inside the collective): rank 1 in megatron.grad_sync.start for "
                "5 s; ranks 0,2 in megatron.grad_sync.finish for 42 s"});
}

TEST(HangVerdict, RanksOfOneGroupInDifferentCollectivesAreAMismatch) {
  EXPECT_EQ(
      verdicts_of({{0, kWaiting, {{"tp", "0-3", "all_reduce", 12, 11, "all_gather", 9.0}}, 8},
                   {1, kWaiting, {{"tp", "0-3", "broadcast", 12, 11, "all_gather", 9.0}}, 8},
                   {2, kWaiting, {{"tp", "0-3", "all_reduce", 12, 11, "all_gather", 9.0}}, 8},
                   {3, kWaiting, {{"tp", "0-3", "all_gather", 11, 10, "all_reduce", 9.0}}, 8}}),
      std::vector<std::string>{
          "hang in tp: mismatched collectives: rank 1 in broadcast #12; rank 3 in "
          "all_gather #11; ranks 0,2 in all_reduce #12"});
}

TEST(HangVerdict, SilentRanksGroupsOfOneNameAndStartUp) {
  // Two dp groups (one per pipeline stage): each named with its ranks. Rank 3 sent nothing.
  EXPECT_EQ(
      verdicts_of({{0, kWaiting, {{"dp", "0,1", "all_reduce", 7, 6, "all_reduce", 30.0}}, 4},
                   {1, kWaiting, {{"dp", "0,1", "all_reduce", 7, 6, "all_reduce", 31.0}}, 4},
                   {2, kWaiting, {{"dp", "2,3", "all_reduce", 7, 6, "all_reduce", 29.0}}, 4}}),
      (std::vector<std::string>{
          "hang in dp (ranks 2,3) all_reduce #7 (iteration 4): rank 2 waiting 29 s; rank 3 "
          "sent no hang report",
          "hang in dp (ranks 0,1) all_reduce #7 (iteration 4): every rank of dp (ranks 0,1) "
          "entered it and none finished (stuck inside the collective): ranks 0,1 in "
          "megatron.grad_sync.finish for 42 s"}));

  const Stack init = {{"megatron.pretrain", 12.3}, {"megatron.model_init", 12.1}};
  const Stack pretrain = {{"megatron.pretrain", 12.3}};
  EXPECT_EQ(
      verdicts_of(
          {{0, pretrain, {{"world", "0-2", "broadcast", 3, 2, "broadcast", 11.9}}, 0, true, 12.3},
           {1, init, {{"world", "0-2", "broadcast", 2, 2, "broadcast", 0.0}}, 0, true, 12.3},
           {2, pretrain, {{"world", "0-2", "broadcast", 3, 2, "broadcast", 11.8}}, 0, true, 12.3}}),
      std::vector<std::string>{
          "hang during start-up in world broadcast #3: ranks 0,2 waiting 12 s; rank 1 never "
          "entered it — last finished broadcast #2, now in megatron.model_init for 12 s"});
  // A rooted broadcast: the root waits in #1 for rank 1, which never came, while rank 2 got
  // its part and went on to #2: not a mismatch; the oldest open collective is the one named.
  const Stack pretrain_2s = {{"megatron.pretrain", 2.3}};
  EXPECT_EQ(
      verdicts_of({{0, pretrain_2s, {{"world", "0-2", "broadcast", 1, 0, "", 2.1}}, 0, true, 2.3},
                   {1, init, {{"world", "0-2", "", 0, 0, "", 0.0}}, 0, true, 2.3},
                   {2,
                    pretrain_2s,
                    {{"world", "0-2", "broadcast", 2, 1, "broadcast", 2.0}},
                    0,
                    true,
                    2.3}}),
      std::vector<std::string>{
          "hang during start-up in world broadcast #1: rank 0 waiting 2 s; rank 1 never "
          "entered it — no collective of it finished, now in megatron.model_init for 12 s; "
          "rank 2 finished it, now in broadcast #2"});
  // No collective open: the ranks' places.
  EXPECT_EQ(verdicts_of({{0, init, {}, 0, true, 20.4}, {1, {}, {}, 0, true, 20.0}}),
            std::vector<std::string>{"hang during start-up (no step for 20 s): rank 0 in "
                                     "megatron.model_init for 12 s; rank 1 with no open span"});
  // Not start-up and no collective open: no verdict (the no-progress line says where).
  HangLog plain;
  plain.consume_line(hang_line(0, 100, 1, 42.0, kWaiting));
  EXPECT_EQ(hang_verdicts(plain.ranks()), std::vector<std::string>{});
}

TEST(HangVerdict, PointToPointIsNotMatchedBySequenceNumberAndComesAfterTheCollectives) {
  // Pipeline 2 x data parallel 2 (real layout): rank 1 (stage 0) stuck loading data; rank 3
  // (stage 1) waits for its activations; ranks 0 and 2 wait in their stage's gradient all-reduce.
  const Stack receiving = {{"megatron.train_step", 2.4}, {"megatron.p2p.recv_forward", 2.3}};
  EXPECT_EQ(verdicts_of({{0,
                          kWaiting,
                          {{"dp", "0,1", "all_reduce", 5, 4, "all_reduce", 2.2},
                           {"pp", "0,2", "all_reduce", 8, 8, "all_reduce", 0.0}},
                          3},
                         {1,
                          kLoading,
                          {{"dp", "0,1", "all_reduce", 4, 4, "all_reduce", 0.0},
                           {"pp", "1,3", "all_reduce", 8, 8, "all_reduce", 0.0}},
                          3},
                         {2,
                          kWaiting,
                          {{"dp", "2,3", "all_reduce", 5, 4, "all_reduce", 2.2},
                           {"pp", "0,2", "all_reduce", 8, 8, "all_reduce", 0.0}},
                          3},
                         {3,
                          receiving,
                          {{"dp", "2,3", "all_reduce", 4, 4, "all_reduce", 0.0},
                           {"pp", "1,3", "recv", 9, 8, "all_reduce", 2.3}},
                          3}}),
            (std::vector<std::string>{
                "hang in dp (ranks 0,1) all_reduce #5 (iteration 3): rank 0 waiting 2 s; rank 1 "
                "never entered it — last finished all_reduce #4, now in megatron.data.next_batch "
                "for 42 s",
                "hang in dp (ranks 2,3) all_reduce #5 (iteration 3): rank 2 waiting 2 s; rank 3 "
                "never entered it — last finished all_reduce #4, now in "
                "megatron.p2p.recv_forward for 2 s",
                "hang in pp (ranks 1,3) point-to-point (iteration 3): rank 3 waiting in recv for "
                "2 s; rank 1 now in megatron.data.next_batch for 42 s"}));
}

TEST(RunHangs, TheVerdictComesFirstOnItsOwnLine) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("lens-run-verdict-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path logs = dir / "logs.jsonl";
  {
    std::ofstream out(logs);
    out << collective_line({0, kWaiting, {{"dp", "0,1", "all_reduce", 5, 4, "all_reduce", 3.2}}, 3})
        << "\n"
        << collective_line({1, kLoading, {{"dp", "0,1", "all_reduce", 4, 4, "all_reduce", 0.0}}, 3})
        << "\n";
  }
  cli::RunHangs hangs(logs, 2);
  hangs.update();
  EXPECT_EQ(hangs.line_if_due(cli::RunHangs::Clock::now()),
            "hang in dp all_reduce #5 (iteration 3): rank 0 waiting 3 s; rank 1 never entered it "
            "— last finished all_reduce #4, now in megatron.data.next_batch for 42 s\n"
            "lens run: no progress for 42 s: rank 0 in megatron.grad_sync.finish (41.9 s); rank 1 "
            "in megatron.data.next_batch (41.8 s)");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lens::report
