// Builds an exporting rank's opentelemetry-cpp logger provider from the lens config: the
// resource and one batch log-record processor (OTEL_BLRP_*) in front of the exporter, with
// records counted on both sides for stats and self-metrics. Nothing is installed globally
// here. Thread-safety: stateless.
#pragma once

#include <opentelemetry/sdk/logs/exporter.h>
#include <opentelemetry/sdk/logs/logger_provider.h>

#include <memory>

#include "lens/attributes.hpp"
#include "lens/config.hpp"
#include "metrics/export_counters.hpp"

namespace lens::telemetry {

struct BuiltLoggerProvider {
  std::shared_ptr<opentelemetry::sdk::logs::LoggerProvider> provider;
  std::shared_ptr<metrics::SignalCounters> counters;
};

BuiltLoggerProvider build_logger_provider(
    const Config& config, const Attributes& resource,
    std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> exporter);

}  // namespace lens::telemetry
