// What the OTLP exporter tests share: settings parsed from a fixed environment, a fast retry
// policy, and an export report whose lines the test reads.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "export/export_report.hpp"
#include "export/otlp_retry.hpp"
#include "lens/env.hpp"
#include "lens/otel_settings.hpp"

namespace lens::exporters::test_support {

// A fast retry policy keeps the tests short; production uses RetryPolicy{}.
inline const RetryPolicy kFastRetry{std::chrono::milliseconds(20), std::chrono::milliseconds(100),
                                    2.0};

// The settings of `signal` from exactly `variables`; a parse problem fails the test.
inline OtlpSignalSettings settings_from(const Env::Map& variables, Signal signal = Signal::traces) {
  const OtelSettings settings = OtelSettings::from_env(Env::from(variables));
  EXPECT_TRUE(settings.problems.empty())
      << (settings.problems.empty() ? "" : settings.problems.front().message());
  return settings.signal(signal);
}

// A report whose lines the test reads.
struct Captured {
  std::vector<std::string> lines;
  std::shared_ptr<ExportReport> report;
  explicit Captured(Signal signal = Signal::traces)
      : report(std::make_shared<ExportReport>(
            signal, [this](std::string_view line) { lines.emplace_back(line); })) {}
};

}  // namespace lens::exporters::test_support
