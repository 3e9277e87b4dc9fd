// The metric exporter setup puts in the periodic reader: forwards to the configured exporter
// (which counts its outcomes in the metrics' ExportReport), renames the SDK's overflow attribute
// to the specification's (overflow_attribute.hpp), and skips collections with no data point.
// Thread-safety: as thread-safe as the wrapped exporter.
#pragma once

#include <opentelemetry/sdk/metrics/push_metric_exporter.h>

#include <memory>

namespace lens::metrics {

class OverflowRenamingExporter final : public opentelemetry::sdk::metrics::PushMetricExporter {
 public:
  explicit OverflowRenamingExporter(
      std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> exporter);

  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::sdk::metrics::ResourceMetrics& data) noexcept override;
  opentelemetry::sdk::metrics::AggregationTemporality GetAggregationTemporality(
      opentelemetry::sdk::metrics::InstrumentType type) const noexcept override;
  bool ForceFlush(std::chrono::microseconds timeout) noexcept override;
  bool Shutdown(std::chrono::microseconds timeout) noexcept override;

 private:
  std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> exporter_;
};

}  // namespace lens::metrics
