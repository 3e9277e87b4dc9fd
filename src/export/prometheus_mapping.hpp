// OpenTelemetry metric data as Prometheus metric families, per the OpenTelemetry specification's
// "Prometheus and OpenMetrics Compatibility" (OTLP metric points to Prometheus):
//   - names: characters outside [a-zA-Z0-9_:] become '_', runs of '_' collapse, a leading digit
//     gets a '_' in front; the unit, in Prometheus words ("ms" -> "milliseconds", "{token}/s" ->
//     "per_second", "1" -> "ratio"), is appended unless the name already ends with it; monotonic
//     sums end in "_total";
//   - cumulative monotonic sums are counters, non-monotonic sums and gauges are gauges, histograms
//     are histograms (_bucket with cumulative counts and a final +Inf, _sum, _count); delta sums
//     and histograms are dropped (the pull reader asks for cumulative);
//   - attributes are labels with the same character rules; keys that meet after that get their
//     values joined with ';' in the order of the original keys; every point also carries
//     otel_scope_name and otel_scope_version;
//   - the resource is one gauge `target_info` with value 1 and its attributes as labels;
//   - a metric whose name meets a family of another type is dropped (one TYPE per name).
// Families come out sorted by name (target_info first), points by labels, so a scrape is stable.
// Thread-safety: pure functions.
#pragma once

#include <opentelemetry/sdk/metrics/export/metric_producer.h>
#include <prometheus/metric_family.h>

#include <string>
#include <string_view>
#include <vector>

namespace lens::exporters {

// The unit in Prometheus words ("" when it has none, as for "{iteration}").
std::string prometheus_unit(std::string_view otel_unit);

// The family name of a metric; `monotonic_sum` adds "_total".
std::string prometheus_metric_name(std::string_view otel_name, std::string_view otel_unit,
                                   bool monotonic_sum);

// A label name for an attribute key.
std::string prometheus_label_name(std::string_view key);

std::vector<prometheus::MetricFamily> to_metric_families(
    const opentelemetry::sdk::metrics::ResourceMetrics& data);

}  // namespace lens::exporters
