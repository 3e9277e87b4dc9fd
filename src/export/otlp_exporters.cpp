// OTLP exporters for the three signals (see otlp_exporters.hpp).
#include "export/otlp_exporters.hpp"

#include <opentelemetry/exporters/otlp/otlp_log_recordable.h>
#include <opentelemetry/exporters/otlp/otlp_metric_utils.h>
#include <opentelemetry/exporters/otlp/otlp_preferred_temporality.h>
#include <opentelemetry/exporters/otlp/otlp_recordable_utils.h>
#include <opentelemetry/proto/collector/logs/v1/logs_service.pb.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "export/otlp_span_batch.hpp"
#include "export/otlp_transport.hpp"
#include "export/unique_attribute_keys.hpp"

namespace lens::exporters {
namespace {

namespace otlp = opentelemetry::exporter::otlp;
namespace sdkcommon = opentelemetry::sdk::common;
namespace sdklogs = opentelemetry::sdk::logs;
namespace sdkmetrics = opentelemetry::sdk::metrics;
namespace sdktrace = opentelemetry::sdk::trace;
using sdkcommon::ExportResult;

// Sends requests of one signal with retries and reports what happened. Shared by the three
// exporters below.
class OtlpExportCore {
 public:
  OtlpExportCore(const OtlpSignalSettings& settings, Signal signal,
                 std::shared_ptr<ExportReport> report, const RetryPolicy& retry)
      : signal_(signal),
        transport_(make_otlp_transport(settings, signal)),
        report_(std::move(report)),
        retry_(retry),
        timeout_(settings.timeout_ms.value) {}

  const std::string& target() const noexcept { return transport_->target(); }
  const std::shared_ptr<ExportReport>& report() const noexcept { return report_; }

  ExportResult send(const google::protobuf::Message& request, std::size_t items) noexcept {
    if (shut_down_.load(std::memory_order_acquire)) return ExportResult::kFailure;
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    const Attempt result = send_with_retries(
        retry_, deadline, report_->drain(),
        [&](Millis left) { return transport_->send(request, left); },
        [&] { report_->add_retry(); });
    const std::string what = std::string(to_string(signal_)) + " export to " + target();
    if (!result.ok()) {
      if (result.cause != "shutdown") {
        report_->report(result.cause, what + " failed: " + result.message + "; " +
                                          std::to_string(items) + " " + items_of(signal_) +
                                          " dropped");
      }
      return ExportResult::kFailure;
    }
    if (result.rejected > 0 || !result.rejected_message.empty()) {
      report_->add_rejected(static_cast<std::uint64_t>(std::max<std::int64_t>(0, result.rejected)));
      // One line per distinct receiver message: the cause of the rejection.
      report_->report("partial-success:" + result.rejected_message.substr(0, 120),
                      what + ": the receiver rejected " + std::to_string(result.rejected) + " of " +
                          std::to_string(items) + " " + items_of(signal_) + " (partial_success: '" +
                          result.rejected_message.substr(0, 200) + "')");
    }
    return ExportResult::kSuccess;
  }

  bool shutdown() noexcept {
    shut_down_.store(true, std::memory_order_release);
    report_->stop_retrying();
    transport_->cancel();
    return true;
  }

 private:
  const Signal signal_;
  std::unique_ptr<OtlpTransport> transport_;
  std::shared_ptr<ExportReport> report_;
  const RetryPolicy retry_;
  const Millis timeout_;
  std::atomic<bool> shut_down_{false};
};

class OtlpSpanExporter final : public sdktrace::SpanExporter {
 public:
  explicit OtlpSpanExporter(std::unique_ptr<OtlpExportCore> core) : core_(std::move(core)) {}

  std::unique_ptr<sdktrace::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<OtlpSpanRecordable>();
  }
  ExportResult Export(const opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>&
                          spans) noexcept override {
    if (spans.empty()) return ExportResult::kSuccess;
    std::unique_ptr<OtlpSpanBatch> batch;
    ExportResult result = ExportResult::kFailure;
    try {
      batch = batches_.take();
      result = core_->send(batch->build(spans), spans.size());
    } catch (...) {
      return ExportResult::kFailure;  // out of memory building the request
    }
    batches_.give_back(std::move(batch));
    return result;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return core_->shutdown(); }

 private:
  std::unique_ptr<OtlpExportCore> core_;
  // Export may run on several threads at once (the span pipeline's senders).
  OtlpSpanBatchPool batches_;
};

class OtlpMetricExporter final : public sdkmetrics::PushMetricExporter {
 public:
  OtlpMetricExporter(std::unique_ptr<OtlpExportCore> core, otlp::PreferredAggregationTemporality t)
      : core_(std::move(core)), selector_(otlp::OtlpMetricUtils::ChooseTemporalitySelector(t)) {}

  ExportResult Export(const sdkmetrics::ResourceMetrics& data) noexcept override {
    const std::uint64_t points = count_points(data);
    if (points == 0) return ExportResult::kSuccess;
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
    otlp::OtlpMetricUtils::PopulateRequest(data, &request);
    keep_last_value_per_key(&request);
    return core_->send(request, points);
  }
  sdkmetrics::AggregationTemporality GetAggregationTemporality(
      sdkmetrics::InstrumentType instrument_type) const noexcept override {
    return selector_(instrument_type);
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return core_->shutdown(); }

