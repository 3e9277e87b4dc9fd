// Training metrics over time: cumulative and delta histograms give the same deltas and
// percentiles, resets are taken as new starts, and bucket interpolation.
#include "report/metric_series.hpp"

#include <gtest/gtest.h>

#include "report/run_builder.hpp"
#include "report_fixtures.hpp"

namespace lens::report {
namespace {

using testing::RunSpec;

RunData build_metrics(const RunSpec& spec, bool cumulative) {
  RunBuilder builder;
  for (const auto& request : testing::make_metrics(spec, cumulative)) builder.on_metrics(request);
  return builder.take();
}

HistogramPoint point(std::int64_t start, std::int64_t time, std::vector<std::uint64_t> buckets,
                     bool cumulative) {
  HistogramPoint p;
  p.cumulative = cumulative;
  p.start_ns = start;
  p.time_ns = time;
  p.bounds = {10, 20, 30};
  p.bucket_counts = std::move(buckets);
  for (const auto c : p.bucket_counts) p.count += c;
  p.sum = static_cast<double>(p.count) * 15.0;
  return p;
}

TEST(ReportMetricSeries, CumulativePointsBecomeDeltas) {
  const auto deltas =
      histogram_deltas({point(0, 100, {0, 2, 0, 0}, true), point(0, 200, {0, 5, 1, 0}, true),
                        point(0, 300, {0, 5, 1, 0}, true)});
  ASSERT_EQ(deltas.size(), 2u);  // the third point adds nothing
  EXPECT_EQ(deltas[0].bucket_counts, (std::vector<std::uint64_t>{0, 2, 0, 0}));
  EXPECT_EQ(deltas[1].bucket_counts, (std::vector<std::uint64_t>{0, 3, 1, 0}));
  EXPECT_EQ(deltas[1].count, 4u);
  EXPECT_EQ(deltas[1].start_ns, 100);
}

TEST(ReportMetricSeries, ANewStartTimeOrAFallingCountIsAReset) {
  const auto deltas =
      histogram_deltas({point(0, 100, {0, 4, 0, 0}, true), point(150, 200, {1, 0, 0, 0}, true),
                        point(150, 300, {0, 0, 0, 1}, true)});
  ASSERT_EQ(deltas.size(), 3u);
  EXPECT_EQ(deltas[1].bucket_counts, (std::vector<std::uint64_t>{1, 0, 0, 0}));
  EXPECT_EQ(deltas[2].bucket_counts, (std::vector<std::uint64_t>{0, 0, 0, 1}));
}

TEST(ReportMetricSeries, DeltaPointsAreKeptAsTheyAre) {
  const auto deltas =
      histogram_deltas({point(0, 100, {0, 2, 0, 0}, false), point(100, 200, {0, 2, 0, 0}, false)});
  ASSERT_EQ(deltas.size(), 2u);
  EXPECT_EQ(deltas[1].bucket_counts, (std::vector<std::uint64_t>{0, 2, 0, 0}));
}

TEST(ReportMetricSeries, QuantilesInterpolateInsideTheBucket) {
  const HistogramPoint p = point(0, 1, {0, 10, 0, 0}, false);  // 10 values in (10, 20]
  EXPECT_DOUBLE_EQ(histogram_quantile(p, 0.5), 15.0);
  EXPECT_DOUBLE_EQ(histogram_quantile(p, 0.9), 19.0);
  EXPECT_DOUBLE_EQ(histogram_quantile(point(0, 1, {4, 0, 0, 0}, false), 0.5), 5.0);
  EXPECT_DOUBLE_EQ(histogram_quantile(point(0, 1, {0, 0, 0, 4}, false), 0.99), 30.0);
  EXPECT_DOUBLE_EQ(histogram_quantile(point(0, 1, {0, 0, 0, 0}, false), 0.5), 0.0);
}

TEST(ReportMetricSeries, CumulativeAndDeltaRunsGiveTheSamePercentiles) {
  const RunSpec spec{
      .ranks = 4, .iterations = 20, .slow_rank = 3, .slow_ms = 100, .synchronous = false};
  const auto cumulative =
      histogram_percentiles(build_metrics(spec, true).ranks, kStepDurationMetric);
  const auto delta = histogram_percentiles(build_metrics(spec, false).ranks, kStepDurationMetric);
  ASSERT_EQ(cumulative.size(), 4u);  // one round per log interval
  ASSERT_EQ(delta.size(), cumulative.size());
  for (std::size_t i = 0; i < delta.size(); ++i) {
    EXPECT_EQ(delta[i].count, 20u);
    EXPECT_EQ(cumulative[i].count, 20u);
    EXPECT_DOUBLE_EQ(delta[i].p50, cumulative[i].p50);
    EXPECT_DOUBLE_EQ(delta[i].p99, cumulative[i].p99);
    EXPECT_DOUBLE_EQ(delta[i].mean, cumulative[i].mean);
  }
  // 15 steps of 290 ms in (200, 300], 5 of 390 ms in (300, 400].
  EXPECT_DOUBLE_EQ(delta[0].mean, (15 * 290.0 + 5 * 390.0) / 20);
  EXPECT_NEAR(delta[0].p50, 200 + 100 * (10.0 / 15.0), 1e-9);
  EXPECT_NEAR(delta[0].p90, 300 + 100 * (3.0 / 5.0), 1e-9);
}

TEST(ReportMetricSeries, GaugesAreKeptPerRank) {
  const RunData data = build_metrics({.ranks = 2, .iterations = 10}, false);
  ASSERT_EQ(data.ranks.size(), 2u);
  const auto& loss = data.ranks.at(1).gauges.at("megatron.training.loss");
  ASSERT_EQ(loss.size(), 2u);
  EXPECT_DOUBLE_EQ(loss[0].value, 9.5);
  EXPECT_DOUBLE_EQ(loss[1].value, 9.0);
  EXPECT_EQ(data.ranks.at(1).metric_points, 8u);
}

}  // namespace
}  // namespace lens::report
