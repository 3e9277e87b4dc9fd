// Metric exporter construction (see metric_exporters.hpp).
#include "export/metric_exporters.hpp"

#include <atomic>
#include <utility>

#include "export/append_file.hpp"
#include "export/console_metric_exporter.hpp"
#include "export/file_metric_exporter.hpp"
#include "export/metric_temporality.hpp"
#include "export/otlp_exporters.hpp"

namespace lens::exporters {
namespace {

namespace metrics = opentelemetry::sdk::metrics;

class DiscardingMetricExporter final : public metrics::PushMetricExporter {
 public:
  explicit DiscardingMetricExporter(TemporalityPreference temporality)
      : temporality_(temporality) {}
  opentelemetry::sdk::common::ExportResult Export(
      const metrics::ResourceMetrics&) noexcept override {
    return shut_down_.load(std::memory_order_relaxed)
               ? opentelemetry::sdk::common::ExportResult::kFailure
               : opentelemetry::sdk::common::ExportResult::kSuccess;
  }
  metrics::AggregationTemporality GetAggregationTemporality(
      metrics::InstrumentType type) const noexcept override {
    return temporality_for(temporality_, type);
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_relaxed);
    return true;
  }

 private:
  const TemporalityPreference temporality_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace

std::unique_ptr<metrics::PushMetricExporter> make_discarding_metric_exporter(
    TemporalityPreference temporality) {
  return std::make_unique<DiscardingMetricExporter>(temporality);
}

Result<std::unique_ptr<metrics::PushMetricExporter>> make_metric_exporter(
    const Config& config, std::shared_ptr<ExportReport> report) {
  const TemporalityPreference temporality = config.otel.metrics_temporality.value;
  if (!report) report = std::make_shared<ExportReport>(Signal::metrics);
  if (config.exporter == "none") {
    return make_reporting_metric_exporter(make_discarding_metric_exporter(temporality),
                                          std::move(report), "none");
  }
  if (config.exporter == "console") {
    return make_reporting_metric_exporter(make_console_metric_exporter(temporality, stdout),
                                          std::move(report), "stdout");
  }
  if (config.exporter == "file") {
    auto file = make_file_metric_exporter(config);
    if (!file.ok()) return Error(file.message());
    // The file exporter reports its own write errors once.
    return make_reporting_metric_exporter(std::move(*file), std::move(report),
                                          AppendFile::path_in(config, kMetricsFileName),
                                          /*explain_failures=*/false);
  }
  if (config.exporter == "otlp") {
    // OTEL_METRIC_EXPORT_TIMEOUT bounds each export too (the reader cannot cancel one).
    OtlpSignalSettings settings = config.otel.metrics;
    if (config.otel.metric_export_timeout_ms.value < settings.timeout_ms.value) {
      settings.timeout_ms = config.otel.metric_export_timeout_ms;
    }
    if (Status status = check_otlp_settings(settings, Signal::metrics); !status.ok()) {
      return Error(status.message());
    }
    return make_otlp_metric_exporter(settings, temporality, std::move(report));
  }
  return Error("Exporter '" + config.exporter + "' in " + config.label_of("exporter") +
               " is not available for metrics in this build; accepted: otlp, console, file, none");
}

}  // namespace lens::exporters
