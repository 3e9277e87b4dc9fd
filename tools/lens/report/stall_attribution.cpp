// Stall attribution (see stall_attribution.hpp).
#include "report/stall_attribution.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/statistics.hpp"

namespace lens::report {
namespace {

constexpr double kZScore = 6.0;               // a suspect window's median, in standard errors
constexpr double kMedianEfficiency = 1.2533;  // a median's standard error over a mean's (normal)
constexpr double kQuartileZScore = 4.0;       // its lower quartile, in standard errors
constexpr double kQuartileEfficiency = 1.3625;  // a quartile's standard error over a mean's
constexpr double kStepFraction = 0.02;        // ... and at least this fraction of the median step
constexpr double kMadToSigma = 1.4826;        // MAD of a normal distribution -> its sigma
constexpr std::size_t kMinWindow = 5;         // iterations
constexpr std::size_t kWindowDivisor = 20;    // ... or 5% of the compared iterations

// One rank's view of the compared iterations.
struct RankSeries {
  int rank = 0;
  std::vector<std::size_t> at;  // indices into the compared iterations where the rank has a step
  // Per work phase (index into work_phases()), aligned with `at`.
  std::vector<std::vector<double>> deviation;
  std::vector<std::vector<double>> credit;
  std::vector<double> communication;  // ms, aligned with `at`
  std::vector<double> untraced;       // other ms, aligned with `at`
};

// The window where the values stay above `level`: the maximum-sum contiguous run of +1/2 for a
// value at or above it and -1/2 for one below (signs, not sizes, so a single large spike next
// to a stall does not stretch the window over the quiet iterations between them): [first, last].
std::pair<std::size_t, std::size_t> best_window(const std::vector<double>& values, double level) {
  double best = -1.0;
  double running = 0.0;
  std::size_t start = 0;
  std::pair<std::size_t, std::size_t> window{0, 0};
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (running <= 0.0) {
      running = 0.0;
      start = i;
    }
    running += values[i] >= level ? 0.5 : -0.5;
    if (running > best) {
      best = running;
      window = {start, i};
    }
  }
  return window;
}

// The median of `sorted` without its element at `skip` (the other ranks' median, so that with
// two ranks one is compared with the other).
double median_without(const std::vector<double>& sorted, std::size_t skip) {
  const std::size_t count = sorted.size() - 1;
  if (count == 0) return sorted[0];
  const auto at = [&](std::size_t j) { return sorted[j < skip ? j : j + 1]; };
  return (at((count - 1) / 2) + at(count / 2)) / 2.0;
}

// A work phase's time in a step, with the gap before the step (checkpoints between steps).
double work_ms(const Step& step, std::size_t phase) {
  return step.phase_ms[phase] + step.gap_ms[phase];
}

std::string ms_text(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", ms);
  return buffer;
}

std::string share_text(double share) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), share >= 0.1 ? "%.0f%%" : "%.1f%%", share * 100.0);
  return buffer;
}

}  // namespace

const std::vector<Phase>& work_phases() {
  // Checkpoints and evaluations mostly run between steps (before the step they delay).
  static const std::vector<Phase> kOrder = {Phase::checkpoint,   Phase::evaluation,
                                            Phase::data_loading, Phase::forward_backward,
                                            Phase::optimizer,    Phase::other};
  return kOrder;
}

