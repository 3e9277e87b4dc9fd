// OpenTelemetry metric data to Prometheus metric families (see prometheus_mapping.hpp).
#include "export/prometheus_mapping.hpp"

#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/resource/resource.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <utility>

namespace lens::exporters {
namespace {

namespace sdkmetrics = opentelemetry::sdk::metrics;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

bool is_name_char(char c, bool allow_colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         (allow_colon && c == ':');
}

// Invalid characters as '_', runs of '_' as one, '_' before a leading digit.
std::string sanitize(std::string_view text, bool allow_colon) {
  std::string out;
  out.reserve(text.size() + 1);
  for (const char c : text) {
    const char kept = is_name_char(c, allow_colon) ? c : '_';
    if (kept == '_' && !out.empty() && out.back() == '_') continue;
    out += kept;
  }
  if (out.empty() || (out.front() >= '0' && out.front() <= '9')) out.insert(out.begin(), '_');
  return out;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// UCUM units in Prometheus words; `per` gives the singular used after "per_".
std::string unit_word(std::string_view unit, bool per) {
  static const std::map<std::string_view, std::pair<std::string_view, std::string_view>> kWords = {
      {"d", {"days", "day"}},
      {"h", {"hours", "hour"}},
      {"min", {"minutes", "minute"}},
      {"s", {"seconds", "second"}},
      {"ms", {"milliseconds", "millisecond"}},
      {"us", {"microseconds", "microsecond"}},
      {"ns", {"nanoseconds", "nanosecond"}},
      {"By", {"bytes", "byte"}},
      {"KiBy", {"kibibytes", "kibibyte"}},
      {"MiBy", {"mebibytes", "mebibyte"}},
      {"GiBy", {"gibibytes", "gibibyte"}},
      {"TiBy", {"tebibytes", "tebibyte"}},
      {"KBy", {"kilobytes", "kilobyte"}},
      {"MBy", {"megabytes", "megabyte"}},
      {"GBy", {"gigabytes", "gigabyte"}},
      {"TBy", {"terabytes", "terabyte"}},
      {"m", {"meters", "meter"}},
      {"V", {"volts", "volt"}},
      {"A", {"amperes", "ampere"}},
      {"J", {"joules", "joule"}},
      {"W", {"watts", "watt"}},
      {"g", {"grams", "gram"}},
      {"Cel", {"celsius", "celsius"}},
      {"Hz", {"hertz", "hertz"}},
      {"%", {"percent", "percent"}},
  };
  const auto it = kWords.find(unit);
  if (it == kWords.end()) return std::string(unit);
  return std::string(per ? it->second.second : it->second.first);
}

// The text of an attribute value: strings as they are, anything else as JSON ("true", "42",
// "[1,2]"), as the attribute specification writes non-string values.
std::string label_value(const opentelemetry::sdk::common::OwnedAttributeValue& value) {
  return opentelemetry::nostd::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return x;
        } else if constexpr (std::is_same_v<T, std::vector<std::uint8_t>>) {
          return nlohmann::json(std::vector<unsigned>(x.begin(), x.end())).dump();
        } else {
          return nlohmann::json(x).dump();
        }
      },
      value);
}

// Attributes as labels sorted by name; keys that sanitize to one name join their values with
// ';' in the order of the original keys.
template <class Map>
std::vector<ClientMetric::Label> labels_of(const Map& attributes) {
  std::map<std::string, std::map<std::string, std::string>> by_label;
  for (const auto& [key, value] : attributes) {
    by_label[prometheus_label_name(key)].emplace(key, label_value(value));
  }
  std::vector<ClientMetric::Label> labels;
  labels.reserve(by_label.size());
  for (const auto& [name, values] : by_label) {
    std::string joined;
    for (const auto& [key, value] : values) {
      if (!joined.empty()) joined += ';';
      joined += value;
    }
    labels.push_back({name, std::move(joined)});
  }
  return labels;
}

double as_double(const sdkmetrics::ValueType& value) {
  return opentelemetry::nostd::visit([](auto x) { return static_cast<double>(x); }, value);
}

// The family type and value of one point; false for a point Prometheus cannot show.
bool fill_point(const sdkmetrics::PointType& point, bool cumulative, MetricType& type,
                ClientMetric& metric) {
  if (const auto* sum = opentelemetry::nostd::get_if<sdkmetrics::SumPointData>(&point)) {
    if (sum->is_monotonic_) {
      if (!cumulative) return false;
      type = MetricType::Counter;
      metric.counter.value = as_double(sum->value_);
    } else {
      // A delta non-monotonic sum is a change, not a level: it has no gauge reading.
      if (!cumulative) return false;
      type = MetricType::Gauge;
      metric.gauge.value = as_double(sum->value_);
    }
    return true;
  }
  if (const auto* last = opentelemetry::nostd::get_if<sdkmetrics::LastValuePointData>(&point)) {
    type = MetricType::Gauge;
    metric.gauge.value = as_double(last->value_);
    return true;
  }
  if (const auto* histogram =
          opentelemetry::nostd::get_if<sdkmetrics::HistogramPointData>(&point)) {
    if (!cumulative) return false;
    type = MetricType::Histogram;
    metric.histogram.sample_count = histogram->count_;
    metric.histogram.sample_sum = as_double(histogram->sum_);
    std::uint64_t cumulative_count = 0;
    const std::vector<double>& bounds = histogram->boundaries_;
    for (std::size_t i = 0; i < histogram->counts_.size(); ++i) {
      cumulative_count += histogram->counts_[i];
      const double bound = i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity();
      metric.histogram.bucket.push_back({cumulative_count, bound});
    }
    if (histogram->counts_.size() <= bounds.size()) {
      metric.histogram.bucket.push_back(
          {histogram->count_, std::numeric_limits<double>::infinity()});
    }
    return true;
  }
  return false;  // DropPointData
}

}  // namespace

