// Attribute limits, one definition and one unit for spans and log records: counts are numbers of
// attributes (events, links), value lengths are Unicode code points (docs/configuration.md).
// Plain values, copied into each pipeline: any thread.
#pragma once

#include <cstddef>
#include <optional>

#include "lens/otel_settings.hpp"

namespace lens::native {

// The limits every signal's attributes share. Count: the first `attribute_count` distinct keys
// are kept; a new key beyond it is dropped and counted. Value length: strings and each string of
// a string array are cut to at most `attribute_value_length` code points, never inside a UTF-8
// sequence; other types are untouched.
struct AttributeLimits {
  std::size_t attribute_count = 128;
  std::optional<std::size_t> attribute_value_length;  // code points; nullopt: unlimited

  // A log record's: OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT and
  // OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT (which default to the OTEL_ATTRIBUTE_* ones).
  static AttributeLimits of_log_records(const LimitSettings& settings);
};

// Effective limits of one span. A model-specific variable (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT,
// OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, OTEL_EVENT_/LINK_ATTRIBUTE_COUNT_LIMIT) wins over the
// general OTEL_ATTRIBUTE_* one when it was set; otherwise the general one applies. Setting a kept
// key again updates it. The value length applies to span, event and link attributes alike.
// Events and links beyond their count are dropped and counted; their attributes beyond the
// per-event/per-link count are dropped (the first ones in iteration order are kept) and counted
// as dropped attributes.
struct SpanLimits : AttributeLimits {
  std::size_t event_count = 128;
  std::size_t link_count = 128;
  std::size_t event_attribute_count = 128;
  std::size_t link_attribute_count = 128;

  static SpanLimits from(const LimitSettings& settings);
};

}  // namespace lens::native
