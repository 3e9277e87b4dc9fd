// The OTLP JSON file span exporter (see file_span_exporter.hpp).
#include "export/file_span_exporter.hpp"

#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

#include <atomic>
#include <exception>
#include <string>
#include <utility>

#include "export/append_file.hpp"
#include "export/otlp_json.hpp"
#include "export/otlp_span_batch.hpp"

namespace lens::exporters {
namespace {

namespace sdktrace = opentelemetry::sdk::trace;
using opentelemetry::sdk::common::ExportResult;

class FileSpanExporter final : public sdktrace::SpanExporter {
 public:
  explicit FileSpanExporter(std::unique_ptr<AppendFile> file) : file_(std::move(file)) {}

  std::unique_ptr<sdktrace::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<OtlpSpanRecordable>();
  }

  ExportResult Export(const opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>&
                          spans) noexcept override {
    if (shut_down_.load(std::memory_order_acquire)) return ExportResult::kFailure;
    if (spans.empty()) return ExportResult::kSuccess;
    // Encoded outside the file's lock: only the write is serialized.
    std::string line;
    std::unique_ptr<OtlpSpanBatch> batch;
    try {
      // The request the OTLP exporter would send (one resource per distinct resource, unique
      // attribute keys), on a reused arena block.
      batch = batches_.take();
      line = otlp_json::encode(batch->build(spans));
      line += '\n';
    } catch (const std::exception& e) {
      file_->report(std::string("cannot encode spans: ") + e.what());
      return ExportResult::kFailure;
    }
    batches_.give_back(std::move(batch));
    return file_->append(line) ? ExportResult::kSuccess : ExportResult::kFailure;
  }

  // Every batch reaches the kernel in Export; there is no buffer of ours to flush.
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }

  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_release);
    return file_->close();
  }

 private:
  std::unique_ptr<AppendFile> file_;
  OtlpSpanBatchPool batches_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace

Result<std::unique_ptr<sdktrace::SpanExporter>> make_file_span_exporter(const Config& config) {
  auto file = AppendFile::open(config, kTracesFileName, "spans");
  if (!file.ok()) return Error(file.message());
  return std::unique_ptr<sdktrace::SpanExporter>(
      std::make_unique<FileSpanExporter>(std::move(*file)));
}

}  // namespace lens::exporters
