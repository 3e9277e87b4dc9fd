// The job ledger of a real job (issue 33): three runs of two example-trainer ranks under
// `lens run` on loopback, one SLURM job id (so one nemo.lens.job_uuid) and a checkpoint every 4
// iterations — run 1 crashes in iteration 7 (--crash-at), run 2 resumes from 4 and loses rank 1
// to kill -9 in iteration 11, run 3 resumes from 8 and completes 12 — give one ledger (from three
// DIRs, from one DIR holding all three runs, and in that DIR's run report) whose parts add up to
// the wall time of the spans and whose redone iterations are exactly 5-6 and 9-10.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/run_process.hpp"
#include "support/spawn_args.hpp"
#include "support/spawned_child.hpp"
#include "test_directory.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

using lens::testing::file_text;

// `lens ARGS` (run or report) in a child process, stdout and stderr into NAME.stdout and
// NAME.stderr of OUT_DIR, with a bounded wait.
class Child : public lens::testing::SpawnedChild {
 public:
  Child(const fs::path& out_dir, const std::string& name, const std::vector<std::string>& args,
        const std::map<std::string, std::string>& env = {})
      : SpawnedChild(lens::testing::joined({LENS_CLI_PATH}, args), out_dir / (name + ".stdout"),
                     out_dir / (name + ".stderr"), env) {}
};

// The child of `parent` whose environment has RANK=`rank` (a rank lens run started).
pid_t rank_process(pid_t parent, int rank) {
  const std::string wanted = "RANK=" + std::to_string(rank);
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = file_text(entry.path() / "stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid != parent) continue;
    std::string environ_text = file_text(entry.path() / "environ");
    std::istringstream variables(environ_text);
    for (std::string variable; std::getline(variables, variable, '\0');) {
      if (variable == wanted) return std::stoi(name);
    }
  }
  return -1;
}

// The first span's start and the last span's end over the traces.jsonl of `dirs`, read here
// without the report's code.
std::pair<std::int64_t, std::int64_t> span_extent(const std::vector<fs::path>& dirs) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  for (const fs::path& dir : dirs) {
    std::ifstream in(dir / "traces.jsonl");
    for (std::string line; std::getline(in, line);) {
      const json request = json::parse(line, nullptr, false);
      if (request.is_discarded()) continue;
      for (const json& resource : request.value("resourceSpans", json::array())) {
        for (const json& scope : resource.value("scopeSpans", json::array())) {
          for (const json& span : scope.value("spans", json::array())) {
            first = std::min<std::int64_t>(
                first, std::stoll(span.at("startTimeUnixNano").get<std::string>()));
            last = std::max<std::int64_t>(
                last, std::stoll(span.at("endTimeUnixNano").get<std::string>()));
          }
        }
      }
    }
  }
  return {first, last};
}

double sum_of(const json& seconds) {
  double sum = 0.0;
  for (const auto& [cause, value] : seconds.items()) sum += value.get<double>();
  return sum;
}

class JobLedgerRun : public TestDirectory {
 protected:
  JobLedgerRun() : TestDirectory("lens-job-ledger-test", /*keep_after_failure=*/true) {}

  // lens run of two ranks of the trainer into `name`, with the job's flags and `extra`.
  std::unique_ptr<Child> start_run(const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run",
                                     "--nproc-per-node",
                                     "2",
                                     "--out",
                                     (dir_ / name).string(),
                                     "--",
                                     LENS_TRAIN_LOOP_PATH,
                                     "--train-iters",
                                     "12",
                                     "--log-interval",
                                     "1",
                                     "--eval-iters",
                                     "1",
                                     "--eval-interval",
                                     "3",
                                     "--save-interval",
                                     "4",
                                     "--save",
                                     (dir_ / "checkpoints").string(),
                                     "--load",
                                     (dir_ / "checkpoints").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    // One SLURM job id: the runs share nemo.lens.job_uuid; each lens run has its own run id.
    // Spans leave the ranks within 100 ms, so a crash 1.5 s later loses none of a finished step.
    return std::make_unique<Child>(
        dir_, name, args,
        std::map<std::string, std::string>{{"SLURM_JOB_ID", "ledger-" + std::to_string(::getpid())},
                                           {"OTEL_BSP_SCHEDULE_DELAY", "100"}});
  }

