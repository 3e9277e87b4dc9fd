// Assembly of an exporting rank's meter provider (see meter_provider.hpp).
#include "telemetry/meter_provider.hpp"

#include <opentelemetry/sdk/metrics/export/periodic_exporting_metric_reader.h>
#include <opentelemetry/sdk/metrics/view/view_registry.h>

#include <algorithm>

#include "metrics/counting_metric_exporter.hpp"
#include "telemetry/otel_resource.hpp"

namespace lens::telemetry {

namespace sdkmetrics = opentelemetry::sdk::metrics;

BuiltMeterProvider build_meter_provider(
    const Config& config, const Attributes& resource,
    std::unique_ptr<sdkmetrics::PushMetricExporter> exporter,
    std::vector<std::shared_ptr<sdkmetrics::MetricReader>> readers,
    std::vector<metrics::MetricView> views) {
  BuiltMeterProvider built;
  built.counters = std::make_shared<metrics::SignalCounters>();
  auto registry = std::make_unique<sdkmetrics::ViewRegistry>();
  for (auto& view : views) {
    if (view.instrument == nullptr || view.meter == nullptr || view.view == nullptr) continue;
    registry->AddView(std::move(view.instrument), std::move(view.meter), std::move(view.view));
  }
  built.provider =
      std::make_shared<sdkmetrics::MeterProvider>(std::move(registry), to_otel_resource(resource));
  if (readers.empty()) {
    sdkmetrics::PeriodicExportingMetricReaderOptions options;
    options.export_interval_millis =
        std::chrono::milliseconds(config.otel.metric_export_interval_ms.value);
    // opentelemetry-cpp wants the timeout strictly below the interval and otherwise falls
    // back to its own defaults (a 60 s interval): keep it below, so OTEL_METRIC_EXPORT_INTERVAL
    // always holds (the spec's defaults, 10 s and 30 s, would trip it).
    const std::int64_t interval = config.otel.metric_export_interval_ms.value;
    options.export_timeout_millis = std::chrono::milliseconds(std::max<std::int64_t>(
        1, std::min(config.otel.metric_export_timeout_ms.value, interval - 1)));
    readers.push_back(std::make_shared<sdkmetrics::PeriodicExportingMetricReader>(
        std::make_unique<metrics::CountingMetricExporter>(std::move(exporter), built.counters),
        options));
  }
  for (auto& reader : readers) {
    built.provider->AddMetricReader(std::move(reader));
  }
  return built;
}

}  // namespace lens::telemetry
