// NativeSpanView (see span_view.hpp).
#include "native/span_view.hpp"

#include <opentelemetry/common/key_value_iterable_view.h>

#include "native/attribute_codec.hpp"
#include "native/tick_clock.hpp"

namespace lens::native {
namespace {

namespace otel = opentelemetry;

std::string_view sv(otel::nostd::string_view s) noexcept { return {s.data(), s.size()}; }

std::int64_t unix_ns(otel::common::SystemTimestamp timestamp) noexcept {
  return static_cast<std::int64_t>(timestamp.time_since_epoch().count());
}

}  // namespace

NativeSpanView::NativeSpanView(std::shared_ptr<ThreadSpans> thread, Frame* frame,
                               otel::trace::SpanContext context, std::uint8_t exported_flags,
                               bool recording) noexcept
    : thread_(std::move(thread)),
      frame_(frame),
      context_(std::move(context)),
      owner_(pthread_self()),
      exported_flags_(exported_flags),
      recording_(recording) {}

void NativeSpanView::SetAttribute(otel::nostd::string_view key,
                                  const otel::common::AttributeValue& value) noexcept {
  if (live()) set_attribute(started(), sv(key), value);
}

void NativeSpanView::AddEvent(otel::nostd::string_view name) noexcept {
  if (live()) add_event(started(), sv(name), read_ticks(), 0, NoAttributes());
}

void NativeSpanView::AddEvent(otel::nostd::string_view name,
                              otel::common::SystemTimestamp timestamp) noexcept {
  if (live()) add_event(started(), sv(name), 0, unix_ns(timestamp), NoAttributes());
}

void NativeSpanView::AddEvent(otel::nostd::string_view name,
                              const otel::common::KeyValueIterable& attributes) noexcept {
  if (live()) add_event(started(), sv(name), read_ticks(), 0, attributes);
}

void NativeSpanView::AddEvent(otel::nostd::string_view name,
                              otel::common::SystemTimestamp timestamp,
                              const otel::common::KeyValueIterable& attributes) noexcept {
  if (live()) add_event(started(), sv(name), 0, unix_ns(timestamp), attributes);
}

#if OPENTELEMETRY_ABI_VERSION_NO >= 2
void NativeSpanView::AddLink(const otel::trace::SpanContext& target,
                             const otel::common::KeyValueIterable&) noexcept {
  if (live()) add_link(started(), target);
}

void NativeSpanView::AddLinks(const otel::trace::SpanContextKeyValueIterable& links) noexcept {
  if (!live()) return;
  links.ForEachKeyValue(
      [this](otel::trace::SpanContext context, const otel::common::KeyValueIterable&) {
        add_link(started(), context);
        return true;
      });
}
#endif

void NativeSpanView::SetStatus(otel::trace::StatusCode code,
                               otel::nostd::string_view description) noexcept {
  if (!live()) return;
  const StatusCode native = code == otel::trace::StatusCode::kError ? StatusCode::kError
                            : code == otel::trace::StatusCode::kOk  ? StatusCode::kOk
                                                                    : StatusCode::kUnset;
  set_status(started(), native, sv(description));
}

void NativeSpanView::UpdateName(otel::nostd::string_view name) noexcept {
  if (live()) update_name(started(), sv(name));
}

void NativeSpanView::End(const otel::trace::EndSpanOptions&) noexcept {}

bool NativeSpanView::IsRecording() const noexcept { return recording_ && live(); }

}  // namespace lens::native
