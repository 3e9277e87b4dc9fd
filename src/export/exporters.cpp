// The exporter factory and the console, file and discarding exporters (see exporters.hpp).
#include "export/exporters.hpp"

#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "export/append_file.hpp"
#include "export/console_json.hpp"
#include "export/console_text.hpp"
#include "export/otlp_exporters.hpp"
#include "export/otlp_requests.hpp"
#include "lens/otlp_json.hpp"
#include "lens/validate.hpp"
#include "metrics/metric_temporality.hpp"

namespace lens::exporters {
namespace {

namespace sdkmetrics = opentelemetry::sdk::metrics;
using opentelemetry::sdk::common::ExportResult;

// What the console and discarding exporters record into (the recordables that own their data).
template <Signal S>
using DataRecordable =
    std::conditional_t<S == Signal::traces, opentelemetry::sdk::trace::SpanData, LogRecordData>;

// The exporters that do not send: recordables of type R, the temporality of the preference, and
// no export after Shutdown. Derived writes a batch (write) and closes its output (close).
template <Signal S, class Derived, class R>
class LocalExporter : public SignalExporter<S, Derived> {
 public:
  explicit LocalExporter(TemporalityPreference temporality) : temporality_(temporality) {}

  std::unique_ptr<R> make_recordable() noexcept { return std::make_unique<R>(); }
  sdkmetrics::AggregationTemporality temporality(sdkmetrics::InstrumentType type) const noexcept {
    return metrics::temporality_for(temporality_, type);
  }
  ExportResult Export(const BatchOf<S>& batch) noexcept override {
    if (shut_down_.load(std::memory_order_acquire)) return ExportResult::kFailure;
    return static_cast<Derived*>(this)->write(batch);
  }
  // Each batch is written (or dropped) in Export: nothing of ours waits to be flushed.
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_release);
    return static_cast<Derived*>(this)->close();
  }

 private:
  const TemporalityPreference temporality_;
  std::atomic<bool> shut_down_{false};
};

template <Signal S>
class DiscardingExporter final : public LocalExporter<S, DiscardingExporter<S>, DataRecordable<S>> {
 public:
  using LocalExporter<S, DiscardingExporter<S>, DataRecordable<S>>::LocalExporter;
  ExportResult write(const BatchOf<S>&) noexcept { return ExportResult::kSuccess; }
  bool close() noexcept { return true; }
};

template <Signal S>
class ConsoleExporter final : public LocalExporter<S, ConsoleExporter<S>, DataRecordable<S>> {
 public:
  ConsoleExporter(std::FILE* out, TemporalityPreference temporality)
      : LocalExporter<S, ConsoleExporter<S>, DataRecordable<S>>(temporality), out_(out) {}