 private:
  std::unique_ptr<OtlpExportCore> core_;
  sdkmetrics::AggregationTemporalitySelector selector_;
};

class OtlpLogRecordExporter final : public sdklogs::LogRecordExporter {
 public:
  explicit OtlpLogRecordExporter(std::unique_ptr<OtlpExportCore> core) : core_(std::move(core)) {}

  std::unique_ptr<sdklogs::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<otlp::OtlpLogRecordable>();
  }
  ExportResult Export(const opentelemetry::nostd::span<std::unique_ptr<sdklogs::Recordable>>&
                          records) noexcept override {
    if (records.empty()) return ExportResult::kSuccess;
    opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest request;
    otlp::OtlpRecordableUtils::PopulateRequest(records, &request);
    keep_last_value_per_key(&request);
    return core_->send(request, records.size());
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return core_->shutdown(); }

 private:
  std::unique_ptr<OtlpExportCore> core_;
};

otlp::PreferredAggregationTemporality temporality_of(TemporalityPreference preference) {
  switch (preference) {
    case TemporalityPreference::delta:
      return otlp::PreferredAggregationTemporality::kDelta;
    case TemporalityPreference::lowmemory:
      return otlp::PreferredAggregationTemporality::kLowMemory;
    case TemporalityPreference::cumulative:
      break;
  }
  return otlp::PreferredAggregationTemporality::kCumulative;
}

}  // namespace

Status check_otlp_settings(const OtlpSignalSettings& settings, Signal signal) {
  // A client key without its certificate (or the reverse) would only fail at the first TLS
  // handshake, on the exporter's thread; say so at setup instead.
  const Sourced<std::string>& key = settings.client_key;
  const Sourced<std::string>& certificate = settings.client_certificate;
  if (key.value.empty() == certificate.value.empty()) return {};
  const Sourced<std::string>& given = key.value.empty() ? certificate : key;
  std::string missing = "OTEL_EXPORTER_OTLP_";
  for (char c : to_string(signal)) missing += static_cast<char>(c - 'a' + 'A');
  missing += key.value.empty() ? "_CLIENT_KEY" : "_CLIENT_CERTIFICATE";
  const std::string name = given.source.rfind("env:", 0) == 0
                               ? given.source.substr(4)
                               : (key.value.empty() ? "the client certificate" : "the client key");
  return Error("Client TLS files must come in pairs: " + name + "='" + given.value +
               "' is set but " + missing + " (or its general form) is not; " +
               "accepted: both a client key and a client certificate (mTLS), or neither");
}

std::unique_ptr<sdktrace::SpanExporter> make_otlp_span_exporter(
    const OtlpSignalSettings& settings) {
  return make_otlp_span_exporter(settings, std::make_shared<ExportReport>(Signal::traces));
}

std::unique_ptr<sdktrace::SpanExporter> make_otlp_span_exporter(
    const OtlpSignalSettings& settings, std::shared_ptr<ExportReport> report,
    const RetryPolicy& retry) {
  auto core = std::make_unique<OtlpExportCore>(settings, Signal::traces, report, retry);
  std::string target = core->target();
  return make_reporting_span_exporter(std::make_unique<OtlpSpanExporter>(std::move(core)),
                                      std::move(report), std::move(target));
}

std::unique_ptr<sdkmetrics::PushMetricExporter> make_otlp_metric_exporter(
    const OtlpSignalSettings& settings, TemporalityPreference temporality) {
  return make_otlp_metric_exporter(settings, temporality,
                                   std::make_shared<ExportReport>(Signal::metrics));
}

std::unique_ptr<sdkmetrics::PushMetricExporter> make_otlp_metric_exporter(
    const OtlpSignalSettings& settings, TemporalityPreference temporality,
    std::shared_ptr<ExportReport> report, const RetryPolicy& retry) {
  auto core = std::make_unique<OtlpExportCore>(settings, Signal::metrics, report, retry);
  std::string target = core->target();
  return make_reporting_metric_exporter(
      std::make_unique<OtlpMetricExporter>(std::move(core), temporality_of(temporality)),
      std::move(report), std::move(target));
}

std::unique_ptr<sdklogs::LogRecordExporter> make_otlp_log_record_exporter(
    const OtlpSignalSettings& settings) {
  return make_otlp_log_record_exporter(settings, std::make_shared<ExportReport>(Signal::logs));
}

std::unique_ptr<sdklogs::LogRecordExporter> make_otlp_log_record_exporter(
    const OtlpSignalSettings& settings, std::shared_ptr<ExportReport> report,
    const RetryPolicy& retry) {
  auto core = std::make_unique<OtlpExportCore>(settings, Signal::logs, report, retry);
  std::string target = core->target();
  return make_reporting_log_record_exporter(
      std::make_unique<OtlpLogRecordExporter>(std::move(core)), std::move(report),
      std::move(target));
}

}  // namespace lens::exporters
