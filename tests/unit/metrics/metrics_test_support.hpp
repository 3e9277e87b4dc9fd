// Shared by the metrics tests: a configuration that turns on metrics only (no traces, no
// exporter), telemetry set up with it and collected by manual readers, and a metric looked up by
// name in one collection or collected anew.
#pragma once

#include <opentelemetry/sdk/metrics/data/metric_data.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lens/config.hpp"
#include "lens/telemetry.hpp"
#include "lens/testing/manual_metric_reader.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace sdkmetrics = opentelemetry::sdk::metrics;
}  // namespace lens

namespace lens::test_support {

inline Config metrics_only_config(std::string run_id) {
  Config config = exporting_config(std::move(run_id), ExporterKind::none);
  config.traces_enabled = false;
  return config;
}

// Telemetry of one rank with metrics_only_config(run_id), whose metrics `readers` collect through
// `views`; a default handle, and a failure of the current test, when setup fails.
inline TelemetryHandle setup_metrics_only(
    std::string run_id, const std::vector<std::shared_ptr<testing::ManualMetricReader>>& readers,
    std::vector<metrics::MetricView> views = {}) {
  SetupOverrides overrides;
  overrides.env = Env::from({});
  overrides.metric_views = std::move(views);
  overrides.metric_readers.assign(readers.begin(), readers.end());
  auto made = setup_telemetry(metrics_only_config(std::move(run_id)), rank_of(0, 1), {},
                              std::move(overrides));
  EXPECT_TRUE(made.ok()) << made.message();
  return made.ok() ? *made : TelemetryHandle{};
}

// The metric called `name` in `data`, or nullptr.
inline const opentelemetry::sdk::metrics::MetricData* find_metric(
    const std::vector<opentelemetry::sdk::metrics::MetricData>& data, const std::string& name) {
  for (const auto& metric : data) {
    if (metric.instrument_descriptor.name_ == name) return &metric;
  }
  return nullptr;
}

// The metric called `name` in a new collection of `reader`, or nullopt.
inline std::optional<opentelemetry::sdk::metrics::MetricData> collect_metric(
    testing::ManualMetricReader& reader, const std::string& name) {
  const auto data = reader.collect();
  const auto* metric = find_metric(data, name);
  if (metric == nullptr) return std::nullopt;
  return *metric;
}

}  // namespace lens::test_support
