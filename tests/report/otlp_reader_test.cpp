// Reading a directory: lens collect's file names, the Collector file exporter's (any name, mixed
// signals), files that are not telemetry, a truncated last line, malformed lines, no directory.
#include "report/otlp_reader.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "lens/otlp_json.hpp"
#include "report/run_builder.hpp"
#include "report_fixtures.hpp"

namespace lens::report {
namespace {

using testing::TempDir;

void write(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

TEST(ReportReader, ReadsLensCollectFiles) {
  TempDir dir("reader-ours");
  testing::write_run(dir.path(), {.ranks = 4, .iterations = 10});
  RunBuilder builder;
  const auto stats = read_telemetry_dir(dir.path(), builder);
  ASSERT_TRUE(stats.ok()) << stats.message();
  EXPECT_EQ(stats->telemetry_files, (std::vector<std::string>{"metrics.jsonl", "traces.jsonl"}));
  EXPECT_EQ(stats->requests, 4u + 4u * 2u);
  EXPECT_TRUE(stats->warnings.empty());
  const RunData& data = builder.data();
  ASSERT_EQ(data.ranks.size(), 4u);
  EXPECT_EQ(data.ranks.at(3).rank, 3);
  EXPECT_EQ(text_attribute(data.ranks.at(3).resource, "host.name"), "node0");
  EXPECT_FALSE(data.ranks.at(3).spans.empty());
  EXPECT_EQ(data.ranks.at(3).gauges.at("megatron.training.loss").size(), 2u);
}

TEST(ReportReader, ReadsCollectorFileExporterOutputUnderAnyName) {
  TempDir dir("reader-collector");
  const testing::RunSpec spec{.ranks = 2, .iterations = 5};
  // The Collector's file exporter: one file, signals interleaved.
  const auto traces = testing::make_traces(spec);
  const auto metrics = testing::make_metrics(spec, false);
  std::ofstream out(dir.path() / "otel-export-2024.json", std::ios::binary);
  out << otlp_json::encode(traces[0]) << "\n"
      << otlp_json::encode(metrics[0]) << "\n"
      << otlp_json::encode(traces[1]) << "\n"
      << otlp_json::encode(metrics[1]) << "\n";
  out.close();
  write(dir.path() / "notes.txt", "not telemetry\n");
  write(dir.path() / "config.json", "{\"receivers\": {\"otlp\": {}}}\n");
  write(dir.path() / "report.html", "<!DOCTYPE html><html></html>\n");
  write(dir.path() / "archive.gz", std::string("\x1f\x8b\x08\x00", 4));
  std::filesystem::create_directory(dir.path() / "subdir");
  testing::append_lines(dir.path() / "subdir" / "traces.jsonl", traces);  // not read

  RunBuilder builder;
  const auto stats = read_telemetry_dir(dir.path(), builder);
  ASSERT_TRUE(stats.ok()) << stats.message();
  EXPECT_EQ(stats->telemetry_files, (std::vector<std::string>{"otel-export-2024.json"}));
  EXPECT_EQ(stats->files_seen, 5u);
  EXPECT_EQ(stats->requests, 4u);
  EXPECT_TRUE(stats->warnings.empty());
  EXPECT_EQ(builder.data().ranks.size(), 2u);
  EXPECT_EQ(builder.data().ranks.at(1).spans.size(),
            traces[1].resource_spans(0).scope_spans(0).spans_size());
}

TEST(ReportReader, ATruncatedLastLineIsSkippedWithAWarning) {
  TempDir dir("reader-truncated");
  const auto traces = testing::make_traces({.ranks = 2, .iterations = 3});
  const std::string second = otlp_json::encode(traces[1]);
  // Leading blank lines count: the warning names the line as an editor numbers it.
  write(dir.path() / "traces.jsonl",
        "\n\n" + otlp_json::encode(traces[0]) + "\n" + second.substr(0, second.size() / 2));
  RunBuilder builder;
  const auto stats = read_telemetry_dir(dir.path(), builder);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->requests, 1u);
  EXPECT_EQ(stats->warnings,
            (std::vector<std::string>{"traces.jsonl:4: truncated last line skipped"}));
  EXPECT_EQ(builder.data().ranks.size(), 1u);
}

TEST(ReportReader, AFileThatIsOnlyATruncatedLineIsReportedToo) {
  TempDir dir("reader-only-truncated");
  const std::string line =
      otlp_json::encode(testing::make_traces({.ranks = 1, .iterations = 1})[0]);
  write(dir.path() / "traces.jsonl", line.substr(0, 40));
  RunBuilder builder;
  const auto stats = read_telemetry_dir(dir.path(), builder);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->requests, 0u);
  EXPECT_EQ(stats->warnings,
            (std::vector<std::string>{"traces.jsonl:1: truncated last line skipped"}));
}

TEST(ReportReader, AMalformedLineInTheMiddleIsSkippedWithAWarning) {
  TempDir dir("reader-malformed");
  const auto traces = testing::make_traces({.ranks = 2, .iterations = 2});
  write(dir.path() / "traces.jsonl",
        otlp_json::encode(traces[0]) + "\n{oops\n\n" + otlp_json::encode(traces[1]) + "\n");
  RunBuilder builder;
  const auto stats = read_telemetry_dir(dir.path(), builder);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->requests, 2u);
  EXPECT_EQ(stats->warnings,
            (std::vector<std::string>{"traces.jsonl:2: line skipped: not an OTLP JSON request"}));
}

// A line of the wrong shape (an object where OTLP JSON has a list) is malformed too, not an
// empty request: the decoder names the field.
TEST(ReportReader, ALineOfTheWrongShapeIsSkippedWithAWarning) {
  TempDir dir("reader-wrong-shape");
  const auto traces = testing::make_traces({.ranks = 1, .iterations = 1});
  write(dir.path() / "traces.jsonl", otlp_json::encode(traces[0]) +
                                         "\n{\"resourceSpans\":{\"a\":1}}\n"
                                         "{\"resourceMetrics\":[{\"scopeMetrics\":{}}]}\n");
  RunBuilder builder;
  const auto stats = read_telemetry_dir(dir.path(), builder);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->requests, 1u);
  EXPECT_EQ(stats->warnings,
            (std::vector<std::string>{
                "traces.jsonl:2: line skipped: OTLP JSON: invalid resourceSpans: expected an "
                "array, got object",
                "traces.jsonl:3: line skipped: OTLP JSON: invalid resourceMetrics[0].scopeMetrics: "
                "expected an array, got object"}));
}

TEST(ReportReader, RanksComeFromDlRankOrRank) {
  EXPECT_EQ(rank_of({{"rank", "7"}}), 7);
  EXPECT_EQ(rank_of({{"dl.rank", 3}, {"rank", 7}}), 3);
  EXPECT_EQ(rank_of({{"dl.rank", 2.0}}), 2);
  EXPECT_EQ(rank_of({{"host.name", "n"}}), std::nullopt);
  EXPECT_EQ(rank_of({{"dl.rank", -1}}), std::nullopt);
}

TEST(ReportReader, AMissingDirectoryIsAnError) {
  RunBuilder builder;
  const auto stats = read_telemetry_dir("/nonexistent/lens-report-dir", builder);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.message(), "no such directory");
}

}  // namespace
}  // namespace lens::report
