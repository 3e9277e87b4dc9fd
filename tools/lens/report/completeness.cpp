// Telemetry completeness (see completeness.hpp).
#include "report/completeness.hpp"

#include <utility>

namespace lens::report {
namespace {

// Beyond this many ranks a sentence names the first ones and counts the rest.
constexpr std::size_t kNamedRanks = 8;

struct SignalNames {
  const char* self_metric;  // the signal attribute of the lens.exporter.* counters
  const char* shown;
};
constexpr SignalNames kSignals[] = {
    {"traces", "spans"}, {"metrics", "metric points"}, {"logs", "log records"}};

std::uint64_t received_of(const RankData& rank, const std::string& self_metric) {
  if (self_metric == "traces") return rank.spans.size();
  if (self_metric == "metrics") return rank.metric_points;
  return rank.log_records;
}

// "rank 1 (1560 spans), rank 4 (3 log records)"
std::string listed(const std::vector<std::pair<int, std::string>>& entries) {
  std::string out;
  for (std::size_t i = 0; i < entries.size() && i < kNamedRanks; ++i) {
    out += (i == 0 ? "rank " : ", rank ") + std::to_string(entries[i].first) + " (" +
           entries[i].second + ")";
  }
  if (entries.size() > kNamedRanks) {
    out += " and " + std::to_string(entries.size() - kNamedRanks) + " more ranks";
  }
  return out;
}

std::string counts(const std::vector<std::pair<std::uint64_t, std::string>>& parts) {
  std::string out;
  for (const auto& [count, what] : parts) {
    if (count == 0) continue;
    // "1 span", "2 spans": every signal name is a plural ending in s.
    out += (out.empty() ? "" : ", ") + std::to_string(count) + " " +
           (count == 1 ? what.substr(0, what.size() - 1) : what);
  }
  return out;
}

}  // namespace

std::optional<bool> RankCompleteness::complete() const {
  bool known = true;
  for (const SignalCompleteness& signal : signals) {
    if (signal.dropped > 0 || signal.missing > 0) return false;
    known = known && signal.reported;
  }
  return known ? std::optional<bool>(true) : std::nullopt;
}

Completeness telemetry_completeness(const RunData& data, const std::vector<int>& missing_ranks) {
  Completeness out;
  out.silent_ranks = missing_ranks;
  for (const auto& [rank, rank_data] : data.ranks) {
    RankCompleteness row;
    row.rank = rank;
    for (const SignalNames& names : kSignals) {
      SignalCompleteness signal;
      signal.signal = names.shown;
      signal.received = received_of(rank_data, names.self_metric);
      if (const auto it = rank_data.reported.find(names.self_metric);
          it != rank_data.reported.end()) {
        signal.reported = true;
        signal.exported = it->second.exported;
        signal.failed = it->second.failed;
        // Metric points are lost only in failed exports: their dropped is their failed.
        signal.dropped = names.self_metric == std::string("metrics") ? it->second.failed
                                                                     : it->second.dropped;
        signal.missing = signal.exported > signal.received ? signal.exported - signal.received : 0;
        out.any_reported = true;
      }
      if (signal.reported || signal.received > 0) row.signals.push_back(std::move(signal));
    }
    out.ranks.push_back(std::move(row));
  }
  return out;
}

std::vector<std::string> completeness_lines(const Completeness& completeness) {
  std::vector<std::pair<int, std::string>> dropped;
  std::vector<std::pair<int, std::string>> missing;
  for (const RankCompleteness& rank : completeness.ranks) {
    std::vector<std::pair<std::uint64_t, std::string>> lost;
    std::vector<std::pair<std::uint64_t, std::string>> absent;
    for (const SignalCompleteness& signal : rank.signals) {
      lost.emplace_back(signal.dropped, signal.signal);
      absent.emplace_back(signal.missing, signal.signal);
    }
    if (const std::string text = counts(lost); !text.empty()) dropped.emplace_back(rank.rank, text);
    if (const std::string text = counts(absent); !text.empty()) {
      missing.emplace_back(rank.rank, text);
    }
  }
  std::vector<std::string> lines;
  if (!dropped.empty()) {
    lines.push_back("telemetry lost by the ranks (their own count): " + listed(dropped));
  }
  if (!missing.empty()) {
    lines.push_back("telemetry exported by the ranks and not in this directory: " +
                    listed(missing));
  }
  return lines;
}

}  // namespace lens::report
