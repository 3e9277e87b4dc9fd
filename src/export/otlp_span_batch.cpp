// OTLP span recordable and arena request builder (see otlp_span_batch.hpp).
#include "export/otlp_span_batch.hpp"

#include <opentelemetry/exporters/otlp/otlp_populate_attribute_utils.h>
#include <opentelemetry/exporters/otlp/otlp_recordable.h>
#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/resource/resource.h>

#include <cstring>
#include <type_traits>
#include <utility>

#include "export/unique_attribute_keys.hpp"

namespace lens::exporters {
namespace {

namespace otel = opentelemetry;
namespace otlp = opentelemetry::exporter::otlp;
namespace proto = opentelemetry::proto;
using otel::common::AttributeValue;

// A batch of 512 spans with a few attributes each takes about 300 KiB of messages.
constexpr std::size_t kFirstBlockBytes = std::size_t{512} << 10;
constexpr std::size_t kMaxBlockBytes = std::size_t{4} << 20;

// SpanKind counts from kInternal = 0, the proto's kinds from SPAN_KIND_INTERNAL = 1.
proto::trace::v1::Span_SpanKind proto_kind(otel::trace::SpanKind kind) noexcept {
  const int value = static_cast<int>(kind) + 1;
  return proto::trace::v1::Span_SpanKind_IsValid(value)
             ? static_cast<proto::trace::v1::Span_SpanKind>(value)
             : proto::trace::v1::Span_SpanKind_SPAN_KIND_UNSPECIFIED;
}

// Equal content is one resource (or scope): spans from two providers built from the same
// settings (the native pipeline and spans made through the opentelemetry API) go into one
// ResourceSpans rather than two identical ones.
bool same_resource(const otel::sdk::resource::Resource* a,
                   const otel::sdk::resource::Resource* b) noexcept {
  if (a == b) return true;
  if (a == nullptr || b == nullptr) return false;
  return a->GetSchemaURL() == b->GetSchemaURL() && a->GetAttributes() == b->GetAttributes();
}

bool same_scope(const otel::sdk::instrumentationscope::InstrumentationScope* a,
                const otel::sdk::instrumentationscope::InstrumentationScope* b) noexcept {
  if (a == b) return true;
  return a != nullptr && b != nullptr && *a == *b;
}

}  // namespace

OtlpSpanRecordable::OtlpSpanRecordable() noexcept = default;
OtlpSpanRecordable::~OtlpSpanRecordable() = default;

otlp::OtlpRecordable& OtlpSpanRecordable::rare() {
  if (rare_ == nullptr) rare_ = std::make_unique<otlp::OtlpRecordable>();
  return *rare_;
}

void OtlpSpanRecordable::SetIdentity(const otel::trace::SpanContext& span_context,
                                     otel::trace::SpanId parent_span_id) noexcept {
  std::memcpy(trace_id_.data(), span_context.trace_id().Id().data(), trace_id_.size());
  std::memcpy(span_id_.data(), span_context.span_id().Id().data(), span_id_.size());
  has_parent_ = parent_span_id.IsValid();
  std::memcpy(parent_span_id_.data(), parent_span_id.Id().data(), parent_span_id_.size());
  try {
    trace_state_ = span_context.trace_state()->ToHeader();
  } catch (...) {
    trace_state_.clear();
  }
}

void OtlpSpanRecordable::SetAttribute(otel::nostd::string_view key,
                                      const AttributeValue& value) noexcept {
  try {
    Attribute attribute;
    attribute.key.assign(key.data(), key.size());
    otel::nostd::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, const char*>) {
            attribute.text.assign(v);
            attribute.value = v;  // rebuilt from `text` when written
          } else if constexpr (std::is_same_v<T, otel::nostd::string_view>) {
            attribute.text.assign(v.data(), v.size());
            attribute.value = v;  // rebuilt from `text` when written
          } else if constexpr (std::is_arithmetic_v<T>) {
            attribute.value = v;
          } else {
            attribute.array = std::make_unique<proto::common::v1::KeyValue>();
            otlp::OtlpPopulateAttributeUtils::PopulateAttribute(attribute.array.get(), key, value);
          }
        },
        value);
    if (attribute_count_ < kInlineAttributes) {
      inline_attributes_[attribute_count_] = std::move(attribute);
    } else {
      more_attributes_.push_back(std::move(attribute));
    }
    ++attribute_count_;
  } catch (...) {
    // Out of memory: the attribute is lost (the span keeps the ones it has).
  }
}

