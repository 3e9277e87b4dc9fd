// Builds an exporting rank's logging from its options (telemetry/plan.hpp): the native log pipeline
// (its export thread in front of the exporter, OTEL_BLRP_* and the log record limits) and
// opentelemetry-cpp's logger provider with the resource, whose loggers hand their records to the
// same pipeline. Nothing is installed globally here. Thread-safety: stateless.
#pragma once

#include <opentelemetry/sdk/logs/exporter.h>
#include <opentelemetry/sdk/logs/logger_provider.h>

#include <memory>

#include "lens/attributes.hpp"
#include "native/log_pipeline.hpp"

namespace lens::telemetry {

struct BuiltLoggerProvider {
  std::shared_ptr<native::LogPipeline> pipeline;
  std::shared_ptr<opentelemetry::sdk::logs::LoggerProvider> provider;
};

// `options.clock`: the tick conversion, shared with the native span pipeline (null: its own).
BuiltLoggerProvider build_logger_provider(
    const native::LogPipelineOptions& options, const Attributes& resource,
    std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> exporter);

}  // namespace lens::telemetry
