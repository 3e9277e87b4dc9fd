// Assembly of an exporting rank's meter provider (see meter_provider.hpp).
#include "telemetry/meter_provider.hpp"

#include <opentelemetry/sdk/metrics/view/view_registry.h>

#include <algorithm>

#include "metrics/histogram_views.hpp"
#include "metrics/overflow_renaming_exporter.hpp"
#include "metrics/periodic_metric_reader.hpp"
#include "telemetry/otel_resource.hpp"

namespace lens::telemetry {

namespace sdkmetrics = opentelemetry::sdk::metrics;

BuiltMeterProvider build_meter_provider(
    std::chrono::milliseconds export_interval, const Attributes& resource,
    std::unique_ptr<sdkmetrics::PushMetricExporter> exporter,
    std::vector<std::shared_ptr<sdkmetrics::MetricReader>> readers,
    std::vector<metrics::MetricView> views,
    std::shared_ptr<exporters::PrometheusSnapshot> prometheus) {
  BuiltMeterProvider built;
  auto registry = std::make_unique<sdkmetrics::ViewRegistry>();
  for (auto& view : views) {
    if (view.instrument == nullptr || view.meter == nullptr || view.view == nullptr) continue;
    registry->AddView(std::move(view.instrument), std::move(view.meter), std::move(view.view));
  }
  auto context =
      std::make_unique<sdkmetrics::MeterContext>(std::move(registry), to_otel_resource(resource));
  sdkmetrics::MeterContext* raw_context = context.get();
  built.provider = std::make_shared<sdkmetrics::MeterProvider>(std::move(context));
  // Lens's bound histograms look their views up there.
  metrics::register_meter_context(built.provider, raw_context);
  const std::chrono::milliseconds interval = export_interval;
  if (readers.empty() && exporter != nullptr) {
    // Each export is bounded by the exporter's own timeout (OTEL_METRIC_EXPORT_TIMEOUT for the
    // OTLP exporters, see exporters.cpp).
    readers.push_back(std::make_shared<metrics::PeriodicMetricReader>(
        std::make_unique<metrics::OverflowRenamingExporter>(std::move(exporter)), interval));
  }
  if (prometheus != nullptr) {
    // Its own reader: cumulative whatever OTLP asks for, and its own collection state.
    readers.push_back(std::make_shared<metrics::PeriodicMetricReader>(
        std::make_unique<metrics::OverflowRenamingExporter>(
            exporters::make_prometheus_snapshot_exporter(std::move(prometheus))),
        interval));
  }
  for (auto& reader : readers) {
    built.provider->AddMetricReader(std::move(reader));
  }
  return built;
}

}  // namespace lens::telemetry
