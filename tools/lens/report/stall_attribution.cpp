// Stall attribution (see stall_attribution.hpp).
#include "report/stall_attribution.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "report/statistics.hpp"

namespace lens::report {
namespace {

constexpr double kMadToSigma = 1.4826;        // MAD of a normal distribution -> its sigma
constexpr double kMedianEfficiency = 1.2533;  // a median's standard error over a mean's (normal)
constexpr double kClip = 3.0;                 // d is clipped at +-3 noise in the test
// The standard deviation of a standard normal clipped at +-3: sqrt(0.99501).
constexpr double kClippedSigma = 0.99750;
constexpr double kCi = 1.95996;             // two-sided 95%
constexpr double kMinSigma = 1e-3;          // ms: a noiseless phase still has a scale
constexpr std::size_t kMinWindow = 5;       // iterations
constexpr std::size_t kWindowDivisor = 20;  // ... or 5% of the compared iterations

// One rank's view of the compared iterations.
struct RankSeries {
  int rank = 0;
  std::vector<std::size_t> at;  // indices into the compared iterations where the rank has a step
  // Per work phase (index into work_phases()), aligned with `at`.
  std::vector<std::vector<double>> deviation;
  std::vector<std::vector<double>> credit;
  std::vector<double> communication;  // ms, aligned with `at`
  std::vector<double> pipeline;       // pipeline sends and receives, ms, aligned with `at`
  std::vector<double> untraced;       // other ms, aligned with `at`
};

// The maximum-sum run of +1/2 for a value at or above `level` and -1/2 for one below, within
// [lo, hi] (signs, not sizes, so a single large spike next to a stall does not stretch it):
// [first, last].
std::pair<std::size_t, std::size_t> sign_window(const std::vector<double>& values, double level,
                                                std::size_t lo, std::size_t hi) {
  double best = -1.0;
  double running = 0.0;
  std::size_t start = lo;
  std::pair<std::size_t, std::size_t> window{lo, lo};
  for (std::size_t i = lo; i <= hi; ++i) {
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

// The tested windows of a series of n values: lengths from `shortest` growing by a quarter up to
// n, starts a quarter of the length apart (and one ending at the last value). f(first, length).
template <typename F>
void for_each_window(std::size_t n, std::size_t shortest, F&& f) {
  if (n < shortest || shortest == 0) return;
  std::size_t length = shortest;
  while (true) {
    const std::size_t stride = std::max<std::size_t>(1, length / 4);
    for (std::size_t first = 0; first + length <= n; first += stride) f(first, length);
    if ((n - length) % stride != 0) f(n - length, length);
    if (length == n) break;
    length = std::min(n, std::max(length + 1, length + length / 4));
  }
}

std::size_t window_count(std::size_t n, std::size_t shortest) {
  std::size_t count = 0;
  for_each_window(n, shortest, [&](std::size_t, std::size_t) { ++count; });
  return count;
}

// z with P(N(0,1) > z) = p.
double upper_normal_quantile(double p) {
  double lo = 0.0;
  double hi = 40.0;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2.0;
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > p ? lo : hi) = mid;
  }
  return (lo + hi) / 2.0;
}

// The noise of a series from its successive differences: a lasting lag hardly moves it.
double successive_noise(const std::vector<double>& values) {
  std::vector<double> differences;
  for (std::size_t i = 1; i < values.size(); ++i) {
    differences.push_back(std::fabs(values[i] - values[i - 1]));
  }
  return kMadToSigma * median(std::move(differences)) / std::sqrt(2.0);
}

// The mean of values[first..last] winsorized at +-3 sigma around their median.
double robust_excess(const std::vector<double>& values, std::size_t first, std::size_t last,
                     double sigma) {
  const std::vector<double> window(values.begin() + static_cast<std::ptrdiff_t>(first),
                                   values.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  const double center = median(window);
  double sum = 0.0;
  for (double v : window) sum += std::clamp(v, center - kClip * sigma, center + kClip * sigma);
  return sum / static_cast<double>(window.size());
}

struct Detection {
  bool found = false;
  std::size_t first = 0, last = 0;  // indices into the series
  double z = 0.0;
  double excess = 0.0;
  double half_ci = 0.0;
};

// The windowed test of one series (see the header): the best window whose raw mean reaches the
// floor and whose clipped sum reaches z_critical standard errors, refined to its change points.
Detection detect(const std::vector<double>& d, double sigma, std::size_t shortest,
                 double z_critical, double floor) {
  Detection out;
  const std::size_t n = d.size();
  if (n < shortest) return out;
  std::vector<double> clipped_sum(n + 1, 0.0), raw_sum(n + 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    clipped_sum[i + 1] = clipped_sum[i] + std::clamp(d[i], -kClip * sigma, kClip * sigma);
    raw_sum[i + 1] = raw_sum[i] + d[i];
  }
  const double scale = kClippedSigma * sigma;
  double best = -1.0;
  std::size_t best_first = 0, best_length = 0;
  for_each_window(n, shortest, [&](std::size_t first, std::size_t length) {
    const double count = static_cast<double>(length);
    if (raw_sum[first + length] - raw_sum[first] < floor * count) return;
    const double z =
        (clipped_sum[first + length] - clipped_sum[first]) / (scale * std::sqrt(count));
    if (z > best) {
      best = z;
      best_first = first;
      best_length = length;
    }
  });
  if (best < z_critical) return out;
  std::size_t first = best_first;
  std::size_t last = best_first + best_length - 1;
  // Its change points: where d crosses half the excess, near the tested window.
  const double level = robust_excess(d, first, last, sigma) / 2.0;
  const std::size_t lo = first >= best_length ? first - best_length : 0;
  const std::size_t hi = std::min(n - 1, last + best_length);
  const auto [refined_first, refined_last] = sign_window(d, level, lo, hi);
  if (refined_last + 1 - refined_first >= shortest && refined_first <= last &&
      refined_last >= first) {
    first = refined_first;
    last = refined_last;
  }
  out.excess = robust_excess(d, first, last, sigma);
  if (out.excess < floor) return out;
  out.found = true;
  out.first = first;
  out.last = last;
  out.z = best;
  out.half_ci = kCi * sigma / std::sqrt(static_cast<double>(last + 1 - first));
  return out;
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

StallResult attribute_stalls(const std::map<int, RankSteps>& steps,
                             const std::map<int, RankCoordinates>& coordinates,
                             const StallOptions& options) {
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
    step_medians.push_back(median(values));
    // The iteration's wall time: on each rank, from the end of its step of the previous
    // iteration (checkpoints, evaluations and waits between steps included), the step alone
    // where the rank has no step of the previous iteration; the median across ranks. In a
    // synchronous run every rank's time includes the waits for the last one, so the frontier
    // below (at most one iteration's wait) is part of it, and a share of the run stays <= 100%.
    values.clear();
    for (const auto& [r, step] : present) {
      double wall = step->duration_ms;
      const auto previous = by_iteration[r].find(iteration - 1);
      if (previous != by_iteration[r].end() && step->start_ns > previous->second->end_ns) {
        wall = static_cast<double>(static_cast<std::uint64_t>(step->end_ns) -
                                   static_cast<std::uint64_t>(previous->second->end_ns)) /
               1e6;
      }
      values.push_back(wall);
    }
    result.run_ms += median(values);

    for (const auto& [r, step] : present) {
      series[r].at.push_back(t);
      series[r].communication.push_back(step->phase_ms[index_of(Phase::communication)]);
      series[r].pipeline.push_back(step->phase_ms[index_of(Phase::pipeline)]);
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
  std::vector<bool> present_phase(phase_count, false);
  for (std::size_t k = 0; k < phase_count; ++k) {
    std::vector<double> differences;
    for (const RankSeries& rank : series) {
      for (std::size_t i = 0; i < rank.deviation[k].size(); ++i) {
        if (rank.deviation[k][i] != 0.0) present_phase[k] = true;
        if (i > 0) {
          differences.push_back(std::fabs(rank.deviation[k][i] - rank.deviation[k][i - 1]));
        }
      }
    }
    noise[k] = kMadToSigma * median(std::move(differences)) / std::sqrt(2.0);
  }
  const std::size_t shortest = std::max(kMinWindow, result.iterations.size() / kWindowDivisor);
  const double floor = options.min_excess * result.median_step_ms;
  result.min_excess_ms = floor;
  result.false_alarm_rate = options.false_alarm_rate;

  // The groups: ranks sharing a host, a pipeline stage, a tensor- or data-parallel group; at
  // least two and at most half of the ranks (the median of the others must stay outside).
  struct Group {
    SuspectKind kind;
    std::string label;
    std::string also;
    std::vector<std::size_t> members;  // indices into series
  };
  std::vector<Group> groups;
  {
    std::map<std::pair<int, std::string>, std::vector<std::size_t>> keyed;
    std::map<std::pair<int, std::string>, std::string> labels;
    const auto text = [](const std::optional<std::int64_t>& v) { return std::to_string(*v); };
    for (std::size_t r = 0; r < series.size(); ++r) {
      auto it = coordinates.find(series[r].rank);
      if (it == coordinates.end()) continue;
      const RankCoordinates& c = it->second;
      const auto add = [&](int order, const std::string& key, const std::string& label) {
        keyed[{order, key}].push_back(r);
        labels[{order, key}] = label;
      };
      if (!c.host.empty()) add(0, c.host, "node " + c.host);
      if (c.pp_rank && c.pp_size && *c.pp_size > 1) {
        add(1, text(c.pp_rank), "pipeline stage " + text(c.pp_rank) + " of " + text(c.pp_size));
      }
      if (c.tp_size && *c.tp_size > 1 && c.dp_rank && c.pp_rank) {
        const std::string key = "dp " + text(c.dp_rank) + ", pp " + text(c.pp_rank);
        add(2, key, "tensor-parallel group [" + key + "]");
      }
      if (c.dp_size && *c.dp_size > 1 && c.tp_rank && c.pp_rank) {
        const std::string key = "tp " + text(c.tp_rank) + ", pp " + text(c.pp_rank);
        add(3, key, "data-parallel group [" + key + "]");
      }
    }
    std::map<std::vector<std::size_t>, std::size_t> by_members;
    for (auto& [key, members] : keyed) {
      if (members.size() < 2 || members.size() * 2 > series.size()) continue;
      auto seen = by_members.find(members);
      if (seen != by_members.end()) {
        // A node that is also a pipeline stage says so; a tensor- or data-parallel group that
        // is a whole node or stage (TP 1: the data-parallel group of a stage) is not repeated.
        Group& same = groups[seen->second];
        if (key.first < 2) same.also += (same.also.empty() ? "" : ", ") + labels[key];
        continue;
      }
      static const SuspectKind kKinds[] = {SuspectKind::node, SuspectKind::stage,
                                           SuspectKind::group, SuspectKind::group};
      by_members.emplace(members, groups.size());
      groups.push_back({kKinds[key.first], labels[key], "", members});
    }
  }
  // A group's series: the median of its members' d per iteration (where half of them have a
  // step), so a single slow member does not move it.
  struct GroupSeries {
    std::vector<std::size_t> at;
    std::vector<double> d;
  };
  const auto group_series = [&](const Group& group, std::size_t k) {
    std::vector<std::vector<double>> per(result.iterations.size());
    for (std::size_t m : group.members) {
      for (std::size_t i = 0; i < series[m].at.size(); ++i) {
        per[series[m].at[i]].push_back(series[m].deviation[k][i]);
      }
    }
    GroupSeries out;
    for (std::size_t t = 0; t < per.size(); ++t) {
      if (per[t].empty() || per[t].size() * 2 < group.members.size()) continue;
      out.at.push_back(t);
      out.d.push_back(median(std::move(per[t])));
    }
    return out;
  };
  // Per group and phase (empty for an absent phase).
  std::vector<std::vector<GroupSeries>> group_cache(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    group_cache[g].resize(phase_count);
    for (std::size_t k = 0; k < phase_count; ++k) {
      if (present_phase[k]) group_cache[g][k] = group_series(groups[g], k);
    }
  }

  // The number of tests, for the Bonferroni threshold.
  for (std::size_t k = 0; k < phase_count; ++k) {
    if (!present_phase[k]) continue;
    for (const RankSeries& rank : series) result.tests += window_count(rank.at.size(), shortest);
    for (const auto& cached : group_cache)
      result.tests += window_count(cached[k].at.size(), shortest);
  }
  if (result.tests == 0) return result;
  result.z_critical =
      upper_normal_quantile(options.false_alarm_rate / static_cast<double>(result.tests));

  // Per iteration and rank: communication and untraced time (NaN where the rank has no step).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::vector<double>> communication(result.iterations.size(),
                                                 std::vector<double>(series.size(), nan));
  std::vector<std::vector<double>> untraced = communication;
  std::vector<std::vector<double>> pipeline = communication;
  for (std::size_t r = 0; r < series.size(); ++r) {
    for (std::size_t i = 0; i < series[r].at.size(); ++i) {
      communication[series[r].at[i]][r] = series[r].communication[i];
      pipeline[series[r].at[i]][r] = series[r].pipeline[i];
      untraced[series[r].at[i]][r] = series[r].untraced[i];
    }
  }
  // Fills the suspect's window, exposure, share and where the others wait; `members` are
  // indices into series, `at` the compared iterations of the detection's series.
  const auto fill = [&](StallSuspect& suspect, const std::vector<std::size_t>& members,
                        const std::vector<std::size_t>& at, const Detection& found, std::size_t k) {
    suspect.phase = phases[k];
    suspect.excess_ms_per_step = found.excess;
    suspect.ci_low_ms = found.excess - found.half_ci;
    suspect.ci_high_ms = found.excess + found.half_ci;
    suspect.z = found.z;
    const std::size_t lo = at[found.first];
    const std::size_t hi = at[found.last];
    suspect.first_iteration = result.iterations[lo];
    suspect.last_iteration = result.iterations[hi];
    suspect.steps = found.last - found.first + 1;
    std::vector<bool> member(series.size(), false);
    for (std::size_t m : members) {
      member[m] = true;
      suspect.ranks.push_back(series[m].rank);
      for (std::size_t i = 0; i < series[m].at.size(); ++i) {
        if (series[m].at[i] >= lo && series[m].at[i] <= hi) {
          suspect.exposed_ms += series[m].credit[k][i];
        }
      }
    }
    std::sort(suspect.ranks.begin(), suspect.ranks.end());
    suspect.rank = suspect.ranks.front();
    suspect.exposed_ms = std::max(0.0, suspect.exposed_ms);
    suspect.share = result.run_ms > 0.0 ? suspect.exposed_ms / result.run_ms : 0.0;
    // Where the others wait: the phase (communication, pipeline receives, or untraced time for
    // an untraced collective) where their median exceeds the suspect's the most, by at least
    // half its excess.
    double widest = suspect.excess_ms_per_step / 2.0;
    for (const Phase wait : {Phase::communication, Phase::pipeline, Phase::other}) {
      if (wait == suspect.phase) continue;
      const auto& table = wait == Phase::communication ? communication
                          : wait == Phase::pipeline    ? pipeline
                                                       : untraced;
      std::vector<double> gaps;
      for (std::size_t i = found.first; i <= found.last; ++i) {
        std::vector<double> mine, others;
        for (std::size_t r = 0; r < series.size(); ++r) {
          const double v = table[at[i]][r];
          if (!std::isnan(v)) (member[r] ? mine : others).push_back(v);
        }
        if (!mine.empty() && !others.empty()) gaps.push_back(median(others) - median(mine));
      }
      const double gap = gaps.empty() ? 0.0 : median(gaps);
      if (!gaps.empty() && gap >= widest && (!suspect.others_wait || gap > widest)) {
        suspect.others_wait = true;
        suspect.wait_phase = wait;
        widest = gap;
      }
    }
  };

  // Per pipeline stage: compute and bubble (pipeline sends and receives) per step.
  {
    std::map<std::int64_t, StageTime> stages;
    std::map<std::int64_t, std::vector<double>> step_ms, compute_ms, bubble_ms;
    for (std::size_t r = 0; r < series.size(); ++r) {
      auto it = coordinates.find(series[r].rank);
      if (it == coordinates.end() || !it->second.pp_rank || !it->second.pp_size ||
          *it->second.pp_size < 2) {
        continue;
      }
      const std::int64_t stage = *it->second.pp_rank;
      StageTime& time = stages[stage];
      time.stage = stage;
      time.stages = *it->second.pp_size;
      time.ranks.push_back(series[r].rank);
      std::vector<double> steps_of, compute_of;
      for (const Step& step : steps.at(series[r].rank).steps) {
        if (!step.iteration) continue;
        steps_of.push_back(step.duration_ms);
        double compute = 0.0;
        for (std::size_t k = 0; k < phase_count; ++k) compute += work_ms(step, index_of(phases[k]));
        compute_of.push_back(compute);
      }
      step_ms[stage].push_back(median(std::move(steps_of)));
      compute_ms[stage].push_back(median(std::move(compute_of)));
      bubble_ms[stage].push_back(median(series[r].pipeline));
    }
    for (auto& [stage, time] : stages) {
      time.step_ms = median(step_ms[stage]);
      time.compute_ms = median(compute_ms[stage]);
      time.bubble_ms = median(bubble_ms[stage]);
      result.stages.push_back(std::move(time));
    }
  }

  std::vector<StallSuspect> ranks_found;
  for (std::size_t r = 0; r < series.size(); ++r) {
    const RankSeries& rank = series[r];
    for (std::size_t k = 0; k < phase_count; ++k) {
      if (!present_phase[k]) continue;
      const std::vector<double>& d = rank.deviation[k];
      const double sigma = std::max({noise[k], successive_noise(d), kMinSigma});
      const Detection found = detect(d, sigma, shortest, result.z_critical, floor);
      if (!found.found) continue;
      StallSuspect suspect;
      fill(suspect, {r}, rank.at, found, k);
      ranks_found.push_back(std::move(suspect));
    }
  }
  // Groups, largest first; one inside an accepted group of the same phase and window is not
  // named again.
  std::vector<std::size_t> order(groups.size());
  for (std::size_t g = 0; g < order.size(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return groups[a].members.size() > groups[b].members.size();
  });
  const auto overlaps = [](const StallSuspect& a, const StallSuspect& b) {
    return a.phase == b.phase && a.first_iteration <= b.last_iteration &&
           b.first_iteration <= a.last_iteration;
  };
  const auto contains = [](const StallSuspect& group, int rank) {
    return std::binary_search(group.ranks.begin(), group.ranks.end(), rank);
  };
  std::vector<StallSuspect> groups_found;
  for (std::size_t g : order) {
    const Group& group = groups[g];
    for (std::size_t k = 0; k < phase_count; ++k) {
      if (!present_phase[k]) continue;
      const GroupSeries& gs = group_cache[g][k];
      const double efficiency = group.members.size() > 2 ? kMedianEfficiency : 1.0;
      const double sigma =
          std::max({noise[k] * efficiency / std::sqrt(static_cast<double>(group.members.size())),
                    successive_noise(gs.d), kMinSigma});
      const Detection found = detect(gs.d, sigma, shortest, result.z_critical, floor);
      if (!found.found) continue;
      // Shared: three quarters of the members lag by at least half the excess in the window.
      std::size_t lagging = 0;
      for (std::size_t m : group.members) {
        double sum = 0.0;
        std::size_t count = 0;
        for (std::size_t i = 0; i < series[m].at.size(); ++i) {
          if (series[m].at[i] >= gs.at[found.first] && series[m].at[i] <= gs.at[found.last]) {
            sum += series[m].deviation[k][i];
            ++count;
          }
        }
        if (count > 0 && sum / static_cast<double>(count) >= found.excess / 2.0) ++lagging;
      }
      if (lagging * 4 < group.members.size() * 3) continue;
      StallSuspect suspect;
      suspect.kind = group.kind;
      suspect.group = group.label;
      suspect.also = group.also;
      fill(suspect, group.members, gs.at, found, k);
      if (group.kind == SuspectKind::stage) {
        for (const StageTime& stage : result.stages) {
          if (std::find(suspect.ranks.begin(), suspect.ranks.end(), stage.ranks.front()) ==
              suspect.ranks.end()) {
            suspect.other_stages.push_back(stage.stage);
          }
        }
      }
      bool inside = false;
      for (const StallSuspect& accepted : groups_found) {
        if (!overlaps(accepted, suspect)) continue;
        bool all = true;
        for (int member : suspect.ranks) all = all && contains(accepted, member);
        inside = inside || all;
      }
      if (!inside) groups_found.push_back(std::move(suspect));
    }
  }
  // A member's own suspect in the group's phase and window is the group's, unless it lags
  // clearly more than the group (a slow rank on a slow node): the lower end of its confidence
  // interval above 1.5 x the group's excess.
  for (StallSuspect& suspect : ranks_found) {
    bool folded = false;
    for (const StallSuspect& group : groups_found) {
      folded = folded || (overlaps(group, suspect) && contains(group, suspect.rank) &&
                          suspect.ci_low_ms <= 1.5 * group.excess_ms_per_step);
    }
    if (!folded) result.suspects.push_back(std::move(suspect));
  }
  for (StallSuspect& group : groups_found) result.suspects.push_back(std::move(group));
  std::stable_sort(result.suspects.begin(), result.suspects.end(),
                   [](const StallSuspect& a, const StallSuspect& b) {
                     if (a.exposed_ms != b.exposed_ms) return a.exposed_ms > b.exposed_ms;
                     return a.excess_ms_per_step * static_cast<double>(a.steps) >
                            b.excess_ms_per_step * static_cast<double>(b.steps);
                   });
  return result;
}

std::map<int, RankCoordinates> rank_coordinates(const std::map<int, RankData>& ranks) {
  std::map<int, RankCoordinates> out;
  for (const auto& [rank, data] : ranks) {
    RankCoordinates c;
    c.host = text_attribute(data.resource, "host.name");
    c.tp_rank = int_attribute(data.resource, "dl.tensor_parallel.rank");
    c.tp_size = int_attribute(data.resource, "dl.tensor_parallel.size");
    c.pp_rank = int_attribute(data.resource, "dl.pipeline_parallel.rank");
    c.pp_size = int_attribute(data.resource, "dl.pipeline_parallel.size");
    c.dp_rank = int_attribute(data.resource, "dl.data_parallel.rank");
    c.dp_size = int_attribute(data.resource, "dl.data_parallel.size");
    out.emplace(rank, std::move(c));
  }
  return out;
}

std::string rank_ranges(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string_view suspect_kind_name(SuspectKind kind) {
  switch (kind) {
    case SuspectKind::rank:
      return "rank";
    case SuspectKind::node:
      return "node";
    case SuspectKind::stage:
      return "stage";
    case SuspectKind::group:
      return "group";
  }
  return "rank";
}

std::string suspect_sentence(const StallSuspect& suspect, const StallResult& result) {
  const bool group = suspect.kind != SuspectKind::rank;
  std::string text;
  if (group) {
    text = suspect.group + " (ranks " + rank_ranges(suspect.ranks) +
           (suspect.also.empty() ? "" : "; also " + suspect.also) + "): +" +
           ms_text(suspect.excess_ms_per_step) + " ms per step in " +
           std::string(phase_name(suspect.phase));
  } else {
    text = "rank " + std::to_string(suspect.rank) + " spends +" +
           ms_text(suspect.excess_ms_per_step) + " ms per step in " +
           std::string(phase_name(suspect.phase));
  }
  const bool to_the_end =
      !result.iterations.empty() && suspect.last_iteration == result.iterations.back();
  if (to_the_end) {
    text += " from iteration " + std::to_string(suspect.first_iteration) + " on";
  } else {
    text += " in iterations " + std::to_string(suspect.first_iteration) + "-" +
            std::to_string(suspect.last_iteration);
  }
  if (suspect.others_wait && suspect.kind == SuspectKind::stage &&
      suspect.wait_phase == Phase::pipeline && !suspect.other_stages.empty()) {
    text += suspect.other_stages.size() == 1 ? "; stage " : "; stages ";
    for (std::size_t i = 0; i < suspect.other_stages.size(); ++i) {
      text += (i == 0 ? "" : ", ") + std::to_string(suspect.other_stages[i]);
    }
    text += suspect.other_stages.size() == 1 ? " waits" : " wait";
    text += " in pipeline receives";
  } else if (suspect.others_wait) {
    text += std::string("; the other ranks wait for ") + (group ? "them" : "it") + " in " +
            std::string(phase_name(suspect.wait_phase));
  }
  char ci[96];
  std::snprintf(ci, sizeof(ci), "; 95%% CI %+.1f to %+.1f ms", suspect.ci_low_ms,
                suspect.ci_high_ms);
  return text + " (" + share_text(suspect.share) + " of the run" + ci + ")";
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
