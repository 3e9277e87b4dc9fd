// The run report's data block (see html_page_data.hpp).
#include "report/html_page_data.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "report/heatmap.hpp"
#include "report/statistics.hpp"

namespace lens::report {
namespace {

using nlohmann::json;

// The gauges shown first, in this order, with their units; other gauges follow by name.
struct KnownMetric {
  const char* name;
  const char* unit;
};
constexpr KnownMetric kKnownMetrics[] = {
    {"megatron.training.loss", "loss"},
    {"megatron.training.tokens_per_sec", "tokens/s"},
    {"megatron.training.throughput_tflops", "TFLOP/s per GPU"},
    {"megatron.training.grad_norm", "grad norm"},
    {"megatron.training.learning_rate", "learning rate"},
    {"megatron.training.memory_allocated_gb", "GiB"},
};

double ms_since(std::int64_t nanos, std::int64_t t0) {
  return std::round(static_cast<double>(nanos - t0) / 1e3) / 1e3;  // microsecond resolution
}

double seconds_since(std::int64_t nanos, std::int64_t t0) {
  return std::round(static_cast<double>(nanos - t0) / 1e6) / 1e3;
}

// Spans of a job lane: those without a phase of their own that are neither steps nor inside one.
bool inside_step(const std::vector<std::pair<std::int64_t, std::int64_t>>& steps,
                 const SpanRecord& span) {
  auto it =
      std::upper_bound(steps.begin(), steps.end(),
                       std::make_pair(span.start_ns, std::numeric_limits<std::int64_t>::max()));
  if (it == steps.begin()) return false;
  --it;
  return it->first <= span.start_ns && span.end_ns <= it->second;
}

json timeline_json(const RunAnalysis& analysis, const ChartRange& range, bool& truncated) {
  json ranks = json::array();
  std::size_t steps_left = kMaxTimelineSteps;
  std::size_t phases_left = kMaxTimelinePhases;
  const std::int64_t t0 = range.start_ns;
  for (const auto& [rank, data] : analysis.data.ranks) {
    json lane = {{"rank", rank},
                 {"job", json::array()},
                 {"steps", json::array()},
                 {"events", json::array()},
                 {"phases", json::array()}};
    const RankSteps& rank_steps = analysis.steps.at(rank);
    std::vector<std::pair<std::int64_t, std::int64_t>> step_ranges;
    for (const Step& step : rank_steps.steps) {
      step_ranges.emplace_back(step.start_ns, step.end_ns);
      if (!range.keeps_span(step.start_ns, step.end_ns)) continue;
      if (steps_left == 0) {
        truncated = true;
        continue;
      }
      --steps_left;
      lane["steps"].push_back({ms_since(step.start_ns, t0), ms_since(step.end_ns, t0),
                               step.iteration ? json(*step.iteration) : json(nullptr)});
      for (const auto& [span_index, phase] : step.phase_spans) {
        if (phases_left == 0) {
          truncated = true;
          break;
        }
        --phases_left;
        const SpanRecord& span = data.spans[span_index];
        if (!range.keeps_span(span.start_ns, span.end_ns)) continue;
        lane["phases"].push_back(
            {ms_since(span.start_ns, t0), ms_since(span.end_ns, t0), index_of(phase), span.name});
      }
    }
    std::sort(step_ranges.begin(), step_ranges.end());
    for (const std::size_t i : rank_steps.outside_spans) {
      const SpanRecord& span = data.spans[i];
      if (!range.keeps_span(span.start_ns, span.end_ns)) continue;
      lane["events"].push_back({ms_since(span.start_ns, t0), ms_since(span.end_ns, t0), span.name,
                                index_of(phase_of(span.name).value_or(Phase::other))});
    }
    // Enclosing spans first, so the page can stack job spans by nesting level.
    std::vector<const SpanRecord*> job;
    for (const SpanRecord& span : data.spans) {
      if (span.name != kStepSpanName && !phase_of(span.name) && !inside_step(step_ranges, span) &&
          range.keeps_span(span.start_ns, span.end_ns)) {
        job.push_back(&span);
      }
    }
    std::stable_sort(job.begin(), job.end(), [](const SpanRecord* a, const SpanRecord* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
    for (const SpanRecord* span : job) {
      lane["job"].push_back({ms_since(span->start_ns, t0), ms_since(span->end_ns, t0), span->name});
    }
    ranks.push_back(std::move(lane));
  }
  return ranks;
}

// The curves against the iteration, one point per recorded step: every numeric attribute of the
// step spans (megatron.loss, megatron.grad_norm, megatron.learning_rate first), and tokens/s
// from the step time when the resource gives dl.batch_size and dl.sequence_length.
json iteration_curves_json(const RunAnalysis& analysis, const RankSelection& ranks,
                           const ChartRange& range) {
  struct Curve {
    std::string unit;
    std::map<int, std::vector<std::pair<std::int64_t, double>>> by_rank;
  };
  static const std::pair<const char*, const char*> kKnown[] = {
      {"megatron.loss", "loss"},
      {"megatron.grad_norm", "grad norm"},
      {"megatron.learning_rate", "learning rate"},
      {"tokens/s", "tokens/s"}};
  std::map<std::string, Curve> curves;
  for (const auto& [rank, rank_steps] : analysis.steps) {
    if (!ranks.keeps(rank)) continue;
    const RankData& data = analysis.data.ranks.at(rank);
    const auto batch = int_attribute(data.resource, "dl.batch_size");
    const auto sequence = int_attribute(data.resource, "dl.sequence_length");
    for (const Step& step : rank_steps.steps) {
      if (!step.iteration || !range.keeps_iteration(*step.iteration)) continue;
      for (const auto& [key, value] : data.spans[step.span].attributes) {
        if (key == "megatron.iteration" || !value.is_number()) continue;
        const double number = value.get<double>();
        if (!std::isfinite(number)) continue;
        curves[key].by_rank[rank].emplace_back(*step.iteration, number);
      }
      if (batch && sequence && step.duration_ms > 0.0) {
        const double tokens = static_cast<double>(*batch) * static_cast<double>(*sequence);
        curves["tokens/s"].by_rank[rank].emplace_back(*step.iteration,
                                                      tokens * 1000.0 / step.duration_ms);
      }
    }
  }
  std::vector<std::pair<std::string, std::string>> order;  // key, unit
  for (const auto& [key, unit] : kKnown) {
    if (curves.count(key)) order.emplace_back(key, unit);
  }
  for (const auto& [key, curve] : curves) {
    bool known = false;
    for (const auto& [known_key, unit] : kKnown) known = known || key == known_key;
    if (!known) order.emplace_back(key, "value");
  }
  json out = json::array();
  for (const auto& [key, unit] : order) {
    json series = json::array();
    for (auto& [rank, points] : curves[key].by_rank) {
      std::sort(points.begin(), points.end());
      json list = json::array();
      for (const auto& [iteration, value] : points) {
        list.push_back({iteration, std::round(value * 1e6) / 1e6});
      }
      series.push_back({{"rank", rank}, {"points", std::move(list)}});
    }
    out.push_back({{"name", key}, {"unit", unit}, {"series", std::move(series)}});
  }
  return out;
}

// Exact step-time percentiles across ranks per iteration, from the step spans.
json step_quantiles_json(const RunAnalysis& analysis, const ChartRange& range) {
  std::map<std::int64_t, std::vector<double>> by_iteration;
  for (const auto& [rank, rank_steps] : analysis.steps) {
    for (const Step& step : rank_steps.steps) {
      if (step.iteration && range.keeps_iteration(*step.iteration)) {
        by_iteration[*step.iteration].push_back(step.duration_ms);
      }
    }
  }
  json out = json::array();
  const auto rounded = [](double ms) { return std::round(ms * 1e3) / 1e3; };
  for (const auto& [iteration, durations] : by_iteration) {
    out.push_back({iteration, rounded(median(durations)), rounded(quantile(durations, 0.9)),
                   rounded(quantile(durations, 1.0))});
  }
  return out;
}

// Gauges named lens.* are the library's own telemetry, shown apart from the training's.
bool is_self_metric(const std::string& name) { return name.rfind("lens.", 0) == 0; }

json metrics_json(const RunAnalysis& analysis, const RankSelection& ranks, const ChartRange& range,
                  bool self) {
  std::vector<std::pair<std::string, std::string>> names;  // name, unit
  if (!self) {
    for (const KnownMetric& known : kKnownMetrics) names.emplace_back(known.name, known.unit);
  }
  std::set<std::string> others;
  for (const auto& [rank, data] : analysis.data.ranks) {
    for (const auto& [name, points] : data.gauges) {
      if (is_self_metric(name) == self) others.insert(name);
    }
  }
  for (const KnownMetric& known : kKnownMetrics) others.erase(known.name);
  for (const auto& name : others) names.emplace_back(name, "value");
  json out = json::array();
  for (const auto& [name, unit] : names) {
    json series = json::array();
    for (const auto& [rank, data] : analysis.data.ranks) {
      if (!ranks.keeps(rank)) continue;
      auto it = data.gauges.find(name);
      if (it == data.gauges.end() || it->second.empty()) continue;
      std::vector<GaugePoint> points = it->second;
      std::stable_sort(points.begin(), points.end(),
                       [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; });
      json list = json::array();
      for (const GaugePoint& point : points) {
        if (!range.keeps_time(point.time_ns)) continue;
        list.push_back({seconds_since(point.time_ns, range.start_ns),
                        std::isfinite(point.value) ? json(point.value) : json(nullptr)});
      }
      series.push_back({{"rank", rank}, {"points", std::move(list)}});
    }
    if (!series.empty()) out.push_back({{"name", name}, {"unit", unit}, {"series", series}});
  }
  return out;
}

// The suspects' bands over `rows` (heatmap rows, or timeline lanes of one rank each).
json bands_json(const Heatmap& rows, const std::vector<StallSuspect>& suspects) {
  json bands = json::array();
  for (const HeatmapBand& band : heatmap_bands(rows, suspects)) {
    json runs = json::array();
    for (const auto& [first, last] : band.rows) runs.push_back({first, last});
    bands.push_back({{"kind", band.kind},
                     {"label", band.label},
                     {"phase", band.phase},
                     {"ranks", rank_ranges(band.ranks)},
                     {"rows", std::move(runs)}});
  }
  return bands;
}

json heatmap_json(const Heatmap& heatmap, const std::vector<StallSuspect>& suspects) {
  json bands = bands_json(heatmap, suspects);
  json rows = json::array();
  for (const auto& [first, last] : heatmap.rows) rows.push_back({first, last});
  json columns = json::array();
  for (const auto& [first, last] : heatmap.columns) columns.push_back({first, last});
  json layers = json::array();
  for (const HeatmapLayer& layer : heatmap.layers) {
    layers.push_back({{"key", layer.key},
                      {"name", layer.name},
                      {"lo", std::round(layer.lo * 1e3) / 1e3},
                      {"hi", std::round(layer.hi * 1e3) / 1e3},
                      {"cells", base64(layer.cells)}});
  }
  return {{"rows", std::move(rows)},
          {"columns", std::move(columns)},
          {"layers", std::move(layers)},
          {"bands", std::move(bands)}};
}

}  // namespace

bool uses_heatmap(const RunAnalysis& analysis, const HtmlContext& context) {
  return analysis.data.ranks.size() > context.timeline_lanes_max;
}

json page_data(const RunAnalysis& analysis, const HtmlContext& context, const ChartRange& range,
               bool& truncated) {
  json data;
  data["phases"] = json::array();
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    data["phases"].push_back(std::string(phase_name(static_cast<Phase>(p))));
  }
  data["endMs"] = ms_since(range.end_ns, range.start_ns);
  if (uses_heatmap(analysis, context)) {
    data["ranks"] = json::array();
    HeatmapLimits limits = context.heatmap;
    limits.first_iteration = std::max(limits.first_iteration, range.first_iteration);
    limits.last_iteration = std::min(limits.last_iteration, range.last_iteration);
    data["heatmap"] = heatmap_json(build_heatmap(analysis, limits), analysis.stalls.suspects);
  } else {
    data["ranks"] = timeline_json(analysis, range, truncated);
    // The suspects' lanes, marked like the heatmaps' bands: a row per lane (rank).
    Heatmap lanes;
    for (const auto& [rank, rank_data] : analysis.data.ranks) lanes.rows.emplace_back(rank, rank);
    data["bands"] = bands_json(lanes, analysis.stalls.suspects);
  }
  data["stepSeries"] = json::array();
  data["breakdown"] = json::array();
  for (const auto& [rank, rank_steps] : analysis.steps) {
    if (!context.detail_ranks.keeps(rank)) continue;
    json points = json::array();
    std::vector<const Step*> ordered;
    for (const Step& step : rank_steps.steps) {
      if (step.iteration && range.keeps_iteration(*step.iteration)) ordered.push_back(&step);
    }
    std::sort(ordered.begin(), ordered.end(),
              [](const Step* a, const Step* b) { return *a->iteration < *b->iteration; });
    for (const Step* step : ordered) {
      points.push_back({*step->iteration, std::round(step->duration_ms * 1e3) / 1e3});
    }
    if (!points.empty()) data["stepSeries"].push_back({{"rank", rank}, {"points", points}});
    if (auto it = analysis.breakdown_ms.find(rank); it != analysis.breakdown_ms.end()) {
      json ms = json::array();
      for (const double value : it->second) ms.push_back(std::round(value * 1e3) / 1e3);
      data["breakdown"].push_back({{"rank", rank}, {"ms", ms}});
    }
  }
  data["stepPercentiles"] = json::array();
  for (const PercentilePoint& p : analysis.step_percentiles) {
    if (!range.keeps_time(p.time_ns)) continue;
    data["stepPercentiles"].push_back(
        {seconds_since(p.time_ns, range.start_ns), p.p50, p.p90, p.p99, p.mean});
  }
  data["metrics"] = metrics_json(analysis, context.detail_ranks, range, false);
  data["selfMetrics"] = metrics_json(analysis, context.detail_ranks, range, true);
  data["iterationCurves"] = iteration_curves_json(analysis, context.detail_ranks, range);
  data["stepQuantiles"] = step_quantiles_json(analysis, range);
  return data;
}

}  // namespace lens::report
