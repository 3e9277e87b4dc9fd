// The metric exporter setup puts in the periodic reader: forwards to the configured exporter,
// renames the SDK's overflow attribute to the specification's (overflow_attribute.hpp), and
// counts the data points of successful and failed exports for stats and self-metrics.
// Thread-safety: as thread-safe as the wrapped exporter; the counters are atomics.
#pragma once

#include <opentelemetry/sdk/metrics/push_metric_exporter.h>

#include <memory>

#include "metrics/export_counters.hpp"

namespace lens::metrics {

class CountingMetricExporter final : public opentelemetry::sdk::metrics::PushMetricExporter {
 public:
  CountingMetricExporter(std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> exporter,
                         std::shared_ptr<SignalCounters> counters);

  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::sdk::metrics::ResourceMetrics& data) noexcept override;
  opentelemetry::sdk::metrics::AggregationTemporality GetAggregationTemporality(
      opentelemetry::sdk::metrics::InstrumentType type) const noexcept override;
  bool ForceFlush(std::chrono::microseconds timeout) noexcept override;
  bool Shutdown(std::chrono::microseconds timeout) noexcept override;

 private:
  std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> exporter_;
  std::shared_ptr<SignalCounters> counters_;
};

}  // namespace lens::metrics
