// Straggler detection across ranks (docs/report.md, "Stragglers"). The window is the iterations
// seen on at least two ranks (the --window most recent of them when given). For each rank: the
// median over the window of its step time and of each phase's time; across ranks: the median of
// those medians. A rank is a straggler when its step median exceeds the cross-rank step median by
// more than the threshold, or when its median in a phase other than communication exceeds that
// phase's cross-rank median by more than threshold x the cross-rank step median (in a synchronous
// run every rank's step lasts as long as the slowest one's: the fast ranks wait in
// communication, the slow one spends the time in the phase that lags). The lag phase is the
// phase with the largest excess over its cross-rank median, communication only when no other
// phase has any. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/phases.hpp"
#include "report/steps.hpp"

namespace lens::report {

struct StragglerOptions {
  double threshold = 0.10;                   // fraction: 0.10 = 10%
  std::optional<int> window = std::nullopt;  // the N most recent iterations; all when unset
};

struct RankLag {
  int rank = 0;
  std::size_t steps = 0;  // steps in the window
  double step_median_ms = 0.0;
  double step_p90_ms = 0.0;
  double excess = 0.0;  // step median / cross-rank step median - 1
  PhaseTimes phase_median_ms{};
  bool straggler = false;
  std::optional<Phase> lag_phase;  // set for stragglers
};

struct StragglerResult {
  double threshold = 0.10;
  std::size_t ranks_with_steps = 0;
  bool enough_ranks = false;             // at least two ranks share an iteration in the window
  std::vector<std::int64_t> iterations;  // the window, ascending
  double step_median_ms = 0.0;           // across ranks
  PhaseTimes phase_median_ms{};          // across ranks
  std::vector<RankLag> ranks;            // by rank; empty when !enough_ranks
};

StragglerResult detect_stragglers(const std::map<int, RankSteps>& steps,
                                  const StragglerOptions& options);

// "straggler: rank 2 step median 412.0 ms vs 301.5 ms across ranks (+36.7%), lag in phase
// forward_backward (median 250.0 ms vs 139.5 ms)", one per straggler; or "stragglers: none
// (threshold 10%)"; or "stragglers: not enough ranks (...)".
std::vector<std::string> straggler_lines(const StragglerResult& result);

// 0.1 -> "10%", 0.125 -> "12.5%".
std::string percent_text(double fraction);

}  // namespace lens::report
