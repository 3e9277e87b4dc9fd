// Rank x iteration heatmaps (see heatmap.hpp).
#include "report/heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/statistics.hpp"

namespace lens::report {
namespace {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

// Splits `count` items into at most `max_groups` consecutive groups of equal size (the last one
// possibly smaller): the first item of each group.
std::vector<std::size_t> group_starts(std::size_t count, std::size_t max_groups) {
  const std::size_t per = std::max<std::size_t>(1, (count + max_groups - 1) / max_groups);
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < count; i += per) starts.push_back(i);
  return starts;
}

// The per-(rank, column) means of one quantity of the steps, as a ranks x columns grid.
// iteration - first, >= 0, without overflow.
std::uint64_t offset(std::int64_t iteration, std::int64_t first) {
  return static_cast<std::uint64_t>(iteration) - static_cast<std::uint64_t>(first);
}

bool charted(const Step& step, const HeatmapLimits& limits) {
  return step.iteration && limits.first_iteration <= *step.iteration &&
         *step.iteration <= limits.last_iteration;
}

template <class Quantity>
std::vector<double> column_means(const RunAnalysis& analysis, const std::vector<int>& ranks,
                                 const HeatmapLimits& limits, std::int64_t first,
                                 std::uint64_t per_column, std::size_t columns, Quantity quantity) {
  std::vector<double> sums(ranks.size() * columns, 0.0);
  std::vector<int> counts(sums.size(), 0);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const Step& step : analysis.steps.at(ranks[r]).steps) {
      if (!charted(step, limits)) continue;
      const auto column = static_cast<std::size_t>(offset(*step.iteration, first) / per_column);
      sums[r * columns + column] += quantity(step);
      ++counts[r * columns + column];
    }
  }
  for (std::size_t i = 0; i < sums.size(); ++i) {
    sums[i] = counts[i] == 0 ? kMissing : sums[i] / counts[i];
  }
  return sums;
}

HeatmapLayer quantize(std::string key, std::string name, const std::vector<double>& values) {
  HeatmapLayer layer{std::move(key), std::move(name), 0.0, 0.0, {}};
  std::vector<double> present;
  for (const double v : values) {
    if (!std::isnan(v)) present.push_back(v);
  }
  layer.lo = quantile(present, 0.01);
  layer.hi = quantile(present, 0.99);
  layer.cells.reserve(values.size());
  const double span = layer.hi - layer.lo;
  for (const double v : values) {
    if (std::isnan(v)) {
      layer.cells.push_back(0);
      continue;
    }
    const double at = span > 0.0 ? std::clamp((v - layer.lo) / span, 0.0, 1.0) : 0.5;
    layer.cells.push_back(static_cast<std::uint8_t>(1 + std::lround(at * 254.0)));
  }
  return layer;
}

}  // namespace

