// exporter=console for metrics: one compact JSON object per metrics export (the whole
// collection) on stdout, with the key shapes of the Python original's console output
// (SPEC Part 2 §G.2): resource_metrics -> scope_metrics -> metrics -> data -> data_points.
// Thread-safety: Export may be called from any thread; each line is written whole under a
// lock and flushed.
#pragma once

#include <opentelemetry/sdk/metrics/export/metric_producer.h>
#include <opentelemetry/sdk/metrics/push_metric_exporter.h>

#include <cstdio>
#include <memory>
#include <string>

#include "lens/otel_settings.hpp"

namespace lens::exporters {

// The JSON line (without the newline) for one collection.
std::string console_metrics_line(const opentelemetry::sdk::metrics::ResourceMetrics& data);

// Writes to `out`; asks the SDK for the temporality that `temporality` prefers.
std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> make_console_metric_exporter(
    TemporalityPreference temporality, std::FILE* out = stdout);

}  // namespace lens::exporters
