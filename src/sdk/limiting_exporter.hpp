// Span limits for opentelemetry-cpp 1.19, which has none: LimitingExporter wraps a SpanExporter
// and hands out LimitingRecordables that enforce OTEL_SPAN_* / OTEL_ATTRIBUTE_* limits before
// the data reaches the wrapped exporter's recordable. Thread-safety: the exporter is as
// thread-safe as the one it wraps; a recordable is thread-compatible (the SDK's Span serializes
// its calls); the drop counters are relaxed atomics shared by the exporter and its recordables.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lens/otel_settings.hpp"
#include "opentelemetry/sdk/trace/exporter.h"
#include "opentelemetry/sdk/trace/recordable.h"

namespace lens::sdk {

// Effective limits of one span. A model-specific variable (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT,
// OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, OTEL_EVENT_/LINK_ATTRIBUTE_COUNT_LIMIT) wins over the
// general OTEL_ATTRIBUTE_* one when it was set; otherwise the general one applies. The value
// length limit applies to span, event and link attribute values alike.
struct SpanLimits {
  std::size_t attribute_count = 128;
  std::optional<std::size_t> attribute_value_length;  // nullopt: unlimited
  std::size_t event_count = 128;
  std::size_t link_count = 128;
  std::size_t event_attribute_count = 128;
  std::size_t link_attribute_count = 128;

  static SpanLimits from(const LimitSettings& settings);
};

struct LimitCounters {
  std::atomic<std::uint64_t> dropped_attributes{0};  // span, event and link attributes
  std::atomic<std::uint64_t> dropped_events{0};
  std::atomic<std::uint64_t> dropped_links{0};
  std::atomic<std::uint64_t> truncated_values{0};  // attribute values shortened
};

// Attribute count: the first `attribute_count` distinct keys are kept; a new key beyond it is
// dropped and counted; setting a kept key again updates it. Value length: strings and each
// element of a string array are cut to at most `attribute_value_length` Unicode code points
// (never inside a UTF-8 sequence); other types are untouched. Events and links beyond their
// count are dropped and counted; their attributes beyond the per-event/per-link count are
// dropped (the first ones in iteration order are kept) and counted as dropped attributes.
class LimitingRecordable final : public opentelemetry::sdk::trace::Recordable {
 public:
  LimitingRecordable(std::unique_ptr<opentelemetry::sdk::trace::Recordable> inner,
                     const SpanLimits& limits, std::shared_ptr<LimitCounters> counters) noexcept;

  void SetIdentity(const opentelemetry::trace::SpanContext& span_context,
                   opentelemetry::trace::SpanId parent_span_id) noexcept override;
  void SetAttribute(opentelemetry::nostd::string_view key,
                    const opentelemetry::common::AttributeValue& value) noexcept override;
  void AddEvent(opentelemetry::nostd::string_view name,
                opentelemetry::common::SystemTimestamp timestamp,
                const opentelemetry::common::KeyValueIterable& attributes) noexcept override;
  void AddLink(const opentelemetry::trace::SpanContext& span_context,
               const opentelemetry::common::KeyValueIterable& attributes) noexcept override;
  void SetStatus(opentelemetry::trace::StatusCode code,
                 opentelemetry::nostd::string_view description) noexcept override;
  void SetName(opentelemetry::nostd::string_view name) noexcept override;
  void SetTraceFlags(opentelemetry::trace::TraceFlags flags) noexcept override;
  void SetSpanKind(opentelemetry::trace::SpanKind span_kind) noexcept override;
  void SetResource(const opentelemetry::sdk::resource::Resource& resource) noexcept override;
  void SetStartTime(opentelemetry::common::SystemTimestamp start_time) noexcept override;
  void SetDuration(std::chrono::nanoseconds duration) noexcept override;
  explicit operator opentelemetry::sdk::trace::SpanData*() const override;
  void SetInstrumentationScope(const opentelemetry::sdk::trace::InstrumentationScope&
                                   instrumentation_scope) noexcept override;

  // The wrapped exporter's recordable, for Export.
  std::unique_ptr<opentelemetry::sdk::trace::Recordable> release_inner() noexcept;

 private:
  // The distinct attribute keys set so far, as 64-bit hashes: the first eight inline (no
  // allocation for a typical span), further ones in a vector. Two different keys with the same
  // hash (odds 2^-64 per pair) would count as one, letting one extra attribute through.
  class KeySet {
   public:
    bool contains(std::uint64_t hash) const noexcept;
    bool insert(std::uint64_t hash) noexcept;  // false when out of memory
    std::size_t size() const noexcept { return inline_count_ + more_.size(); }

   private:
    std::array<std::uint64_t, 8> inline_{};
    std::size_t inline_count_ = 0;
    std::vector<std::uint64_t> more_;
  };

  std::unique_ptr<opentelemetry::sdk::trace::Recordable> inner_;
  SpanLimits limits_;  // a copy: a span may outlive its exporter
  std::shared_ptr<LimitCounters> counters_;
  KeySet keys_;
  std::size_t events_ = 0;
  std::size_t links_ = 0;
};

class LimitingExporter final : public opentelemetry::sdk::trace::SpanExporter {
 public:
  // `inner` must not be null.
  LimitingExporter(std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> inner,
                   SpanLimits limits);

  // A LimitingRecordable around the wrapped exporter's recordable.
  std::unique_ptr<opentelemetry::sdk::trace::Recordable> MakeRecordable() noexcept override;
  // Unwraps each LimitingRecordable and exports the wrapped exporter's recordables.
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<opentelemetry::sdk::trace::Recordable>>&
          spans) noexcept override;
  bool ForceFlush(
      std::chrono::microseconds timeout = (std::chrono::microseconds::max)()) noexcept override;
  bool Shutdown(
      std::chrono::microseconds timeout = (std::chrono::microseconds::max)()) noexcept override;

  const SpanLimits& limits() const noexcept { return limits_; }
  std::uint64_t dropped_attributes() const noexcept;
  std::uint64_t dropped_events() const noexcept;
  std::uint64_t dropped_links() const noexcept;
  std::uint64_t truncated_values() const noexcept;
  // Shared so the counts stay readable after the exporter moved into a processor.
  std::shared_ptr<const LimitCounters> counters() const noexcept { return counters_; }

 private:
  std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> inner_;
  SpanLimits limits_;
  std::shared_ptr<LimitCounters> counters_;
};

}  // namespace lens::sdk
