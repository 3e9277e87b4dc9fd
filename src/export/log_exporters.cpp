// Log record exporter construction (see log_exporters.hpp).
#include "export/log_exporters.hpp"

#include <atomic>
#include <utility>

#include "export/console_log_exporter.hpp"
#include "export/file_log_exporter.hpp"
#include "export/log_record_data.hpp"
#include "export/otlp_exporters.hpp"

namespace lens::exporters {
namespace {

namespace sdklogs = opentelemetry::sdk::logs;

class DiscardingLogExporter final : public sdklogs::LogRecordExporter {
 public:
  std::unique_ptr<sdklogs::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<LogRecordData>();
  }
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<sdklogs::Recordable>>&) noexcept override {
    return shut_down_.load(std::memory_order_relaxed)
               ? opentelemetry::sdk::common::ExportResult::kFailure
               : opentelemetry::sdk::common::ExportResult::kSuccess;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_relaxed);
    return true;
  }

 private:
  std::atomic<bool> shut_down_{false};
};

}  // namespace

std::unique_ptr<sdklogs::LogRecordExporter> make_discarding_log_exporter() {
  return std::make_unique<DiscardingLogExporter>();
}

Result<std::unique_ptr<sdklogs::LogRecordExporter>> make_log_record_exporter(
    const Config& config, std::shared_ptr<ExportReport> report) {
  if (config.exporter == "none") {
    return make_discarding_log_exporter();
  }
  if (config.exporter == "console") {
    return make_console_log_exporter(stdout);
  }
  if (config.exporter == "file") {
    return make_file_log_exporter(config);
  }
  if (config.exporter == "otlp") {
    const OtlpSignalSettings& settings = config.otel.logs;
    if (Status status = check_otlp_settings(settings, Signal::logs); !status.ok()) {
      return Error(status.message());
    }
    if (report) return make_otlp_log_record_exporter(settings, std::move(report));
    return make_otlp_log_record_exporter(settings);
  }
  return Error("Exporter '" + config.exporter + "' in " + config.label_of("exporter") +
               " is not available for logs in this build; accepted: otlp, console, file, none");
}

}  // namespace lens::exporters
