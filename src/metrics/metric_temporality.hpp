// OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE as opentelemetry-cpp's per-instrument
// temporality choice, for the exporters that are not OTLP (console, file, none) — the OTLP
// exporters take the preference as an option of their own — and for the manual reader. In the
// metrics layer, below export, so that both use it (docs/design/architecture.md). Stateless.
#pragma once

#include <opentelemetry/sdk/metrics/instruments.h>

#include "lens/otel_settings.hpp"

namespace lens::metrics {

// The OpenTelemetry specification's table: cumulative for everything; delta for counters and
// histograms (sync and async) with up-down counters cumulative; low memory: delta only for the
// synchronous counter and histogram. Gauges are cumulative (a last value has no temporality).
opentelemetry::sdk::metrics::AggregationTemporality temporality_for(
    TemporalityPreference preference, opentelemetry::sdk::metrics::InstrumentType type) noexcept;

}  // namespace lens::metrics
