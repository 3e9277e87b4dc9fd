// Training metrics over time from the exported points: gauge series per rank, and step-duration
// percentiles from the megatron.training.step_duration_ms histogram. Cumulative points become
// deltas (the difference to the previous point of the same stream and start time; a new start
// time or a count that went down is a reset, taken as is); delta points are used as they are.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "report/run_model.hpp"

namespace lens::report {

inline constexpr const char* kStepDurationMetric = "megatron.training.step_duration_ms";

// The points of every stream as deltas, sorted by time; points with no new observations dropped.
std::vector<HistogramPoint> histogram_deltas(std::vector<HistogramPoint> points);

// The q-quantile (0..1) of a histogram's observations, interpolating linearly inside the bucket
// it falls in (the first bucket starts at 0 or below its bound, the overflow bucket ends at the
// last bound); 0 when the histogram is empty.
double histogram_quantile(const HistogramPoint& point, double q);

struct PercentilePoint {
  std::int64_t time_ns = 0;
  std::uint64_t count = 0;
  double mean = 0.0;
  double p50 = 0.0;
  double p90 = 0.0;
  double p99 = 0.0;
};

// Merges the ranks' deltas of `metric` into export rounds — consecutive points in time order
// until a rank (or a different bucket layout) comes again — and gives each round's percentiles.
std::vector<PercentilePoint> histogram_percentiles(const std::map<int, RankData>& ranks,
                                                   const std::string& metric);

}  // namespace lens::report