  void check_ledger(const json& ledger, std::int64_t first_ns, std::int64_t last_ns,
                    double stopwatch_s) {
    const double measured_s = static_cast<double>(last_ns - first_ns) / 1e9;
    EXPECT_EQ(ledger.at("start_unix_ns"), first_ns);
    EXPECT_EQ(ledger.at("end_unix_ns"), last_ns);
    const double wall_s = ledger.at("wall_s");
    EXPECT_NEAR(sum_of(ledger.at("total_s")), measured_s, measured_s * 0.01) << ledger.dump(1);
    EXPECT_NEAR(wall_s, measured_s, 1e-6);
    EXPECT_LE(wall_s, stopwatch_s);
    for (const json& rank : ledger.at("ranks")) {
      EXPECT_NEAR(sum_of(rank.at("time_s")), measured_s, measured_s * 0.01) << rank.dump();
    }
    EXPECT_EQ(ledger.at("job_uuids").size(), 1U);
    EXPECT_EQ(ledger.at("redone_iterations"), 4);
    const json& runs = ledger.at("runs");
    ASSERT_EQ(runs.size(), 3U) << ledger.dump(1);
    const std::vector<std::string> ends = {"failed", "failed", "completed"};
    const std::vector<int> first = {1, 5, 9}, last = {6, 10, 12};
    const std::vector<int> redone = {2, 2, 0};
    const std::vector<json> redone_first = {5, 9, nullptr}, redone_last = {6, 10, nullptr};
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(runs[k].at("end"), ends[k]) << k;
      EXPECT_EQ(runs[k].at("ranks"), 2) << k;
      EXPECT_EQ(runs[k].at("first_iteration"), first[k]) << k;
      EXPECT_EQ(runs[k].at("last_iteration"), last[k]) << k;
      EXPECT_EQ(runs[k].at("redone_iterations"), redone[k]) << k;
      EXPECT_EQ(runs[k].at("redone_first"), redone_first[k]) << k;
      EXPECT_EQ(runs[k].at("redone_last"), redone_last[k]) << k;
    }
    const json& total = ledger.at("total_s");
    for (const char* cause : {"startup", "productive", "checkpoint_load", "checkpoint_save",
                              "evaluation", "lost", "failure", "restart"}) {
      EXPECT_GT(total.at(cause).get<double>(), 0.0) << cause;
    }
    EXPECT_EQ(total.at("hang"), 0.0);
    // Runs 2 and 3 each loaded a checkpoint (run 1 only looked for one).
    EXPECT_GT(runs[1].at("time_s").at("checkpoint_load").get<double>(), 0.0);
    EXPECT_GT(runs[2].at("time_s").at("checkpoint_load").get<double>(), 0.0);
    // Run 2's ranks waited from the kill to its end (rank 0 until lens run stopped it).
    EXPECT_GT(runs[1].at("time_s").at("failure").get<double>(), 0.0);
  }
};

