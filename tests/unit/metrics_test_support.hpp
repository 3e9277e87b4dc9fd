// Shared by the metrics tests: a configuration that turns on metrics only (no traces, no
// exporter), and a metric looked up by name in one collection.
#pragma once

#include <opentelemetry/sdk/metrics/data/metric_data.h>

#include <string>
#include <utility>
#include <vector>

#include "lens/config.hpp"

namespace lens::test_support {

inline Config metrics_only_config(std::string run_id) {
  Config config;
  config.enabled = true;
  config.rank_strategy = "all_ranks";
  config.run_id = std::move(run_id);
  config.exporter = "none";
  config.traces_enabled = false;
  return config;
}

// The metric called `name` in `data`, or nullptr.
inline const opentelemetry::sdk::metrics::MetricData* find_metric(
    const std::vector<opentelemetry::sdk::metrics::MetricData>& data, const std::string& name) {
  for (const auto& metric : data) {
    if (metric.instrument_descriptor.name_ == name) return &metric;
  }
  return nullptr;
}

}  // namespace lens::test_support