StallResult attribute_stalls(const std::map<int, RankSteps>& steps) {
  StallResult result;
  const std::vector<Phase>& phases = work_phases();
  const std::size_t phase_count = phases.size();

  // Each rank's step per iteration; the iterations seen on at least two ranks.
  std::vector<std::map<std::int64_t, const Step*>> by_iteration;
  std::vector<int> rank_ids;
  std::map<std::int64_t, int> ranks_per_iteration;
  for (const auto& [rank, rank_steps] : steps) {
    std::map<std::int64_t, const Step*> mine;
    for (const Step& step : rank_steps.steps) {
      if (step.iteration) mine[*step.iteration] = &step;
    }
    if (mine.empty()) continue;
    for (const auto& [iteration, step] : mine) ++ranks_per_iteration[iteration];
    by_iteration.push_back(std::move(mine));
    rank_ids.push_back(rank);
  }
  result.ranks = rank_ids.size();
  for (const auto& [iteration, count] : ranks_per_iteration) {
    if (count >= 2) result.iterations.push_back(iteration);
  }
  if (result.iterations.empty()) return result;
  result.enough_ranks = true;

  std::vector<RankSeries> series(rank_ids.size());
  for (std::size_t r = 0; r < series.size(); ++r) {
    series[r].rank = rank_ids[r];
    series[r].deviation.resize(phase_count);
    series[r].credit.resize(phase_count);
  }
  std::vector<double> step_medians;
  std::vector<double> cumulative;
  std::vector<double> values;
  for (std::size_t t = 0; t < result.iterations.size(); ++t) {
    const std::int64_t iteration = result.iterations[t];
    std::vector<std::pair<std::size_t, const Step*>> present;
    for (std::size_t r = 0; r < by_iteration.size(); ++r) {
      auto it = by_iteration[r].find(iteration);
      if (it != by_iteration[r].end()) present.emplace_back(r, it->second);
    }
    values.clear();
    for (const auto& [r, step] : present) values.push_back(step->duration_ms);
    const double step_ms = median(values);
    step_medians.push_back(step_ms);
    result.run_ms += step_ms;

    for (const auto& [r, step] : present) {
      series[r].at.push_back(t);
      series[r].communication.push_back(step->phase_ms[index_of(Phase::communication)]);
      series[r].untraced.push_back(work_ms(*step, index_of(Phase::other)));
    }
    // Deviations from the cross-rank median, and the frontier walk over the work phases.
    cumulative.assign(present.size(), 0.0);
    double frontier = 0.0;
    for (std::size_t k = 0; k < phase_count; ++k) {
      const std::size_t p = index_of(phases[k]);
      values.clear();
      for (const auto& [r, step] : present) values.push_back(work_ms(*step, p));
      std::sort(values.begin(), values.end());
      std::size_t ahead = 0;
      for (std::size_t i = 0; i < present.size(); ++i) {
        const double own = work_ms(*present[i].second, p);
        const auto position = static_cast<std::size_t>(
            std::lower_bound(values.begin(), values.end(), own) - values.begin());
        const double d = own - median_without(values, position);
        series[present[i].first].deviation[k].push_back(d);
        series[present[i].first].credit[k].push_back(0.0);
        cumulative[i] += d;
        if (cumulative[i] > cumulative[ahead]) ahead = i;
      }
      // The frontier starts level (every rank leaves the previous synchronization together) and
      // keeps its furthest lead: a synchronization inside a later phase (an untraced
      // all-reduce in other) lets the others catch up, but they waited for it.
      const double next = std::max(frontier, cumulative[ahead]);
      series[present[ahead].first].credit[k].back() += next - frontier;
      frontier = next;
    }
    result.exposed_ms += frontier;
  }
  result.median_step_ms = median(step_medians);

  // Noise from consecutive iterations of the same rank: a sustained lag (or the other rank's,
  // with two ranks) shifts d but hardly its successive differences.
  std::vector<double> noise(phase_count);
  for (std::size_t k = 0; k < phase_count; ++k) {
    std::vector<double> differences;
    for (const RankSeries& rank : series) {
      for (std::size_t i = 1; i < rank.deviation[k].size(); ++i) {
        differences.push_back(std::fabs(rank.deviation[k][i] - rank.deviation[k][i - 1]));
      }
    }
    noise[k] = kMadToSigma * median(std::move(differences)) / std::sqrt(2.0);
  }
  const std::size_t min_window =
      std::max(kMinWindow, result.iterations.size() / kWindowDivisor);

  for (RankSeries& rank : series) {
    for (std::size_t k = 0; k < phase_count; ++k) {
      const double floor = kStepFraction * result.median_step_ms;
      const double level = std::max(noise[k], floor / 2.0);
      if (level <= 0.0) continue;
      const std::vector<double>& d = rank.deviation[k];
      const auto [first, last] = best_window(d, level);
      const std::size_t length = last - first + 1;
      if (d.empty() || length < min_window) continue;
      const std::vector<double> window(d.begin() + static_cast<std::ptrdiff_t>(first),
                                       d.begin() + static_cast<std::ptrdiff_t>(last) + 1);
      const double excess = median(window);
      // Significant: the window's median is kZScore standard errors of a median of `length`
      // noisy values above zero, and worth naming: at least the floor.
      const double standard_error =
          kMedianEfficiency * noise[k] / std::sqrt(static_cast<double>(length));
      if (excess < floor || excess < kZScore * standard_error) continue;
      // Sustained: three quarters of the window lag, so a few spikes (GC pauses) are not a
      // window.
      const double lower_quartile = quantile(window, 0.25);
      if (lower_quartile < floor / 2.0 ||
          lower_quartile < kQuartileZScore * kQuartileEfficiency * noise[k] /
                               std::sqrt(static_cast<double>(length))) {
        continue;
      }
      StallSuspect suspect;
      suspect.rank = rank.rank;
      suspect.phase = phases[k];
      suspect.excess_ms_per_step = excess;
      suspect.first_iteration = result.iterations[rank.at[first]];
      suspect.last_iteration = result.iterations[rank.at[last]];
      suspect.steps = length;
      for (std::size_t i = first; i <= last; ++i) suspect.exposed_ms += rank.credit[k][i];
      suspect.exposed_ms = std::max(0.0, suspect.exposed_ms);
      suspect.share = result.run_ms > 0.0 ? suspect.exposed_ms / result.run_ms : 0.0;
      // Where the others wait: the phase (communication, or untraced time for an untraced
      // collective) where their median exceeds this rank's by at least half its excess.
      for (const Phase wait : {Phase::communication, Phase::other}) {
        if (wait == suspect.phase || suspect.others_wait) continue;
        const auto& mine = wait == Phase::communication ? &RankSeries::communication
                                                        : &RankSeries::untraced;
        std::vector<double> gaps;
        for (std::size_t i = first; i <= last; ++i) {
          std::vector<double> others;
          for (const RankSeries& other : series) {
            if (&other == &rank) continue;
            auto it = std::lower_bound(other.at.begin(), other.at.end(), rank.at[i]);
            if (it != other.at.end() && *it == rank.at[i]) {
              others.push_back((other.*mine)[static_cast<std::size_t>(it - other.at.begin())]);
            }
          }
          if (!others.empty()) gaps.push_back(median(others) - (rank.*mine)[i]);
        }
        if (!gaps.empty() && median(gaps) >= excess / 2.0) {
          suspect.others_wait = true;
          suspect.wait_phase = wait;
        }
      }
      result.suspects.push_back(suspect);
    }
  }
  std::stable_sort(result.suspects.begin(), result.suspects.end(),
                   [](const StallSuspect& a, const StallSuspect& b) {
                     if (a.exposed_ms != b.exposed_ms) return a.exposed_ms > b.exposed_ms;
                     return a.excess_ms_per_step * static_cast<double>(a.steps) >
                            b.excess_ms_per_step * static_cast<double>(b.steps);
                   });
  return result;
}