void OtlpSpanRecordable::AddEvent(otel::nostd::string_view name,
                                  otel::common::SystemTimestamp timestamp,
                                  const otel::common::KeyValueIterable& attributes) noexcept {
  try {
    rare().AddEvent(name, timestamp, attributes);
  } catch (...) {
  }
}

void OtlpSpanRecordable::AddLink(const otel::trace::SpanContext& span_context,
                                 const otel::common::KeyValueIterable& attributes) noexcept {
  try {
    rare().AddLink(span_context, attributes);
    // opentelemetry-cpp 1.19 leaves a link's flags at 0: the linked context's trace flags, as
    // the span's own are written (sampled only).
    auto* links = rare_->span().mutable_links();
    if (!links->empty()) {
      links->Mutable(links->size() - 1)
          ->set_flags(span_context.trace_flags().flags() &
                      opentelemetry::trace::TraceFlags::kIsSampled);
    }
  } catch (...) {
  }
}

void OtlpSpanRecordable::SetStatus(otel::trace::StatusCode code,
                                   otel::nostd::string_view description) noexcept {
  try {
    rare().SetStatus(code, description);
  } catch (...) {
  }
}

void OtlpSpanRecordable::SetName(otel::nostd::string_view name) noexcept {
  try {
    name_.assign(name.data(), name.size());
  } catch (...) {
    name_.clear();
  }
}

void OtlpSpanRecordable::SetTraceFlags(otel::trace::TraceFlags flags) noexcept {
  // Only the sampled flag, as lens propagates it (see native/span_record.hpp): one trace, one
  // set of flags, whichever path made the span or extracted its parent.
  flags_ = flags.flags() & otel::trace::TraceFlags::kIsSampled;
}

void OtlpSpanRecordable::SetSpanKind(otel::trace::SpanKind span_kind) noexcept {
  kind_ = proto_kind(span_kind);
}

void OtlpSpanRecordable::SetResource(const otel::sdk::resource::Resource& resource) noexcept {
  resource_ = &resource;
}

void OtlpSpanRecordable::SetStartTime(otel::common::SystemTimestamp start_time) noexcept {
  start_unix_nano_ = static_cast<std::uint64_t>(start_time.time_since_epoch().count());
}

void OtlpSpanRecordable::SetDuration(std::chrono::nanoseconds duration) noexcept {
  end_unix_nano_ = start_unix_nano_ + static_cast<std::uint64_t>(duration.count());
}

void OtlpSpanRecordable::SetInstrumentationScope(
    const otel::sdk::instrumentationscope::InstrumentationScope& instrumentation_scope) noexcept {
  scope_ = &instrumentation_scope;
}

void OtlpSpanRecordable::write_to(proto::trace::v1::Span* out) const {
  out->set_trace_id(reinterpret_cast<const char*>(trace_id_.data()), trace_id_.size());
  out->set_span_id(reinterpret_cast<const char*>(span_id_.data()), span_id_.size());
  if (has_parent_) {
    out->set_parent_span_id(reinterpret_cast<const char*>(parent_span_id_.data()),
                            parent_span_id_.size());
  }
  if (!trace_state_.empty()) out->set_trace_state(trace_state_);
  out->set_flags(flags_);
  out->set_name(name_);
  out->set_kind(static_cast<proto::trace::v1::Span_SpanKind>(kind_));
  out->set_start_time_unix_nano(start_unix_nano_);
  out->set_end_time_unix_nano(end_unix_nano_);
  out->mutable_attributes()->Reserve(static_cast<int>(attribute_count_));
  for (std::size_t i = 0; i < attribute_count_; ++i) {
    const Attribute& attribute =
        i < kInlineAttributes ? inline_attributes_[i] : more_attributes_[i - kInlineAttributes];
    proto::common::v1::KeyValue* kv = out->add_attributes();
    if (attribute.array != nullptr) {
      *kv = *attribute.array;
      continue;
    }
    const otel::nostd::string_view key(attribute.key.data(), attribute.key.size());
    if (otel::nostd::holds_alternative<const char*>(attribute.value)) {
      otlp::OtlpPopulateAttributeUtils::PopulateAttribute(kv, key,
                                                          AttributeValue(attribute.text.c_str()));
    } else if (otel::nostd::holds_alternative<otel::nostd::string_view>(attribute.value)) {
      otlp::OtlpPopulateAttributeUtils::PopulateAttribute(
          kv, key,
          AttributeValue(otel::nostd::string_view(attribute.text.data(), attribute.text.size())));
    } else {
      otlp::OtlpPopulateAttributeUtils::PopulateAttribute(kv, key, attribute.value);
    }
  }
  if (rare_ != nullptr) {
    const proto::trace::v1::Span& rare = rare_->span();
    out->mutable_events()->MergeFrom(rare.events());
    out->mutable_links()->MergeFrom(rare.links());
    if (rare.has_status()) *out->mutable_status() = rare.status();
  }
}

