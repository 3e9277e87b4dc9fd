// Assembly of an exporting rank's logging (see logger_provider.hpp).
#include "telemetry/logger_provider.hpp"

#include "telemetry/otel_resource.hpp"

namespace lens::telemetry {

namespace sdklogs = opentelemetry::sdk::logs;

BuiltLoggerProvider build_logger_provider(const Config& config, const Attributes& resource,
                                          std::unique_ptr<sdklogs::LogRecordExporter> exporter,
                                          std::shared_ptr<native::SharedTickCalibration> clock) {
  native::LogPipelineOptions options;
  options.clock = std::move(clock);
  options.max_queue_size = static_cast<std::size_t>(config.otel.blrp.max_queue_size.value);
  options.max_export_batch_size =
      static_cast<std::size_t>(config.otel.blrp.max_export_batch_size.value);
  options.schedule_delay = std::chrono::milliseconds(config.otel.blrp.schedule_delay_ms.value);
  options.limits = native::AttributeLimits::of_log_records(config.otel.limits);
  const auto otel_resource = to_otel_resource(resource);
  BuiltLoggerProvider built;
  built.pipeline =
      std::make_shared<native::LogPipeline>(options, std::move(exporter), otel_resource);
  built.provider =
      std::make_shared<sdklogs::LoggerProvider>(built.pipeline->make_processor(), otel_resource);
  return built;
}

}  // namespace lens::telemetry
