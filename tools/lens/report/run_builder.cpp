// RunData from OTLP requests (see run_builder.hpp).
#include "report/run_builder.hpp"

#include <algorithm>
#include <limits>
#include <string_view>

#include "report/otlp_values.hpp"

namespace lens::report {
namespace {

namespace metrics_pb = opentelemetry::proto::metrics::v1;

constexpr int kSeverityError = 17;  // SEVERITY_NUMBER_ERROR

std::int64_t as_signed(std::uint64_t nanos) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  return static_cast<std::int64_t>(nanos > kMax ? kMax : nanos);
}

double number_value(const metrics_pb::NumberDataPoint& point) {
  return point.value_case() == metrics_pb::NumberDataPoint::kAsInt
             ? static_cast<double>(point.as_int())
             : point.as_double();
}

// The rank's own lens.exporter.{exported,failed,dropped} counters, per signal attribute.
void record_reported_totals(const metrics_pb::Metric& metric, RankData& rank) {
  constexpr std::string_view kPrefix = "lens.exporter.";
  const std::string& name = metric.name();
  if (name.rfind(kPrefix, 0) != 0) return;
  const std::string_view what = std::string_view(name).substr(kPrefix.size());
  if (what != "exported" && what != "failed" && what != "dropped") return;
  for (const auto& point : metric.sum().data_points()) {
    std::string signal;
    for (const auto& attribute : point.attributes()) {
      if (attribute.key() == "signal") signal = attribute.value().string_value();
    }
    if (signal.empty()) continue;
    ReportedTotals& totals = rank.reported[signal];
    const std::int64_t time = as_signed(point.time_unix_nano());
    const auto value = static_cast<std::uint64_t>(std::max(0.0, number_value(point)));
    // The counters of one collection share its time; a newer collection replaces all three.
    if (time < totals.time_ns) continue;
    if (time > totals.time_ns) totals = ReportedTotals{0, 0, 0, time};
    (what == "exported" ? totals.exported : what == "failed" ? totals.failed : totals.dropped) =
        value;
  }
}

// The id as lowercase hex, written straight into the record's inline string: no temporary
// std::string per id (three per span).
template <class Text>
void assign_hex(Text& out, const std::string& bytes) {
  constexpr std::size_t kMaxInline = 32;
  if (bytes.size() > kMaxInline) {
    out = to_hex(bytes);
    return;
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  char buffer[2 * kMaxInline];
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto byte = static_cast<unsigned char>(bytes[i]);
    buffer[2 * i] = kDigits[byte >> 4];
    buffer[2 * i + 1] = kDigits[byte & 0x0f];
  }
  out = std::string_view(buffer, 2 * bytes.size());
}

}  // namespace

std::optional<int> rank_of(const AttributeList& resource) {
  for (const char* key : {"dl.rank", "rank"}) {
    const std::optional<std::int64_t> value = int_attribute(resource, key);
    if (value && *value >= 0 && *value <= std::numeric_limits<int>::max()) {
      return static_cast<int>(*value);
    }
  }
  return std::nullopt;
}

RunData RunBuilder::take() {
  for (auto& [rank, data] : data_.ranks) data.spans.shrink_to_fit();
  return std::move(data_);
}

bool RunBuilder::wanted(const opentelemetry::proto::resource::v1::Resource& resource) {
  std::string run_id;
  for (const auto& attribute : resource.attributes()) {
    if (attribute.key() == "nemo.run.id" && attribute.value().has_string_value()) {
      run_id = attribute.value().string_value();
    } else if (attribute.key() == "nemo.lens.run_uuid" && attribute.value().has_string_value() &&
               run_uuids_.size() < 2) {
      run_uuids_.insert(attribute.value().string_value());
    }
  }
  ++run_ids_[run_id];
  return !run_id_filter_ || *run_id_filter_ == run_id;
}

RankData* RunBuilder::rank_for(const opentelemetry::proto::resource::v1::Resource& resource) {
  AttributeList attributes = to_attributes(resource.attributes());
  const std::optional<int> rank = rank_of(attributes);
  if (!rank) return nullptr;
  RankData& data = data_.ranks[*rank];
  data.rank = *rank;
  for (auto& [key, value] : attributes) {
    if (find_attribute(data.resource, key) == nullptr) {
      data.resource.emplace_back(key, std::move(value));
    }
  }
  return &data;
}

