// `lens report` as a user runs it: the summary and the files written, the stall sentence, and
// the exact one-line errors (exit status 2) for a missing or empty DIR and bad flags.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "report_fixtures.hpp"
#include "support/run_process.hpp"

namespace lens::report {
namespace {

using lens::testing::ProcessResult;
using testing::TempDir;

ProcessResult lens(const std::vector<std::string>& args) {
  std::vector<std::string> all{"report"};
  all.insert(all.end(), args.begin(), args.end());
  return lens::testing::run_process(LENS_CLI_PATH, all, std::nullopt, std::chrono::seconds(60));
}

TEST(ReportCli, WritesTheReportAndTheTraceAndPrintsTheSummary) {
  TempDir dir("cli-ok");
  testing::write_run(dir.path(), {.ranks = 4, .iterations = 20, .slow_rank = 2, .slow_ms = 100});
  const ProcessResult result = lens({dir.path().string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const std::string d = dir.path().string();
  EXPECT_EQ(result.out,
            "rank 2 spends +100.0 ms per step in forward_backward from iteration 1 on; the other "
            "ranks wait for it in communication (20% of the run; 95% CI +100.0 to +100.0 ms)\n"
            "ranks: 4 of world size 4, iterations: 20 (1-20), spans: 740, metric points: 64, "
            "log records: 0\n"
            "step time ms (median/p90): rank 0 390.0/390.0, rank 1 390.0/390.0, rank 2 "
            "390.0/390.0, rank 3 390.0/390.0\n"
            "report: " +
                d +
                "/report.html\n"
                "summary: " +
                d +
                "/summary.json\n"
                "perfetto trace: " +
                d + "/trace.json (open in ui.perfetto.dev)\n");
  EXPECT_TRUE(std::filesystem::is_regular_file(dir.path() / "report.html"));
  const auto trace = nlohmann::json::parse(testing::read_text(dir.path() / "trace.json"));
  EXPECT_FALSE(trace["traceEvents"].empty());
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "report.html.tmp"));
  // 100 ms of every 390 ms step, steps 500 ms apart: 2000 of 390 + 19 x 500 = 9890 ms.
  EXPECT_EQ(nlohmann::json::parse(testing::read_text(dir.path() / "summary.json")),
            nlohmann::json::parse(R"json({
              "run_id": "run-fixture", "ranks": 4, "iterations_compared": 20,
              "first_iteration": 1, "last_iteration": 20, "median_step_ms": 390.0,
              "run_ms": 9890.0, "exposed_ms": 2000.0, "hangs": [], "hang_verdicts": [],
              "chart_warnings": [],
              "suspect_test": {"false_alarm_rate": 0.01, "min_excess_ms": 7.8,
                               "windows_tested": 272, "z_critical": 3.96},
              "suspects": [{"kind": "rank", "rank": 2, "ranks": [2], "group": null,
                            "phase": "forward_backward", "excess_ms_per_step": 100.0,
                            "ci_ms": [100.0, 100.0], "z": 13.45,
                            "first_iteration": 1, "last_iteration": 20, "steps": 20,
                            "exposed_ms": 2000.0, "share": 0.202224, "others_wait": true,
                            "others_wait_in": "communication",
                            "sentence": "rank 2 spends +100.0 ms per step in forward_backward from iteration 1 on; the other ranks wait for it in communication (20% of the run; 95% CI +100.0 to +100.0 ms)"}],
              "completeness": [
                {"rank": 0, "complete": null, "signals": {"spans": {"received": 185}, "metric points": {"received": 16}}},
                {"rank": 1, "complete": null, "signals": {"spans": {"received": 185}, "metric points": {"received": 16}}},
                {"rank": 2, "complete": null, "signals": {"spans": {"received": 185}, "metric points": {"received": 16}}},
                {"rank": 3, "complete": null, "signals": {"spans": {"received": 185}, "metric points": {"received": 16}}}],
              "silent_ranks": [], "stages": []})json"));

  // A second run reads the same directory, its own outputs included, to the same result.
  const ProcessResult again = lens({dir.path().string()});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.out, result.out);
  EXPECT_EQ(again.err, "");
}

// Issue 36: a span ending at 2^64-1 ns is left out of the charts; the one warning is on stderr,
// in the page and in summary.json's chart_warnings, word for word.
TEST(ReportCli, AnOutlyingSpanIsLeftOutOfTheChartsWithAWarning) {
  TempDir dir("cli-outlier");
  testing::write_run(dir.path(), {.ranks = 2, .iterations = 10});
  {
    std::ofstream traces(dir.path() / "traces.jsonl", std::ios::app);
    traces << R"({"resourceSpans":[{"resource":{"attributes":[{"key":"dl.rank","value":)"
              R"({"intValue":"0"}},{"key":"nemo.run.id","value":{"stringValue":"run-fixture"}}]},)"
              R"("scopeSpans":[{"spans":[{"traceId":"0000000000000000000000000000abcd",)"
              R"("spanId":"000000000000abcd","name":"megatron.train",)"
              R"("startTimeUnixNano":"1700000000000000000",)"
              R"("endTimeUnixNano":"18446744073709551615"}]}]}]})"
           << "\n";
  }
  const ProcessResult result = lens({dir.path().string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string prefix =
      "lens report: warning: charts leave out 1 span or metric point with an outlying time "
      "(9223372036854775807 ns since the epoch; the charts show ";
  ASSERT_EQ(result.err.rfind(prefix, 0), 0u) << result.err;
  ASSERT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
  const std::string warning = result.err.substr(22, result.err.size() - 23);
  const auto summary = nlohmann::json::parse(testing::read_text(dir.path() / "summary.json"));
  EXPECT_EQ(summary["chart_warnings"], nlohmann::json::array({warning}));
  EXPECT_NE(testing::read_text(dir.path() / "report.html").find("<li>" + warning + "</li>"),
            std::string::npos);
}

TEST(ReportCli, OutputPathsThresholdAndWindowFlags) {
  TempDir dir("cli-flags");
  TempDir out("cli-flags-out");
  testing::write_run(
      dir.path(),
      {.ranks = 2, .iterations = 10, .slow_rank = 1, .slow_ms = 20, .synchronous = false});
  const std::string html = (out.path() / "r.html").string();
  const std::string trace = (out.path() / "t.json").string();
  const ProcessResult result = lens({"--threshold", "0.5", dir.path().string(), "-o", html,
                                     "--perfetto=" + trace, "--window", "3"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // Two ranks: each is compared with the other.
  EXPECT_EQ(result.out.rfind("rank 1 spends +20.0 ms per step in forward_backward from iteration "
                             "1 on (4.2% of the run; 95% CI +20.0 to +20.0 ms)\nranks: 2",
                             0),
            0u)
      << result.out;
  EXPECT_TRUE(std::filesystem::is_regular_file(out.path() / "summary.json"));
  EXPECT_NE(result.out.find("\nreport: " + html + "\n"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_regular_file(html));
  EXPECT_TRUE(std::filesystem::is_regular_file(trace));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "report.html"));
}

TEST(ReportCli, SeveralRunsInOneDirectoryWarnAndRunIdPicksOne) {
  TempDir dir("cli-runs");
  testing::write_run(dir.path(), {.ranks = 4, .iterations = 20});  // nemo.run.id run-fixture
  auto other = testing::make_traces({.ranks = 3, .iterations = 10});
  for (auto& request : other) {
    for (auto& attribute :
         *request.mutable_resource_spans(0)->mutable_resource()->mutable_attributes()) {
      if (attribute.key() == "nemo.run.id") attribute.mutable_value()->set_string_value("run-b");
    }
  }
  testing::append_lines(dir.path() / "traces.jsonl", other);
  const std::string d = dir.path().string();

  const ProcessResult merged = lens({d});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(merged.err, "lens report: warning: DIR '" + d +
                            "' holds 2 runs (nemo.run.id: run-b, run-fixture); their telemetry "
                            "is merged: pick one with --run-id ID\n");
  EXPECT_NE(testing::read_text(dir.path() / "report.html").find("holds 2 runs"),
            std::string::npos);

  const ProcessResult picked = lens({d, "--run-id", "run-b"});
  ASSERT_EQ(picked.exit_code, 0) << picked.err;
  EXPECT_EQ(picked.err, "");
  EXPECT_NE(picked.out.find("\nranks: 3 of world size 3, iterations: 10 (1-10), spans: 285, metric points: 0,"),
            std::string::npos)
      << picked.out << picked.err;

  const ProcessResult none = lens({d, "--run-id=nope"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err, "lens report: no telemetry of --run-id 'nope' in DIR '" + d +
                          "'; accepted: one of run-b, run-fixture\n");
  EXPECT_EQ(lens({d, "--run-id="}).err,
            "lens report: invalid value for --run-id: ''; accepted: a run id (nemo.run.id)\n");
}

TEST(ReportCli, WarnsAboutATruncatedLastLine) {
  TempDir dir("cli-truncated");
  testing::write_run(dir.path(), {.ranks = 2, .iterations = 5});
  std::ofstream(dir.path() / "traces.jsonl", std::ios::app) << "{\"resourceSpans\":[{\"reso";
  const ProcessResult result = lens({dir.path().string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "lens report: warning: traces.jsonl:3: truncated last line skipped\n");
}

TEST(ReportCli, SaysWhichInputsItSkippedAndWhy) {
  TempDir dir("cli-skipped");
  testing::write_run(dir.path(), {.ranks = 2, .iterations = 5});
  // Neither is opened: the FIFO would block the report, /dev/zero would never end.
  ASSERT_EQ(::mkfifo((dir.path() / "fifo.jsonl").c_str(), 0644), 0);
  std::filesystem::create_symlink("/dev/zero", dir.path() / "zero.jsonl");
  std::filesystem::create_symlink(dir.path() / "gone", dir.path() / "dangling.jsonl");
  const ProcessResult result = lens({dir.path().string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.err,
            "lens report: warning: dangling.jsonl: skipped, a symbolic link to nothing (only "
            "regular files are read)\n"
            "lens report: warning: fifo.jsonl: skipped, a FIFO (only regular files are read)\n"
            "lens report: warning: zero.jsonl: skipped, a character device (only regular files "
            "are read)\n");
}

// A line over 128 MiB is skipped without being kept (a 1 GB line took 4.2 GB), counted in one
// warning; the lines around it are read.
TEST(ReportCli, AnOverlongLineIsSkippedAndCounted) {
  TempDir dir("cli-overlong");
  testing::write_run(dir.path(), {.ranks = 2, .iterations = 5});
  {
    std::ofstream out(dir.path() / "traces.jsonl", std::ios::app);
    out << "{\"resourceSpans\":[{\"x\":\"";
    const std::string block(1 << 20, 'a');
    for (int i = 0; i < 129; ++i) out << block;
    out << "\"}]}\n";
  }
  const ProcessResult result = lens({dir.path().string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err,
            "lens report: warning: traces.jsonl: 1 line over 128 MiB skipped (lines are read up "
            "to 128 MiB)\n");
  EXPECT_NE(result.out.find("ranks: 2 of world size 2, iterations: 5"), std::string::npos)
      << result.out;
  std::filesystem::remove(dir.path() / "traces.jsonl");
}

TEST(ReportCli, MetricsOnlyIsEnoughForAReport) {
  TempDir dir("cli-metrics-only");
  testing::append_lines(dir.path() / "metrics.jsonl",
                        testing::make_metrics({.ranks = 2, .iterations = 10}, false));
  const ProcessResult result = lens({dir.path().string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.rfind("stalls: not enough ranks (0 ranks with steps; need 2)\n", 0), 0u)
      << result.out;
  EXPECT_NE(result.out.find("step time: no megatron.train_step spans\n"), std::string::npos);
}

struct ErrorCase {
  std::vector<std::string> args;
  std::string err;
};

TEST(ReportCli, InvalidInputIsOneLineAndStatusTwo) {
  TempDir empty("cli-empty");
  std::ofstream(empty.path() / "notes.txt") << "hello\n";
  const std::string e = empty.path().string();
  TempDir unranked("cli-unranked");
  auto traces = testing::make_traces({.ranks = 1, .iterations = 1});  // 13 spans
  traces[0].mutable_resource_spans(0)->mutable_resource()->clear_attributes();
  testing::append_lines(unranked.path() / "traces.jsonl", traces);
  const std::string u = unranked.path().string();
  const std::vector<ErrorCase> cases = {
      {{}, "lens report: missing DIR; accepted: lens report DIR [options] (see --help)\n"},
      {{"/nonexistent/run"},
       "lens report: cannot read DIR '/nonexistent/run': no such directory; accepted: a "
       "directory of OTLP JSON line files\n"},
      {{e},
       "lens report: no telemetry files in DIR '" + e +
           "' (1 files, none of OTLP JSON lines); accepted: traces.jsonl, metrics.jsonl, "
           "logs.jsonl or OpenTelemetry Collector file exporter output\n"},
      {{u},
       "lens report: no rank in DIR '" + u +
           "': 13 spans, points and log records without a dl.rank or rank resource attribute; "
           "accepted: telemetry whose resource has dl.rank\n"},
      {{e, "--threshold", "abc"},
       "lens report: invalid value for --threshold: 'abc'; accepted: a fraction > 0 and <= 10 "
       "(0.10 = 10%)\n"},
      {{e, "--threshold", "0"},
       "lens report: invalid value for --threshold: '0'; accepted: a fraction > 0 and <= 10 "
       "(0.10 = 10%)\n"},
      {{e, "--window", "0"},
       "lens report: invalid value for --window: '0'; accepted: an integer >= 1\n"},
      {{e, "--window"}, "lens report: option '--window' needs a value\n"},
      {{e, "--frobnicate"},
       "lens report: unknown option '--frobnicate'; accepted: -o, --perfetto, "
       "--perfetto-all-ranks, --threshold, --window, --run-id, --min-excess, --false-alarm-rate, "
       "--job, --help\n"},
      {{e, "--min-excess", "0"},
       "lens report: invalid value for --min-excess: '0'; accepted: a fraction of the median "
       "step > 0 and <= 1 (0.02 = 2%)\n"},
      {{e, "--false-alarm-rate", "0.5"},
       "lens report: invalid value for --false-alarm-rate: '0.5'; accepted: a probability > 0 "
       "and < 0.5 (0.01 = 1%)\n"},
      {{e, e, "--min-excess", "0.05"},
       "lens report: option '--min-excess' does not apply when comparing runs; accepted there: "
       "-o, --run-id, --help\n"},
      {{e, e, "--perfetto", "t.json"},
       "lens report: option '--perfetto' does not apply when comparing runs; accepted there: -o, "
       "--run-id, --help\n"},
      {{e, "--window=3", "--run-id", "a", "--run-id", "b"},
       "lens report: option '--window' does not apply when comparing runs; accepted there: -o, "
       "--run-id, --help\n"},
      {{e, e, "--run-id", "a", "--run-id", "b"},
       "lens report: invalid use of --run-id: given 2 times with 2 DIRs; accepted: several DIRs "
       "(one --run-id at most, applied to each) or one DIR with several --run-id\n"},
      {{e, "--run-id", "a", "--run-id", "a"},
       "lens report: invalid value for --run-id: 'a' given twice; accepted: distinct run ids\n"},
      {{"/nonexistent/run", e},
       "lens report: cannot read DIR '/nonexistent/run': no such directory; accepted: a "
       "directory of OTLP JSON line files\n"},
      {{e, "/nonexistent/run", "-o", "/nonexistent/dir/c.html"},
       "lens report: invalid value for -o: '/nonexistent/dir/c.html'; accepted: a file path in "
       "an existing directory\n"},
      {{e, "-o", "/nonexistent/dir/r.html"},
       "lens report: invalid value for -o: '/nonexistent/dir/r.html'; accepted: a file path in "
       "an existing directory\n"},
      {{e, "--perfetto", e},
       "lens report: invalid value for --perfetto: '" + e +
           "'; accepted: a file path in an existing directory\n"},
  };
  for (const ErrorCase& c : cases) {
    const ProcessResult result = lens(c.args);
    EXPECT_EQ(result.exit_code, 2) << c.err;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err, c.err);
  }
}

TEST(ReportCli, ComparesRunsInSeveralDirectories) {
  TempDir a("cli-compare-a");
  TempDir b("cli-compare-b");
  testing::write_run(a.path(), {.ranks = 4, .iterations = 20, .slow_rank = 2, .slow_ms = 100,
                                .run_id = "run-a"});
  testing::write_run(b.path(), {.ranks = 2, .iterations = 10, .run_id = "run-b",
                                .loss_start = 9.0});
  const std::string da = a.path().string(), db = b.path().string();
  const ProcessResult result = lens({da, db});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(result.out,
            "run-a (" + da + "): 4 ranks, 20 iterations (1-20), median step 390.0 ms, final loss "
            "8.0000\n"
            "run-b (" + db + "): 2 ranks, 10 iterations (1-10), median step 290.0 ms, final loss "
            "8.0000\n"
            "comparison: " + da + "/compare.html\n");
  // Only the comparison page: the single-run outputs stay unwritten.
  EXPECT_FALSE(std::filesystem::exists(a.path() / "report.html"));
  EXPECT_FALSE(std::filesystem::exists(a.path() / "trace.json"));
  EXPECT_FALSE(std::filesystem::exists(a.path() / "summary.json"));
  const std::string html = testing::read_text(a.path() / "compare.html");
  EXPECT_NE(html.find("<h1>lens report: 2 runs compared</h1>"), std::string::npos);
  EXPECT_NE(html.find("</span>run-a (" + da + ")</td>"), std::string::npos);
  EXPECT_NE(html.find("</span>run-b (" + db + ")</td>"), std::string::npos);
  EXPECT_NE(html.find("\"stepMs\":[[1,290.0],[2,290.0],"), std::string::npos);
  EXPECT_NE(html.find("\"stepMs\":[[1,390.0],[2,390.0],"), std::string::npos);

  // The page is not telemetry: the single-run report of A still reads it without a warning.
  const ProcessResult single = lens({da});
  EXPECT_EQ(single.exit_code, 0);
  EXPECT_EQ(single.err, "");

  // A single --run-id applies to every DIR; -o puts the page elsewhere.
  const std::string page = (b.path() / "c.html").string();
  const ProcessResult picked = lens({da, "--run-id", "run-a", da, "-o", page});
  ASSERT_EQ(picked.exit_code, 0) << picked.err;
  EXPECT_EQ(picked.out.substr(picked.out.rfind("comparison: ")), "comparison: " + page + "\n");
  const ProcessResult missing = lens({da, db, "--run-id", "run-a"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "lens report: no telemetry of --run-id 'run-a' in DIR '" + db +
                             "'; accepted: one of run-b\n");
}

TEST(ReportCli, ComparesTheRunsOfOneDirectoryByRunId) {
  TempDir dir("cli-compare-ids");
  testing::write_run(dir.path(), {.ranks = 2, .iterations = 4, .run_id = "first"});
  testing::append_lines(dir.path() / "traces.jsonl",
                        testing::make_traces({.ranks = 3, .iterations = 6, .slow_rank = 1,
                                              .slow_ms = 20, .run_id = "second"}));
  const std::string d = dir.path().string();
  const ProcessResult result = lens({d, "--run-id", "second", "--run-id=first"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(result.out,
            "second (" + d + "): 3 ranks, 6 iterations (1-6), median step 310.0 ms, final loss "
            "9.4000\n"
            "first (" + d + "): 2 ranks, 4 iterations (1-4), median step 290.0 ms, final loss "
            "9.6000\n"
            "comparison: " + d + "/compare.html\n");
}

TEST(ReportCli, HelpPrintsTheUsage) {
  const ProcessResult result = lens({"--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out.rfind("usage: lens report DIR [-o report.html] [--perfetto trace.json]", 0),
            0u);
}

}  // namespace
}  // namespace lens::report
