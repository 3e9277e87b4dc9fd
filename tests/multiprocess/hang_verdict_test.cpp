// The hang verdict joined across ranks by process group and sequence number (issue 33), with
// real ranks of the example trainer under `lens run` on loopback: a rank stuck in data loading
// while the others wait in the gradient all-reduce, a rank stuck inside that all-reduce, and a
// rank stuck in start-up before the first step. Each run is bounded (short hang timeouts, a
// deadline on every wait) and ended with SIGINT; `lens run` prints the verdict while the ranks
// hang and summary.json and report.html carry it afterwards.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lens_run_child.hpp"
#include "support/spawn_args.hpp"
#include "support/spawned_child.hpp"
#include "test_directory.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

using lens::testing::file_text;

class HangVerdict : public TestDirectory {
 protected:
  HangVerdict() : TestDirectory("lens-hang-verdict-test", /*keep_after_failure=*/true) {}

  // Three ranks (data parallel 3) of the trainer with `extra` flags under `lens run`, until its
  // output has a verdict line; then SIGINT. Returns lens run's output; `summary` gets
  // summary.json, `page` report.html.
  std::string run_until_verdict(const std::vector<std::string>& extra,
                                const std::map<std::string, std::string>& env, json& summary,
                                std::string& page) {
    std::vector<std::string> args = {"--nproc-per-node",
                                     "3",
                                     "--out",
                                     (dir_ / "run").string(),
                                     "--",
                                     LENS_TRAIN_LOOP_PATH,
                                     "--train-iters",
                                     "100",
                                     "--eval-iters",
                                     "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::map<std::string, std::string> all = env;
    all["OTEL_BLRP_SCHEDULE_DELAY"] = "200";
    LensRun run(dir_, args, all);
    EXPECT_TRUE(run.wait_for_output("lens run: hang ", 90s)) << run.out() << run.err();
    run.signal(SIGINT);
    EXPECT_EQ(run.wait(60s), 130) << run.out() << run.err();
    summary = json::parse(file_text(dir_ / "run" / "summary.json"), nullptr, false);
    page = file_text(dir_ / "run" / "report.html");
    return run.out();
  }
};

// The verdict line `lens run` printed, and the same first one in summary.json and the page.
void expect_verdict(const std::string& out, const json& summary, const std::string& page,
                    const std::regex& verdict) {
  std::smatch found;
  ASSERT_TRUE(std::regex_search(out, found, std::regex("lens run: (hang [^\n]*)\n"))) << out;
  EXPECT_TRUE(std::regex_match(found[1].str(), verdict)) << out;
  ASSERT_TRUE(summary.is_object()) << "summary.json is not JSON";
  ASSERT_FALSE(summary.at("hang_verdicts").empty()) << summary.dump();
  const std::string first = summary.at("hang_verdicts").front();
  EXPECT_TRUE(std::regex_match(first, verdict)) << first;
  EXPECT_NE(page.find("<p class=\"hang-verdict\"><strong>hang "), std::string::npos);
}

TEST_F(HangVerdict, ARankStuckInDataLoadingIsNamedAsTheOneThatNeverEntered) {
  json summary;
  std::string page;
  const std::string out =
      run_until_verdict({"--hang-rank", "1", "--hang-at", "3", "--hang-stage", "data"},
                        {{"NEMO_LENS_HANG_TIMEOUT", "1"}}, summary, page);
  // Two dp all-reduces per iteration (gradients, loss): iteration 3's gradients are #5.
  expect_verdict(
      out, summary, page,
      std::regex(
          R"re(hang in dp all_reduce #5 \(iteration 3\): ranks 0,2 waiting \d+ s; rank 1 never entered it — last finished all_reduce #4, now in megatron\.data\.next_batch for \d+ s)re"));
}

TEST_F(HangVerdict, ARankStuckInsideTheAllReduceIsNamed) {
  json summary;
  std::string page;
  const std::string out =
      run_until_verdict({"--hang-rank", "1", "--hang-at", "3", "--hang-stage", "grad_sync"},
                        {{"NEMO_LENS_HANG_TIMEOUT", "1"}}, summary, page);
  expect_verdict(
      out, summary, page,
      std::regex(
          R"re(hang in dp all_reduce #5 \(iteration 3\): every rank of dp entered it and none finished \(stuck inside the collective\): rank 1 in megatron\.grad_sync\.start for \d+ s; ranks 0,2 in megatron\.grad_sync\.finish for \d+ s)re"));
  // Each rank's report carries the group's state: dp, its ranks, the operation and numbers.
  for (const json& hang : summary.at("hangs")) {
    json dp;
    for (const json& group : hang.at("collectives")) {
      if (group.at("group") == "dp") dp = group;
    }
    ASSERT_TRUE(dp.is_object()) << hang.dump();
    EXPECT_EQ(dp.at("group"), "dp") << hang.dump();
    EXPECT_EQ(dp.at("group_ranks"), "0-2") << hang.dump();
    EXPECT_EQ(dp.at("op"), "all_reduce") << hang.dump();
    EXPECT_EQ(dp.at("seq"), 5) << hang.dump();
    EXPECT_EQ(dp.at("finished_seq"), 4) << hang.dump();
    EXPECT_GT(dp.at("bytes").get<std::int64_t>(), 0) << hang.dump();
    EXPECT_EQ(hang.at("iteration"), 3) << hang.dump();
  }
}

TEST_F(HangVerdict, AHangInStartUpIsReported) {
  json summary;
  std::string page;
  const std::string out = run_until_verdict(
      {"--hang-rank", "1", "--hang-at-startup"},
      {{"NEMO_LENS_HANG_TIMEOUT", "1"}, {"NEMO_LENS_HANG_STARTUP_TIMEOUT", "2"}}, summary, page);
  // Ranks 0 and 2 wait in the first broadcasts after model set-up (the trace seed's): the root
  // (rank 0) for rank 1 in #1; rank 2, which got its part of #1 from the root, possibly in #2.
  expect_verdict(
      out, summary, page,
      std::regex(
          R"re(hang during start-up in world broadcast #\d+: (rank 0|ranks 0,2) waiting \d+ s; rank 1 never entered it — (last finished broadcast #\d+|no collective of it finished), now in megatron\.model_init for \d+ s(; rank 2 finished it, now in broadcast #\d+)?)re"));
  for (const json& hang : summary.at("hangs")) {
    EXPECT_EQ(hang.at("startup"), true) << hang.dump();
    EXPECT_EQ(hang.at("steps"), 0) << hang.dump();
    EXPECT_EQ(hang.at("timeout_s"), 2.0) << hang.dump();
  }
}

}  // namespace
