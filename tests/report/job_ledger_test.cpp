// The job ledger's accounting on hand-built runs (times in whole milliseconds, so every part is
// exact): a crashed run with a straggler and lost iterations, then a resumed run; a hung run; a
// failed run by its job span's error status; the order of runs; summary.json's "ledger"; the
// --job flag's parsing; and `lens report` on a DIR of two runs of one job that share a run id.
#include "report/job_ledger.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "report/report_options.hpp"
#include "report_fixtures.hpp"
#include "support/run_process.hpp"

namespace lens::report {
namespace {

constexpr std::int64_t kMs = 1'000'000;

SpanRecord span(const std::string& name, std::int64_t start_ms, std::int64_t end_ms,
                std::optional<std::int64_t> iteration = std::nullopt, bool error = false) {
  SpanRecord out;
  out.name = name;
  out.start_ns = start_ms * kMs;
  out.end_ns = end_ms * kMs;
  out.error = error;
  if (iteration) out.attributes.emplace_back("megatron.iteration", *iteration);
  return out;
}

void add(LedgerRunInput& run, int rank, SpanRecord record) {
  run.data.ranks[rank].rank = rank;
  run.data.ranks[rank].spans.push_back(std::move(record));
}

// A run read from DIR `source` with the given identity, no rank yet.
LedgerRunInput run_input(std::string source, std::string run_id, std::string run_uuid,
                         std::string job_uuid) {
  LedgerRunInput run;
  run.source = std::move(source);
  run.run_id = std::move(run_id);
  run.run_uuid = std::move(run_uuid);
  run.job_uuid = std::move(job_uuid);
  return run;
}

std::int64_t ms(const CauseTimes& times, Cause cause) { return times[index_of(cause)] / kMs; }

// Run A (crashed: no job span, not the last run): steps 1-4 on rank 0, 1-3 on rank 1 (its step 4
// never exported), a save after step 2, rank 1 waiting 10 ms longer than rank 0 in step 1's
// all-reduce. Run B resumes from iteration 2 (load 100 ms), steps 3-5, an evaluation after
// step 4, a final save, and completes.
std::vector<LedgerRunInput> crashed_then_resumed() {
  LedgerRunInput a = run_input("dir-a", "a", "uuid-a", "job");
  for (int rank : {0, 1}) {
    add(a, rank, span("megatron.model_init", rank * 10, 120));
    add(a, rank, span("megatron.train_step", 200, 300, 1));
    add(a, rank, span("megatron.grad_sync.finish", rank == 0 ? 280 : 270, 295));
    add(a, rank, span("megatron.train_step", 300, 400, 2));
    add(a, rank, span("megatron.save_checkpoint", 400, 450, 2));
    add(a, rank, span("megatron.train_step", 450, 550, 3));
  }
  add(a, 0, span("megatron.train_step", 550, 650, 4));
  LedgerRunInput b = run_input("dir-b", "b", "uuid-b", "job");
  for (int rank : {0, 1}) {
    add(b, rank, span("megatron.load_checkpoint", 1000, 1100));
    add(b, rank, span("megatron.train", 1150, 1600));
    add(b, rank, span("megatron.train_step", 1200, 1300, 3));
    add(b, rank, span("megatron.train_step", 1300, 1400, 4));
    add(b, rank, span("megatron.evaluate", 1400, 1450));
    add(b, rank, span("megatron.train_step", 1450, 1550, 5));
    add(b, rank, span("megatron.save_checkpoint", 1550, 1600, 5));
  }
  // Given out of order: the ledger orders runs by their first span.
  std::vector<LedgerRunInput> runs;
  runs.push_back(std::move(b));
  runs.push_back(std::move(a));
  return runs;
}

TEST(JobLedger, ACrashedRunAndItsResumeAddUpExactlyPerRankAndRun) {
  const JobLedger ledger = account_job(crashed_then_resumed());
  ASSERT_EQ(ledger.runs.size(), 2U);
  EXPECT_EQ(ledger.start_ns, 0);
  EXPECT_EQ(ledger.wall_ns(), 1600 * kMs);
  EXPECT_EQ(ledger.redone, 2U);

  const RunLedger& a = ledger.runs[0];
  EXPECT_EQ(a.run_id, "a");
  EXPECT_EQ(a.end, RunEnd::failed);
  EXPECT_EQ(a.owned_end_ns, 1000 * kMs);
  EXPECT_EQ(a.iterations, 4U);
  EXPECT_EQ(a.first_iteration, 1);
  EXPECT_EQ(a.last_iteration, 4);
  EXPECT_EQ(a.redone, 2U);
  EXPECT_EQ(a.redone_first, 3);
  EXPECT_EQ(a.redone_last, 4);
  const RunLedger& b = ledger.runs[1];
  EXPECT_EQ(b.run_id, "b");
  EXPECT_EQ(b.end, RunEnd::completed);
  EXPECT_EQ(b.redone, 0U);
  EXPECT_EQ(b.first_iteration, 3);

  ASSERT_EQ(ledger.ranks.size(), 2U);
  const CauseTimes& r0 = ledger.ranks[0].time;
  EXPECT_EQ(ms(r0, Cause::startup), 300);  // 0-200 and 1100-1200
  EXPECT_EQ(ms(r0, Cause::productive), 500);
  EXPECT_EQ(ms(r0, Cause::checkpoint_load), 100);
  EXPECT_EQ(ms(r0, Cause::checkpoint_save), 100);
  EXPECT_EQ(ms(r0, Cause::evaluation), 50);
  EXPECT_EQ(ms(r0, Cause::straggler_wait), 0);
  EXPECT_EQ(ms(r0, Cause::lost), 200);  // steps 3 and 4 of run A
  EXPECT_EQ(ms(r0, Cause::failure), 0);
  EXPECT_EQ(ms(r0, Cause::restart), 350);
  EXPECT_EQ(ms(r0, Cause::shutdown), 0);
  EXPECT_EQ(ms(r0, Cause::hang), 0);
  const CauseTimes& r1 = ledger.ranks[1].time;
  EXPECT_EQ(ms(r1, Cause::startup), 300);
  EXPECT_EQ(ms(r1, Cause::productive), 490);
  EXPECT_EQ(ms(r1, Cause::straggler_wait), 10);
  EXPECT_EQ(ms(r1, Cause::lost), 100);
  EXPECT_EQ(ms(r1, Cause::failure), 100);  // its last step's end (550) to run A's last span
  EXPECT_EQ(ms(r1, Cause::restart), 350);
  for (const RankLedger& rank : ledger.ranks) {
    std::int64_t sum = 0;
    for (std::int64_t value : rank.time) sum += value;
    EXPECT_EQ(sum, ledger.wall_ns()) << rank.rank;
  }
  EXPECT_EQ(ms(ledger.total, Cause::productive), 495);
  EXPECT_EQ(ms(ledger.total, Cause::straggler_wait), 5);
  EXPECT_EQ(ms(ledger.total, Cause::lost), 150);
  EXPECT_EQ(ms(ledger.total, Cause::failure), 50);
  std::int64_t total = 0;
  for (std::int64_t value : ledger.total) total += value;
  EXPECT_EQ(total, ledger.wall_ns());

  EXPECT_EQ(ms(a.time, Cause::startup), 200);
  EXPECT_EQ(ms(a.time, Cause::productive), 195);
  EXPECT_EQ(ms(a.time, Cause::restart), 350);
  EXPECT_EQ(ms(a.time, Cause::lost), 150);
  EXPECT_EQ(ms(b.time, Cause::checkpoint_load), 100);
  EXPECT_EQ(ms(b.time, Cause::productive), 300);
  EXPECT_EQ(ms(b.time, Cause::checkpoint_save), 50);
  std::int64_t a_sum = 0, b_sum = 0;
  for (std::size_t c = 0; c < kCauseCount; ++c) {
    a_sum += a.time[c];
    b_sum += b.time[c];
  }
  EXPECT_EQ(a_sum, 1000 * kMs);
  EXPECT_EQ(b_sum, 600 * kMs);
}

TEST(JobLedger, AHungRunEndsInHangAndAnInterruptedJobSpanInFailure) {
  auto run_with = [](const std::string& id, std::int64_t at, bool train_error) {
    LedgerRunInput run;
    run.run_id = id;
    for (int rank : {0, 1}) {
      add(run, rank, span("megatron.train", at, at + 500, std::nullopt, train_error));
      add(run, rank, span("megatron.train_step", at + 100, at + 200, 1));
    }
    return run;
  };
  std::vector<LedgerRunInput> runs;
  runs.push_back(run_with("hung", 0, true));
  runs.back().hung_ranks = {1};
  runs.push_back(run_with("interrupted", 1000, true));
  // Rank 0's step 2 was ended by SIGTERM (error status): not finished, its time is the failure's.
  add(runs.back(), 0, span("megatron.train_step", 1200, 1300, 2, true));
  // Rank 1's step 2 was ended by the shutdown (nemo.span.truncated): not finished either.
  SpanRecord truncated = span("megatron.train_step", 1200, 1300, 2);
  truncated.attributes.emplace_back("nemo.span.truncated", true);
  add(runs.back(), 1, truncated);
  runs.push_back(run_with("clean", 2000, false));
  const JobLedger ledger = account_job(runs);
  ASSERT_EQ(ledger.runs.size(), 3U);
  EXPECT_EQ(ledger.runs[0].end, RunEnd::hung);
  EXPECT_EQ(ledger.runs[1].end, RunEnd::failed);
  EXPECT_EQ(ledger.runs[2].end, RunEnd::completed);
  // Each run's iteration 1 is done again by the next one.
  EXPECT_EQ(ledger.redone, 2U);
  const CauseTimes& r0 = ledger.ranks[0].time;
  EXPECT_EQ(ms(r0, Cause::hang), 300);
  EXPECT_EQ(ms(r0, Cause::failure), 300);
  EXPECT_EQ(ms(r0, Cause::shutdown), 300);
  EXPECT_EQ(ms(r0, Cause::lost), 200);
  EXPECT_EQ(ms(r0, Cause::productive), 100);
  EXPECT_EQ(ms(r0, Cause::startup), 300);
  EXPECT_EQ(ms(r0, Cause::restart), 1000);
  EXPECT_EQ(ledger.ranks[1].time, r0);
  EXPECT_EQ(ledger.runs[1].last_iteration, 1);
  EXPECT_EQ(ledger.wall_ns(), 2500 * kMs);
}

TEST(JobLedger, RunsWithoutSpansAreLeftOutAndSeveralJobIdentitiesAreKept) {
  std::vector<LedgerRunInput> runs(3);
  runs[0].job_uuid = "job-1";
  add(runs[0], 0, span("megatron.train_step", 0, 10, 1));
  runs[1].job_uuid = "job-2";
  add(runs[1], 0, span("megatron.train_step", 20, 30, 2));
  runs[2].job_uuid = "job-3";
  runs[2].data.ranks[0].rank = 0;  // a rank, no span
  const JobLedger ledger = account_job(runs);
  EXPECT_EQ(ledger.runs.size(), 2U);
  EXPECT_EQ(ledger.job_uuids, (std::set<std::string>{"job-1", "job-2"}));
  // Without job spans, only the last run counts as completed.
  EXPECT_EQ(ledger.runs[0].end, RunEnd::failed);
  EXPECT_EQ(ledger.runs[1].end, RunEnd::completed);
  EXPECT_EQ(ms(ledger.total, Cause::productive), 20);
  EXPECT_EQ(ms(ledger.total, Cause::restart), 10);
  EXPECT_TRUE(account_job({}).runs.empty());
}

TEST(JobLedger, SummaryJsonHasTheLedger) {
  const JobLedger ledger = account_job(crashed_then_resumed());
  const nlohmann::json json = ledger_json(ledger);
  EXPECT_EQ(json.at("wall_s"), 1.6);
  EXPECT_EQ(json.at("redone_iterations"), 2);
  EXPECT_EQ(json.at("job_uuids"), nlohmann::json::array({"job"}));
  EXPECT_EQ(json.at("causes").size(), kCauseCount);
  EXPECT_EQ(json.at("causes").front(), "startup");
  EXPECT_EQ(json.at("total_s").at("productive"), 0.495);
  EXPECT_EQ(json.at("total_s").at("lost"), 0.15);
  EXPECT_EQ(json.at("productive_fraction"),
            static_cast<double>(495 * kMs) / static_cast<double>(1600 * kMs));
  ASSERT_EQ(json.at("runs").size(), 2U);
  const nlohmann::json& a = json.at("runs")[0];
  EXPECT_EQ(a.at("run_id"), "a");
  EXPECT_EQ(a.at("source"), "dir-a");
  EXPECT_EQ(a.at("end"), "failed");
  EXPECT_EQ(a.at("owned_s"), 1.0);
  EXPECT_EQ(a.at("redone_iterations"), 2);
  EXPECT_EQ(a.at("redone_first"), 3);
  EXPECT_EQ(a.at("redone_last"), 4);
  EXPECT_EQ(a.at("time_s").at("restart"), 0.35);
  EXPECT_EQ(json.at("runs")[1].at("end"), "completed");
  EXPECT_EQ(json.at("runs")[1].at("redone_first"), nullptr);
  ASSERT_EQ(json.at("ranks").size(), 2U);
  EXPECT_EQ(json.at("ranks")[1].at("time_s").at("straggler_wait"), 0.01);
  const std::vector<std::string> lines = ledger_summary_lines(ledger);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(lines[0], "job: 2 runs (1 did not complete), wall time 1.6 s, 2 iterations redone");
  EXPECT_EQ(lines[1],
            "job time per rank: startup 0.3 s (18.8%), productive 0.5 s (30.9%), "
            "checkpoint_load 0.1 s (6.2%), checkpoint_save 0.1 s (6.2%), evaluation 0.1 s "
            "(3.1%), straggler_wait 0.0 s (0.3%), lost 0.1 s (9.4%), failure 0.1 s (3.1%), "
            "restart 0.3 s (21.9%)");
  const std::string html = ledger_html(ledger);
  EXPECT_NE(html.find("<h2 id=\"job-ledger\">Job ledger</h2>"), std::string::npos);
  EXPECT_NE(html.find("run 1 (a)<br><small>failed, 1.00 s</small>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td class=\"num\">2 (3-4)</td>"), std::string::npos) << html;
}

TEST(JobLedger, TheJobFlagTakesDirsAndOnlyOutputFlags) {
  Result<ReportOptions> options = parse_report_options({"--job", "a", "b"});
  ASSERT_TRUE(options.ok()) << options.message();
  EXPECT_EQ(options->job, (std::vector<std::filesystem::path>{"a", "b"}));
  EXPECT_EQ(options->html, std::filesystem::path("a/job.html"));
  EXPECT_TRUE(options->compare.empty());
  EXPECT_EQ(parse_report_options({"a", "--job=1"}).message(), "option '--job' takes no value");
  EXPECT_EQ(parse_report_options({"--job", "a", "--run-id", "x"}).message(),
            "option '--run-id' does not apply with --job; accepted there: -o, --help");
  EXPECT_EQ(parse_report_options({"--job", "a", "--threshold", "0.2"}).message(),
            "option '--threshold' does not apply with --job; accepted there: -o, --help");
  EXPECT_EQ(parse_report_options({"--jobs", "a"}).message(),
            "unknown option '--jobs'; accepted: -o, --perfetto, --perfetto-all-ranks, "
            "--threshold, --window, --run-id, --min-excess, --false-alarm-rate, --job, --help");
  EXPECT_NE(std::string(kReportUsage).find("lens report --job DIR [DIR...] [-o job.html]"),
            std::string::npos);
}

}  // namespace
}  // namespace lens::report

