// ExportReport and the reporting wrappers (see export_report.hpp).
#include "export/export_report.hpp"

#include <opentelemetry/sdk/metrics/export/metric_producer.h>

#include <cstdio>
#include <utility>

namespace lens::exporters {
namespace {

namespace sdkcommon = opentelemetry::sdk::common;
namespace sdkmetrics = opentelemetry::sdk::metrics;

void write_to_stderr(std::string_view line) {
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
}

// Counts one Export of `items`, and explains a failure the inner exporter left unexplained.
void account(ExportReport& report, const std::string& target, bool explain, std::uint64_t items,
             std::uint64_t reports_before, sdkcommon::ExportResult result) {
  if (result == sdkcommon::ExportResult::kSuccess) {
    report.add_succeeded(items);
    return;
  }
  report.add_failed(items);
  if (explain && report.reports() == reports_before) {
    report.report("export-failed", std::string(to_string(report.signal())) + " export to " +
                                       target + " failed; its " + items_of(report.signal()) +
                                       " are dropped");
  }
}

// Counts every Export of the inner exporter of signal S in the report.
template <Signal S>
class ReportingExporter final : public SignalExporter<S, ReportingExporter<S>> {
 public:
  ReportingExporter(ExporterPtr<S> inner, std::shared_ptr<ExportReport> report, std::string target,
                    bool explain)
      : inner_(std::move(inner)),
        report_(std::move(report)),
        target_(std::move(target)),
        explain_(explain) {}

  auto make_recordable() noexcept { return inner_->MakeRecordable(); }
  sdkmetrics::AggregationTemporality temporality(sdkmetrics::InstrumentType type) const noexcept {
    return inner_->GetAggregationTemporality(type);
  }
  sdkcommon::ExportResult Export(const BatchOf<S>& batch) noexcept override {
    const std::uint64_t before = report_->reports();
    const std::uint64_t items = item_count(batch);
    report_->begin_export(items);
    const auto result = inner_->Export(batch);
    account(*report_, target_, explain_, items, before, result);
    report_->end_export(items);
    return result;
  }
  bool ForceFlush(std::chrono::microseconds timeout) noexcept override {
    return inner_->ForceFlush(timeout);
  }
  bool Shutdown(std::chrono::microseconds timeout) noexcept override {
    return inner_->Shutdown(timeout);
  }

 private:
  ExporterPtr<S> inner_;
  std::shared_ptr<ExportReport> report_;
  std::string target_;
  bool explain_;
};

}  // namespace

const char* items_of(Signal signal) {
  static constexpr const char* kItems[] = {"spans", "data points", "log records"};  // by Signal
  return kItems[static_cast<int>(signal)];
}

ExportReport::ExportReport(Signal signal, Sink sink)
    : signal_(signal), sink_(sink ? std::move(sink) : Sink(&write_to_stderr)) {}

void ExportReport::add_succeeded(std::uint64_t items) noexcept {
  core::AtomicSignalCounts::add(counts_.exports_succeeded, 1);
  core::AtomicSignalCounts::add(counts_.items_exported, items);
}

void ExportReport::add_failed(std::uint64_t items) noexcept {
  core::AtomicSignalCounts::add(counts_.exports_failed, 1);
  core::AtomicSignalCounts::add(counts_.items_failed, items);
}

void ExportReport::add_rejected(std::uint64_t items) noexcept {
  core::AtomicSignalCounts::add(counts_.items_rejected, items);
}

void ExportReport::add_retry() noexcept { core::AtomicSignalCounts::add(counts_.retries, 1); }

void ExportReport::begin_export(std::uint64_t items) noexcept {
  core::AtomicSignalCounts::add(counts_.items_in_flight, items);
}

void ExportReport::end_export(std::uint64_t items) noexcept {
  core::AtomicSignalCounts::sub(counts_.items_in_flight, items);
}

void ExportReport::report(std::string_view cause, std::string_view line) noexcept {
  reports_.fetch_add(1, std::memory_order_relaxed);
  try {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (causes_.find(cause) != causes_.end()) return;
      if (causes_.size() < kMaxCauses) causes_.emplace(cause);
    }
    std::string text = "lens: ";
    text += line;
    text += " (further occurrences are counted, not shown; totals at shutdown)";
    sink_(text);
  } catch (...) {
    // Out of memory while reporting: the failure stays counted, the line is lost.
  }
}

ExportReportCounts ExportReport::counts() const noexcept { return counts_.load(); }

std::uint64_t count_points(const sdkmetrics::ResourceMetrics& data) noexcept {
  std::uint64_t points = 0;
  for (const auto& scope : data.scope_metric_data_) {
    for (const auto& metric : scope.metric_data_) points += metric.point_data_attr_.size();
  }
  return points;
}

template <Signal S>
ExporterPtr<S> make_reporting_exporter(ExporterPtr<S> inner, std::shared_ptr<ExportReport> report,
                                       std::string target, bool explain_failures) {
  return std::make_unique<ReportingExporter<S>>(std::move(inner), std::move(report),
                                                std::move(target), explain_failures);
}

template ExporterPtr<Signal::traces> make_reporting_exporter<Signal::traces>(
    ExporterPtr<Signal::traces>, std::shared_ptr<ExportReport>, std::string, bool);
template ExporterPtr<Signal::metrics> make_reporting_exporter<Signal::metrics>(
    ExporterPtr<Signal::metrics>, std::shared_ptr<ExportReport>, std::string, bool);
template ExporterPtr<Signal::logs> make_reporting_exporter<Signal::logs>(
    ExporterPtr<Signal::logs>, std::shared_ptr<ExportReport>, std::string, bool);

}  // namespace lens::exporters