std::string suspect_sentence(const StallSuspect& suspect, const StallResult& result) {
  std::string text = "rank " + std::to_string(suspect.rank) + " spends +" +
                     ms_text(suspect.excess_ms_per_step) + " ms per step in " +
                     std::string(phase_name(suspect.phase));
  const bool to_the_end =
      !result.iterations.empty() && suspect.last_iteration == result.iterations.back();
  if (to_the_end) {
    text += " from iteration " + std::to_string(suspect.first_iteration) + " on";
  } else {
    text += " in iterations " + std::to_string(suspect.first_iteration) + "-" +
            std::to_string(suspect.last_iteration);
  }
  if (suspect.others_wait) {
    text += "; the other ranks wait for it in " + std::string(phase_name(suspect.wait_phase));
  }
  return text + " (" + share_text(suspect.share) + " of the run)";
}

std::vector<std::string> stall_lines(const StallResult& result) {
  if (!result.enough_ranks) {
    if (result.ranks < 2) {
      return {"stalls: not enough ranks (" + std::to_string(result.ranks) +
              (result.ranks == 1 ? " rank" : " ranks") + " with steps; need 2)"};
    }
    return {"stalls: not enough ranks (no iteration seen on 2 ranks)"};
  }
  if (result.suspects.empty()) {
    return {"stalls: no rank stands out (" + std::to_string(result.iterations.size()) +
            " iterations, " + std::to_string(result.ranks) + " ranks compared)"};
  }
  std::vector<std::string> lines;
  for (const StallSuspect& suspect : result.suspects) {
    lines.push_back(suspect_sentence(suspect, result));
  }
  return lines;
}

}  // namespace lens::report
