// The telemetry of one training run as `lens report` reads it: spans, training metric points and
// log counts grouped by rank (the resource attribute dl.rank, or rank). Plain value types filled
// by RunBuilder and read by the analysis and the writers; no shared state.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/small_string.hpp"

namespace lens::report {

// Attribute key and value; the value is a JSON scalar, array or object (OTLP kvlist).
using AttributeList = std::vector<std::pair<std::string, nlohmann::json>>;

// Millions of these in a large run: the ids and the name keep their characters inline.
struct SpanRecord {
  TraceIdText trace_id;      // lowercase hex
  ShortText span_id;         // lowercase hex
  ShortText parent_span_id;  // lowercase hex; empty for a trace root
  ShortText name;
  std::int64_t start_ns = 0;  // Unix nanoseconds
  std::int64_t end_ns = 0;
  bool error = false;  // status code ERROR
  AttributeList attributes;
};

struct GaugePoint {
  std::int64_t time_ns = 0;
  double value = 0.0;
};

// One histogram data point as exported (cumulative or delta); see metric_series.hpp.
struct HistogramPoint {
  std::string stream;  // the point's attributes, serialized: separates streams of one rank
  bool cumulative = false;
  std::int64_t start_ns = 0;
  std::int64_t time_ns = 0;
  std::uint64_t count = 0;
  double sum = 0.0;
  std::vector<double> bounds;
  std::vector<std::uint64_t> bucket_counts;
};

// A rank's own account of one signal: the last values of its lens.exporter.* self-metrics
// (cumulative counters; the newest point wins).
struct ReportedTotals {
  std::uint64_t exported = 0;
  std::uint64_t failed = 0;
  std::uint64_t dropped = 0;
  std::int64_t time_ns = -1;  // the newest point's time; -1 until one is read
};

struct RankData {
  int rank = 0;
  AttributeList resource;  // every key seen on this rank's resources, first value kept
  std::vector<SpanRecord> spans;
  std::map<std::string, std::vector<GaugePoint>> gauges;          // metric name -> points
  std::map<std::string, std::vector<HistogramPoint>> histograms;  // metric name -> points
  std::uint64_t metric_points = 0;
  std::uint64_t log_records = 0;
  std::uint64_t error_logs = 0;  // severity ERROR or worse
  // signal ("traces", "metrics", "logs") -> what the rank says it exported, failed and dropped.
  std::map<std::string, ReportedTotals> reported;
};

struct RunData {
  std::map<int, RankData> ranks;
  // Telemetry whose resource names no rank: counted, not analysed.
  std::uint64_t spans_without_rank = 0;
  std::uint64_t points_without_rank = 0;
  std::uint64_t logs_without_rank = 0;
};

// The value of `key` in `attributes`, or nullptr.
const nlohmann::json* find_attribute(const AttributeList& attributes, const std::string& key);

// An integer attribute given as an int, an integral double or a decimal string.
std::optional<std::int64_t> int_attribute(const AttributeList& attributes, const std::string& key);

// A scalar attribute as display text ("" when absent).
std::string text_attribute(const AttributeList& attributes, const std::string& key);

}  // namespace lens::report
