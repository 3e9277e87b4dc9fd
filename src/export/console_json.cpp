// The console JSON lines of the three signals (see console_json.hpp).
#include "export/console_json.hpp"

#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <type_traits>
#include <vector>

#include "core/hex.hpp"

namespace lens::exporters {
namespace {

namespace metrics = opentelemetry::sdk::metrics;
namespace sdktrace = opentelemetry::sdk::trace;
using Json = nlohmann::ordered_json;

// "0x" followed by the id's bytes in lowercase hex.
std::string hex_id(opentelemetry::nostd::span<const std::uint8_t> id) {
  std::string out = "0x";
  core::append_lower_hex(out, {id.data(), id.size()});
  return out;
}

// 2026-08-12T10:11:12.123456Z
std::string iso8601(std::chrono::nanoseconds since_epoch) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since_epoch).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>(micros % 1000000));
  return buffer;
}

Json value(const opentelemetry::sdk::common::OwnedAttributeValue& v) {
  return opentelemetry::nostd::visit(
      [](const auto& x) -> Json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<std::uint8_t>>) {
          return Json(std::vector<unsigned>(x.begin(), x.end()));
        } else {
          return Json(x);
        }
      },
      v);
}

// Any map of string keys to owned values, as an object with sorted keys.
template <class Map>
Json attributes(const Map& map) {
  std::map<std::string, Json> sorted;
  for (const auto& [key, v] : map) {
    sorted.emplace(key, value(v));
  }
  Json out = Json::object();
  for (auto& [key, v] : sorted) {
    out[key] = std::move(v);
  }
  return out;
}

// {"attributes": {...}, "schema_url": "..."}, empty when the SDK set no resource.
Json resource(const opentelemetry::sdk::resource::Resource* r) {
  if (r == nullptr) return Json{{"attributes", Json::object()}, {"schema_url", ""}};
  return Json{{"attributes", attributes(r->GetAttributes())}, {"schema_url", r->GetSchemaURL()}};
}

Json context_json(const opentelemetry::trace::SpanContext& context) {
  std::string state = "[]";
  if (context.trace_state() != nullptr && !context.trace_state()->Empty()) {
    state = context.trace_state()->ToHeader();
  }
  return Json{{"trace_id", hex_id(context.trace_id().Id())},
              {"span_id", hex_id(context.span_id().Id())},
              {"trace_state", state}};
}

// The Python SDK's names, indexed by the enum's value (the first for a value out of range).
template <std::size_t N, class Enum>
const char* name_of(const char* const (&names)[N], Enum value) {
  const auto index = static_cast<std::size_t>(value);
  return index < N ? names[index] : names[0];
}

constexpr const char* kKindNames[] = {"SpanKind.INTERNAL", "SpanKind.SERVER", "SpanKind.CLIENT",
                                      "SpanKind.PRODUCER", "SpanKind.CONSUMER"};
constexpr const char* kStatusNames[] = {"UNSET", "OK", "ERROR"};

Json number(const metrics::ValueType& v) {
  return opentelemetry::nostd::visit([](auto x) { return Json(x); }, v);
}

std::int64_t unix_nanos(opentelemetry::common::SystemTimestamp ts) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(ts.time_since_epoch()).count();
}

// Python's console output calls both "value" points and histogram points by these keys.
Json point_json(const metrics::MetricData& metric, const metrics::PointDataAttributes& point,
                bool gauge) {
  Json out;
  out["attributes"] = attributes(point.attributes);
  // A last value has no start (the Python SDK writes null for gauges).
  out["start_time_unix_nano"] = gauge ? Json(nullptr) : Json(unix_nanos(metric.start_ts));
  out["time_unix_nano"] = unix_nanos(metric.end_ts);
  opentelemetry::nostd::visit(
      [&out](const auto& data) {
        using T = std::decay_t<decltype(data)>;
        if constexpr (std::is_same_v<T, metrics::SumPointData>) {
          out["value"] = number(data.value_);
        } else if constexpr (std::is_same_v<T, metrics::LastValuePointData>) {
          out["value"] = number(data.value_);
        } else if constexpr (std::is_same_v<T, metrics::HistogramPointData>) {
          out["count"] = data.count_;
          out["sum"] = number(data.sum_);
          out["bucket_counts"] = data.counts_;
          out["explicit_bounds"] = data.boundaries_;
          out["min"] = data.record_min_max_ ? number(data.min_) : Json(nullptr);
          out["max"] = data.record_min_max_ ? number(data.max_) : Json(nullptr);
        }
      },
      point.point_data);
  out["exemplars"] = Json::array();
  return out;
}

Json data_json(const metrics::MetricData& metric) {
  Json points = Json::array();
  bool sum = false;
  bool histogram = false;
  bool monotonic = false;
  for (const auto& point : metric.point_data_attr_) {
    if (const auto* s = opentelemetry::nostd::get_if<metrics::SumPointData>(&point.point_data)) {
      sum = true;
      monotonic = s->is_monotonic_;
    } else if (opentelemetry::nostd::holds_alternative<metrics::HistogramPointData>(
                   point.point_data)) {
      histogram = true;
    } else if (opentelemetry::nostd::holds_alternative<metrics::DropPointData>(point.point_data)) {
      continue;
    }
    points.push_back(point_json(metric, point, !sum && !histogram));
  }
  Json data;
  data["data_points"] = std::move(points);
  const int temporality = static_cast<int>(metric.aggregation_temporality);
  if (sum) {
    data["aggregation_temporality"] = temporality;
    data["is_monotonic"] = monotonic;
  } else if (histogram) {
    data["aggregation_temporality"] = temporality;
  }
  return data;
}

