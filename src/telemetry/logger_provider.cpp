// Assembly of an exporting rank's logging (see logger_provider.hpp).
#include "telemetry/logger_provider.hpp"

#include "telemetry/otel_resource.hpp"

namespace lens::telemetry {

namespace sdklogs = opentelemetry::sdk::logs;

BuiltLoggerProvider build_logger_provider(const native::LogPipelineOptions& options,
                                          const Attributes& resource,
                                          std::unique_ptr<sdklogs::LogRecordExporter> exporter) {
  const auto otel_resource = to_otel_resource(resource);
  BuiltLoggerProvider built;
  built.pipeline =
      std::make_shared<native::LogPipeline>(options, std::move(exporter), otel_resource);
  built.provider =
      std::make_shared<sdklogs::LoggerProvider>(built.pipeline->make_processor(), otel_resource);
  return built;
}

}  // namespace lens::telemetry
