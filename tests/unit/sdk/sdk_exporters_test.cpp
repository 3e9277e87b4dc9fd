// The reporting wrapper's counts and lens::testing's in-memory exporter, with exact kept values.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "export/export_report.hpp"
#include "lens/testing/in_memory_exporter.hpp"
#include "opentelemetry/sdk/trace/simple_processor.h"
#include "opentelemetry/sdk/trace/tracer_provider.h"

namespace {

namespace otel_sdk = opentelemetry::sdk::trace;
namespace nostd = opentelemetry::nostd;
using lens::exporters::ExportReport;
using lens::exporters::make_reporting_exporter;

// An exporter whose result is scripted, to count failures.
class ScriptedExporter final : public otel_sdk::SpanExporter {
 public:
  explicit ScriptedExporter(bool succeed) : succeed_(succeed) {}
  std::unique_ptr<otel_sdk::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<otel_sdk::SpanData>();
  }
  opentelemetry::sdk::common::ExportResult Export(
      const nostd::span<std::unique_ptr<otel_sdk::Recordable>>&) noexcept override {
    return succeed_ ? opentelemetry::sdk::common::ExportResult::kSuccess
                    : opentelemetry::sdk::common::ExportResult::kFailure;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return true; }

 private:
  bool succeed_;
};

// The one count of a signal's exports: the reporting wrapper counts every Export of any exporter
// (here from four threads at once, then after the inner exporter's shutdown, then failing).
TEST(ReportingExporter, CountsExportedAndFailedSpans) {
  auto memory = lens::testing::make_in_memory_span_exporter();
  std::vector<std::string> lines;
  auto report = std::make_shared<ExportReport>(
      lens::Signal::traces, [&](std::string_view line) { lines.emplace_back(line); });
  auto provider = std::make_shared<otel_sdk::TracerProvider>(
      std::make_unique<otel_sdk::SimpleSpanProcessor>(make_reporting_exporter<lens::Signal::traces>(
          std::move(memory.exporter), report, "memory")));
  auto tracer = provider->GetTracer("counting");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) tracer->StartSpan("s")->End();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(report->counts().items_exported, 100U);
  EXPECT_EQ(report->counts().items_failed, 0U);
  EXPECT_EQ(memory.take_spans().size(), 100U);
  provider->Shutdown();
  tracer->StartSpan("after-shutdown")->End();  // in-memory exporter is shut down: kFailure
  EXPECT_EQ(report->counts().items_exported, 100U);
  EXPECT_EQ(report->counts().items_failed, 1U);
  EXPECT_EQ(lines, std::vector<std::string>{
                       "lens: traces export to memory failed; its spans are "
                       "dropped (further occurrences are counted, not shown; totals at shutdown)"});

  auto failing = make_reporting_exporter<lens::Signal::traces>(
      std::make_unique<ScriptedExporter>(false), report, "scripted", /*explain_failures=*/false);
  std::vector<std::unique_ptr<otel_sdk::Recordable>> batch;
  batch.push_back(failing->MakeRecordable());
  batch.push_back(failing->MakeRecordable());
  batch.push_back(failing->MakeRecordable());
  EXPECT_EQ(failing->Export(nostd::span<std::unique_ptr<otel_sdk::Recordable>>(batch.data(), 3)),
            opentelemetry::sdk::common::ExportResult::kFailure);
  EXPECT_EQ(report->counts().items_failed, 4U);
  EXPECT_EQ(report->counts().exports_failed, 2U);
  EXPECT_EQ(lines.size(), 1U);  // explain_failures off: the exporter says why itself
}

TEST(SdkInMemoryExporter, SpansStayReadableAfterTheExporterMovedAway) {
  auto memory = lens::testing::make_in_memory_span_exporter(2);
  {
    auto provider = std::make_shared<otel_sdk::TracerProvider>(
        std::make_unique<otel_sdk::SimpleSpanProcessor>(std::move(memory.exporter)));
    auto tracer = provider->GetTracer("memory");
    tracer->StartSpan("one")->End();
    tracer->StartSpan("two")->End();
    tracer->StartSpan("three")->End();  // buffer of 2: dropped
    provider->Shutdown();
  }
  EXPECT_EQ(memory.exporter, nullptr);
  auto spans = memory.take_spans();
  ASSERT_EQ(spans.size(), 2U);
  EXPECT_EQ(spans[0]->GetName(), "one");
  EXPECT_EQ(spans[1]->GetName(), "two");
  EXPECT_TRUE(memory.take_spans().empty());
}

}  // namespace
