// The OTLP JSON file log exporter (see file_log_exporter.hpp).
#include "export/file_log_exporter.hpp"

#include <opentelemetry/exporters/otlp/otlp_log_recordable.h>
#include <opentelemetry/exporters/otlp/otlp_recordable_utils.h>
#include <opentelemetry/proto/collector/logs/v1/logs_service.pb.h>

#include <atomic>
#include <exception>

#include "export/append_file.hpp"
#include "export/otlp_json.hpp"
#include "export/unique_attribute_keys.hpp"

namespace lens::exporters {
namespace {

namespace sdklogs = opentelemetry::sdk::logs;
namespace otlp = opentelemetry::exporter::otlp;
using opentelemetry::sdk::common::ExportResult;

class FileLogExporter final : public sdklogs::LogRecordExporter {
 public:
  explicit FileLogExporter(std::unique_ptr<AppendFile> file) : file_(std::move(file)) {}

  // The OTLP recordable copies everything into protobuf at the logging call.
  std::unique_ptr<sdklogs::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<otlp::OtlpLogRecordable>();
  }

  ExportResult Export(const opentelemetry::nostd::span<std::unique_ptr<sdklogs::Recordable>>&
                          records) noexcept override {
    if (shut_down_.load(std::memory_order_acquire)) return ExportResult::kFailure;
    if (records.empty()) return ExportResult::kSuccess;
    std::string line;
    try {
      opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest request;
      otlp::OtlpRecordableUtils::PopulateRequest(records, &request);
      keep_last_value_per_key(&request);
      line = otlp_json::encode(request);
      line += '\n';
    } catch (const std::exception& e) {
      file_->report(std::string("cannot encode log records: ") + e.what());
      return ExportResult::kFailure;
    }
    return file_->append(line) ? ExportResult::kSuccess : ExportResult::kFailure;
  }

  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }

  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_release);
    return file_->close();
  }

 private:
  std::unique_ptr<AppendFile> file_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace

Result<std::unique_ptr<sdklogs::LogRecordExporter>> make_file_log_exporter(const Config& config) {
  auto file = AppendFile::open(config, kLogsFileName, "log records");
  if (!file.ok()) return Error(file.message());
  return std::unique_ptr<sdklogs::LogRecordExporter>(
      std::make_unique<FileLogExporter>(std::move(file).value()));
}

}  // namespace lens::exporters
