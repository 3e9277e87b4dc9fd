// The on-demand metric reader (see lens/testing/manual_metric_reader.hpp).
#include "lens/testing/manual_metric_reader.hpp"

#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>

#include "lens/metric_setup.hpp"
#include "lens/metrics.hpp"
#include "metrics/metric_temporality.hpp"
#include "metrics/overflow_attribute.hpp"

namespace lens::testing {

namespace sdkmetrics = opentelemetry::sdk::metrics;

ManualMetricReader::ManualMetricReader(TemporalityPreference temporality)
    : temporality_(temporality) {}

ManualMetricReader::~ManualMetricReader() { metrics::forget_bound_reader(*this); }

std::vector<sdkmetrics::MetricData> ManualMetricReader::collect() {
  std::vector<sdkmetrics::MetricData> out;
  scopes_.clear();
  metrics::collect_with_bound_instruments(*this, [&](sdkmetrics::ResourceMetrics& data) {
    for (auto& scope : data.scope_metric_data_) {
      for (auto& metric : scope.metric_data_) {
        scopes_.push_back(scope.scope_ != nullptr ? scope.scope_->GetName() : std::string());
        out.push_back(std::move(metric));
      }
    }
    return true;
  });
  metrics::rename_overflow_attribute(out);
  return out;
}

sdkmetrics::AggregationTemporality ManualMetricReader::GetAggregationTemporality(
    sdkmetrics::InstrumentType type) const noexcept {
  return metrics::temporality_for(temporality_, type);
}

}  // namespace lens::testing
