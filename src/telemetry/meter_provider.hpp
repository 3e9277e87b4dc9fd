// Builds an exporting rank's opentelemetry-cpp meter provider from its options: the
// resource, the views, and either the caller's readers (SetupOverrides::metric_readers) or one
// periodic reader (OTEL_METRIC_EXPORT_INTERVAL / OTEL_METRIC_EXPORT_TIMEOUT, collection on the
// reader's own thread) around the exporter, behind an overflow-renaming wrapper; and, for a
// Prometheus endpoint, a second periodic reader that refreshes its snapshot.
// Nothing is installed globally here. Thread-safety: stateless.
#pragma once

#include <opentelemetry/sdk/metrics/meter_provider.h>
#include <opentelemetry/sdk/metrics/metric_reader.h>
#include <opentelemetry/sdk/metrics/push_metric_exporter.h>

#include <chrono>
#include <memory>
#include <vector>

#include "export/prometheus_endpoint.hpp"
#include "lens/attributes.hpp"
#include "lens/metric_setup.hpp"
#include "lens/metrics.hpp"

namespace lens::telemetry {

struct BuiltMeterProvider {
  std::shared_ptr<opentelemetry::sdk::metrics::MeterProvider> provider;
};

// `exporter` (if any) is used when `readers` is empty; `prometheus` (if any) is refreshed every
// `export_interval` (OTEL_METRIC_EXPORT_INTERVAL) whatever the readers.
BuiltMeterProvider build_meter_provider(
    std::chrono::milliseconds export_interval, const Attributes& resource,
    std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> exporter,
    std::vector<std::shared_ptr<opentelemetry::sdk::metrics::MetricReader>> readers,
    std::vector<metrics::MetricView> views,
    std::shared_ptr<exporters::PrometheusSnapshot> prometheus = nullptr);

}  // namespace lens::telemetry
