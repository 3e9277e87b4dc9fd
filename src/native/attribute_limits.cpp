// The limits of spans and log records from the OTEL_*_LIMIT settings (see attribute_limits.hpp).
// Pure functions: any thread.
#include "native/attribute_limits.hpp"

#include <cstdint>

namespace lens::native {

namespace {

template <class T>
bool is_set(const Sourced<T>& setting) {
  return !setting.source.empty() && setting.source != "default";
}

std::size_t non_negative(std::int64_t value) {
  return value < 0 ? 0 : static_cast<std::size_t>(value);
}

std::optional<std::size_t> non_negative(const std::optional<std::int64_t>& value) {
  if (!value) return std::nullopt;
  return non_negative(*value);
}

}  // namespace

AttributeLimits AttributeLimits::of_log_records(const LimitSettings& settings) {
  AttributeLimits limits;
  limits.attribute_count = non_negative(settings.logrecord_attribute_count.value);
  limits.attribute_value_length = non_negative(settings.logrecord_attribute_value_length.value);
  return limits;
}

SpanLimits SpanLimits::from(const LimitSettings& settings) {
  SpanLimits limits;
  limits.attribute_count =
      non_negative(is_set(settings.span_attribute_count) ? settings.span_attribute_count.value
                                                         : settings.attribute_count.value);
  limits.attribute_value_length = non_negative(is_set(settings.span_attribute_value_length)
                                                   ? settings.span_attribute_value_length.value
                                                   : settings.attribute_value_length.value);
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

}  // namespace lens::native