Json timestamp_json(opentelemetry::common::SystemTimestamp ts) {
  const auto since = ts.time_since_epoch();
  return since.count() == 0 ? Json(nullptr) : Json(iso8601(since));
}

}  // namespace

std::string console_line(const sdktrace::SpanData& span) {
  const auto start = span.GetStartTime().time_since_epoch();
  Json events = Json::array();
  for (const auto& event : span.GetEvents()) {
    events.push_back(Json{{"name", std::string(event.GetName())},
                          {"timestamp", iso8601(event.GetTimestamp().time_since_epoch())},
                          {"attributes", attributes(event.GetAttributes())}});
  }
  Json links = Json::array();
  for (const auto& link : span.GetLinks()) {
    links.push_back(Json{{"context", context_json(link.GetSpanContext())},
                         {"attributes", attributes(link.GetAttributes())}});
  }
  Json status{{"status_code", name_of(kStatusNames, span.GetStatus())}};
  if (!span.GetDescription().empty()) {
    status["description"] = std::string(span.GetDescription());
  }
  Json line;
  line["name"] = std::string(span.GetName());
  line["context"] = context_json(span.GetSpanContext());
  line["kind"] = name_of(kKindNames, span.GetSpanKind());
  line["parent_id"] =
      span.GetParentSpanId().IsValid() ? Json(hex_id(span.GetParentSpanId().Id())) : Json(nullptr);
  line["start_time"] = iso8601(start);
  line["end_time"] = iso8601(start + span.GetDuration());
  line["status"] = status;
  line["attributes"] = attributes(span.GetAttributes());
  line["events"] = events;
  line["links"] = links;
  line["resource"] = resource(&span.GetResource());
  // Invalid UTF-8 in a value becomes U+FFFD rather than an exception that would lose the line.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string console_line(const metrics::ResourceMetrics& data) {
  Json scopes = Json::array();
  for (const auto& scope_metrics : data.scope_metric_data_) {
    Json metrics_json = Json::array();
    for (const auto& metric : scope_metrics.metric_data_) {
      metrics_json.push_back(Json{{"name", metric.instrument_descriptor.name_},
                                  {"description", metric.instrument_descriptor.description_},
                                  {"unit", metric.instrument_descriptor.unit_},
                                  {"data", data_json(metric)}});
    }
    Json scope = Json::object();
    if (scope_metrics.scope_ != nullptr) {
      scope = Json{{"name", scope_metrics.scope_->GetName()},
                   {"version", scope_metrics.scope_->GetVersion()},
                   {"schema_url", scope_metrics.scope_->GetSchemaURL()},
                   {"attributes", attributes(scope_metrics.scope_->GetAttributes())}};
    }
    scopes.push_back(
        Json{{"scope", std::move(scope)},
             {"metrics", std::move(metrics_json)},
             {"schema_url", scope_metrics.scope_ != nullptr ? scope_metrics.scope_->GetSchemaURL()
                                                            : std::string()}});
  }
  const std::string schema = data.resource_ != nullptr ? data.resource_->GetSchemaURL() : "";
  Json line;
  line["resource_metrics"] = Json::array({Json{{"resource", resource(data.resource_)},
                                               {"scope_metrics", std::move(scopes)},
                                               {"schema_url", schema}}});
  // Invalid UTF-8 in a value becomes U+FFFD rather than an exception that would lose the line.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string console_line(const LogRecordData& record) {
  const auto severity = static_cast<std::size_t>(record.severity());
  const bool has_context = record.trace_id().IsValid();
  Json line;
  line["body"] = record.body() != nullptr ? value(*record.body()) : Json(nullptr);
  line["severity_number"] = severity == 0 ? Json(nullptr) : Json(severity);
  line["severity_text"] =
      severity < 25 ? std::string(opentelemetry::logs::SeverityNumToText[severity]) : "INVALID";
  line["attributes"] =
      record.attributes().empty() ? Json(nullptr) : attributes(record.attributes());
  line["dropped_attributes"] = 0;
  line["timestamp"] = timestamp_json(record.timestamp());
  line["observed_timestamp"] = timestamp_json(record.observed_timestamp());
  line["trace_id"] = has_context ? hex_id(record.trace_id().Id()) : "";
  line["span_id"] = has_context ? hex_id(record.span_id().Id()) : "";
  line["trace_flags"] = has_context ? Json(record.trace_flags().flags()) : Json(nullptr);
  line["resource"] = resource(record.resource());
  line["event_name"] = record.event_name().empty() ? Json(nullptr) : Json(record.event_name());
  // Invalid UTF-8 in a value becomes U+FFFD rather than an exception that would lose the line.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lens::exporters