  ExportResult write(const BatchOf<S>& batch) noexcept {
    std::string lines;
    if constexpr (S == Signal::metrics) {
      try {
        lines = console_line(batch);
        lines += '\n';
      } catch (...) {
        return ExportResult::kFailure;  // out of memory
      }
    } else {
      for (const auto& recordable : batch) {
        if (const auto* data = dynamic_cast<const DataRecordable<S>*>(recordable.get())) {
          try {
            lines += console_line(*data);
            lines += '\n';
          } catch (...) {
            // A line that cannot be written loses that record, not the batch.
          }
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
  bool close() noexcept { return true; }

 private:
  std::FILE* out_;
  std::mutex mutex_;
};

// The text console's recordables: spans keep the depth they are given.
template <Signal S>
using TextRecordable = std::conditional_t<S == Signal::traces, SpanDataWithDepth, LogRecordData>;

template <Signal S>
class TextConsoleExporter final
    : public LocalExporter<S, TextConsoleExporter<S>, TextRecordable<S>> {
 public:
  TextConsoleExporter(std::shared_ptr<TextConsole> console, TemporalityPreference temporality)
      : LocalExporter<S, TextConsoleExporter<S>, TextRecordable<S>>(temporality),
        console_(std::move(console)) {}

  ExportResult write(const BatchOf<S>& batch) noexcept {
    std::string resource;
    std::vector<std::string> lines;
    try {
      if constexpr (S == Signal::metrics) {
        if (batch.resource_ != nullptr) resource = text_resource_line(*batch.resource_);
        lines.push_back(text_line(batch));
      } else {
        for (const auto& recordable : batch) {
          const auto* data = dynamic_cast<const TextRecordable<S>*>(recordable.get());
          if (data == nullptr) continue;
          if (resource.empty()) resource = resource_line_of(*data);
          if constexpr (S == Signal::traces) {
            lines.push_back(text_line(data->span(), data->depth()));
          } else {
            lines.push_back(text_line(*data));
          }
        }
      }
    } catch (...) {
      return ExportResult::kFailure;  // out of memory
    }
    if (lines.empty()) return ExportResult::kSuccess;
    return console_->write(resource, lines) ? ExportResult::kSuccess : ExportResult::kFailure;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return console_->flush(); }
  bool close() noexcept { return true; }

 private:
  static std::string resource_line_of(const SpanDataWithDepth& span) {
    return text_resource_line(span.span().GetResource());
  }
  static std::string resource_line_of(const LogRecordData& record) {
    return record.resource() != nullptr ? text_resource_line(*record.resource()) : std::string();
  }

  std::shared_ptr<TextConsole> console_;
};

// Each batch as the OTLP exporter would send it, one OTLP/JSON request per line.
template <Signal S>
class FileExporter final
    : public LocalExporter<S, FileExporter<S>, typename OtlpRequests<S>::Recordable> {
 public:
  FileExporter(std::unique_ptr<AppendFile> file, TemporalityPreference temporality)
      : LocalExporter<S, FileExporter<S>, typename OtlpRequests<S>::Recordable>(temporality),
        file_(std::move(file)) {}

  ExportResult write(const BatchOf<S>& batch) noexcept {
    if constexpr (S != Signal::metrics) {
      if (batch.empty()) return ExportResult::kSuccess;
    }
    // Encoded outside the file's lock: only the write is serialized.
    std::string line;
    try {
      line = requests_.with_request(batch,
                                    [](const auto& request) { return otlp_json::encode(request); });
      line += '\n';
    } catch (const std::exception& e) {
      file_->report("cannot encode " + file_->what() + ": " + e.what());
      return ExportResult::kFailure;
    }
    return file_->append(line) ? ExportResult::kSuccess : ExportResult::kFailure;
  }
  bool close() noexcept { return file_->close(); }

 private:
  std::unique_ptr<AppendFile> file_;
  OtlpRequests<S> requests_;
};

// By Signal: the file's name and what a failed write of it loses.
constexpr const char* kFileNames[] = {"traces.jsonl", "metrics.jsonl", "logs.jsonl"};
constexpr const char* kFileItems[] = {"spans", "metrics", "log records"};

}  // namespace

const char* file_name(Signal signal) noexcept { return kFileNames[static_cast<int>(signal)]; }

template <Signal S>
ExporterPtr<S> make_discarding_exporter(TemporalityPreference temporality) {
  return std::make_unique<DiscardingExporter<S>>(temporality);
}

template <Signal S>
ExporterPtr<S> make_console_exporter(std::FILE* out, TemporalityPreference temporality) {
  return std::make_unique<ConsoleExporter<S>>(out, temporality);
}

template <Signal S>
ExporterPtr<S> make_text_console_exporter(std::shared_ptr<TextConsole> console,
                                          TemporalityPreference temporality) {
  return std::make_unique<TextConsoleExporter<S>>(std::move(console), temporality);
}

template <Signal S>
Result<ExporterPtr<S>> make_file_exporter(const ExporterOptions& options) {
  auto file = AppendFile::open(options.file_path, options.file_path_label, file_name(S),
                               kFileItems[static_cast<int>(S)]);
  if (!file.ok()) return Error(file.message());
  return ExporterPtr<S>(
      std::make_unique<FileExporter<S>>(std::move(file).value(), options.temporality));
}

template <Signal S>
Result<ExporterPtr<S>> make_exporter(const ExporterOptions& options,
                                     std::shared_ptr<ExportReport> report) {
  const TemporalityPreference temporality = options.temporality;
  if (!report) report = std::make_shared<ExportReport>(S);
  switch (options.kind) {
    case ExporterKind::none:
      return make_reporting_exporter<S>(make_discarding_exporter<S>(temporality), std::move(report),
                                        "none");
    case ExporterKind::console:
      return make_reporting_exporter<S>(
          options.console_format == ConsoleFormat::text
              ? make_text_console_exporter<S>(stdout_text_console(), temporality)
              : make_console_exporter<S>(stdout, temporality),
          std::move(report), "stdout");
    case ExporterKind::file: {
      auto file = make_file_exporter<S>(options);
      if (!file.ok()) return Error(file.message());
      // The file exporter reports its own write errors once.
      return make_reporting_exporter<S>(std::move(*file), std::move(report),
                                        AppendFile::path_in(options.file_path, file_name(S)),
                                        /*explain_failures=*/false);
    }
    case ExporterKind::otlp:
      break;
  }
  if (Status status = check_otlp_settings(options.otlp, S); !status.ok()) {
    return Error(status.message());
  }
  return make_otlp_exporter<S>(options.otlp, std::move(report), {}, temporality);
}

#define LENS_EXPORTERS_OF(S)                                                           \
  template Result<ExporterPtr<S>> make_exporter<S>(const ExporterOptions&,             \
                                                   std::shared_ptr<ExportReport>);     \
  template ExporterPtr<S> make_console_exporter<S>(std::FILE*, TemporalityPreference); \
  template ExporterPtr<S> make_text_console_exporter<S>(std::shared_ptr<TextConsole>,  \
                                                        TemporalityPreference);        \
  template Result<ExporterPtr<S>> make_file_exporter<S>(const ExporterOptions&);       \
  template ExporterPtr<S> make_discarding_exporter<S>(TemporalityPreference);
LENS_EXPORTERS_OF(Signal::traces)
LENS_EXPORTERS_OF(Signal::metrics)
LENS_EXPORTERS_OF(Signal::logs)
#undef LENS_EXPORTERS_OF

}  // namespace lens::exporters
