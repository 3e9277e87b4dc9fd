// The rank x iteration heatmaps that replace the timeline past a few dozen ranks: one row per
// rank, one column per iteration, a cell per step; in a synchronous run the step time is the
// same across a column, and a straggler shows as the row that waits least in communication.
// Large runs group ranks and iterations so the page stays small: a column is the mean of its
// iterations, and a row shows, per column, the rank of its group that deviates most from the
// column's median over all ranks, so a single slow rank is never averaged away. The stall
// suspects are marked on it: a node, pipeline stage or parallel group as a band over its members'
// rows, a single rank as a one-row band. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "report/analysis.hpp"

namespace lens::report {

struct HeatmapLimits {
  std::size_t max_rows = 256;
  std::size_t max_columns = 500;
  // Steps outside these iterations are left out (the outliers of chart_range.hpp).
  std::int64_t first_iteration = INT64_MIN;
  std::int64_t last_iteration = INT64_MAX;
};

// One quantity, quantized for the page: row-major cells, 0 = no step there, 1-255 = the value
// from `lo` to `hi` (the 1st and 99th percentile of the cells, values beyond clamped).
struct HeatmapLayer {
  std::string key;   // "step", "wait"
  std::string name;  // the heading on the page
  double lo = 0.0;
  double hi = 0.0;
  std::vector<std::uint8_t> cells;
};

struct Heatmap {
  std::vector<std::pair<int, int>> rows;                       // first and last rank of each row
  std::vector<std::pair<std::int64_t, std::int64_t>> columns;  // first and last iteration
  std::vector<HeatmapLayer> layers;  // step time, then the wait in communication
};

// Empty (no rows) when no step has an iteration.
Heatmap build_heatmap(const RunAnalysis& analysis, const HeatmapLimits& limits = {});

// A stall suspect marked on the heatmap: the rows that hold its ranks, as runs of consecutive
// rows (one run for a node or a pipeline stage, several for a strided data-parallel group).
struct HeatmapBand {
  std::string kind;   // rank, node, stage, group (as summary.json's suspects)
  std::string label;  // "node host1 (ranks 4-7)", "rank 3"
  std::string phase;  // the suspect's phase
  std::vector<int> ranks;
  std::vector<std::pair<std::size_t, std::size_t>> rows;  // first and last row of each run
};

// At most this many suspects are marked (the first, by rank): more bands would hide the map.
constexpr std::size_t kMaxHeatmapBands = 6;

// The bands of `suspects` (in their order) on `heatmap`'s rows; a suspect none of whose ranks has
// a row is left out.
std::vector<HeatmapBand> heatmap_bands(const Heatmap& heatmap,
                                       const std::vector<StallSuspect>& suspects,
                                       std::size_t max_bands = kMaxHeatmapBands);

// The value a cell's byte stands for (the middle of its bucket); NaN for 0.
double heatmap_value(const HeatmapLayer& layer, std::uint8_t cell);

// Standard base64 with padding, for the page's JSON.
std::string base64(const std::vector<std::uint8_t>& bytes);

}  // namespace lens::report
