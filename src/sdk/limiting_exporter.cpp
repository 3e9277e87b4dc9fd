// Span limits enforced in a recordable wrapper. Thread-safety: see limiting_exporter.hpp.
#include "sdk/limiting_exporter.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/tsan_handoff.hpp"
#include "core/utf8.hpp"
#include "opentelemetry/common/key_value_iterable.h"
#include "opentelemetry/nostd/variant.h"
#include "opentelemetry/trace/span_context.h"

namespace lens::sdk {

namespace otel_sdk = opentelemetry::sdk::trace;
namespace common = opentelemetry::common;
namespace nostd = opentelemetry::nostd;

namespace {

template <class T>
bool is_set(const Sourced<T>& setting) {
  return !setting.source.empty() && setting.source != "default";
}

std::size_t non_negative(std::int64_t value) {
  return value < 0 ? 0 : static_cast<std::size_t>(value);
}

// Calls `sink` with `value`, strings shortened to `max_chars` code points when a limit is set.
// The shortened values are views into the caller's storage (prefixes), valid during the call.
template <class Sink>
void with_limited_value(const common::AttributeValue& value,
                        const std::optional<std::size_t>& max_chars, LimitCounters& counters,
                        Sink&& sink) noexcept {
  if (!max_chars) {
    sink(value);
    return;
  }
  const std::size_t limit = *max_chars;
  auto shorten = [&](nostd::string_view text, bool& changed) {
    const std::size_t bytes =
        core::utf8_prefix_bytes(std::string_view(text.data(), text.size()), limit);
    if (bytes < text.size()) changed = true;
    return nostd::string_view(text.data(), bytes);
  };
  bool changed = false;
  if (nostd::holds_alternative<nostd::string_view>(value)) {
    const auto text = shorten(nostd::get<nostd::string_view>(value), changed);
    if (changed) counters.truncated_values.fetch_add(1, std::memory_order_relaxed);
    sink(common::AttributeValue(text));
  } else if (nostd::holds_alternative<const char*>(value)) {
    const char* raw = nostd::get<const char*>(value);
    const auto text = shorten(nostd::string_view(raw == nullptr ? "" : raw), changed);
    if (changed) counters.truncated_values.fetch_add(1, std::memory_order_relaxed);
    sink(common::AttributeValue(text));
  } else if (nostd::holds_alternative<nostd::span<const nostd::string_view>>(value)) {
    const auto items = nostd::get<nostd::span<const nostd::string_view>>(value);
    std::vector<nostd::string_view> shortened;
    shortened.reserve(items.size());
    for (const auto& item : items) shortened.push_back(shorten(item, changed));
    if (changed) counters.truncated_values.fetch_add(1, std::memory_order_relaxed);
    sink(common::AttributeValue(
        nostd::span<const nostd::string_view>(shortened.data(), shortened.size())));
  } else {
    sink(value);
  }
}

// At most `max_count` entries of `inner`, values length-limited.
class LimitedAttributes final : public common::KeyValueIterable {
 public:
  LimitedAttributes(const common::KeyValueIterable& inner, std::size_t max_count,
                    const std::optional<std::size_t>& max_chars, LimitCounters& counters) noexcept
      : inner_(inner), max_count_(max_count), max_chars_(max_chars), counters_(counters) {}

  bool ForEachKeyValue(nostd::function_ref<bool(nostd::string_view, common::AttributeValue)>
                           callback) const noexcept override {
    std::size_t seen = 0;
    return inner_.ForEachKeyValue([&](nostd::string_view key, common::AttributeValue value) {
      if (seen++ >= max_count_) return false;
      bool keep_going = true;
      with_limited_value(value, max_chars_, counters_, [&](const common::AttributeValue& limited) {
        keep_going = callback(key, limited);
      });
      return keep_going;
    });
  }
  std::size_t size() const noexcept override { return std::min(inner_.size(), max_count_); }

