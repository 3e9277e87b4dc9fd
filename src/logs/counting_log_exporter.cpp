// Counting log processor and exporter (see counting_log_exporter.hpp).
#include "logs/counting_log_exporter.hpp"

#include "sdk/tsan_handoff.hpp"

namespace lens::logs {

namespace sdklogs = opentelemetry::sdk::logs;
using opentelemetry::sdk::common::ExportResult;

CountingLogProcessor::CountingLogProcessor(std::unique_ptr<sdklogs::LogRecordProcessor> processor,
                                           std::shared_ptr<metrics::SignalCounters> counters,
                                           std::uint64_t max_queue_size)
    : processor_(std::move(processor)),
      counters_(std::move(counters)),
      max_queue_size_(max_queue_size) {}

std::unique_ptr<sdklogs::Recordable> CountingLogProcessor::MakeRecordable() noexcept {
  return processor_->MakeRecordable();
}

void CountingLogProcessor::OnEmit(std::unique_ptr<sdklogs::Recordable>&& record) noexcept {
  // The batch processor frees a queue slot before the export that our counters see, so this
  // count of unexported records is never below its queue's: it never drops behind our back.
  // fetch_add first, so that concurrent emitters cannot both take the last slot.
  if (counters_->in_flight.fetch_add(1, std::memory_order_relaxed) >= max_queue_size_) {
    counters_->in_flight.fetch_sub(1, std::memory_order_relaxed);
    counters_->dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  counters_->received.fetch_add(1, std::memory_order_relaxed);
  // The batch processor's queue is uninstrumented: tell ThreadSanitizer about the hand-over
  // (CountingLogExporter::Export receives it on the worker thread).
  sdk::tsan_publish(record.get());
  processor_->OnEmit(std::move(record));
}

bool CountingLogProcessor::ForceFlush(std::chrono::microseconds timeout) noexcept {
  return processor_->ForceFlush(timeout);
}

bool CountingLogProcessor::Shutdown(std::chrono::microseconds timeout) noexcept {
  return processor_->Shutdown(timeout);
}

CountingLogExporter::CountingLogExporter(std::unique_ptr<sdklogs::LogRecordExporter> exporter,
                                         std::shared_ptr<metrics::SignalCounters> counters)
    : exporter_(std::move(exporter)), counters_(std::move(counters)) {}

std::unique_ptr<sdklogs::Recordable> CountingLogExporter::MakeRecordable() noexcept {
  return exporter_->MakeRecordable();
}

ExportResult CountingLogExporter::Export(
    const opentelemetry::nostd::span<std::unique_ptr<sdklogs::Recordable>>& records) noexcept {
  for (const auto& record : records) sdk::tsan_receive(record.get());
  const ExportResult result = exporter_->Export(records);
  counters_->in_flight.fetch_sub(records.size(), std::memory_order_relaxed);
  (result == ExportResult::kSuccess ? counters_->exported : counters_->failed)
      .fetch_add(records.size(), std::memory_order_relaxed);
  return result;
}

bool CountingLogExporter::ForceFlush(std::chrono::microseconds timeout) noexcept {
  return exporter_->ForceFlush(timeout);
}

bool CountingLogExporter::Shutdown(std::chrono::microseconds timeout) noexcept {
  return exporter_->Shutdown(timeout);
}

}  // namespace lens::logs
