// The library's own metrics, recorded on exporting ranks with metrics on (scope nemo.lens):
// lens.exporter.exported, lens.exporter.failed and lens.exporter.dropped (observable counters
// of records — spans, metric data points, log records — with attribute signal=traces|metrics|
// logs) and lens.queue.size (observable gauge of records accepted and not yet through an
// export, per signal); with traces on, lens.limits.dropped (span attributes, events and links
// the count limits dropped, attribute item=attribute|event|link) and, with traces or logs on,
// lens.limits.truncated_values. Read from the handle's statistics at each collection.
// Thread-safety: the callbacks run on the reader's thread and read only atomics.
#pragma once

#include <opentelemetry/metrics/meter.h>

#include <functional>
#include <memory>

#include "lens/telemetry.hpp"

namespace lens::telemetry {

class SelfMetrics;

// Registers the instruments on `meter`; they stay registered while the result lives.
// `traces` / `logs`: whether those signals have providers (metrics always do here).
std::shared_ptr<SelfMetrics> register_self_metrics(opentelemetry::metrics::Meter& meter,
                                                   std::function<TelemetryStats()> stats,
                                                   bool traces, bool logs);

}  // namespace lens::telemetry
