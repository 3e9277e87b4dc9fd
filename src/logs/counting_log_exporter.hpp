// Log record counting on both sides of the batch processor, for the handle's stats and the
// self-metrics: CountingLogProcessor counts records emitted into the batch processor it wraps,
// and itself drops (and counts) a record when the records not yet exported reach the queue
// size — opentelemetry-cpp's batch processor would drop it silently a moment later;
// CountingLogExporter counts the records of successful and failed exports of the exporter it
// wraps. Thread-safety: as thread-safe as what they wrap; the counters are atomics.
#pragma once

#include <opentelemetry/sdk/logs/exporter.h>
#include <opentelemetry/sdk/logs/processor.h>

#include <memory>

#include "metrics/export_counters.hpp"

namespace lens::logs {

class CountingLogProcessor final : public opentelemetry::sdk::logs::LogRecordProcessor {
 public:
  CountingLogProcessor(std::unique_ptr<opentelemetry::sdk::logs::LogRecordProcessor> processor,
                       std::shared_ptr<metrics::SignalCounters> counters,
                       std::uint64_t max_queue_size);
  std::unique_ptr<opentelemetry::sdk::logs::Recordable> MakeRecordable() noexcept override;
  void OnEmit(std::unique_ptr<opentelemetry::sdk::logs::Recordable>&& record) noexcept override;
  bool ForceFlush(std::chrono::microseconds timeout) noexcept override;
  bool Shutdown(std::chrono::microseconds timeout) noexcept override;

 private:
  std::unique_ptr<opentelemetry::sdk::logs::LogRecordProcessor> processor_;
  std::shared_ptr<metrics::SignalCounters> counters_;
  const std::uint64_t max_queue_size_;
};

class CountingLogExporter final : public opentelemetry::sdk::logs::LogRecordExporter {
 public:
  CountingLogExporter(std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> exporter,
                      std::shared_ptr<metrics::SignalCounters> counters);
  std::unique_ptr<opentelemetry::sdk::logs::Recordable> MakeRecordable() noexcept override;
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<opentelemetry::sdk::logs::Recordable>>&
          records) noexcept override;
  bool ForceFlush(std::chrono::microseconds timeout) noexcept override;
  bool Shutdown(std::chrono::microseconds timeout) noexcept override;

 private:
  std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> exporter_;
  std::shared_ptr<metrics::SignalCounters> counters_;
};

}  // namespace lens::logs
