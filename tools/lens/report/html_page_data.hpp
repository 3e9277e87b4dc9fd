// The data block of the run report's page: the JSON the page's script draws the timeline (or the
// heatmaps), the step and breakdown series, the percentiles, the metric charts and the curves
// from, each bounded (the timeline keeps the first items of each rank past its caps, the charts
// the iterations and times `range` keeps). Thread-safe.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

#include "report/analysis.hpp"
#include "report/chart_range.hpp"
#include "report/html_writer.hpp"

namespace lens::report {

// Bounds the page: beyond these the timeline keeps the first items of each rank and says so.
inline constexpr std::size_t kMaxTimelineSteps = 200000;
inline constexpr std::size_t kMaxTimelinePhases = 300000;

// Whether the page shows rank x iteration heatmaps instead of one timeline lane per rank.
bool uses_heatmap(const RunAnalysis& analysis, const HtmlContext& context);

// The page's data; `truncated` says whether the timeline left items out.
nlohmann::json page_data(const RunAnalysis& analysis, const HtmlContext& context,
                         const ChartRange& range, bool& truncated);

}  // namespace lens::report