namespace lens::report {
namespace {

// Two runs of one job in one DIR that share nemo.run.id (a SLURM job's restarts: the run id is
// SLURM_JOB_ID) and differ in nemo.lens.run_uuid: the run report and --job both account them.
TEST(JobLedgerCli, RunsOfOneJobSharingARunIdAreToldApartByRunUuid) {
  testing::TempDir dir("ledger-cli");
  for (int run = 0; run < 2; ++run) {
    testing::RunSpec spec;
    spec.ranks = 2;
    spec.iterations = 10;
    auto requests = testing::make_traces(spec);
    const std::int64_t shift = run * 60'000 * kMs;  // the second run a minute later
    for (auto& request : requests) {
      for (auto& resource_spans : *request.mutable_resource_spans()) {
        auto* attributes = resource_spans.mutable_resource()->mutable_attributes();
        auto* run_uuid = attributes->Add();
        run_uuid->set_key("nemo.lens.run_uuid");
        run_uuid->mutable_value()->set_string_value("run-uuid-" + std::to_string(run));
        auto* job_uuid = attributes->Add();
        job_uuid->set_key("nemo.lens.job_uuid");
        job_uuid->mutable_value()->set_string_value("job-uuid");
        for (auto& scope : *resource_spans.mutable_scope_spans()) {
          for (auto& span : *scope.mutable_spans()) {
            span.set_start_time_unix_nano(span.start_time_unix_nano() + shift);
            span.set_end_time_unix_nano(span.end_time_unix_nano() + shift);
          }
        }
      }
    }
    testing::append_lines(dir.path() / "traces.jsonl", requests);
  }
  // Rank 1 of the first run reported a hang (lens.hang, docs/configuration.md) 4 s after its
  // start, and no step finished after it.
  const nlohmann::json attribute_list = nlohmann::json::array(
      {{{"key", "dl.rank"}, {"value", {{"intValue", "1"}}}},
       {{"key", "nemo.run.id"}, {"value", {{"stringValue", "run-fixture"}}}},
       {{"key", "nemo.lens.run_uuid"}, {"value", {{"stringValue", "run-uuid-0"}}}},
       {{"key", "nemo.lens.job_uuid"}, {"value", {{"stringValue", "job-uuid"}}}}});
  const nlohmann::json hang = {
      {"resourceLogs",
       {{{"resource", {{"attributes", attribute_list}}},
         {"scopeLogs",
          {{{"logRecords",
             {{{"timeUnixNano", std::to_string(testing::kOriginNs + 4000 * kMs)},
               {"eventName", "lens.hang"},
               {"attributes",
                {{{"key", "lens.hang.stalled_s"}, {"value", {{"doubleValue", 2.0}}}},
                 {{"key", "lens.hang.timeout_s"}, {"value", {{"doubleValue", 1.0}}}}}}}}}}}}}}}};
  std::ofstream(dir.path() / "logs.jsonl") << hang.dump() << "\n";
  const lens::testing::ProcessResult report = lens::testing::run_process(
      LENS_CLI_PATH, {"report", dir.path().string()}, std::nullopt, std::chrono::seconds(60));
  ASSERT_EQ(report.exit_code, 0) << report.err;
  // The first run hung, the second completed (its megatron.train spans ended without error) and
  // did all 10 iterations of the first again.
  EXPECT_NE(report.out.find("job: 2 runs (1 did not complete), wall time "), std::string::npos)
      << report.out;
  EXPECT_NE(report.out.find(", 10 iterations redone\n"), std::string::npos) << report.out;
  const nlohmann::json summary =
      nlohmann::json::parse(testing::read_text(dir.path() / "summary.json"));
  const nlohmann::json& ledger = summary.at("ledger");
  ASSERT_EQ(ledger.at("runs").size(), 2U);
  EXPECT_EQ(ledger.at("runs")[0].at("run_uuid"), "run-uuid-0");
  EXPECT_EQ(ledger.at("runs")[0].at("run_id"), "run-fixture");
  EXPECT_EQ(ledger.at("runs")[0].at("redone_iterations"), 10);
  EXPECT_EQ(ledger.at("runs")[0].at("end"), "hung");
  EXPECT_GT(ledger.at("runs")[0].at("time_s").at("hang").get<double>(), 0.0);
  EXPECT_EQ(ledger.at("runs")[1].at("end"), "completed");
  EXPECT_EQ(ledger.at("runs")[1].at("run_uuid"), "run-uuid-1");
  EXPECT_NE(testing::read_text(dir.path() / "report.html").find("<h2 id=\"job-ledger\">"),
            std::string::npos);

  const lens::testing::ProcessResult job =
      lens::testing::run_process(LENS_CLI_PATH, {"report", "--job", dir.path().string()},
                                 std::nullopt, std::chrono::seconds(60));
  ASSERT_EQ(job.exit_code, 0) << job.err;
  EXPECT_EQ(job.out.substr(job.out.rfind("job ledger: ")),
            "job ledger: " + (dir.path() / "job.html").string() +
                "\nsummary: " + (dir.path() / "summary.json").string() + "\n");
  const nlohmann::json merged =
      nlohmann::json::parse(testing::read_text(dir.path() / "summary.json"));
  EXPECT_TRUE(merged.contains("completeness"));  // the run report's summary is kept
  EXPECT_EQ(merged.at("ledger").at("redone_iterations"), 10);

  const lens::testing::ProcessResult missing = lens::testing::run_process(
      LENS_CLI_PATH, {"report", "--job", "/no/such/run"}, std::nullopt, std::chrono::seconds(60));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err,
            "lens report: cannot read DIR '/no/such/run': no such directory; accepted: a "
            "directory of OTLP JSON line files\n");
}

}  // namespace
}  // namespace lens::report
