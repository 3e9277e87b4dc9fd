// Text summary (see summary.hpp).
#include "report/summary.hpp"

#include <algorithm>
#include <cstdio>

#include "report/statistics.hpp"

namespace lens::report {
namespace {

// Beyond this many ranks the step-time line lists the slowest ones only.
constexpr std::size_t kListedRanks = 16;

std::string ms_pair(double median_ms, double p90_ms) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.1f/%.1f", median_ms, p90_ms);
  return buffer;
}

std::string ranks_line(const RunAnalysis& analysis) {
  const RunInfo& info = analysis.info;
  std::string line = "ranks: " + std::to_string(analysis.data.ranks.size());
  if (info.world_size) line += " of world size " + std::to_string(*info.world_size);
  if (!info.missing_ranks.empty()) {
    line += " (missing:";
    for (std::size_t i = 0; i < info.missing_ranks.size() && i < kListedRanks; ++i) {
      line += " " + std::to_string(info.missing_ranks[i]);
    }
    if (info.missing_ranks.size() > kListedRanks) line += " ...";
    line += ")";
  }
  line += ", iterations: ";
  if (analysis.iterations.empty()) {
    line += "none";
  } else {
    line += std::to_string(analysis.iterations.size()) + " (" +
            std::to_string(*analysis.iterations.begin()) + "-" +
            std::to_string(*analysis.iterations.rbegin()) + ")";
  }
  line += ", spans: " + std::to_string(analysis.span_count) +
          ", metric points: " + std::to_string(analysis.metric_points) +
          ", log records: " + std::to_string(analysis.log_records);
  return line;
}

std::string step_line(const RunAnalysis& analysis) {
  struct Entry {
    int rank;
    double median_ms;
    double p90_ms;
  };
  std::vector<Entry> entries;
  for (const auto& [rank, steps] : analysis.steps) {
    std::vector<double> durations;
    for (const Step& step : steps.steps) durations.push_back(step.duration_ms);
    if (durations.empty()) continue;
    entries.push_back({rank, median(durations), quantile(durations, 0.9)});
  }
  if (entries.empty()) return "step time: no megatron.train_step spans";
  std::string line = "step time ms (median/p90):";
  if (entries.size() > kListedRanks) {
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return a.median_ms > b.median_ms; });
    line = "step time ms (median/p90), slowest " + std::to_string(kListedRanks) + " of " +
           std::to_string(entries.size()) + " ranks:";
    entries.resize(kListedRanks);
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    line += (i == 0 ? " rank " : ", rank ") + std::to_string(entries[i].rank) + " " +
            ms_pair(entries[i].median_ms, entries[i].p90_ms);
  }
  return line;
}

}  // namespace

std::vector<std::string> summary_lines(const RunAnalysis& analysis) {
  std::vector<std::string> lines = stall_lines(analysis.stalls);
  for (std::string& line : completeness_lines(analysis.completeness)) {
    lines.push_back(std::move(line));
  }
  lines.push_back(ranks_line(analysis));
  lines.push_back(step_line(analysis));
  return lines;
}

}  // namespace lens::report
