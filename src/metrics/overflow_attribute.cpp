// Overflow attribute renaming (see overflow_attribute.hpp).
#include "metrics/overflow_attribute.hpp"

#include <string>

namespace lens::metrics {
namespace {

namespace sdkmetrics = opentelemetry::sdk::metrics;

bool has_sdk_overflow(const sdkmetrics::MetricData& metric) {
  for (const auto& point : metric.point_data_attr_) {
    if (point.attributes.find(std::string(kSdkOverflowAttribute)) != point.attributes.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool rename_overflow_attribute(std::vector<sdkmetrics::MetricData>& metrics) {
  bool renamed = false;
  const std::string from(kSdkOverflowAttribute);
  for (auto& metric : metrics) {
    for (auto& point : metric.point_data_attr_) {
      auto it = point.attributes.find(from);
      if (it == point.attributes.end()) continue;
      auto value = it->second;
      point.attributes.erase(it);
      point.attributes[std::string(kOverflowAttribute)] = std::move(value);
      renamed = true;
    }
  }
  return renamed;
}

std::optional<std::vector<sdkmetrics::ScopeMetrics>> with_spec_overflow(
    const sdkmetrics::ResourceMetrics& data) {
  bool found = false;
  for (const auto& scope : data.scope_metric_data_) {
    for (const auto& metric : scope.metric_data_) {
      found = found || has_sdk_overflow(metric);
    }
  }
  if (!found) return std::nullopt;
  std::vector<sdkmetrics::ScopeMetrics> copy = data.scope_metric_data_;
  for (auto& scope : copy) {
    rename_overflow_attribute(scope.metric_data_);
  }
  return copy;
}

}  // namespace lens::metrics
