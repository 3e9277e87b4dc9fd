// Which ranks a large run's detailed views keep (the Perfetto trace, the per-rank curves): past a
// few dozen ranks one lane or line per rank is neither readable nor loadable, so they show the
// ranks that matter — the stall suspects, the ranks whose median step is most typical — and the
// page's heatmaps show every rank. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "report/analysis.hpp"

namespace lens::report {

struct RankSelectionLimits {
  std::size_t all_ranks_up_to = 32;    // runs with at most this many ranks keep every rank
  std::size_t typical_ranks = 3;       // beyond that: the suspects, then this many typical ranks
  std::uint64_t span_budget = 400000;  // and at most this many spans (at least one rank)
};

struct RankSelection {
  bool all = true;
  std::vector<int> suspects;  // ranks of the stall suspects, in suspect order
  std::vector<int> typical;   // median step closest to the median across ranks, by rank
  std::size_t total_ranks = 0;

  // The kept ranks, suspects first.
  std::vector<int> ranks() const;
  bool keeps(int rank) const;
  // "ranks 85 (stall suspect), 12, 40, 101 (typical) of 1024" ("" when every rank is kept).
  std::string describe() const;
};

// Every rank when `all_ranks` or the run is small; else as RankSelectionLimits says.
RankSelection select_ranks(const RunAnalysis& analysis, const RankSelectionLimits& limits,
                           bool all_ranks = false);

}  // namespace lens::report
