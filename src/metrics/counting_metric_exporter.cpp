// Counting, overflow-renaming metric exporter (see counting_metric_exporter.hpp).
#include "metrics/counting_metric_exporter.hpp"

#include "metrics/overflow_attribute.hpp"

namespace lens::metrics {

namespace sdkmetrics = opentelemetry::sdk::metrics;
using opentelemetry::sdk::common::ExportResult;

CountingMetricExporter::CountingMetricExporter(
    std::unique_ptr<sdkmetrics::PushMetricExporter> exporter,
    std::shared_ptr<SignalCounters> counters)
    : exporter_(std::move(exporter)), counters_(std::move(counters)) {}

ExportResult CountingMetricExporter::Export(const sdkmetrics::ResourceMetrics& data) noexcept {
  std::uint64_t points = 0;
  for (const auto& scope : data.scope_metric_data_) {
    for (const auto& metric : scope.metric_data_) {
      points += metric.point_data_attr_.size();
    }
  }
  // Nothing collected (the reader's collection at shutdown often is): nothing to send.
  if (points == 0) return ExportResult::kSuccess;
  counters_->received.fetch_add(points, std::memory_order_relaxed);
  ExportResult result = ExportResult::kFailure;
  try {
    if (auto renamed = with_spec_overflow(data)) {
      result = exporter_->Export(sdkmetrics::ResourceMetrics(data.resource_, std::move(*renamed)));
    } else {
      result = exporter_->Export(data);
    }
  } catch (...) {
    // Out of memory while copying: a failed export, counted below.
  }
  (result == ExportResult::kSuccess ? counters_->exported : counters_->failed)
      .fetch_add(points, std::memory_order_relaxed);
  return result;
}

sdkmetrics::AggregationTemporality CountingMetricExporter::GetAggregationTemporality(
    sdkmetrics::InstrumentType type) const noexcept {
  return exporter_->GetAggregationTemporality(type);
}

bool CountingMetricExporter::ForceFlush(std::chrono::microseconds timeout) noexcept {
  return exporter_->ForceFlush(timeout);
}

bool CountingMetricExporter::Shutdown(std::chrono::microseconds timeout) noexcept {
  return exporter_->Shutdown(timeout);
}

}  // namespace lens::metrics
