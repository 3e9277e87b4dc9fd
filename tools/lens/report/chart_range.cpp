// The charts' range without outliers (see chart_range.hpp).
#include "report/chart_range.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace lens::report {
namespace {

using Wide = __int128;

std::int64_t clamp64(Wide value) {
  return static_cast<std::int64_t>(std::clamp<Wide>(value, std::numeric_limits<std::int64_t>::min(),
                                                    std::numeric_limits<std::int64_t>::max()));
}

// The fences around the quartiles of `values` (reordered); the whole range when empty.
std::pair<std::int64_t, std::int64_t> fences(std::vector<std::int64_t>& values,
                                             std::int64_t floor) {
  if (values.empty()) {
    return {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
  }
  const std::size_t lower = (values.size() - 1) / 4;
  const std::size_t upper = (values.size() - 1) * 3 / 4;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(lower),
                   values.end());
  const std::int64_t q1 = values[lower];
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(upper),
                   values.end());
  const std::int64_t q3 = values[upper];
  const Wide reach = std::max<Wide>((Wide{q3} - q1) * kOutlierFences, floor);
  return {clamp64(Wide{q1} - reach), clamp64(Wide{q3} + reach)};
}

// How far `value` lies outside [first, last].
Wide distance(std::int64_t value, std::int64_t first, std::int64_t last) {
  return value < first ? Wide{first} - value : Wide{value} - last;
}

}  // namespace

ChartRange chart_range(const RunAnalysis& analysis) {
  ChartRange range;
  std::vector<std::int64_t> values;
  for (const auto& [rank, rank_steps] : analysis.steps) {
    for (const Step& step : rank_steps.steps) {
      if (step.iteration) values.push_back(*step.iteration);
    }
  }
  std::tie(range.first_iteration, range.last_iteration) = fences(values, kIterationFloor);
  range.shown_first_iteration = std::numeric_limits<std::int64_t>::max();
  range.shown_last_iteration = std::numeric_limits<std::int64_t>::min();
  for (const auto& [rank, rank_steps] : analysis.steps) {
    for (const Step& step : rank_steps.steps) {
      if (!step.iteration) continue;
      if (range.keeps_iteration(*step.iteration)) {
        range.shown_first_iteration = std::min(range.shown_first_iteration, *step.iteration);
        range.shown_last_iteration = std::max(range.shown_last_iteration, *step.iteration);
        continue;
      }
      if (range.outlying_steps++ == 0 ||
          distance(*step.iteration, range.first_iteration, range.last_iteration) >
              distance(range.outlying_iteration, range.first_iteration, range.last_iteration)) {
        range.outlying_iteration = *step.iteration;
      }
    }
  }

  if (range.shown_first_iteration > range.shown_last_iteration) {
    range.shown_first_iteration = range.shown_last_iteration = 0;
  }

  values.clear();
  for (const auto& [rank, data] : analysis.data.ranks) {
    for (const SpanRecord& span : data.spans) values.push_back(span.start_ns);
    for (const auto& [name, points] : data.gauges) {
      for (const GaugePoint& point : points) values.push_back(point.time_ns);
    }
    for (const auto& [name, points] : data.histograms) {
      for (const HistogramPoint& point : points) values.push_back(point.time_ns);
    }
  }
  std::tie(range.first_ns, range.last_ns) = fences(values, kTimeFloorNs);
  std::int64_t start = std::numeric_limits<std::int64_t>::max();
  std::int64_t end = std::numeric_limits<std::int64_t>::min();
  const auto see = [&](std::int64_t ns, bool inside) {
    if (inside) {
      start = std::min(start, ns);
      end = std::max(end, ns);
      return;
    }
    if (range.outlying_times++ == 0 ||
        distance(ns, range.first_ns, range.last_ns) >
            distance(range.outlying_ns, range.first_ns, range.last_ns)) {
      range.outlying_ns = ns;
    }
  };
  for (const auto& [rank, data] : analysis.data.ranks) {
    for (const SpanRecord& span : data.spans) {
      if (range.keeps_span(span.start_ns, span.end_ns)) {
        see(span.start_ns, true);
        see(span.end_ns, true);
      } else {
        see(range.keeps_time(span.start_ns) ? span.end_ns : span.start_ns, false);
      }
    }
    for (const auto& [name, points] : data.gauges) {
      for (const GaugePoint& point : points) see(point.time_ns, range.keeps_time(point.time_ns));
    }
    for (const auto& [name, points] : data.histograms) {
      for (const HistogramPoint& point : points) {
        see(point.time_ns, range.keeps_time(point.time_ns));
      }
    }
  }
  range.start_ns = start <= end ? start : 0;
  range.end_ns = start <= end ? end : 0;
  return range;
}

std::vector<std::string> chart_range_warnings(const ChartRange& range) {
  std::vector<std::string> out;
  if (range.outlying_steps != 0) {
    const bool one = range.outlying_steps == 1;
    out.push_back("charts leave out " + std::to_string(range.outlying_steps) +
                  (one ? " step with an outlying iteration ("
                       : " steps with outlying iterations (furthest ") +
                  std::to_string(range.outlying_iteration) + "; the charts show iterations " +
                  std::to_string(range.shown_first_iteration) + "-" +
                  std::to_string(range.shown_last_iteration) + ")");
  }
  if (range.outlying_times != 0) {
    const bool one = range.outlying_times == 1;
    char seconds[64];
    std::snprintf(seconds, sizeof(seconds), "%.3f",
                  static_cast<double>(range.end_ns - range.start_ns) / 1e9);
    out.push_back("charts leave out " + std::to_string(range.outlying_times) +
                  (one ? " span or metric point with an outlying time ("
                       : " spans and metric points with outlying times (furthest ") +
                  std::to_string(range.outlying_ns) + " ns since the epoch; the charts show " +
                  seconds + " s from " + std::to_string(range.start_ns) + " ns)");
  }
  return out;
}

}  // namespace lens::report