OtlpSpanBatch::OtlpSpanBatch() = default;
OtlpSpanBatch::~OtlpSpanBatch() = default;

void OtlpSpanBatch::release() noexcept { arena_.reset(); }

std::unique_ptr<OtlpSpanBatch> OtlpSpanBatchPool::take() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<OtlpSpanBatch> batch = std::move(idle_.back());
      idle_.pop_back();
      return batch;
    }
  }
  return std::make_unique<OtlpSpanBatch>();
}

void OtlpSpanBatchPool::give_back(std::unique_ptr<OtlpSpanBatch> batch) noexcept {
  batch->release();
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(batch));
  } catch (...) {
    // Out of memory: the batch is freed instead of kept.
  }
}

const proto::collector::trace::v1::ExportTraceServiceRequest& OtlpSpanBatch::build(
    const otel::nostd::span<std::unique_ptr<otel::sdk::trace::Recordable>>& spans) {
  arena_.reset();  // the previous request, before its first block is handed out again
  if (first_block_ == nullptr) first_block_ = std::make_unique<char[]>(kFirstBlockBytes);
  google::protobuf::ArenaOptions options;
  options.initial_block = first_block_.get();
  options.initial_block_size = kFirstBlockBytes;
  options.max_block_size = kMaxBlockBytes;
  arena_ = std::make_unique<google::protobuf::Arena>(options);
  auto* request = google::protobuf::Arena::CreateMessage<
      proto::collector::trace::v1::ExportTraceServiceRequest>(arena_.get());

  // A batch has one resource and one or two scopes: a short list beats a map.
  struct Group {
    const otel::sdk::resource::Resource* resource;
    const otel::sdk::instrumentationscope::InstrumentationScope* scope;
    proto::trace::v1::ScopeSpans* out;
  };
  std::vector<Group> groups;
  std::vector<std::pair<const otel::sdk::resource::Resource*, proto::trace::v1::ResourceSpans*>>
      resources;
  Group* last = nullptr;
  for (const std::unique_ptr<otel::sdk::trace::Recordable>& recordable : spans) {
    const auto* span = dynamic_cast<const OtlpSpanRecordable*>(recordable.get());
    if (span == nullptr) continue;
    if (last == nullptr || last->resource != span->resource() || last->scope != span->scope()) {
      last = nullptr;
      for (Group& group : groups) {
        if (same_resource(group.resource, span->resource()) &&
            same_scope(group.scope, span->scope())) {
          last = &group;
        }
      }
      if (last == nullptr) {
        proto::trace::v1::ResourceSpans* resource_spans = nullptr;
        for (const auto& [resource, out] : resources) {
          if (same_resource(resource, span->resource())) resource_spans = out;
        }
        if (resource_spans == nullptr) {
          resource_spans = request->add_resource_spans();
          if (span->resource() != nullptr) {
            otlp::OtlpPopulateAttributeUtils::PopulateAttribute(resource_spans->mutable_resource(),
                                                                *span->resource());
            resource_spans->set_schema_url(span->resource()->GetSchemaURL());
          }
          resources.emplace_back(span->resource(), resource_spans);
        }
        proto::trace::v1::ScopeSpans* scope_spans = resource_spans->add_scope_spans();
        if (span->scope() != nullptr) {
          proto::common::v1::InstrumentationScope* scope = scope_spans->mutable_scope();
          scope->set_name(span->scope()->GetName());
          scope->set_version(span->scope()->GetVersion());
          scope_spans->set_schema_url(span->scope()->GetSchemaURL());
        }
        groups.push_back({span->resource(), span->scope(), scope_spans});
        last = &groups.back();
      }
    }
    span->write_to(last->out->add_spans());
  }
  keep_last_value_per_key(request);
  return *request;
}

}  // namespace lens::exporters
