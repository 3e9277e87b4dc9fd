// Counting span exporter. Thread-safety: see counting_exporter.hpp.
#include "sdk/counting_exporter.hpp"

#include <utility>

namespace lens::sdk {

namespace otel_sdk = opentelemetry::sdk::trace;

CountingExporter::CountingExporter(std::unique_ptr<otel_sdk::SpanExporter> inner)
    : inner_(std::move(inner)), counters_(std::make_shared<ExportCounters>()) {}

std::unique_ptr<otel_sdk::Recordable> CountingExporter::MakeRecordable() noexcept {
  return inner_->MakeRecordable();
}

opentelemetry::sdk::common::ExportResult CountingExporter::Export(
    const opentelemetry::nostd::span<std::unique_ptr<otel_sdk::Recordable>>& spans) noexcept {
  const std::uint64_t count = spans.size();
  const auto result = inner_->Export(spans);
  // Relaxed: independent statistics, no other memory is published through them.
  if (result == opentelemetry::sdk::common::ExportResult::kSuccess) {
    counters_->exported.fetch_add(count, std::memory_order_relaxed);
  } else {
    counters_->failed.fetch_add(count, std::memory_order_relaxed);
  }
  return result;
}

bool CountingExporter::ForceFlush(std::chrono::microseconds timeout) noexcept {
  return inner_->ForceFlush(timeout);
}

bool CountingExporter::Shutdown(std::chrono::microseconds timeout) noexcept {
  return inner_->Shutdown(timeout);
}

std::uint64_t CountingExporter::exported() const noexcept {
  return counters_->exported.load(std::memory_order_relaxed);
}

std::uint64_t CountingExporter::failed() const noexcept {
  return counters_->failed.load(std::memory_order_relaxed);
}

}  // namespace lens::sdk