void RunBuilder::on_traces(
    const opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest& request) {
  for (const auto& resource_spans : request.resource_spans()) {
    if (!wanted(resource_spans.resource())) continue;
    RankData* rank = rank_for(resource_spans.resource());
    for (const auto& scope_spans : resource_spans.scope_spans()) {
      if (rank == nullptr) {
        data_.spans_without_rank += static_cast<std::uint64_t>(scope_spans.spans_size());
        continue;
      }
      for (const auto& span : scope_spans.spans()) {
        SpanRecord record;
        assign_hex(record.trace_id, span.trace_id());
        assign_hex(record.span_id, span.span_id());
        assign_hex(record.parent_span_id, span.parent_span_id());
        record.name = span.name();
        record.start_ns = as_signed(span.start_time_unix_nano());
        record.end_ns = std::max(record.start_ns, as_signed(span.end_time_unix_nano()));
        record.error =
            span.status().code() == opentelemetry::proto::trace::v1::Status::STATUS_CODE_ERROR;
        record.attributes = to_attributes(span.attributes());
        rank->spans.push_back(std::move(record));
      }
    }
  }
}

void RunBuilder::on_metrics(
    const opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest& request) {
  for (const auto& resource_metrics : request.resource_metrics()) {
    if (!wanted(resource_metrics.resource())) continue;
    RankData* rank = rank_for(resource_metrics.resource());
    for (const auto& scope_metrics : resource_metrics.scope_metrics()) {
      for (const auto& metric : scope_metrics.metrics()) {
        std::uint64_t points = 0;
        if (metric.has_gauge()) {
          points = static_cast<std::uint64_t>(metric.gauge().data_points_size());
          if (rank != nullptr) {
            auto& series = rank->gauges[metric.name()];
            for (const auto& point : metric.gauge().data_points()) {
              series.push_back({as_signed(point.time_unix_nano()), number_value(point)});
            }
          }
        } else if (metric.has_histogram()) {
          points = static_cast<std::uint64_t>(metric.histogram().data_points_size());
          const bool cumulative = metric.histogram().aggregation_temporality() ==
                                  metrics_pb::AGGREGATION_TEMPORALITY_CUMULATIVE;
          if (rank != nullptr) {
            auto& series = rank->histograms[metric.name()];
            for (const auto& point : metric.histogram().data_points()) {
              HistogramPoint out;
              out.stream = nlohmann::json(to_attributes(point.attributes())).dump();
              out.cumulative = cumulative;
              out.start_ns = as_signed(point.start_time_unix_nano());
              out.time_ns = as_signed(point.time_unix_nano());
              out.count = point.count();
              out.sum = point.has_sum() ? point.sum() : 0.0;
              out.bounds.assign(point.explicit_bounds().begin(), point.explicit_bounds().end());
              out.bucket_counts.assign(point.bucket_counts().begin(), point.bucket_counts().end());
              series.push_back(std::move(out));
            }
          }
        } else if (metric.has_sum()) {
          points = static_cast<std::uint64_t>(metric.sum().data_points_size());
          if (rank != nullptr) record_reported_totals(metric, *rank);
        }
        if (rank != nullptr) {
          rank->metric_points += points;
        } else {
          data_.points_without_rank += points;
        }
      }
    }
  }
}

void RunBuilder::on_logs(
    const opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest& request) {
  for (const auto& resource_logs : request.resource_logs()) {
    if (!wanted(resource_logs.resource())) continue;
    RankData* rank = rank_for(resource_logs.resource());
    for (const auto& scope_logs : resource_logs.scope_logs()) {
      if (rank == nullptr) {
        data_.logs_without_rank += static_cast<std::uint64_t>(scope_logs.log_records_size());
        continue;
      }
      for (const auto& record : scope_logs.log_records()) {
        ++rank->log_records;
        if (record.severity_number() >= kSeverityError) ++rank->error_logs;
      }
    }
  }
}

}  // namespace lens::report
