// The run analysis (see analysis.hpp).
#include "report/analysis.hpp"

#include <algorithm>
#include <limits>

namespace lens::report {
namespace {

// The distinct values of a resource key over ranks, joined.
std::string joined_values(const std::map<int, RankData>& ranks, const std::string& key) {
  std::vector<std::string> values;
  for (const auto& [rank, data] : ranks) {
    const std::string value = text_attribute(data.resource, key);
    if (!value.empty() && std::find(values.begin(), values.end(), value) == values.end()) {
      values.push_back(value);
    }
  }
  std::string out;
  for (const auto& value : values) out += (out.empty() ? "" : ", ") + value;
  return out;
}

RunInfo run_info(const std::map<int, RankData>& ranks) {
  RunInfo info;
  info.run_id = joined_values(ranks, "nemo.run.id");
  info.service_name = joined_values(ranks, "service.name");
  for (const auto& [rank, data] : ranks) {
    if (auto size = int_attribute(data.resource, "dl.world_size")) {
      info.world_size = std::max(info.world_size.value_or(0), *size);
    }
  }
  // Bounded: a corrupt world size must not make a huge list.
  constexpr std::int64_t kMaxListed = 1 << 20;
  if (info.world_size && *info.world_size <= kMaxListed) {
    for (int r = 0; r < *info.world_size; ++r) {
      if (ranks.count(r) == 0) info.missing_ranks.push_back(r);
    }
  }
  return info;
}

std::int64_t earliest_time(const std::map<int, RankData>& ranks) {
  std::int64_t t0 = std::numeric_limits<std::int64_t>::max();
  for (const auto& [rank, data] : ranks) {
    for (const SpanRecord& span : data.spans) t0 = std::min(t0, span.start_ns);
  }
  for (const auto& [rank, data] : ranks) {
    for (const auto& [name, points] : data.gauges) {
      for (const GaugePoint& point : points) t0 = std::min(t0, point.time_ns);
    }
    for (const auto& [name, points] : data.histograms) {
      for (const HistogramPoint& point : points) t0 = std::min(t0, point.time_ns);
    }
  }
  return t0 == std::numeric_limits<std::int64_t>::max() ? 0 : t0;
}

}  // namespace

RunAnalysis analyze(RunData data, const StragglerOptions& options,
                    const StallOptions& stall_options) {
  RunAnalysis out;
  out.data = std::move(data);
  out.info = run_info(out.data.ranks);
  for (const auto& [rank, rank_data] : out.data.ranks) {
    out.span_count += rank_data.spans.size();
    out.metric_points += rank_data.metric_points;
    out.log_records += rank_data.log_records;
    RankSteps steps = find_steps(rank_data);
    for (const Step& step : steps.steps) {
      if (step.iteration) out.iterations.insert(*step.iteration);
    }
    if (!steps.steps.empty()) {
      PhaseTimes mean{};
      const auto count = static_cast<double>(steps.steps.size());
      for (const Step& step : steps.steps) {
        for (std::size_t p = 0; p < kPhaseCount; ++p) mean[p] += step.phase_ms[p] / count;
      }
      for (std::size_t p = 0; p < kPhaseCount; ++p) mean[p] += steps.outside_ms[p] / count;
      out.breakdown_ms[rank] = mean;
    }
    out.steps.emplace(rank, std::move(steps));
  }
  out.stragglers = detect_stragglers(out.steps, options);
  out.stalls = attribute_stalls(out.steps, rank_coordinates(out.data.ranks), stall_options);
  out.completeness = telemetry_completeness(out.data, out.info.missing_ranks);
  out.step_percentiles = histogram_percentiles(out.data.ranks, kStepDurationMetric);
  out.t0_ns = earliest_time(out.data.ranks);
  return out;
}

}  // namespace lens::report
