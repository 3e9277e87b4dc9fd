// Log record exporter construction (see log_exporters.hpp).
#include "export/log_exporters.hpp"

#include <atomic>
#include <utility>

#include "export/append_file.hpp"
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
  if (!report) report = std::make_shared<ExportReport>(Signal::logs);
  if (config.exporter == "none") {
    return make_reporting_log_record_exporter(make_discarding_log_exporter(), std::move(report),
                                              "none");
  }
  if (config.exporter == "console") {
    return make_reporting_log_record_exporter(make_console_log_exporter(stdout), std::move(report),
                                              "stdout");
  }
  if (config.exporter == "file") {
    auto file = make_file_log_exporter(config);
    if (!file.ok()) return Error(file.message());
    // The file exporter reports its own write errors once.
    return make_reporting_log_record_exporter(std::move(*file), std::move(report),
                                              AppendFile::path_in(config, kLogsFileName),
                                              /*explain_failures=*/false);
  }
  if (config.exporter == "otlp") {
    const OtlpSignalSettings& settings = config.otel.logs;
    if (Status status = check_otlp_settings(settings, Signal::logs); !status.ok()) {
      return Error(status.message());
    }
    return make_otlp_log_record_exporter(settings, std::move(report));
  }
  return Error("Exporter '" + config.exporter + "' in " + config.label_of("exporter") +
               " is not available for logs in this build; accepted: otlp, console, file, none");
}

}  // namespace lens::exporters
