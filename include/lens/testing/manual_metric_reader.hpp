// Test support for users of lens: a metric reader that collects only when asked, to pass in
// SetupOverrides::metric_readers (it then replaces the periodic reader; docs/metrics.md, "What
// setup builds"). opentelemetry-cpp 1.19 ships only the periodic reader. Collections return the
// SDK's metric data with the overflow series named as the specification names it
// (otel.metric.overflow), and lens's bound histograms (lens/metric_setup.hpp) included.
// Thread-safety: collect() may be called from any thread; collections are serialized by the SDK.
#pragma once

#include <opentelemetry/sdk/metrics/data/metric_data.h>
#include <opentelemetry/sdk/metrics/metric_reader.h>

#include <string>
#include <vector>

#include "lens/otel_settings.hpp"

namespace lens::testing {

class ManualMetricReader final : public opentelemetry::sdk::metrics::MetricReader {
 public:
  explicit ManualMetricReader(
      TemporalityPreference temporality = TemporalityPreference::cumulative);
  ~ManualMetricReader() override;
  ManualMetricReader(const ManualMetricReader&) = delete;
  ManualMetricReader& operator=(const ManualMetricReader&) = delete;

  // Collects now: every metric of every meter, in the SDK's order (empty once shut down).
  std::vector<opentelemetry::sdk::metrics::MetricData> collect();

  // The instrumentation scope names of the last collection, one per metric of it.
  const std::vector<std::string>& scopes() const noexcept { return scopes_; }

  opentelemetry::sdk::metrics::AggregationTemporality GetAggregationTemporality(
      opentelemetry::sdk::metrics::InstrumentType type) const noexcept override;

 private:
  bool OnForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool OnShutDown(std::chrono::microseconds) noexcept override { return true; }

  const TemporalityPreference temporality_;
  std::vector<std::string> scopes_;
};

}  // namespace lens::testing