TEST_F(JobLedgerRun, ACrashAKilledRankAndAResumeGiveOneExactLedger) {
  fs::create_directories(dir_ / "checkpoints");
  const auto started = std::chrono::steady_clock::now();
  {
    auto run = start_run("run1", {"--crash-at", "7", "--slow-ranks", "0-1", "--slow-ms", "1500",
                                  "--slow-from", "7"});
    ASSERT_EQ(run->wait(), 3) << run->out() << run->err();
    EXPECT_NE(run->out().find("crashing in iteration 7 (--crash-at)"), std::string::npos)
        << run->out();
  }
  {
    auto run = start_run("run2", {"--slow-ranks", "0-1", "--slow-ms", "4000", "--slow-stage",
                                  "data", "--slow-from", "11"});
    ASSERT_TRUE(run->wait_for_output("[rank 0]  iteration       10/")) << run->out() << run->err();
    EXPECT_NE(run->out().find("loaded checkpoint at iteration 4"), std::string::npos) << run->out();
    std::this_thread::sleep_for(1s);  // in iteration 11's slow data loading
    const pid_t rank1 = rank_process(run->pid(), 1);
    ASSERT_GT(rank1, 0);
    ASSERT_EQ(::kill(rank1, SIGKILL), 0);
    EXPECT_EQ(run->wait(), 137) << run->out() << run->err();
  }
  {
    auto run = start_run("run3", {});
    ASSERT_EQ(run->wait(), 0) << run->out() << run->err();
    EXPECT_NE(run->out().find("loaded checkpoint at iteration 8"), std::string::npos) << run->out();
  }
  const double stopwatch_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::vector<fs::path> dirs = {dir_ / "run1", dir_ / "run2", dir_ / "run3"};
  const auto [first_ns, last_ns] = span_extent(dirs);

  Child report(dir_, "report",
               {"report", "--job", dirs[0].string(), dirs[1].string(), dirs[2].string(), "-o",
                (dir_ / "job.html").string()});
  ASSERT_EQ(report.wait(), 0) << report.out() << report.err();
  EXPECT_NE(report.out().find("job: 3 runs (2 did not complete), wall time "), std::string::npos)
      << report.out();
  EXPECT_NE(report.out().find(", 4 iterations redone\n"), std::string::npos) << report.out();
  const json summary = json::parse(file_text(dir_ / "summary.json"));
  check_ledger(summary.at("ledger"), first_ns, last_ns, stopwatch_s);
  const std::string page = file_text(dir_ / "job.html");
  EXPECT_NE(page.find("<h2 id=\"job-ledger\">Job ledger</h2>"), std::string::npos);

  // One DIR holding the three runs: told apart by nemo.lens.run_uuid.
  fs::create_directories(dir_ / "all");
  for (const char* file : {"traces.jsonl", "metrics.jsonl", "logs.jsonl"}) {
    std::ofstream all(dir_ / "all" / file, std::ios::binary);
    for (const fs::path& dir : dirs) all << file_text(dir / file);
  }
  Child merged(dir_, "merged", {"report", "--job", (dir_ / "all").string()});
  ASSERT_EQ(merged.wait(), 0) << merged.out() << merged.err();
  const json merged_summary = json::parse(file_text(dir_ / "all" / "summary.json"));
  check_ledger(merged_summary.at("ledger"), first_ns, last_ns, stopwatch_s);
  EXPECT_TRUE(fs::exists(dir_ / "all" / "job.html"));

  // The run report of that DIR recognises one job's runs and shows the ledger too.
  Child plain(dir_, "plain", {"report", (dir_ / "all").string()});
  ASSERT_EQ(plain.wait(), 0) << plain.out() << plain.err();
  EXPECT_NE(plain.out().find(", 4 iterations redone\n"), std::string::npos) << plain.out();
  const json plain_summary = json::parse(file_text(dir_ / "all" / "summary.json"));
  EXPECT_TRUE(plain_summary.contains("completeness")) << plain_summary.dump(1);
  check_ledger(plain_summary.at("ledger"), first_ns, last_ns, stopwatch_s);
  EXPECT_NE(file_text(dir_ / "all" / "report.html").find("<h2 id=\"job-ledger\">Job ledger</h2>"),
            std::string::npos);
}

TEST(TrainerCrashAt, IsInTheHelpAndRejectsABadIteration) {
  const lens::testing::ProcessResult help =
      lens::testing::run_process(LENS_TRAIN_LOOP_PATH, {"--help"}, std::nullopt, 30s);
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("  --crash-at ITER       every rank exits with status 3 inside iteration "
                          "ITER (after\n"),
            std::string::npos)
      << help.out;
  const lens::testing::ProcessResult bad =
      lens::testing::run_process(LENS_TRAIN_LOOP_PATH, {"--crash-at", "-1"}, std::nullopt, 30s);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(
      bad.err,
      "simple_train_loop: --crash-at: '-1' is not a valid value; accepted: an integer >= 0\n");
}

}  // namespace
