// The periodic collection thread and the synchronous flush (see periodic_metric_reader.hpp).
#include "metrics/periodic_metric_reader.hpp"

#include <opentelemetry/sdk/metrics/export/metric_producer.h>

#include <utility>

#include "lens/metric_setup.hpp"
#include "lens/metrics.hpp"

namespace lens::metrics {

namespace sdkmetrics = opentelemetry::sdk::metrics;

namespace {

bool has_points(const sdkmetrics::ResourceMetrics& data) noexcept {
  for (const auto& scope : data.scope_metric_data_) {
    for (const auto& metric : scope.metric_data_) {
      if (!metric.point_data_attr_.empty()) return true;
    }
  }
  return false;
}

}  // namespace

PeriodicMetricReader::PeriodicMetricReader(std::unique_ptr<sdkmetrics::PushMetricExporter> exporter,
                                           std::chrono::milliseconds interval)
    : exporter_(std::move(exporter)), interval_(interval) {}

PeriodicMetricReader::~PeriodicMetricReader() {
  stop_thread();
  forget_bound_reader(*this);
}

sdkmetrics::AggregationTemporality PeriodicMetricReader::GetAggregationTemporality(
    sdkmetrics::InstrumentType type) const noexcept {
  return exporter_->GetAggregationTemporality(type);
}

void PeriodicMetricReader::OnInitialized() noexcept {
  try {
    thread_ = std::thread([this] { run(); });
  } catch (...) {
    // No thread could be started: measurements are still exported by ForceFlush and Shutdown.
  }
}

void PeriodicMetricReader::run() noexcept {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  while (true) {
    // A spurious wake-up only shortens one interval; a stop request ends the loop at once.
    if (wake_.wait_for(lock, interval_, [this] { return stopping_; })) return;
    lock.unlock();
    collect_and_export();
    lock.lock();
  }
}

void PeriodicMetricReader::stop_thread() noexcept {
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool PeriodicMetricReader::collect_and_export() noexcept {
  std::lock_guard<std::mutex> lock(export_mutex_);
  bool exported = true;
  // Through lens: the bound histograms join the SDK's data (see lens/metrics.hpp).
  const bool collected =
      collect_with_bound_instruments(*this, [&](sdkmetrics::ResourceMetrics& data) {
        // Nothing measured yet (or nothing since the last delta): no empty request on the wire.
        if (!has_points(data)) return true;
        exported = exporter_->Export(data) == opentelemetry::sdk::common::ExportResult::kSuccess;
        return exported;
      });
  return collected && exported;
}

bool PeriodicMetricReader::OnForceFlush(std::chrono::microseconds timeout) noexcept {
  const bool exported = collect_and_export();
  return exporter_->ForceFlush(timeout) && exported;
}

bool PeriodicMetricReader::OnShutDown(std::chrono::microseconds timeout) noexcept {
  stop_thread();
  // A failed last export is the exporter's to report (once per cause); the reader itself did
  // shut down.
  collect_and_export();
  return exporter_->Shutdown(timeout);
}

}  // namespace lens::metrics
