// The OTLP span exporters' recordable and request builder. opentelemetry-cpp's OtlpRecordable
// keeps each span as a heap protobuf message (about eight allocations for a span with two
// attributes: the message, its id and name strings, a key-value and a value per attribute),
// which made glibc's malloc/free the largest cost of exporting at several hundred thousand spans
// a second. OtlpSpanRecordable keeps what every span has in plain members (ids inline, name and
// short strings in their small-string buffers, the attributes in one vector) and
// OtlpSpanBatch writes a whole batch into one ExportTraceServiceRequest on a protobuf arena that
// is reused from batch to batch. Attribute values, events, links and the status go through
// opentelemetry-cpp's own OTLP population code, so the request is the one OtlpRecordable and
// PopulateRequest would have built (a unit test compares the two).
// Thread-safety: a recordable is thread-compatible (the SDK's span or the native export thread
// fills it, the exporter reads it); an OtlpSpanBatch is used by one thread at a time.
#pragma once

#include <google/protobuf/arena.h>
#include <opentelemetry/exporters/otlp/otlp_recordable.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>
#include <opentelemetry/sdk/trace/recordable.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lens::exporters {

class OtlpSpanRecordable final : public opentelemetry::sdk::trace::Recordable {
 public:
  OtlpSpanRecordable() noexcept;
  ~OtlpSpanRecordable() override;

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
  void SetInstrumentationScope(const opentelemetry::sdk::instrumentationscope::InstrumentationScope&
                                   instrumentation_scope) noexcept override;

  const opentelemetry::sdk::resource::Resource* resource() const noexcept { return resource_; }
  const opentelemetry::sdk::instrumentationscope::InstrumentationScope* scope() const noexcept {
    return scope_;
  }
  // Writes the span into `out` (a message of the batch's request, on its arena).
  void write_to(opentelemetry::proto::trace::v1::Span* out) const;

 private:
  struct Attribute {
    std::string key;
    std::string text;  // a string value (the stored value's view is rebuilt from it)
    opentelemetry::common::AttributeValue value;  // a scalar value
    // An array value, populated at once (arrays are rare: their storage is not worth a copy).
    std::unique_ptr<opentelemetry::proto::common::v1::KeyValue> array;
  };
  // Events, links and the status, kept by opentelemetry-cpp's recordable: rare, so its cost
  // is paid only by the spans that have them.
  opentelemetry::exporter::otlp::OtlpRecordable& rare();

  std::array<std::uint8_t, 16> trace_id_{};
  std::array<std::uint8_t, 8> span_id_{};
  std::array<std::uint8_t, 8> parent_span_id_{};
  bool has_parent_ = false;
  std::uint32_t flags_ = 0;
  int kind_ = 0;  // proto::trace::v1::Span_SpanKind
  std::uint64_t start_unix_nano_ = 0;
  std::uint64_t end_unix_nano_ = 0;
  std::string trace_state_;
  std::string name_;
  // The first attributes in the recordable itself (no allocation for a typical span), the
  // others in a vector.
  static constexpr std::size_t kInlineAttributes = 4;
  std::array<Attribute, kInlineAttributes> inline_attributes_;
  std::size_t attribute_count_ = 0;
  std::vector<Attribute> more_attributes_;
  std::unique_ptr<opentelemetry::exporter::otlp::OtlpRecordable> rare_;
  const opentelemetry::sdk::resource::Resource* resource_ = nullptr;
  const opentelemetry::sdk::instrumentationscope::InstrumentationScope* scope_ = nullptr;
};

class OtlpSpanBatch {
 public:
  OtlpSpanBatch();
  ~OtlpSpanBatch();
  OtlpSpanBatch(const OtlpSpanBatch&) = delete;
  OtlpSpanBatch& operator=(const OtlpSpanBatch&) = delete;

  // The request holding `spans`, grouped by resource and instrumentation scope (in order of
  // first appearance; spans keep their order within a group). Recordables that are not
  // OtlpSpanRecordables are skipped. The request lives until release(), the next build() or
  // the batch's end. Throws std::bad_alloc.
  const opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest& build(
      const opentelemetry::nostd::span<std::unique_ptr<opentelemetry::sdk::trace::Recordable>>&
          spans);
  // Frees the last request (and any arena blocks beyond the first) while the batch waits for
  // its next build(), so that an idle batch holds only its first block.
  void release() noexcept;

 private:
  // The arena's first block, kept between batches so that a typical batch allocates nothing.
  std::unique_ptr<char[]> first_block_;
  std::unique_ptr<google::protobuf::Arena> arena_;
};

// Idle batches for an exporter whose Export may run on several threads at once: each call takes
// a batch of its own and gives it back (its request freed, so an idle batch holds only its
// first block) for the next call to reuse that block. Thread-safe.
class OtlpSpanBatchPool {
 public:
  // An idle batch, or a new one. Throws std::bad_alloc.
  std::unique_ptr<OtlpSpanBatch> take();
  void give_back(std::unique_ptr<OtlpSpanBatch> batch) noexcept;

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<OtlpSpanBatch>> idle_;
};

}  // namespace lens::exporters
