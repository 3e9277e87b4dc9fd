// The iterations and times the report page's charts span: the bulk of the run, without the
// outliers that a broken clock or counter makes (a span ending at 2^64-1 ns, a start time of 0,
// an iteration of -2^63), which would stretch every axis until the run is one pixel. Outliers
// are left out of the charts and counted in a warning; the tables and the analysis keep them.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/analysis.hpp"

namespace lens::report {

// A value is outlying when it lies beyond the quartiles of its kind by more than
// kOutlierFences x their distance, and by more than the floor: 1,000 iterations, one day.
constexpr std::int64_t kOutlierFences = 10;
constexpr std::int64_t kIterationFloor = 1000;
constexpr std::int64_t kTimeFloorNs = 86'400'000'000'000;

struct ChartRange {
  // The charted iterations and times, inclusive (the whole int64 range when nothing was seen).
  std::int64_t first_iteration = INT64_MIN;
  std::int64_t last_iteration = INT64_MAX;
  std::int64_t first_ns = INT64_MIN;
  std::int64_t last_ns = INT64_MAX;
  // The iterations charted (of steps inside the range; 0 when none).
  std::int64_t shown_first_iteration = 0;
  std::int64_t shown_last_iteration = 0;
  // The earliest and latest time charted (of spans and metric points inside the range).
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t outlying_steps = 0;     // steps whose iteration lies outside
  std::int64_t outlying_iteration = 0;  // the one furthest out
  std::uint64_t outlying_times = 0;     // spans (either end) and metric points outside
  std::int64_t outlying_ns = 0;         // the one furthest out

  bool keeps_iteration(std::int64_t iteration) const {
    return first_iteration <= iteration && iteration <= last_iteration;
  }
  bool keeps_time(std::int64_t ns) const { return first_ns <= ns && ns <= last_ns; }
  bool keeps_span(std::int64_t start_ns_, std::int64_t end_ns_) const {
    return keeps_time(start_ns_) && keeps_time(end_ns_);
  }
};

ChartRange chart_range(const RunAnalysis& analysis);

// "charts leave out 1 step with an outlying iteration (-9223372036854775808; the charts show
// iterations 1-60)", "charts leave out 1 span or metric point with an outlying time
// (9223372036854775807 ns since the epoch; the charts show 2.500 s from 1700000000000000000 ns)";
// empty when nothing was left out.
std::vector<std::string> chart_range_warnings(const ChartRange& range);

}  // namespace lens::report
