// Exporters whose Export blocks until the test opens a gate: a backend that never answers, for
// the tests of shutdown timeouts, full buffers and forks while an export is in flight. The gate is
// shared with the test, which counts the calls that entered Export and the spans let through.
#pragma once

#include <opentelemetry/sdk/common/exporter_utils.h>
#include <opentelemetry/sdk/metrics/push_metric_exporter.h>
#include <opentelemetry/sdk/trace/exporter.h>
#include <opentelemetry/sdk/trace/span_data.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

namespace lens::test_support {

struct ExportGate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> entered{0};             // calls of Export, counted before they wait
  std::atomic<std::uint64_t> exported{0};  // spans let through once the gate opened

  // Waits until the gate is open.
  void pass() {
    entered.fetch_add(1);
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [this] { return open; });
  }
  // Opens the gate for every waiting and later Export.
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
};

class BlockingSpanExporter final : public opentelemetry::sdk::trace::SpanExporter {
 public:
  explicit BlockingSpanExporter(std::shared_ptr<ExportGate> gate) : gate_(std::move(gate)) {}
  std::unique_ptr<opentelemetry::sdk::trace::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<opentelemetry::sdk::trace::SpanData>();
  }
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<opentelemetry::sdk::trace::Recordable>>&
          spans) noexcept override {
    gate_->pass();
    gate_->exported += spans.size();
    return opentelemetry::sdk::common::ExportResult::kSuccess;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return true; }

 private:
  std::shared_ptr<ExportGate> gate_;
};

// Cumulative, as a metric exporter must say one temporality.
class BlockingMetricExporter final : public opentelemetry::sdk::metrics::PushMetricExporter {
 public:
  explicit BlockingMetricExporter(std::shared_ptr<ExportGate> gate) : gate_(std::move(gate)) {}
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::sdk::metrics::ResourceMetrics&) noexcept override {
    gate_->pass();
    return opentelemetry::sdk::common::ExportResult::kSuccess;
  }
  opentelemetry::sdk::metrics::AggregationTemporality GetAggregationTemporality(
      opentelemetry::sdk::metrics::InstrumentType) const noexcept override {
    return opentelemetry::sdk::metrics::AggregationTemporality::kCumulative;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return true; }

 private:
  std::shared_ptr<ExportGate> gate_;
};

}  // namespace lens::test_support
