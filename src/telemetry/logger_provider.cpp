// Assembly of an exporting rank's logger provider (see logger_provider.hpp). Chain: counting
// processor -> batch processor -> counting exporter -> exporter.
#include "telemetry/logger_provider.hpp"

#include <opentelemetry/sdk/logs/batch_log_record_processor.h>
#include <opentelemetry/sdk/logs/batch_log_record_processor_options.h>

#include "logs/counting_log_exporter.hpp"
#include "telemetry/otel_resource.hpp"

namespace lens::telemetry {

namespace sdklogs = opentelemetry::sdk::logs;

BuiltLoggerProvider build_logger_provider(const Config& config, const Attributes& resource,
                                          std::unique_ptr<sdklogs::LogRecordExporter> exporter) {
  BuiltLoggerProvider built;
  built.counters = std::make_shared<metrics::SignalCounters>();
  sdklogs::BatchLogRecordProcessorOptions batch;
  batch.max_queue_size = static_cast<std::size_t>(config.otel.blrp.max_queue_size.value);
  batch.max_export_batch_size =
      static_cast<std::size_t>(config.otel.blrp.max_export_batch_size.value);
  batch.schedule_delay_millis = std::chrono::milliseconds(config.otel.blrp.schedule_delay_ms.value);
  auto processor = std::make_unique<sdklogs::BatchLogRecordProcessor>(
      std::make_unique<logs::CountingLogExporter>(std::move(exporter), built.counters), batch);
  built.provider = std::make_shared<sdklogs::LoggerProvider>(
      std::make_unique<logs::CountingLogProcessor>(std::move(processor), built.counters,
                                                   batch.max_queue_size),
      to_otel_resource(resource));
  return built;
}

}  // namespace lens::telemetry