std::string prometheus_unit(std::string_view otel_unit) {
  // Annotations in braces ("{token}") are dropped: a count of tokens has no unit.
  std::string plain;
  int depth = 0;
  for (const char c : otel_unit) {
    if (c == '{') {
      ++depth;
    } else if (c == '}') {
      depth = std::max(0, depth - 1);
    } else if (depth == 0 && c != ' ') {
      plain += c;
    }
  }
  if (plain.empty()) return "";
  if (plain == "1") return "ratio";
  std::string words;
  const auto slash = plain.find('/');
  if (slash == std::string::npos) {
    words = unit_word(plain, false);
  } else {
    const std::string numerator = plain.substr(0, slash);
    const std::string denominator = plain.substr(slash + 1);
    if (!numerator.empty() && numerator != "1") words = unit_word(numerator, false) + "_";
    words += "per_" + unit_word(denominator, true);
  }
  std::string out = sanitize(words, /*allow_colon=*/false);
  while (!out.empty() && out.front() == '_') out.erase(out.begin());
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

std::string prometheus_metric_name(std::string_view otel_name, std::string_view otel_unit,
                                   bool monotonic_sum) {
  std::string name = sanitize(otel_name, /*allow_colon=*/true);
  if (monotonic_sum && ends_with(name, "_total")) name.resize(name.size() - 6);
  const std::string unit = prometheus_unit(otel_unit);
  if (!unit.empty() && name != unit && !ends_with(name, "_" + unit)) {
    name += "_" + unit;
  }
  if (monotonic_sum) name += "_total";
  return name;
}

std::string prometheus_label_name(std::string_view key) {
  return sanitize(key, /*allow_colon=*/false);
}

std::vector<MetricFamily> to_metric_families(const sdkmetrics::ResourceMetrics& data) {
  std::map<std::string, MetricFamily> families;
  for (const sdkmetrics::ScopeMetrics& scope : data.scope_metric_data_) {
    std::vector<ClientMetric::Label> scope_labels;
    if (scope.scope_ != nullptr) {
      scope_labels.push_back({"otel_scope_name", scope.scope_->GetName()});
      if (!scope.scope_->GetVersion().empty()) {
        scope_labels.push_back({"otel_scope_version", scope.scope_->GetVersion()});
      }
    }
    for (const sdkmetrics::MetricData& metric : scope.metric_data_) {
      const bool cumulative =
          metric.aggregation_temporality == sdkmetrics::AggregationTemporality::kCumulative;
      const sdkmetrics::InstrumentDescriptor& instrument = metric.instrument_descriptor;
      for (const sdkmetrics::PointDataAttributes& point : metric.point_data_attr_) {
        MetricType type = MetricType::Untyped;
        ClientMetric sample;
        if (!fill_point(point.point_data, cumulative, type, sample)) continue;
        sample.label = labels_of(point.attributes);
        sample.label.insert(sample.label.end(), scope_labels.begin(), scope_labels.end());
        const std::string name =
            prometheus_metric_name(instrument.name_, instrument.unit_, type == MetricType::Counter);
        auto [it, created] = families.try_emplace(name);
        MetricFamily& family = it->second;
        if (created) {
          family.name = name;
          family.help = instrument.description_;
          family.type = type;
        } else if (family.type != type) {
          continue;  // one TYPE per name: the later metric is dropped
        }
        family.metric.push_back(std::move(sample));
      }
    }
  }
  std::vector<MetricFamily> out;
  if (data.resource_ != nullptr && !data.resource_->GetAttributes().empty()) {
    MetricFamily target;
    target.name = "target_info";
    target.help = "Target metadata";
    target.type = MetricType::Gauge;
    ClientMetric info;
    info.label = labels_of(data.resource_->GetAttributes());
    info.gauge.value = 1;
    target.metric.push_back(std::move(info));
    out.push_back(std::move(target));
  }
  for (auto& [name, family] : families) {
    if (name == "target_info") continue;  // the resource's alone
    std::stable_sort(
        family.metric.begin(), family.metric.end(),
        [](const ClientMetric& a, const ClientMetric& b) { return a.label < b.label; });
    out.push_back(std::move(family));
  }
  return out;
}

}  // namespace lens::exporters
