// CountingExporter: wraps a SpanExporter and counts the spans it exported successfully and the
// spans whose export failed (any result other than kSuccess); the handle's stats read them.
// Thread-safety: the counters are relaxed atomics in a shared object that outlives the exporter.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "opentelemetry/sdk/trace/exporter.h"

namespace lens::sdk {

struct ExportCounters {
  std::atomic<std::uint64_t> exported{0};  // spans in batches that returned kSuccess
  std::atomic<std::uint64_t> failed{0};    // spans in batches that returned anything else
};

class CountingExporter final : public opentelemetry::sdk::trace::SpanExporter {
 public:
  // `inner` must not be null.
  explicit CountingExporter(std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> inner);

  std::unique_ptr<opentelemetry::sdk::trace::Recordable> MakeRecordable() noexcept override;
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<opentelemetry::sdk::trace::Recordable>>&
          spans) noexcept override;
  bool ForceFlush(
      std::chrono::microseconds timeout = (std::chrono::microseconds::max)()) noexcept override;
  bool Shutdown(
      std::chrono::microseconds timeout = (std::chrono::microseconds::max)()) noexcept override;

  std::uint64_t exported() const noexcept;
  std::uint64_t failed() const noexcept;
  // Shared so the counts stay readable after the exporter moved into a processor.
  std::shared_ptr<const ExportCounters> counters() const noexcept { return counters_; }

 private:
  std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> inner_;
  std::shared_ptr<ExportCounters> counters_;
};

}  // namespace lens::sdk
