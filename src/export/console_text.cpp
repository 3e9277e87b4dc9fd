// The text console's lines (see console_text.hpp).
#include "export/console_text.hpp"

#include <opentelemetry/logs/severity.h>

#include <cstdio>
#include <map>
#include <type_traits>
#include <vector>

#include "core/utf8.hpp"

namespace lens::exporters {
namespace {

namespace metrics = opentelemetry::sdk::metrics;
namespace sdktrace = opentelemetry::sdk::trace;
using Owned = opentelemetry::sdk::common::OwnedAttributeValue;

constexpr std::string_view kLinePrefix = "[lens] ";
constexpr std::size_t kMaxValueChars = 60;
constexpr std::size_t kMaxAttributes = 8;

template <class T>
struct IsVector : std::false_type {};
template <class U>
struct IsVector<std::vector<U>> : std::true_type {};

std::string_view view(opentelemetry::nostd::string_view s) { return {s.data(), s.size()}; }

// Six significant digits: enough to read, short enough for a line (JSON keeps every digit).
std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

// A string cut to kMaxValueChars code points, quoted when it would not read as one word.
std::string text(std::string_view value) {
  std::string cut(value.substr(0, core::utf8_prefix_bytes(value, kMaxValueChars)));
  if (cut.size() < value.size()) cut += "...";
  bool plain = !cut.empty();
  for (const char c : cut) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= ' ' || byte == 0x7f || c == '"' || c == '=' || c == '\\') plain = false;
  }
  if (plain) return cut;
  std::string out = "\"";
  for (const char c : cut) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < ' ' || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

template <class T>
std::string scalar(const T& x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return text(x);
  } else if constexpr (std::is_floating_point_v<T>) {
    return number(x);
  } else {
    return std::to_string(x);
  }
}

std::string value(const Owned& v) {
  return opentelemetry::nostd::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<std::uint8_t>>) {
          return "[" + std::to_string(x.size()) + " bytes]";
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          std::string out = "[";
          for (std::size_t i = 0; i < x.size(); ++i) out += (i ? "," : "") + scalar<bool>(x[i]);
          return out + "]";
        } else if constexpr (IsVector<T>::value) {
          std::string out = "[";
          for (std::size_t i = 0; i < x.size(); ++i) out += (i ? "," : "") + scalar(x[i]);
          out += "]";
          return out;
        } else {
          return scalar(x);
        }
      },
      v);
}

// " key=value ..." of at most kMaxAttributes attributes by key, then " +N" for the others.
template <class Map>
std::string attributes(const Map& map) {
  std::map<std::string_view, const Owned*> sorted;
  for (const auto& [key, v] : map) sorted.emplace(key, &v);
  std::string out;
  std::size_t shown = 0;
  for (const auto& [key, v] : sorted) {
    if (shown == kMaxAttributes) {
      out += " +" + std::to_string(sorted.size() - shown);
      break;
    }
    out += ' ';
    out += text(key);
    out += '=';
    out += value(*v);
    ++shown;
  }
  return out;
}

std::string number(const metrics::ValueType& v) {
  return opentelemetry::nostd::visit(
      [](auto x) -> std::string {
        if constexpr (std::is_floating_point_v<decltype(x)>) {
          return number(static_cast<double>(x));
        } else {
          return std::to_string(x);
        }
      },
      v);
}

// A unit worth printing after a number: not "1" and not an annotation such as "{token}".
std::string unit_suffix(const std::string& unit) {
  if (unit.empty() || unit == "1" || unit.front() == '{') return "";
  return text(unit);
}

// "name=value" for one metric: its value when it has one point, count and sum for a histogram,
// the number of series otherwise; empty when it has no point.
std::string metric_summary(const metrics::MetricData& metric) {
  std::vector<const metrics::PointDataAttributes*> points;
  for (const auto& point : metric.point_data_attr_) {
    if (!opentelemetry::nostd::holds_alternative<metrics::DropPointData>(point.point_data)) {
      points.push_back(&point);
    }
  }
  if (points.empty()) return "";
  std::string out = text(metric.instrument_descriptor.name_) + "=";
  if (points.size() > 1) return out + "[" + std::to_string(points.size()) + " series]";
  const std::string unit = unit_suffix(metric.instrument_descriptor.unit_);
  opentelemetry::nostd::visit(
      [&](const auto& data) {
        using T = std::decay_t<decltype(data)>;
        if constexpr (std::is_same_v<T, metrics::SumPointData> ||
                      std::is_same_v<T, metrics::LastValuePointData>) {
          out += number(data.value_) + unit;
        } else if constexpr (std::is_same_v<T, metrics::HistogramPointData>) {
          out += "count:" + std::to_string(data.count_) + ",sum:" + number(data.sum_) + unit;
        } else {
          out += "?";
        }
      },
      points.front()->point_data);
  return out;
}

}  // namespace

std::string text_duration(std::chrono::nanoseconds duration) {
  const auto nanos = duration.count();
  if (nanos < 1000) return std::to_string(nanos < 0 ? 0 : nanos) + " ns";
  struct Scale {
    double divisor;
    const char* unit;
  };
  const Scale scale = nanos < 1'000'000       ? Scale{1e3, "us"}
                      : nanos < 1'000'000'000 ? Scale{1e6, "ms"}
                                              : Scale{1e9, "s"};
  const double scaled = static_cast<double>(nanos) / scale.divisor;
  // Rounding can carry a value to the next thousand ("1000 us"): shown as is, still 3 digits.
  const int decimals = scaled < 9.995 ? 2 : scaled < 99.95 ? 1 : 0;
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.*f %s", decimals, scaled, scale.unit);
  return buffer;
}

std::string text_resource_line(const opentelemetry::sdk::resource::Resource& resource) {
  std::map<std::string_view, const Owned*> sorted;
  for (const auto& [key, v] : resource.GetAttributes()) sorted.emplace(key, &v);
  // Every attribute: the resource is written once, and it is what identifies the process.
  std::string out(kLinePrefix);
  out += "resource";
  for (const auto& [key, v] : sorted) {
    out += ' ';
    out += text(key);
    out += '=';
    out += value(*v);
  }
  return out;
}

std::string text_line(const sdktrace::SpanData& span, std::uint8_t depth) {
  std::string out(kLinePrefix);
  out.append(std::size_t{2} * depth, ' ');
  out += text(view(span.GetName()));
  out += ' ';
  out += text_duration(span.GetDuration());
  out += attributes(span.GetAttributes());
  if (span.GetStatus() == opentelemetry::trace::StatusCode::kError) {
    out += " ERROR";
    if (!span.GetDescription().empty()) out += ": " + text(view(span.GetDescription()));
  }
  return out;
}

std::string text_line(const metrics::ResourceMetrics& data) {
  std::string out(kLinePrefix);
  out += "metrics";
  std::size_t shown = 0;
  for (const auto& scope_metrics : data.scope_metric_data_) {
    for (const auto& metric : scope_metrics.metric_data_) {
      const std::string summary = metric_summary(metric);
      if (summary.empty()) continue;
      out += ' ';
      out += summary;
      ++shown;
    }
  }
  if (shown == 0) out += " (no data points)";
  return out;
}

std::string text_line(const LogRecordData& record) {
  const auto severity = static_cast<std::size_t>(record.severity());
  std::string out(kLinePrefix);
  out += "log ";
  out += severity < 25 ? view(opentelemetry::logs::SeverityNumToText[severity]) : "INVALID";
  if (record.body() != nullptr) {
    out += ' ';
    out += value(*record.body());
  }
  out += attributes(record.attributes());
  return out;
}

}  // namespace lens::exporters
