// OTLP exporters for the three signals (see otlp_exporters.hpp).
#include "export/otlp_exporters.hpp"

#include <opentelemetry/exporters/otlp/otlp_metric_utils.h>
#include <opentelemetry/exporters/otlp/otlp_preferred_temporality.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "export/otlp_requests.hpp"
#include "export/otlp_transport.hpp"

namespace lens::exporters {
namespace {

namespace otlp = opentelemetry::exporter::otlp;
namespace sdkmetrics = opentelemetry::sdk::metrics;
using opentelemetry::sdk::common::ExportResult;

// Builds a request per batch and sends it with retries; the outcome goes to the report.
template <Signal S>
class OtlpExporter final : public SignalExporter<S, OtlpExporter<S>> {
 public:
  OtlpExporter(const OtlpSignalSettings& settings, std::shared_ptr<ExportReport> report,
               const RetryPolicy& retry, otlp::PreferredAggregationTemporality temporality)
      : transport_(make_otlp_transport(settings, S)),
        report_(std::move(report)),
        retry_(retry),
        timeout_(settings.timeout_ms.value),
        selector_(otlp::OtlpMetricUtils::ChooseTemporalitySelector(temporality)) {}

  const std::string& target() const noexcept { return transport_->target(); }
  auto make_recordable() noexcept {
    return std::make_unique<typename OtlpRequests<S>::Recordable>();
  }
  sdkmetrics::AggregationTemporality temporality(sdkmetrics::InstrumentType type) const noexcept {
    return selector_(type);
  }
  ExportResult Export(const BatchOf<S>& batch) noexcept override {
    const std::uint64_t items = item_count(batch);
    if (items == 0) return ExportResult::kSuccess;
    try {
      return requests_.with_request(batch,
                                    [&](const auto& request) { return send(request, items); });
    } catch (...) {
      return ExportResult::kFailure;  // out of memory building the request
    }
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_release);
    report_->stop_retrying();
    transport_->cancel();
    return true;
  }

 private:
  // Sends `request` with retries and reports what happened.
  ExportResult send(const google::protobuf::Message& request, std::uint64_t items) noexcept {
    if (shut_down_.load(std::memory_order_acquire)) return ExportResult::kFailure;
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    const Attempt result = send_with_retries(
        retry_, deadline, report_->drain(),
        [&](Millis left) { return transport_->send(request, left); },
        [&] { report_->add_retry(); });
    const std::string what = std::string(to_string(S)) + " export to " + transport_->target();
    if (!result.ok()) {
      if (result.cause != "shutdown") {
        report_->report(result.cause, what + " failed: " + result.message + "; " +
                                          std::to_string(items) + " " + items_of(S) + " dropped");
      }
      return ExportResult::kFailure;
    }
    if (result.rejected > 0 || !result.rejected_message.empty()) {
      report_->add_rejected(static_cast<std::uint64_t>(std::max<std::int64_t>(0, result.rejected)));
      // One line per distinct receiver message: the cause of the rejection.
      report_->report("partial-success:" + result.rejected_message.substr(0, 120),
                      what + ": the receiver rejected " + std::to_string(result.rejected) + " of " +
                          std::to_string(items) + " " + items_of(S) + " (partial_success: '" +
                          result.rejected_message.substr(0, 200) + "')");
    }
    return ExportResult::kSuccess;
  }

  std::unique_ptr<OtlpTransport> transport_;
  std::shared_ptr<ExportReport> report_;
  const RetryPolicy retry_;
  const Millis timeout_;
  std::atomic<bool> shut_down_{false};
  sdkmetrics::AggregationTemporalitySelector selector_;
  // Export may run on several threads at once (PipelinedExporter's senders).
  OtlpRequests<S> requests_;
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

template <Signal S>
ExporterPtr<S> make_otlp_exporter(const OtlpSignalSettings& settings,
                                  std::shared_ptr<ExportReport> report, const RetryPolicy& retry,
                                  TemporalityPreference temporality) {
  if (!report) report = std::make_shared<ExportReport>(S);
  auto exporter =
      std::make_unique<OtlpExporter<S>>(settings, report, retry, temporality_of(temporality));
  std::string target = exporter->target();
  return make_reporting_exporter<S>(std::move(exporter), std::move(report), std::move(target));
}

template ExporterPtr<Signal::traces> make_otlp_exporter<Signal::traces>(
    const OtlpSignalSettings&, std::shared_ptr<ExportReport>, const RetryPolicy&,
    TemporalityPreference);
template ExporterPtr<Signal::metrics> make_otlp_exporter<Signal::metrics>(
    const OtlpSignalSettings&, std::shared_ptr<ExportReport>, const RetryPolicy&,
    TemporalityPreference);
template ExporterPtr<Signal::logs> make_otlp_exporter<Signal::logs>(const OtlpSignalSettings&,
                                                                    std::shared_ptr<ExportReport>,
                                                                    const RetryPolicy&,
                                                                    TemporalityPreference);

}  // namespace lens::exporters
