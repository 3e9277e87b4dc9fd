// Fast OTLP JSON trace and metrics decoding (see otlp_fast_decoder.hpp). Each function returns
// false to decline: the line then takes the general decoder, which knows every other form.
#include "report/otlp_fast_decoder.hpp"

#include <simdjson.h>

#include <cstdint>
#include <limits>
#include <string_view>

namespace lens::report {
namespace {

namespace dom = simdjson::dom;
namespace common = opentelemetry::proto::common::v1;
namespace trace = opentelemetry::proto::trace::v1;
namespace metrics_pb = opentelemetry::proto::metrics::v1;

// Nested arrays and kvlists deeper than this are left to the general decoder.
constexpr int kMaxValueDepth = 16;

// A key is the field's JSON (lowerCamelCase) or proto (snake_case) name.
bool is(std::string_view key, std::string_view camel, std::string_view snake) {
  return key == camel || key == snake;
}

// Marks field `bit` seen in this object; false when it was already (a repeated key).
bool first_time(std::uint32_t& seen, int bit) {
  const std::uint32_t mask = 1u << bit;
  if ((seen & mask) != 0) return false;
  seen |= mask;
  return true;
}

// Each element of the JSON array `value` read by read(element, entry) into a new entry from
// add(); false when `value` is not an array or an element fails (the rest is not read).
template <class Add, class Read>
bool read_each(dom::element value, Add add, Read read) {
  dom::array list;
  if (value.get_array().get(list)) return false;
  for (dom::element item : list) {
    if (!read(item, *add())) return false;
  }
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// An id: hex of exactly `bytes` bytes, or "" (unset).
bool read_id(dom::element value, std::size_t bytes, std::string* out) {
  std::string_view text;
  if (value.get_string().get(text)) return false;
  if (text.empty()) {
    out->clear();
    return true;
  }
  if (text.size() != 2 * bytes) return false;
  out->resize(bytes);
  for (std::size_t i = 0; i < bytes; ++i) {
    const int high = hex_digit(text[2 * i]);
    const int low = hex_digit(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    (*out)[i] = static_cast<char>((high << 4) | low);
  }
  return true;
}

// Plain decimal digits without a leading zero (other spellings go the general way).
bool parse_digits(std::string_view text, std::uint64_t& out) {
  if (text.empty() || text.size() > 20 || (text.size() > 1 && text[0] == '0')) return false;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return false;
    value = value * 10 + digit;
  }
  out = value;
  return true;
}

// A 64-bit unsigned field: a decimal string or a non-negative integer.
bool read_uint64(dom::element value, std::uint64_t& out) {
  if (value.is_string()) return parse_digits(value.get_string().value_unsafe(), out);
  if (value.is_uint64()) return !value.get_uint64().get(out);
  return false;
}

// A 64-bit signed field: a decimal string (optionally negative) or an integer.
bool read_int64(dom::element value, std::int64_t& out) {
  if (value.is_string()) {
    std::string_view text = value.get_string().value_unsafe();
    const bool negative = !text.empty() && text[0] == '-';
    if (negative) text.remove_prefix(1);
    std::uint64_t magnitude = 0;
    if (!parse_digits(text, magnitude)) return false;
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (negative) {
      if (magnitude == 0 || magnitude > kMax + 1) return false;  // "-0" goes the general way
      out = magnitude == kMax + 1 ? std::numeric_limits<std::int64_t>::min()
                                  : -static_cast<std::int64_t>(magnitude);
      return true;
    }
    if (magnitude > kMax) return false;
    out = static_cast<std::int64_t>(magnitude);
    return true;
  }
  if (value.is_int64()) return !value.get_int64().get(out);
  return false;
}

// A 32-bit unsigned count or flags field: an integer number only.
bool read_uint32(dom::element value, std::uint32_t& out) {
  std::uint64_t number = 0;
  if (!value.is_uint64() || value.get_uint64().get(number)) return false;
  if (number > std::numeric_limits<std::uint32_t>::max()) return false;
  out = static_cast<std::uint32_t>(number);
  return true;
}

// An enum as its integer (names go the general way).
bool read_enum(dom::element value, int& out) {
  std::int64_t number = 0;
  if (!value.is_int64() || value.get_int64().get(number)) return false;
  if (number < std::numeric_limits<std::int32_t>::min() ||
      number > std::numeric_limits<std::int32_t>::max()) {
    return false;
  }
  out = static_cast<int>(number);
  return true;
}

bool read_string(dom::element value, std::string* out) {
  std::string_view text;
  if (value.get_string().get(text)) return false;
  out->assign(text.data(), text.size());
  return true;
}

// Reads a JSON object member by member: `member_reader(key, value, seen)` says whether the
// member is known and valid, `seen` holding a bit per member already read (first_time). False
// when `value` is not an object or a member is unknown, repeated or invalid: the general decoder
// takes the line then.
template <class MemberReader>
bool read_object(dom::element value, MemberReader&& member_reader) {
  dom::object object;
  if (value.get_object().get(object)) return false;
  std::uint32_t seen = 0;
  for (dom::key_value_pair field : object) {
    if (!member_reader(std::string_view(field.key), field.value, seen)) return false;
  }
  return true;
}

bool read_any_value(dom::element value, common::AnyValue& out, int depth);

bool read_key_values(dom::element value, google::protobuf::RepeatedPtrField<common::KeyValue>& out,
                     int depth) {
  dom::array array;
  if (value.get_array().get(array)) return false;
  for (dom::element item : array) {
    dom::object object;
    if (item.get_object().get(object)) return false;
    common::KeyValue* key_value = out.Add();
    std::uint32_t seen = 0;
    for (dom::key_value_pair field : object) {
      if (field.key == "key") {
        if (!first_time(seen, 0) || !read_string(field.value, key_value->mutable_key())) {
          return false;
        }
      } else if (field.key == "value") {
        if (!first_time(seen, 1) ||
            !read_any_value(field.value, *key_value->mutable_value(), depth + 1)) {
          return false;
        }
      } else {
        return false;
      }
    }
  }
  return true;
}

bool read_any_value(dom::element value, common::AnyValue& out, int depth) {
  if (depth > kMaxValueDepth) return false;
  dom::object object;
  if (value.get_object().get(object)) return false;
  bool has_value = false;
  for (dom::key_value_pair field : object) {
    if (has_value) return false;  // two members of the oneof
    has_value = true;
    const std::string_view key = field.key;
    if (is(key, "stringValue", "string_value")) {
      if (!read_string(field.value, out.mutable_string_value())) return false;
    } else if (is(key, "intValue", "int_value")) {
      std::int64_t number = 0;
      if (!read_int64(field.value, number)) return false;
      out.set_int_value(number);
    } else if (is(key, "doubleValue", "double_value")) {
      double number = 0.0;
      if (!field.value.is_number() || field.value.get_double().get(number)) return false;
      out.set_double_value(number);
    } else if (is(key, "boolValue", "bool_value")) {
      bool flag = false;
      if (field.value.get_bool().get(flag)) return false;
      out.set_bool_value(flag);
    } else if (is(key, "arrayValue", "array_value")) {
      dom::object array_object;
      if (field.value.get_object().get(array_object)) return false;
      common::ArrayValue* array = out.mutable_array_value();
      std::uint32_t seen = 0;
      for (dom::key_value_pair member : array_object) {
        if (member.key != "values" || !first_time(seen, 0)) return false;
        dom::array items;
        if (member.value.get_array().get(items)) return false;
        for (dom::element item : items) {
          if (!read_any_value(item, *array->add_values(), depth + 1)) return false;
        }
      }
    } else if (is(key, "kvlistValue", "kvlist_value")) {
      dom::object list_object;
      if (field.value.get_object().get(list_object)) return false;
      common::KeyValueList* list = out.mutable_kvlist_value();
      std::uint32_t seen = 0;
      for (dom::key_value_pair member : list_object) {
        if (member.key != "values" || !first_time(seen, 0)) return false;
        if (!read_key_values(member.value, *list->mutable_values(), depth)) return false;
      }
    } else {
      return false;  // bytesValue (base64) and anything else
    }
  }
  return true;
}

bool read_status(dom::element value, trace::Status& out) {
  dom::object object;
  if (value.get_object().get(object)) return false;
  std::uint32_t seen = 0;
  for (dom::key_value_pair field : object) {
    if (field.key == "code") {
      int code = 0;
      if (!first_time(seen, 0) || !read_enum(field.value, code)) return false;
      out.set_code(static_cast<trace::Status::StatusCode>(code));
    } else if (field.key == "message") {
      if (!first_time(seen, 1) || !read_string(field.value, out.mutable_message())) return false;
    } else {
      return false;
    }
  }
  return true;
}

// Empty event and link lists are accepted; spans with events or links go the general way.
bool empty_array(dom::element value) {
  dom::array array;
  return !value.get_array().get(array) && array.size() == 0;
}

bool read_span(dom::element value, trace::Span& out) {
  return read_object(value, [&](std::string_view key, dom::element member, std::uint32_t& seen) {
    bool ok = false;
    if (is(key, "traceId", "trace_id")) {
      ok = first_time(seen, 0) && read_id(member, 16, out.mutable_trace_id());
    } else if (is(key, "spanId", "span_id")) {
      ok = first_time(seen, 1) && read_id(member, 8, out.mutable_span_id());
    } else if (is(key, "parentSpanId", "parent_span_id")) {
      ok = first_time(seen, 2) && read_id(member, 8, out.mutable_parent_span_id());
    } else if (is(key, "traceState", "trace_state")) {
      ok = first_time(seen, 3) && read_string(member, out.mutable_trace_state());
    } else if (key == "name") {
      ok = first_time(seen, 4) && read_string(member, out.mutable_name());
    } else if (key == "kind") {
      int kind = 0;
      ok = first_time(seen, 5) && read_enum(member, kind);
      out.set_kind(static_cast<trace::Span::SpanKind>(kind));
    } else if (is(key, "startTimeUnixNano", "start_time_unix_nano")) {
      std::uint64_t time = 0;
      ok = first_time(seen, 6) && read_uint64(member, time);
      out.set_start_time_unix_nano(time);
    } else if (is(key, "endTimeUnixNano", "end_time_unix_nano")) {
      std::uint64_t time = 0;
      ok = first_time(seen, 7) && read_uint64(member, time);
      out.set_end_time_unix_nano(time);
    } else if (key == "attributes") {
      ok = first_time(seen, 8) && read_key_values(member, *out.mutable_attributes(), 0);
    } else if (is(key, "droppedAttributesCount", "dropped_attributes_count")) {
      std::uint32_t count = 0;
      ok = first_time(seen, 9) && read_uint32(member, count);
      out.set_dropped_attributes_count(count);
    } else if (key == "events") {
      ok = first_time(seen, 10) && empty_array(member);
    } else if (is(key, "droppedEventsCount", "dropped_events_count")) {
      std::uint32_t count = 0;
      ok = first_time(seen, 11) && read_uint32(member, count);
      out.set_dropped_events_count(count);
    } else if (key == "links") {
      ok = first_time(seen, 12) && empty_array(member);
    } else if (is(key, "droppedLinksCount", "dropped_links_count")) {
      std::uint32_t count = 0;
      ok = first_time(seen, 13) && read_uint32(member, count);
      out.set_dropped_links_count(count);
    } else if (key == "status") {
      ok = first_time(seen, 14) && read_status(member, *out.mutable_status());
    } else if (key == "flags") {
      std::uint32_t flags = 0;
      ok = first_time(seen, 15) && read_uint32(member, flags);
      out.set_flags(flags);
    }
    return ok;
  });
}

bool read_scope(dom::element value, common::InstrumentationScope& out) {
  return read_object(value, [&](std::string_view key, dom::element member, std::uint32_t& seen) {
    bool ok = false;
    if (key == "name") {
      ok = first_time(seen, 0) && read_string(member, out.mutable_name());
    } else if (key == "version") {
      ok = first_time(seen, 1) && read_string(member, out.mutable_version());
    } else if (key == "attributes") {
      ok = first_time(seen, 2) && read_key_values(member, *out.mutable_attributes(), 0);
    } else if (is(key, "droppedAttributesCount", "dropped_attributes_count")) {
      std::uint32_t count = 0;
      ok = first_time(seen, 3) && read_uint32(member, count);
      out.set_dropped_attributes_count(count);
    }
    return ok;
  });
}

bool read_resource(dom::element value, opentelemetry::proto::resource::v1::Resource& out) {
  return read_object(value, [&](std::string_view key, dom::element member, std::uint32_t& seen) {
    bool ok = false;
    if (key == "attributes") {
      ok = first_time(seen, 0) && read_key_values(member, *out.mutable_attributes(), 0);
    } else if (is(key, "droppedAttributesCount", "dropped_attributes_count")) {
      std::uint32_t count = 0;
      ok = first_time(seen, 1) && read_uint32(member, count);
      out.set_dropped_attributes_count(count);
    }
    return ok;
  });
}

bool read_scope_spans(dom::element value, trace::ScopeSpans& out) {
  return read_object(value, [&](std::string_view key, dom::element member, std::uint32_t& seen) {
    bool ok = false;
    if (key == "scope") {
      ok = first_time(seen, 0) && read_scope(member, *out.mutable_scope());
    } else if (key == "spans") {
      dom::array spans;
      ok = first_time(seen, 1) && !member.get_array().get(spans);
      if (ok) out.mutable_spans()->Reserve(static_cast<int>(spans.size()));
      for (auto it = spans.begin(); ok && it != spans.end(); ++it) {
        ok = read_span(*it, *out.add_spans());
      }
    } else if (is(key, "schemaUrl", "schema_url")) {
      ok = first_time(seen, 2) && read_string(member, out.mutable_schema_url());
    }
    return ok;
  });
}

bool read_resource_spans(dom::element value, trace::ResourceSpans& out) {
  return read_object(value, [&](std::string_view key, dom::element member, std::uint32_t& seen) {
    bool ok = false;
    if (key == "resource") {
      ok = first_time(seen, 0) && read_resource(member, *out.mutable_resource());
    } else if (is(key, "scopeSpans", "scope_spans")) {
      ok = first_time(seen, 1) &&
           read_each(
               member, [&] { return out.add_scope_spans(); }, read_scope_spans);
    } else if (is(key, "schemaUrl", "schema_url")) {
      ok = first_time(seen, 2) && read_string(member, out.mutable_schema_url());
    }
    return ok;
  });
}

// A repeated double field: JSON numbers only.
bool read_doubles(dom::element value, google::protobuf::RepeatedField<double>& out) {
  dom::array array;
  if (value.get_array().get(array)) return false;
  for (dom::element item : array) {
    double number = 0.0;
    if (!item.is_number() || item.get_double().get(number)) return false;
    out.Add(number);
  }
  return true;
}

bool read_double(dom::element value, double& out) {
  return value.is_number() && !value.get_double().get(out);
}

bool read_number_point(dom::element value, metrics_pb::NumberDataPoint& out) {
  return read_object(value, [&](std::string_view key, dom::element member, std::uint32_t& seen) {
    bool ok = false;
    if (key == "attributes") {
      ok = first_time(seen, 0) && read_key_values(member, *out.mutable_attributes(), 0);
    } else if (is(key, "startTimeUnixNano", "start_time_unix_nano")) {
      std::uint64_t time = 0;
      ok = first_time(seen, 1) && read_uint64(member, time);
      out.set_start_time_unix_nano(time);
    } else if (is(key, "timeUnixNano", "time_unix_nano")) {
      std::uint64_t time = 0;
      ok = first_time(seen, 2) && read_uint64(member, time);
      out.set_time_unix_nano(time);
    } else if (is(key, "asDouble", "as_double")) {
      double number = 0.0;
      ok = first_time(seen, 3) && !(seen & (1u << 4)) && read_double(member, number);
      out.set_as_double(number);
    } else if (is(key, "asInt", "as_int")) {
      std::int64_t number = 0;
      ok = first_time(seen, 4) && !(seen & (1u << 3)) && read_int64(member, number);
      out.set_as_int(number);
    } else if (key == "exemplars") {
      ok = first_time(seen, 5) && empty_array(member);
    } else if (key == "flags") {
      std::uint32_t flags = 0;
      ok = first_time(seen, 6) && read_uint32(member, flags);
      out.set_flags(flags);
    }
    return ok;
  });
}

bool read_histogram_point(dom::element value, metrics_pb::HistogramDataPoint& out) {
  return read_object(value, [&](std::string_view key, dom::element member, std::uint32_t& seen) {
    bool ok = false;
    std::uint64_t number = 0;
    double real = 0.0;
    if (key == "attributes") {
      ok = first_time(seen, 0) && read_key_values(member, *out.mutable_attributes(), 0);
    } else if (is(key, "startTimeUnixNano", "start_time_unix_nano")) {
      ok = first_time(seen, 1) && read_uint64(member, number);
      out.set_start_time_unix_nano(number);
    } else if (is(key, "timeUnixNano", "time_unix_nano")) {
      ok = first_time(seen, 2) && read_uint64(member, number);
      out.set_time_unix_nano(number);
    } else if (key == "count") {
      ok = first_time(seen, 3) && read_uint64(member, number);
      out.set_count(number);
    } else if (key == "sum") {
      ok = first_time(seen, 4) && read_double(member, real);
      out.set_sum(real);
    } else if (is(key, "bucketCounts", "bucket_counts")) {
      dom::array counts;
      ok = first_time(seen, 5) && !member.get_array().get(counts);
      for (auto it = counts.begin(); ok && it != counts.end(); ++it) {
        ok = read_uint64(*it, number);
        out.add_bucket_counts(number);
      }
    } else if (is(key, "explicitBounds", "explicit_bounds")) {
      ok = first_time(seen, 6) && read_doubles(member, *out.mutable_explicit_bounds());
    } else if (key == "exemplars") {
      ok = first_time(seen, 7) && empty_array(member);
    } else if (key == "flags") {
      std::uint32_t flags = 0;
      ok = first_time(seen, 8) && read_uint32(member, flags);
      out.set_flags(flags);
    } else if (key == "min") {
      ok = first_time(seen, 9) && read_double(member, real);
      out.set_min(real);
    } else if (key == "max") {
      ok = first_time(seen, 10) && read_double(member, real);
      out.set_max(real);
    }
    return ok;
  });
}

// The data points of a gauge, sum or histogram, and its other fields.
template <class Points, class ReadPoint>
bool read_points_object(dom::element value, Points& points, int* temporality, bool* monotonic,
                        ReadPoint read_point) {
  return read_object(value, [&](std::string_view key, dom::element member, std::uint32_t& seen) {
    bool ok = false;
    if (is(key, "dataPoints", "data_points")) {
      ok = first_time(seen, 0) && read_each(
                                      member, [&] { return points.Add(); }, read_point);
    } else if (temporality != nullptr &&
               is(key, "aggregationTemporality", "aggregation_temporality")) {
      ok = first_time(seen, 1) && read_enum(member, *temporality);
    } else if (monotonic != nullptr && is(key, "isMonotonic", "is_monotonic")) {
      ok = first_time(seen, 2) && !member.get_bool().get(*monotonic);
    }
    return ok;
  });
}

bool read_metric(dom::element value, metrics_pb::Metric& out) {
  dom::object object;
  if (value.get_object().get(object)) return false;
  std::uint32_t seen = 0;
  bool has_data = false;  // one of gauge, sum, histogram (a oneof)
  for (dom::key_value_pair field : object) {
    const std::string_view key = field.key;
    bool ok = false;
    int temporality = 0;
    bool monotonic = false;
    if (key == "name") {
      ok = first_time(seen, 0) && read_string(field.value, out.mutable_name());
    } else if (key == "description") {
      ok = first_time(seen, 1) && read_string(field.value, out.mutable_description());
    } else if (key == "unit") {
      ok = first_time(seen, 2) && read_string(field.value, out.mutable_unit());
    } else if (key == "metadata") {
      ok = first_time(seen, 3) && read_key_values(field.value, *out.mutable_metadata(), 0);
    } else if (key == "gauge" && !has_data) {
      has_data = true;
      ok = read_points_object(field.value, *out.mutable_gauge()->mutable_data_points(), nullptr,
                              nullptr, read_number_point);
    } else if (key == "sum" && !has_data) {
      has_data = true;
      metrics_pb::Sum* sum = out.mutable_sum();
      ok = read_points_object(field.value, *sum->mutable_data_points(), &temporality, &monotonic,
                              read_number_point);
      sum->set_aggregation_temporality(
          static_cast<metrics_pb::AggregationTemporality>(temporality));
      sum->set_is_monotonic(monotonic);
    } else if (key == "histogram" && !has_data) {
      has_data = true;
      metrics_pb::Histogram* histogram = out.mutable_histogram();
      ok = read_points_object(field.value, *histogram->mutable_data_points(), &temporality, nullptr,
                              read_histogram_point);
      histogram->set_aggregation_temporality(
          static_cast<metrics_pb::AggregationTemporality>(temporality));
    }
    if (!ok) return false;
  }
  return true;
}

bool read_scope_metrics(dom::element value, metrics_pb::ScopeMetrics& out) {
  return read_object(value, [&](std::string_view key, dom::element member, std::uint32_t& seen) {
    bool ok = false;
    if (key == "scope") {
      ok = first_time(seen, 0) && read_scope(member, *out.mutable_scope());
    } else if (key == "metrics") {
      ok = first_time(seen, 1) && read_each(
                                      member, [&] { return out.add_metrics(); }, read_metric);
    } else if (is(key, "schemaUrl", "schema_url")) {
      ok = first_time(seen, 2) && read_string(member, out.mutable_schema_url());
    }
    return ok;
  });
}

bool read_resource_metrics(dom::element value, metrics_pb::ResourceMetrics& out) {
  return read_object(value, [&](std::string_view key, dom::element member, std::uint32_t& seen) {
    bool ok = false;
    if (key == "resource") {
      ok = first_time(seen, 0) && read_resource(member, *out.mutable_resource());
    } else if (is(key, "scopeMetrics", "scope_metrics")) {
      ok = first_time(seen, 1) &&
           read_each(
               member, [&] { return out.add_scope_metrics(); }, read_scope_metrics);
    } else if (is(key, "schemaUrl", "schema_url")) {
      ok = first_time(seen, 2) && read_string(member, out.mutable_schema_url());
    }
    return ok;
  });
}

}  // namespace

struct FastOtlpDecoder::Parser {
  dom::parser parser;
};

FastOtlpDecoder::FastOtlpDecoder() : parser_(std::make_unique<Parser>()) {}
FastOtlpDecoder::~FastOtlpDecoder() = default;

FastOtlpDecoder::Result FastOtlpDecoder::decode(
    std::string& line,
    opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest& traces,
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest& metrics) {
  const std::size_t size = line.size();
  if (line.capacity() < size + simdjson::SIMDJSON_PADDING) {
    line.reserve(size + simdjson::SIMDJSON_PADDING);
  }
  dom::element root;
  if (parser_->parser.parse(line.data(), size, false).get(root)) return Result::declined;
  dom::object object;
  if (root.get_object().get(object) || object.size() != 1) return Result::declined;
  const dom::key_value_pair field = *object.begin();
  dom::array list;
  if (field.value.get_array().get(list)) return Result::declined;
  if (is(field.key, "resourceSpans", "resource_spans")) {
    traces.Clear();
    for (dom::element item : list) {
      if (!read_resource_spans(item, *traces.add_resource_spans())) return Result::declined;
    }
    return Result::traces;
  }
  if (is(field.key, "resourceMetrics", "resource_metrics")) {
    metrics.Clear();
    for (dom::element item : list) {
      if (!read_resource_metrics(item, *metrics.add_resource_metrics())) return Result::declined;
    }
    return Result::metrics;
  }
  return Result::declined;
}

}  // namespace lens::report
