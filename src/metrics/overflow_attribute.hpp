// The overflow series of the cardinality limit, named as the OpenTelemetry specification names
// it. opentelemetry-cpp 1.19 folds measurements past the limit (2000 series per instrument)
// into one series, but labels it `otel.metrics.overflow=true`; the specification, and the
// backends that look for it, say `otel.metric.overflow=true`. Exporters built by setup and the
// manual reader rename it on the way out. Stateless.
#pragma once

#include <opentelemetry/sdk/metrics/export/metric_producer.h>

#include <optional>
#include <string_view>
#include <vector>

namespace lens::metrics {

inline constexpr std::string_view kOverflowAttribute = "otel.metric.overflow";
inline constexpr std::string_view kSdkOverflowAttribute = "otel.metrics.overflow";

// Renames the SDK's overflow attribute in place; returns true when there was one.
bool rename_overflow_attribute(std::vector<opentelemetry::sdk::metrics::MetricData>& metrics);

// A copy of `data` with the overflow attribute renamed, or nullopt when `data` has none
// (the common case costs one scan and no copy).
std::optional<std::vector<opentelemetry::sdk::metrics::ScopeMetrics>> with_spec_overflow(
    const opentelemetry::sdk::metrics::ResourceMetrics& data);

}  // namespace lens::metrics
