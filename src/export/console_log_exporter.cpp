// Console JSON-lines log exporter (see console_log_exporter.hpp).
#include "export/console_log_exporter.hpp"

#include <atomic>
#include <mutex>

#include "export/console_json.hpp"

namespace lens::exporters {
namespace {

namespace sdklogs = opentelemetry::sdk::logs;
using console_json::Json;
using opentelemetry::sdk::common::ExportResult;

Json timestamp_json(opentelemetry::common::SystemTimestamp ts) {
  const auto since = ts.time_since_epoch();
  return since.count() == 0 ? Json(nullptr) : Json(console_json::iso8601(since));
}

class ConsoleLogExporter final : public sdklogs::LogRecordExporter {
 public:
  explicit ConsoleLogExporter(std::FILE* out) : out_(out) {}

  std::unique_ptr<sdklogs::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<LogRecordData>();
  }

  ExportResult Export(const opentelemetry::nostd::span<std::unique_ptr<sdklogs::Recordable>>&
                          records) noexcept override {
    if (shut_down_.load(std::memory_order_relaxed)) return ExportResult::kFailure;
    std::string lines;
    for (const auto& recordable : records) {
      if (const auto* record = dynamic_cast<const LogRecordData*>(recordable.get())) {
        try {
          lines += console_log_line(*record);
          lines += '\n';
        } catch (...) {
          // A value the JSON writer rejects (invalid UTF-8) loses that record, not the batch.
        }
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    const bool written = std::fwrite(lines.data(), 1, lines.size(), out_) == lines.size();
    std::fflush(out_);
    return written ? ExportResult::kSuccess : ExportResult::kFailure;
  }

  bool ForceFlush(std::chrono::microseconds) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::fflush(out_) == 0;
  }

  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_relaxed);
    return true;
  }

 private:
  std::FILE* out_;
  std::mutex mutex_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace

std::string console_log_line(const LogRecordData& record) {
  const auto severity = static_cast<std::size_t>(record.severity());
  const bool has_context = record.trace_id().IsValid();
  Json line;
  line["body"] = record.body() != nullptr ? console_json::value(*record.body()) : Json(nullptr);
  line["severity_number"] = severity == 0 ? Json(nullptr) : Json(severity);
  line["severity_text"] =
      severity < 25 ? std::string(opentelemetry::logs::SeverityNumToText[severity]) : "INVALID";
  line["attributes"] =
      record.attributes().empty() ? Json(nullptr) : console_json::attributes(record.attributes());
  line["dropped_attributes"] = 0;
  line["timestamp"] = timestamp_json(record.timestamp());
  line["observed_timestamp"] = timestamp_json(record.observed_timestamp());
  line["trace_id"] = has_context ? console_json::hex_id(record.trace_id().Id()) : "";
  line["span_id"] = has_context ? console_json::hex_id(record.span_id().Id()) : "";
  line["trace_flags"] = has_context ? Json(record.trace_flags().flags()) : Json(nullptr);
  line["resource"] = record.resource() != nullptr
                         ? console_json::resource(*record.resource())
                         : Json{{"attributes", Json::object()}, {"schema_url", ""}};
  line["event_name"] = record.event_name().empty() ? Json(nullptr) : Json(record.event_name());
  // Invalid UTF-8 in a value becomes U+FFFD rather than an exception that would lose the line.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::unique_ptr<sdklogs::LogRecordExporter> make_console_log_exporter(std::FILE* out) {
  return std::make_unique<ConsoleLogExporter>(out);
}

}  // namespace lens::exporters
