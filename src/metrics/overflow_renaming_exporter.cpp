// Overflow-renaming metric exporter (see overflow_renaming_exporter.hpp).
#include "metrics/overflow_renaming_exporter.hpp"

#include "metrics/overflow_attribute.hpp"

namespace lens::metrics {

namespace sdkmetrics = opentelemetry::sdk::metrics;
using opentelemetry::sdk::common::ExportResult;

OverflowRenamingExporter::OverflowRenamingExporter(
    std::unique_ptr<sdkmetrics::PushMetricExporter> exporter)
    : exporter_(std::move(exporter)) {}

ExportResult OverflowRenamingExporter::Export(const sdkmetrics::ResourceMetrics& data) noexcept {
  // Nothing collected (the reader's collection at shutdown often is): nothing to send.
  bool empty = true;
  for (const auto& scope : data.scope_metric_data_) {
    for (const auto& metric : scope.metric_data_) empty = empty && metric.point_data_attr_.empty();
  }
  if (empty) return ExportResult::kSuccess;
  try {
    if (auto renamed = with_spec_overflow(data)) {
      return exporter_->Export(sdkmetrics::ResourceMetrics(data.resource_, std::move(*renamed)));
    }
  } catch (...) {
    return ExportResult::kFailure;  // out of memory while copying
  }
  return exporter_->Export(data);
}

sdkmetrics::AggregationTemporality OverflowRenamingExporter::GetAggregationTemporality(
    sdkmetrics::InstrumentType type) const noexcept {
  return exporter_->GetAggregationTemporality(type);
}

bool OverflowRenamingExporter::ForceFlush(std::chrono::microseconds timeout) noexcept {
  return exporter_->ForceFlush(timeout);
}

bool OverflowRenamingExporter::Shutdown(std::chrono::microseconds timeout) noexcept {
  return exporter_->Shutdown(timeout);
}

}  // namespace lens::metrics
