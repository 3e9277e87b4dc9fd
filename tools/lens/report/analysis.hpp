// Everything the report shows, computed once from the run's data: run identity, steps and phase
// split per rank, the phase breakdown, step-duration percentiles, the per-rank medians and the
// stall attribution.
// Value type; the writers only read it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "report/completeness.hpp"
#include "report/metric_series.hpp"
#include "report/run_model.hpp"
#include "report/stall_attribution.hpp"
#include "report/steps.hpp"
#include "report/stragglers.hpp"

namespace lens::report {

struct RunInfo {
  std::string run_id;        // nemo.run.id ("" when absent; joined with ", " when ranks differ)
  std::string service_name;  // service.name, the same way
  std::optional<std::int64_t> world_size;  // dl.world_size, the largest seen
  std::vector<int> missing_ranks;          // ranks below the world size with no telemetry
};

struct RunAnalysis {
  RunData data;
  RunInfo info;
  std::map<int, RankSteps> steps;
  // Mean milliseconds per step and phase; checkpoint and evaluation time outside the steps is
  // spread over the rank's steps.
  std::map<int, PhaseTimes> breakdown_ms;
  std::set<std::int64_t> iterations;  // every iteration seen on any rank
  StragglerResult stragglers;         // per-rank medians and the threshold rule (the medians table)
  StallResult stalls;                 // who the others wait for: the summary and summary.json
  Completeness completeness;          // received against the ranks' own export counts
  std::vector<PercentilePoint> step_percentiles;  // from kStepDurationMetric
  std::int64_t t0_ns = 0;  // earliest span start or metric time: the report's time origin
  std::uint64_t span_count = 0;
  std::uint64_t metric_points = 0;
  std::uint64_t log_records = 0;
};

RunAnalysis analyze(RunData data, const StragglerOptions& options,
                    const StallOptions& stall_options = {});

}  // namespace lens::report