 private:
  const common::KeyValueIterable& inner_;
  std::size_t max_count_;
  const std::optional<std::size_t>& max_chars_;
  LimitCounters& counters_;
};

}  // namespace

SpanLimits SpanLimits::from(const LimitSettings& settings) {
  SpanLimits limits;
  limits.attribute_count =
      non_negative(is_set(settings.span_attribute_count) ? settings.span_attribute_count.value
                                                         : settings.attribute_count.value);
  const auto& length = is_set(settings.span_attribute_value_length)
                           ? settings.span_attribute_value_length.value
                           : settings.attribute_value_length.value;
  if (length) limits.attribute_value_length = non_negative(*length);
  limits.event_count = non_negative(settings.span_event_count.value);
  limits.link_count = non_negative(settings.span_link_count.value);
  limits.event_attribute_count =
      non_negative(is_set(settings.event_attribute_count) || !is_set(settings.attribute_count)
                       ? settings.event_attribute_count.value
                       : settings.attribute_count.value);
  limits.link_attribute_count =
      non_negative(is_set(settings.link_attribute_count) || !is_set(settings.attribute_count)
                       ? settings.link_attribute_count.value
                       : settings.attribute_count.value);
  return limits;
}

// ---- LimitingRecordable ------------------------------------------------------------------

bool LimitingRecordable::KeySet::contains(std::uint64_t hash) const noexcept {
  for (std::size_t i = 0; i < inline_count_; ++i) {
    if (inline_[i] == hash) return true;
  }
  return std::find(more_.begin(), more_.end(), hash) != more_.end();
}

bool LimitingRecordable::KeySet::insert(std::uint64_t hash) noexcept {
  if (inline_count_ < inline_.size()) {
    inline_[inline_count_++] = hash;
    return true;
  }
  try {
    more_.push_back(hash);
  } catch (...) {
    return false;
  }
  return true;
}

LimitingRecordable::LimitingRecordable(std::unique_ptr<otel_sdk::Recordable> inner,
                                       const SpanLimits& limits,
                                       std::shared_ptr<LimitCounters> counters) noexcept
    : inner_(std::move(inner)), limits_(limits), counters_(std::move(counters)) {}

void LimitingRecordable::SetIdentity(const opentelemetry::trace::SpanContext& span_context,
                                     opentelemetry::trace::SpanId parent_span_id) noexcept {
  if (inner_) inner_->SetIdentity(span_context, parent_span_id);
}

void LimitingRecordable::SetAttribute(nostd::string_view key,
                                      const common::AttributeValue& value) noexcept {
  if (!inner_) return;
  const std::uint64_t hash =
      std::hash<std::string_view>{}(std::string_view(key.data(), key.size()));
  if (!keys_.contains(hash)) {
    if (keys_.size() >= limits_.attribute_count || !keys_.insert(hash)) {
      counters_->dropped_attributes.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  with_limited_value(
      value, limits_.attribute_value_length, *counters_,
      [&](const common::AttributeValue& limited) { inner_->SetAttribute(key, limited); });
}

void LimitingRecordable::AddEvent(nostd::string_view name, common::SystemTimestamp timestamp,
                                  const common::KeyValueIterable& attributes) noexcept {
  if (!inner_) return;
  if (events_ >= limits_.event_count) {
    counters_->dropped_events.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ++events_;
  const std::size_t count = attributes.size();
  if (count > limits_.event_attribute_count) {
    counters_->dropped_attributes.fetch_add(count - limits_.event_attribute_count,
                                            std::memory_order_relaxed);
  }
  const LimitedAttributes limited(attributes, limits_.event_attribute_count,
                                  limits_.attribute_value_length, *counters_);
  inner_->AddEvent(name, timestamp, limited);
}

void LimitingRecordable::AddLink(const opentelemetry::trace::SpanContext& span_context,
                                 const common::KeyValueIterable& attributes) noexcept {
  if (!inner_) return;
  if (links_ >= limits_.link_count) {
    counters_->dropped_links.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ++links_;
  const std::size_t count = attributes.size();
  if (count > limits_.link_attribute_count) {
    counters_->dropped_attributes.fetch_add(count - limits_.link_attribute_count,
                                            std::memory_order_relaxed);
  }
  const LimitedAttributes limited(attributes, limits_.link_attribute_count,
                                  limits_.attribute_value_length, *counters_);
  inner_->AddLink(span_context, limited);
}

void LimitingRecordable::SetStatus(opentelemetry::trace::StatusCode code,
                                   nostd::string_view description) noexcept {
  if (inner_) inner_->SetStatus(code, description);
}

void LimitingRecordable::SetName(nostd::string_view name) noexcept {
  if (inner_) inner_->SetName(name);
}

void LimitingRecordable::SetTraceFlags(opentelemetry::trace::TraceFlags flags) noexcept {
  if (inner_) inner_->SetTraceFlags(flags);
}

void LimitingRecordable::SetSpanKind(opentelemetry::trace::SpanKind span_kind) noexcept {
  if (inner_) inner_->SetSpanKind(span_kind);
}

void LimitingRecordable::SetResource(
    const opentelemetry::sdk::resource::Resource& resource) noexcept {
  if (inner_) inner_->SetResource(resource);
}

void LimitingRecordable::SetStartTime(common::SystemTimestamp start_time) noexcept {
  if (inner_) inner_->SetStartTime(start_time);
}

void LimitingRecordable::SetDuration(std::chrono::nanoseconds duration) noexcept {
  if (inner_) inner_->SetDuration(duration);
}

LimitingRecordable::operator otel_sdk::SpanData*() const {
  return inner_ ? static_cast<otel_sdk::SpanData*>(*inner_) : nullptr;
}

void LimitingRecordable::SetInstrumentationScope(
    const otel_sdk::InstrumentationScope& instrumentation_scope) noexcept {
  if (inner_) inner_->SetInstrumentationScope(instrumentation_scope);
}

std::unique_ptr<otel_sdk::Recordable> LimitingRecordable::release_inner() noexcept {
  return std::move(inner_);
}

// ---- LimitingExporter --------------------------------------------------------------------

LimitingExporter::LimitingExporter(std::unique_ptr<otel_sdk::SpanExporter> inner, SpanLimits limits)
    : inner_(std::move(inner)),
      limits_(std::move(limits)),
      counters_(std::make_shared<LimitCounters>()) {}

std::unique_ptr<otel_sdk::Recordable> LimitingExporter::MakeRecordable() noexcept {
  auto inner = inner_->MakeRecordable();
  if (!inner) return nullptr;
  return std::make_unique<LimitingRecordable>(std::move(inner), limits_, counters_);
}

opentelemetry::sdk::common::ExportResult LimitingExporter::Export(
    const nostd::span<std::unique_ptr<otel_sdk::Recordable>>& spans) noexcept {
  std::vector<std::unique_ptr<otel_sdk::Recordable>> unwrapped;
  try {
    unwrapped.reserve(spans.size());
  } catch (...) {
    return opentelemetry::sdk::common::ExportResult::kFailure;
  }
  for (auto& span : spans) {
    core::tsan_receive(span.get());
    if (auto* limited = dynamic_cast<LimitingRecordable*>(span.get())) {
      if (auto inner = limited->release_inner()) unwrapped.push_back(std::move(inner));
    } else if (span) {
      unwrapped.push_back(std::move(span));
    }
  }
  return inner_->Export(
      nostd::span<std::unique_ptr<otel_sdk::Recordable>>(unwrapped.data(), unwrapped.size()));
}

bool LimitingExporter::ForceFlush(std::chrono::microseconds timeout) noexcept {
  return inner_->ForceFlush(timeout);
}

bool LimitingExporter::Shutdown(std::chrono::microseconds timeout) noexcept {
  return inner_->Shutdown(timeout);
}

std::uint64_t LimitingExporter::dropped_attributes() const noexcept {
  return counters_->dropped_attributes.load(std::memory_order_relaxed);
}
std::uint64_t LimitingExporter::dropped_events() const noexcept {
  return counters_->dropped_events.load(std::memory_order_relaxed);
}
std::uint64_t LimitingExporter::dropped_links() const noexcept {
  return counters_->dropped_links.load(std::memory_order_relaxed);
}
std::uint64_t LimitingExporter::truncated_values() const noexcept {
  return counters_->truncated_values.load(std::memory_order_relaxed);
}

}  // namespace lens::sdk
