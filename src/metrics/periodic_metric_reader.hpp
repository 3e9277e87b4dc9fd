// PeriodicMetricReader: collects on its own thread every interval and pushes to an exporter,
// like opentelemetry-cpp's PeriodicExportingMetricReader, with the flush semantics a training
// job needs. opentelemetry-cpp 1.19's reader collects once as soon as its thread starts, and its
// ForceFlush and Shutdown hand the last export to that thread, which at times misses the wake-up:
// a process then exits without its final measurements (seen with the training metrics over
// OTLP). Here ForceFlush collects and exports on the calling thread, and Shutdown stops the
// thread, then exports one last time and shuts the exporter down.
// Collections go through collect_with_bound_instruments() (lens/metric_setup.hpp), so that bound
// histograms are exported with the SDK's metrics.
// Thread-safety: exports are serialised; ForceFlush and Shutdown may be called from any thread.
#pragma once

#include <opentelemetry/sdk/metrics/metric_reader.h>
#include <opentelemetry/sdk/metrics/push_metric_exporter.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace lens::metrics {

class PeriodicMetricReader final : public opentelemetry::sdk::metrics::MetricReader {
 public:
  PeriodicMetricReader(std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> exporter,
                       std::chrono::milliseconds interval);
  ~PeriodicMetricReader() override;
  PeriodicMetricReader(const PeriodicMetricReader&) = delete;
  PeriodicMetricReader& operator=(const PeriodicMetricReader&) = delete;

  opentelemetry::sdk::metrics::AggregationTemporality GetAggregationTemporality(
      opentelemetry::sdk::metrics::InstrumentType type) const noexcept override;

 private:
  bool OnForceFlush(std::chrono::microseconds timeout) noexcept override;
  bool OnShutDown(std::chrono::microseconds timeout) noexcept override;
  void OnInitialized() noexcept override;

  void run() noexcept;
  void stop_thread() noexcept;
  bool collect_and_export() noexcept;

  std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> exporter_;
  const std::chrono::milliseconds interval_;
  std::mutex export_mutex_;  // one export at a time
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by wake_mutex_
  std::thread thread_;
};

}  // namespace lens::metrics
