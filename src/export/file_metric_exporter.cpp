// The OTLP JSON file metric exporter (see file_metric_exporter.hpp).
#include "export/file_metric_exporter.hpp"

#include <opentelemetry/exporters/otlp/otlp_metric_utils.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>

#include <atomic>
#include <exception>

#include "export/append_file.hpp"
#include "export/metric_temporality.hpp"
#include "export/otlp_json.hpp"
#include "export/unique_attribute_keys.hpp"

namespace lens::exporters {
namespace {

namespace metrics = opentelemetry::sdk::metrics;
using opentelemetry::sdk::common::ExportResult;

class FileMetricExporter final : public metrics::PushMetricExporter {
 public:
  FileMetricExporter(std::unique_ptr<AppendFile> file, TemporalityPreference temporality)
      : file_(std::move(file)), temporality_(temporality) {}

  ExportResult Export(const metrics::ResourceMetrics& data) noexcept override {
    if (shut_down_.load(std::memory_order_acquire)) return ExportResult::kFailure;
    std::string line;
    try {
      opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
      opentelemetry::exporter::otlp::OtlpMetricUtils::PopulateRequest(data, &request);
      keep_last_value_per_key(&request);
      line = otlp_json::encode(request);
      line += '\n';
    } catch (const std::exception& e) {
      file_->report(std::string("cannot encode metrics: ") + e.what());
      return ExportResult::kFailure;
    }
    return file_->append(line) ? ExportResult::kSuccess : ExportResult::kFailure;
  }

  metrics::AggregationTemporality GetAggregationTemporality(
      metrics::InstrumentType type) const noexcept override {
    return temporality_for(temporality_, type);
  }

  // Every export reaches the kernel in Export; there is no buffer of ours to flush.
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }

  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_release);
    return file_->close();
  }

 private:
  std::unique_ptr<AppendFile> file_;
  const TemporalityPreference temporality_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace

Result<std::unique_ptr<metrics::PushMetricExporter>> make_file_metric_exporter(
    const Config& config) {
  auto file = AppendFile::open(config, kMetricsFileName, "metrics");
  if (!file.ok()) return Error(file.message());
  return std::unique_ptr<metrics::PushMetricExporter>(std::make_unique<FileMetricExporter>(
      std::move(file).value(), config.otel.metrics_temporality.value));
}

}  // namespace lens::exporters