Heatmap build_heatmap(const RunAnalysis& analysis, const HeatmapLimits& limits) {
  Heatmap heatmap;
  std::vector<int> ranks;
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  for (const auto& [rank, steps] : analysis.steps) {
    bool any = false;
    for (const Step& step : steps.steps) {
      if (!charted(step, limits)) continue;
      first = std::min(first, *step.iteration);
      last = std::max(last, *step.iteration);
      any = true;
    }
    if (any) ranks.push_back(rank);
  }
  if (ranks.empty() || limits.max_rows == 0 || limits.max_columns == 0) return heatmap;
  // In unsigned arithmetic: iterations may span the whole int64 range.
  const std::uint64_t width = offset(last, first);  // iterations - 1
  const std::uint64_t per_column = width / limits.max_columns + 1;
  const auto columns = static_cast<std::size_t>(width / per_column + 1);
  for (std::size_t c = 0; c < columns; ++c) {
    const std::uint64_t from = static_cast<std::uint64_t>(first) + c * per_column;
    const std::uint64_t to = std::min(offset(last, first), c * per_column + per_column - 1);
    heatmap.columns.emplace_back(static_cast<std::int64_t>(from),
                                 static_cast<std::int64_t>(static_cast<std::uint64_t>(first) + to));
  }
  const std::vector<std::size_t> row_starts = group_starts(ranks.size(), limits.max_rows);
  for (std::size_t g = 0; g < row_starts.size(); ++g) {
    const std::size_t end = g + 1 < row_starts.size() ? row_starts[g + 1] : ranks.size();
    heatmap.rows.emplace_back(ranks[row_starts[g]], ranks[end - 1]);
  }
  struct Quantity {
    const char* key;
    const char* name;
    double (*of)(const Step&);
  };
  static constexpr Quantity kQuantities[] = {
      {"step", "step time (ms)", [](const Step& s) { return s.duration_ms; }},
      {"wait",
       "time in communication and pipeline receives (ms): the others wait for the rank that "
       "waits least",
       [](const Step& s) {
         return s.phase_ms[index_of(Phase::communication)] + s.phase_ms[index_of(Phase::pipeline)];
       }},
  };
  for (const Quantity& quantity : kQuantities) {
    const std::vector<double> grid =
        column_means(analysis, ranks, limits, first, per_column, columns, quantity.of);
    std::vector<double> column_median(columns);
    for (std::size_t c = 0; c < columns; ++c) {
      std::vector<double> values;
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        if (!std::isnan(grid[r * columns + c])) values.push_back(grid[r * columns + c]);
      }
      column_median[c] = median(std::move(values));
    }
    std::vector<double> shown(heatmap.rows.size() * columns, kMissing);
    for (std::size_t g = 0; g < row_starts.size(); ++g) {
      const std::size_t end = g + 1 < row_starts.size() ? row_starts[g + 1] : ranks.size();
      for (std::size_t c = 0; c < columns; ++c) {
        double& cell = shown[g * columns + c];
        for (std::size_t r = row_starts[g]; r < end; ++r) {
          const double v = grid[r * columns + c];
          if (std::isnan(v)) continue;
          if (std::isnan(cell) ||
              std::abs(v - column_median[c]) > std::abs(cell - column_median[c])) {
            cell = v;
          }
        }
      }
    }
    heatmap.layers.push_back(quantize(quantity.key, quantity.name, shown));
  }
  return heatmap;
}

std::vector<HeatmapBand> heatmap_bands(const Heatmap& heatmap,
                                       const std::vector<StallSuspect>& suspects,
                                       std::size_t max_bands) {
  std::vector<HeatmapBand> bands;
  for (const StallSuspect& suspect : suspects) {
    if (bands.size() == max_bands) break;
    // Rows hold ascending, disjoint rank ranges: a member's row by binary search.
    std::vector<std::size_t> rows;
    for (const int rank : suspect.ranks) {
      auto it =
          std::lower_bound(heatmap.rows.begin(), heatmap.rows.end(), rank,
                           [](const std::pair<int, int>& row, int r) { return row.second < r; });
      if (it == heatmap.rows.end() || it->first > rank) continue;
      const auto row = static_cast<std::size_t>(it - heatmap.rows.begin());
      if (rows.empty() || rows.back() != row) rows.push_back(row);
    }
    if (rows.empty()) continue;
    HeatmapBand band;
    band.kind = std::string(suspect_kind_name(suspect.kind));
    band.label = suspect.kind == SuspectKind::rank
                     ? "rank " + std::to_string(suspect.rank)
                     : suspect.group + " (ranks " + rank_ranges(suspect.ranks) + ")";
    band.phase = std::string(phase_name(suspect.phase));
    band.ranks = suspect.ranks;
    for (const std::size_t row : rows) {
      if (!band.rows.empty() && band.rows.back().second + 1 == row) {
        band.rows.back().second = row;
      } else {
        band.rows.emplace_back(row, row);
      }
    }
    bands.push_back(std::move(band));
  }
  return bands;
}

double heatmap_value(const HeatmapLayer& layer, std::uint8_t cell) {
  if (cell == 0) return kMissing;
  return layer.lo + (layer.hi - layer.lo) * static_cast<double>(cell - 1) / 254.0;
}

std::string base64(const std::vector<std::uint8_t>& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::uint32_t b0 = bytes[i];
    const std::uint32_t b1 = i + 1 < bytes.size() ? bytes[i + 1] : 0;
    const std::uint32_t b2 = i + 2 < bytes.size() ? bytes[i + 2] : 0;
    const std::uint32_t triple = (b0 << 16) | (b1 << 8) | b2;
    out += kAlphabet[(triple >> 18) & 63];
    out += kAlphabet[(triple >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(triple >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[triple & 63] : '=';
  }
  return out;
}

}  // namespace lens::report
