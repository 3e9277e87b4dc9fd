// Span exporter construction (see span_exporters.hpp).
#include "export/span_exporters.hpp"

#include <opentelemetry/sdk/trace/span_data.h>

#include <atomic>

#include "export/append_file.hpp"
#include "export/console_span_exporter.hpp"
#include "export/file_span_exporter.hpp"
#include "export/otlp_exporters.hpp"

namespace lens::exporters {
namespace {

namespace sdktrace = opentelemetry::sdk::trace;

class DiscardingSpanExporter final : public sdktrace::SpanExporter {
 public:
  std::unique_ptr<sdktrace::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<sdktrace::SpanData>();
  }
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>&) noexcept override {
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

std::unique_ptr<sdktrace::SpanExporter> make_discarding_span_exporter() {
  return std::make_unique<DiscardingSpanExporter>();
}

Result<std::unique_ptr<sdktrace::SpanExporter>> make_span_exporter(const Config& config) {
  return make_span_exporter(config, std::make_shared<ExportReport>(Signal::traces));
}

Result<std::unique_ptr<sdktrace::SpanExporter>> make_span_exporter(
    const Config& config, std::shared_ptr<ExportReport> report) {
  if (config.exporter == "none") {
    return make_reporting_span_exporter(make_discarding_span_exporter(), std::move(report), "none");
  }
  if (config.exporter == "console") {
    return make_reporting_span_exporter(make_console_span_exporter(stdout), std::move(report),
                                        "stdout");
  }
  if (config.exporter == "file") {
    auto file = make_file_span_exporter(config);
    if (!file.ok()) return Error(file.message());
    // The file exporter reports its own write errors once.
    return make_reporting_span_exporter(std::move(*file), std::move(report),
                                        AppendFile::path_in(config, kTracesFileName),
                                        /*explain_failures=*/false);
  }
  if (config.exporter == "otlp") {
    const OtlpSignalSettings& settings = config.otel.traces;
    if (Status status = check_otlp_settings(settings, Signal::traces); !status.ok()) {
      return Error(status.message());
    }
    return make_otlp_span_exporter(settings, std::move(report));
  }
  return Error("Exporter '" + config.exporter + "' in " + config.label_of("exporter") +
               " is not available for traces in this build; accepted: otlp, console, file, none");
}

}  // namespace lens::exporters
