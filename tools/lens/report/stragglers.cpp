// Straggler detection (see stragglers.hpp).
#include "report/stragglers.hpp"

#include <cstdio>
#include <set>

#include "report/statistics.hpp"

namespace lens::report {
namespace {

// "A ms vs B ms" with one decimal.
std::string versus(double a, double b) {
  char buffer[96];
  std::snprintf(buffer, sizeof(buffer), "%.1f ms vs %.1f ms", a, b);
  return buffer;
}

std::string signed_percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%+.1f%%", fraction * 100.0);
  return buffer;
}

std::optional<Phase> lag_phase_of(const RankLag& lag, const PhaseTimes& across) {
  std::optional<Phase> best;
  double best_excess = 0.0;
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    const auto phase = static_cast<Phase>(p);
    const double excess = lag.phase_median_ms[p] - across[p];
    if (!is_wait_phase(phase) && excess > best_excess) {
      best = phase;
      best_excess = excess;
    }
  }
  if (best) return best;
  for (const Phase wait : {Phase::communication, Phase::pipeline}) {
    if (lag.phase_median_ms[index_of(wait)] > across[index_of(wait)]) return wait;
  }
  return std::nullopt;
}

}  // namespace

std::string percent_text(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g%%", fraction * 100.0);
  return buffer;
}

StragglerResult detect_stragglers(const std::map<int, RankSteps>& steps,
                                  const StragglerOptions& options) {
  StragglerResult result;
  result.threshold = options.threshold;
  std::map<std::int64_t, int> ranks_per_iteration;
  for (const auto& [rank, rank_steps] : steps) {
    bool any = false;
    for (const Step& step : rank_steps.steps) {
      if (!step.iteration) continue;
      ++ranks_per_iteration[*step.iteration];  // one step per iteration and rank (find_steps)
      any = true;
    }
    if (any) ++result.ranks_with_steps;
  }
  for (const auto& [iteration, count] : ranks_per_iteration) {
    if (count >= 2) result.iterations.push_back(iteration);
  }
  if (options.window && result.iterations.size() > static_cast<std::size_t>(*options.window)) {
    result.iterations.erase(result.iterations.begin(), result.iterations.end() - *options.window);
  }
  if (result.ranks_with_steps < 2 || result.iterations.empty()) return result;
  result.enough_ranks = true;

  const std::set<std::int64_t> window(result.iterations.begin(), result.iterations.end());
  std::vector<double> step_medians;
  std::array<std::vector<double>, kPhaseCount> phase_medians;
  for (const auto& [rank, rank_steps] : steps) {
    std::vector<double> durations;
    std::array<std::vector<double>, kPhaseCount> phases;
    for (const Step& step : rank_steps.steps) {
      if (!step.iteration || window.count(*step.iteration) == 0) continue;
      durations.push_back(step.duration_ms);
      for (std::size_t p = 0; p < kPhaseCount; ++p) phases[p].push_back(step.phase_ms[p]);
    }
    if (durations.empty()) continue;
    RankLag lag;
    lag.rank = rank;
    lag.steps = durations.size();
    lag.step_median_ms = median(durations);
    lag.step_p90_ms = quantile(durations, 0.9);
    for (std::size_t p = 0; p < kPhaseCount; ++p) {
      lag.phase_median_ms[p] = median(phases[p]);
      phase_medians[p].push_back(lag.phase_median_ms[p]);
    }
    step_medians.push_back(lag.step_median_ms);
    result.ranks.push_back(lag);
  }
  result.step_median_ms = median(step_medians);
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    result.phase_median_ms[p] = median(phase_medians[p]);
  }
  const double across = result.step_median_ms;
  for (RankLag& lag : result.ranks) {
    lag.excess = across > 0.0 ? lag.step_median_ms / across - 1.0 : 0.0;
    bool phase_lag = false;
    for (std::size_t p = 0; p < kPhaseCount; ++p) {
      if (is_wait_phase(static_cast<Phase>(p))) continue;
      if (lag.phase_median_ms[p] - result.phase_median_ms[p] > options.threshold * across) {
        phase_lag = true;
      }
    }
    lag.straggler = lag.excess > options.threshold || phase_lag;
    if (lag.straggler) lag.lag_phase = lag_phase_of(lag, result.phase_median_ms);
  }
  return result;
}

std::vector<std::string> straggler_lines(const StragglerResult& result) {
  if (!result.enough_ranks) {
    if (result.ranks_with_steps < 2) {
      return {"stragglers: not enough ranks (" + std::to_string(result.ranks_with_steps) +
              (result.ranks_with_steps == 1 ? " rank" : " ranks") + " with steps; need 2)"};
    }
    return {"stragglers: not enough ranks (no iteration seen on 2 ranks)"};
  }
  std::vector<std::string> lines;
  for (const RankLag& lag : result.ranks) {
    if (!lag.straggler) continue;
    std::string line = "straggler: rank " + std::to_string(lag.rank) + " step median " +
                       versus(lag.step_median_ms, result.step_median_ms) + " across ranks (" +
                       signed_percent(lag.excess) + ")";
    if (lag.lag_phase) {
      const std::size_t p = index_of(*lag.lag_phase);
      line += ", lag in phase " + std::string(phase_name(*lag.lag_phase)) + " (median " +
              versus(lag.phase_median_ms[p], result.phase_median_ms[p]) + ")";
    } else {
      line += ", lag spread over phases";
    }
    lines.push_back(std::move(line));
  }
  if (lines.empty()) {
    lines.push_back("stragglers: none (threshold " + percent_text(result.threshold) + ")");
  }
  return lines;
}

}  // namespace lens::report
