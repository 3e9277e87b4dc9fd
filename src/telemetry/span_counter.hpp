// A span processor that only counts starts and ends, for TelemetryHandle::stats(). It sits
// first in the processor chain. Thread-safety: relaxed atomic counters (statistics only).
#pragma once

#include <opentelemetry/sdk/trace/processor.h>
#include <opentelemetry/sdk/trace/recordable.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace lens::telemetry {

struct SpanCounts {
  std::atomic<std::uint64_t> started{0};
  std::atomic<std::uint64_t> ended{0};
};

// Records nothing: the counting processor needs no copy of the span.
class NullRecordable final : public opentelemetry::sdk::trace::Recordable {
 public:
  void SetIdentity(const opentelemetry::trace::SpanContext&,
                   opentelemetry::trace::SpanId) noexcept override {}
  void SetAttribute(opentelemetry::nostd::string_view,
                    const opentelemetry::common::AttributeValue&) noexcept override {}
  void AddEvent(opentelemetry::nostd::string_view, opentelemetry::common::SystemTimestamp,
                const opentelemetry::common::KeyValueIterable&) noexcept override {}
  void AddLink(const opentelemetry::trace::SpanContext&,
               const opentelemetry::common::KeyValueIterable&) noexcept override {}
  void SetStatus(opentelemetry::trace::StatusCode,
                 opentelemetry::nostd::string_view) noexcept override {}
  void SetName(opentelemetry::nostd::string_view) noexcept override {}
  void SetSpanKind(opentelemetry::trace::SpanKind) noexcept override {}
  void SetResource(const opentelemetry::sdk::resource::Resource&) noexcept override {}
  void SetStartTime(opentelemetry::common::SystemTimestamp) noexcept override {}
  void SetDuration(std::chrono::nanoseconds) noexcept override {}
  void SetInstrumentationScope(
      const opentelemetry::sdk::instrumentationscope::InstrumentationScope&) noexcept override {}
};

class SpanCountingProcessor final : public opentelemetry::sdk::trace::SpanProcessor {
 public:
  explicit SpanCountingProcessor(std::shared_ptr<SpanCounts> counts) : counts_(std::move(counts)) {}

  std::unique_ptr<opentelemetry::sdk::trace::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<NullRecordable>();
  }
  void OnStart(opentelemetry::sdk::trace::Recordable&,
               const opentelemetry::trace::SpanContext&) noexcept override {
    counts_->started.fetch_add(1, std::memory_order_relaxed);
  }
  void OnEnd(std::unique_ptr<opentelemetry::sdk::trace::Recordable>&&) noexcept override {
    counts_->ended.fetch_add(1, std::memory_order_relaxed);
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return true; }

 private:
  std::shared_ptr<SpanCounts> counts_;
};

}  // namespace lens::telemetry
