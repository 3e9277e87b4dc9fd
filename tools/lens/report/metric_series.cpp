// Histogram deltas and percentiles (see metric_series.hpp).
#include "report/metric_series.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

namespace lens::report {
namespace {

// True when `current` continues `previous` (same stream start, no counter went down).
bool continues(const HistogramPoint& previous, const HistogramPoint& current) {
  if (previous.start_ns != current.start_ns || previous.bounds != current.bounds ||
      previous.bucket_counts.size() != current.bucket_counts.size() ||
      current.count < previous.count) {
    return false;
  }
  for (std::size_t i = 0; i < current.bucket_counts.size(); ++i) {
    if (current.bucket_counts[i] < previous.bucket_counts[i]) return false;
  }
  return true;
}

void add_into(HistogramPoint& total, const HistogramPoint& point) {
  total.count += point.count;
  total.sum += point.sum;
  for (std::size_t i = 0; i < total.bucket_counts.size(); ++i) {
    total.bucket_counts[i] += point.bucket_counts[i];
  }
}

}  // namespace

std::vector<HistogramPoint> histogram_deltas(std::vector<HistogramPoint> points) {
  std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return std::tie(a.stream, a.time_ns) < std::tie(b.stream, b.time_ns);
  });
  std::vector<HistogramPoint> out;
  const HistogramPoint* previous = nullptr;
  for (const HistogramPoint& point : points) {
    if (previous != nullptr && previous->stream != point.stream) previous = nullptr;
    HistogramPoint delta = point;
    if (point.cumulative && previous != nullptr && previous->cumulative &&
        continues(*previous, point)) {
      delta.start_ns = previous->time_ns;
      delta.count = point.count - previous->count;
      delta.sum = point.sum - previous->sum;
      for (std::size_t i = 0; i < delta.bucket_counts.size(); ++i) {
        delta.bucket_counts[i] = point.bucket_counts[i] - previous->bucket_counts[i];
      }
    }
    delta.cumulative = false;
    previous = &point;
    if (delta.count > 0) out.push_back(std::move(delta));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; });
  return out;
}

double histogram_quantile(const HistogramPoint& point, double q) {
  std::uint64_t total = 0;
  for (const std::uint64_t c : point.bucket_counts) total += c;
  if (total == 0) return 0.0;
  const double target = std::clamp(q, 0.0, 1.0) * static_cast<double>(total);
  double seen = 0.0;
  const std::size_t buckets = point.bucket_counts.size();
  for (std::size_t i = 0; i < buckets; ++i) {
    const auto count = static_cast<double>(point.bucket_counts[i]);
    if (count == 0.0 || seen + count < target) {
      seen += count;
      continue;
    }
    if (point.bounds.empty()) return total > 0 ? point.sum / static_cast<double>(total) : 0.0;
    const double upper = i < point.bounds.size() ? point.bounds[i] : point.bounds.back();
    double lower = i == 0 ? std::min(0.0, point.bounds.front()) : point.bounds[i - 1];
    if (i >= point.bounds.size()) lower = point.bounds.back();
    return lower + (upper - lower) * ((target - seen) / count);
  }
  return point.bounds.empty() ? 0.0 : point.bounds.back();
}

std::vector<PercentilePoint> histogram_percentiles(const std::map<int, RankData>& ranks,
                                                   const std::string& metric) {
  std::vector<std::pair<int, HistogramPoint>> deltas;
  for (const auto& [rank, data] : ranks) {
    auto it = data.histograms.find(metric);
    if (it == data.histograms.end()) continue;
    for (HistogramPoint& point : histogram_deltas(it->second)) {
      deltas.emplace_back(rank, std::move(point));
    }
  }
  std::stable_sort(deltas.begin(), deltas.end(), [](const auto& a, const auto& b) {
    return a.second.time_ns < b.second.time_ns;
  });
  std::vector<PercentilePoint> out;
  std::optional<HistogramPoint> round;
  std::set<int> round_ranks;
  auto close_round = [&] {
    if (!round) return;
    PercentilePoint p;
    p.time_ns = round->time_ns;
    p.count = round->count;
    p.mean = round->count > 0 ? round->sum / static_cast<double>(round->count) : 0.0;
    p.p50 = histogram_quantile(*round, 0.50);
    p.p90 = histogram_quantile(*round, 0.90);
    p.p99 = histogram_quantile(*round, 0.99);
    out.push_back(p);
    round.reset();
    round_ranks.clear();
  };
  for (const auto& [rank, point] : deltas) {
    if (round && (round_ranks.count(rank) != 0 || round->bounds != point.bounds ||
                  round->bucket_counts.size() != point.bucket_counts.size())) {
      close_round();
    }
    if (!round) {
      round = point;
    } else {
      add_into(*round, point);
      round->time_ns = point.time_ns;
    }
    round_ranks.insert(rank);
  }
  close_round();
  return out;
}

}  // namespace lens::report
