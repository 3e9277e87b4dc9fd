// The ranks large runs' detailed views keep (see rank_selection.hpp).
#include "report/rank_selection.hpp"

#include <algorithm>
#include <cmath>

#include "report/statistics.hpp"

namespace lens::report {
namespace {

std::string joined(const std::vector<int>& ranks) {
  std::string out;
  for (const int rank : ranks) out += (out.empty() ? "" : ", ") + std::to_string(rank);
  return out;
}

}  // namespace

std::vector<int> RankSelection::ranks() const {
  std::vector<int> out = suspects;
  out.insert(out.end(), typical.begin(), typical.end());
  return out;
}

bool RankSelection::keeps(int rank) const {
  return all || std::find(suspects.begin(), suspects.end(), rank) != suspects.end() ||
         std::find(typical.begin(), typical.end(), rank) != typical.end();
}

std::string RankSelection::describe() const {
  if (all) return "";
  std::string out = ranks().size() == 1 ? "rank " : "ranks ";
  if (!suspects.empty()) {
    out += joined(suspects) + (suspects.size() == 1 ? " (stall suspect)" : " (stall suspects)");
  }
  if (!typical.empty()) out += (suspects.empty() ? "" : ", ") + joined(typical) + " (typical)";
  return out + " of " + std::to_string(total_ranks);
}

RankSelection select_ranks(const RunAnalysis& analysis, const RankSelectionLimits& limits,
                           bool all_ranks) {
  RankSelection selection;
  selection.total_ranks = analysis.data.ranks.size();
  std::uint64_t spans = 0;
  for (const auto& [rank, data] : analysis.data.ranks) spans += data.spans.size();
  if (all_ranks ||
      (selection.total_ranks <= limits.all_ranks_up_to && spans <= limits.span_budget)) {
    return selection;
  }
  selection.all = false;
  std::uint64_t kept_spans = 0;
  const auto fits = [&](int rank) {
    const std::uint64_t more = analysis.data.ranks.at(rank).spans.size();
    const bool first = selection.suspects.empty() && selection.typical.empty();
    if (!first && kept_spans + more > limits.span_budget) return false;
    kept_spans += more;
    return true;
  };
  // A group suspect (a node, a stage) brings up to 4 of its ranks.
  constexpr std::size_t kRanksPerGroup = 4;
  bool full = false;
  for (const StallSuspect& suspect : analysis.stalls.suspects) {
    std::vector<int> ranks = suspect.ranks.empty() ? std::vector<int>{suspect.rank} : suspect.ranks;
    if (ranks.size() > kRanksPerGroup) ranks.resize(kRanksPerGroup);
    for (const int rank : ranks) {
      if (std::find(selection.suspects.begin(), selection.suspects.end(), rank) !=
              selection.suspects.end() ||
          !analysis.data.ranks.count(rank)) {
        continue;
      }
      if (!fits(rank)) {
        full = true;
        break;
      }
      selection.suspects.push_back(rank);
    }
    if (full) break;
  }
  // Typical: the ranks whose median step time is closest to the median of those medians.
  std::vector<std::pair<double, int>> medians;  // step median, rank
  for (const auto& [rank, steps] : analysis.steps) {
    std::vector<double> durations;
    for (const Step& step : steps.steps) durations.push_back(step.duration_ms);
    medians.emplace_back(durations.empty() ? 0.0 : median(durations), rank);
  }
  std::vector<double> values;
  for (const auto& [ms, rank] : medians) values.push_back(ms);
  const double center = values.empty() ? 0.0 : median(values);
  std::stable_sort(medians.begin(), medians.end(), [&](const auto& a, const auto& b) {
    return std::abs(a.first - center) < std::abs(b.first - center);
  });
  std::vector<int> typical;
  for (const auto& [ms, rank] : medians) {
    if (typical.size() >= limits.typical_ranks) break;
    if (std::find(selection.suspects.begin(), selection.suspects.end(), rank) !=
        selection.suspects.end()) {
      continue;
    }
    if (!fits(rank)) break;
    typical.push_back(rank);
  }
  if (typical.empty() && selection.suspects.empty())
    typical.push_back(analysis.data.ranks.begin()->first);
  std::sort(typical.begin(), typical.end());
  selection.typical = std::move(typical);
  return selection;
}

}  // namespace lens::report
