// Console JSON-lines metric exporter (see console_metric_exporter.hpp).
#include "export/console_metric_exporter.hpp"

#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>

#include <atomic>
#include <mutex>
#include <type_traits>

#include "export/console_json.hpp"
#include "export/metric_temporality.hpp"

namespace lens::exporters {
namespace {

namespace metrics = opentelemetry::sdk::metrics;
using console_json::Json;
using opentelemetry::sdk::common::ExportResult;

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
  out["attributes"] = console_json::attributes(point.attributes);
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

class ConsoleMetricExporter final : public metrics::PushMetricExporter {
 public:
  ConsoleMetricExporter(TemporalityPreference temporality, std::FILE* out)
      : temporality_(temporality), out_(out) {}

  ExportResult Export(const metrics::ResourceMetrics& data) noexcept override {
    if (shut_down_.load(std::memory_order_relaxed)) return ExportResult::kFailure;
    std::string line;
    try {
      line = console_metrics_line(data);
      line += '\n';
    } catch (...) {
      return ExportResult::kFailure;  // invalid UTF-8 in a name or attribute
    }
    std::lock_guard<std::mutex> lock(mutex_);
    const bool written = std::fwrite(line.data(), 1, line.size(), out_) == line.size();
    std::fflush(out_);
    return written ? ExportResult::kSuccess : ExportResult::kFailure;
  }

  metrics::AggregationTemporality GetAggregationTemporality(
      metrics::InstrumentType type) const noexcept override {
    return temporality_for(temporality_, type);
  }

  bool ForceFlush(std::chrono::microseconds) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::fflush(out_) == 0;
  }

  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_relaxed);
    return true;
  }

 private:
  const TemporalityPreference temporality_;
  std::FILE* out_;
  std::mutex mutex_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace

std::string console_metrics_line(const metrics::ResourceMetrics& data) {
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
                   {"attributes", console_json::attributes(scope_metrics.scope_->GetAttributes())}};
    }
    scopes.push_back(
        Json{{"scope", std::move(scope)},
             {"metrics", std::move(metrics_json)},
             {"schema_url", scope_metrics.scope_ != nullptr ? scope_metrics.scope_->GetSchemaURL()
                                                            : std::string()}});
  }
  Json resource = data.resource_ != nullptr
                      ? console_json::resource(*data.resource_)
                      : Json{{"attributes", Json::object()}, {"schema_url", ""}};
  const std::string schema = data.resource_ != nullptr ? data.resource_->GetSchemaURL() : "";
  Json line;
  line["resource_metrics"] = Json::array({Json{{"resource", std::move(resource)},
                                               {"scope_metrics", std::move(scopes)},
                                               {"schema_url", schema}}});
  // Invalid UTF-8 in a value becomes U+FFFD rather than an exception that would lose the line.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::unique_ptr<metrics::PushMetricExporter> make_console_metric_exporter(
    TemporalityPreference temporality, std::FILE* out) {
  return std::make_unique<ConsoleMetricExporter>(temporality, out);
}

}  // namespace lens::exporters
