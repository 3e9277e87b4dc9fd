// DiagnosticsHandler: each distinct opentelemetry-cpp diagnostic is reported once, every event
// is counted, and a full batch queue no longer writes one stderr line per dropped span.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sdk/diagnostics.hpp"

namespace {

namespace internal_log = opentelemetry::sdk::common::internal_log;
using lens::sdk::DiagnosticsHandler;

TEST(SdkDiagnostics, EachSiteIsReportedOnceAndEveryEventCounted) {
  std::vector<std::string> lines;
  DiagnosticsHandler handler([&](std::string_view line) { lines.emplace_back(line); });
  const opentelemetry::sdk::common::AttributeMap none;
  for (int i = 0; i < 1000; ++i) {
    handler.Handle(internal_log::LogLevel::Warning, "batch_span_processor.cc", 91,
                   "BatchSpanProcessor queue is full - dropping span.", none);
  }
  handler.Handle(internal_log::LogLevel::Error, "otlp_grpc_client.cc", 12,
                 "[OTLP TRACE GRPC Exporter] Export() failed: Deadline Exceeded\n", none);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(lines[0],
            "lens: opentelemetry-cpp warning: BatchSpanProcessor queue is full - dropping span. "
            "(further occurrences are counted, not shown)");
  EXPECT_EQ(lines[1],
            "lens: opentelemetry-cpp error: [OTLP TRACE GRPC Exporter] Export() failed: Deadline "
            "Exceeded (further occurrences are counted, not shown)");
  EXPECT_EQ(handler.events(), 1001U);
  EXPECT_EQ(handler.suppressed(), 999U);
}

TEST(SdkDiagnostics, TheSecondMeterShutdownOfACorrectExitIsCountedNotPrinted) {
  std::vector<std::string> lines;
  DiagnosticsHandler handler([&](std::string_view line) { lines.emplace_back(line); });
  const opentelemetry::sdk::common::AttributeMap none;
  handler.Handle(internal_log::LogLevel::Warning, "meter_context.cc", 200,
                 "[MeterContext::Shutdown] Shutdown can be invoked only once.", none);
  EXPECT_TRUE(lines.empty());
  EXPECT_EQ(handler.events(), 1U);
  EXPECT_EQ(handler.suppressed(), 1U);
}

TEST(SdkDiagnostics, SiteTableIsBounded) {
  int reported = 0;
  DiagnosticsHandler handler([&](std::string_view) { ++reported; });
  const opentelemetry::sdk::common::AttributeMap none;
  const int sites = static_cast<int>(DiagnosticsHandler::kMaxSites) + 10;
  for (int round = 0; round < 2; ++round) {
    for (int line = 0; line < sites; ++line) {
      handler.Handle(internal_log::LogLevel::Warning, "f.cc", line, "m", none);
    }
  }
  // The first kMaxSites sites are remembered; the 10 beyond are reported in both rounds.
  EXPECT_EQ(reported, sites + 10);
}

TEST(SdkDiagnostics, InstalledHandlerReceivesTheSdkEvents) {
  DiagnosticsHandler& installed = lens::sdk::install_sdk_diagnostics();
  EXPECT_EQ(&installed, &lens::sdk::install_sdk_diagnostics());
  EXPECT_EQ(internal_log::GlobalLogHandler::GetLogLevel(), internal_log::LogLevel::Warning);
  const std::uint64_t before = installed.events();
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    OTEL_INTERNAL_LOG_WARN("a diagnostic from the sdk under test");
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(installed.events() - before, 3U);
  // The installed handler lives as long as the process: under --gtest_repeat the site is
  // reported on the first run only and counted on every run.
  static int runs = 0;
  EXPECT_EQ(err, runs++ == 0 ? "lens: opentelemetry-cpp warning: a diagnostic from the sdk under "
                               "test (further occurrences are counted, not shown)\n"
                             : "");
}

}  // namespace
