// Metrics through setup_telemetry(): exact values after known sequences of operations for each
// instrument kind under cumulative and delta temporality (start times included), histogram
// bucket placement at the boundaries, views, the cardinality limit's overflow series, observable
// callbacks once per collection, concurrent recording, invalid names, and shutdown.
#include <gtest/gtest.h>
#include <opentelemetry/metrics/observer_result.h>
#include <opentelemetry/metrics/sync_instruments.h>
#include <opentelemetry/sdk/metrics/data/metric_data.h>

#include <atomic>
#include <list>
#include <map>
#include <thread>

#include "lens/metric_setup.hpp"
#include "lens/metrics.hpp"
#include "lens/span.hpp"
#include "lens/telemetry.hpp"
#include "lens/testing/manual_metric_reader.hpp"
#include "unit/metrics/metrics_test_support.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

namespace nostd = opentelemetry::nostd;
using test_support::find_metric;
using testing::ManualMetricReader;

struct PipelineRig {
  TelemetryHandle handle;
  std::shared_ptr<ManualMetricReader> reader;
};

PipelineRig set_up(TemporalityPreference temporality, std::vector<metrics::MetricView> views = {}) {
  PipelineRig s;
  s.reader = std::make_shared<ManualMetricReader>(temporality);
  s.handle = test_support::setup_metrics_only("metrics-run", {s.reader}, std::move(views));
  return s;
}

template <class T>
const T& only_point(const sdkmetrics::MetricData* metric) {
  EXPECT_NE(metric, nullptr);
  EXPECT_EQ(metric->point_data_attr_.size(), 1U);
  return nostd::get<T>(metric->point_data_attr_.at(0).point_data);
}

class MetricsPipeline : public ::testing::Test {
 protected:
  void TearDown() override {
    for (auto& s : setups_) EXPECT_TRUE(s.handle.shutdown(std::chrono::milliseconds(2000)).ok());
  }
  PipelineRig& make(TemporalityPreference t, std::vector<metrics::MetricView> views = {}) {
    setups_.push_back(set_up(t, std::move(views)));
    return setups_.back();
  }
  std::list<PipelineRig> setups_;
};

TEST_F(MetricsPipeline, CounterCumulativeKeepsItsStartAndSums) {
  PipelineRig& s = make(TemporalityPreference::cumulative);
  auto counter = s.handle.meter()->CreateUInt64Counter("test.counter", "d", "{item}");
  counter->Add(1);
  counter->Add(2);
  counter->Add(3);
  auto first = s.reader->collect();
  const auto* m1 = find_metric(first, "test.counter");
  ASSERT_NE(m1, nullptr);
  EXPECT_EQ(m1->aggregation_temporality, sdkmetrics::AggregationTemporality::kCumulative);
  EXPECT_EQ(nostd::get<std::int64_t>(only_point<sdkmetrics::SumPointData>(m1).value_), 6);
  EXPECT_TRUE(only_point<sdkmetrics::SumPointData>(m1).is_monotonic_);
  EXPECT_EQ(m1->instrument_descriptor.unit_, "{item}");
  counter->Add(4);
  auto second = s.reader->collect();
  const auto* m2 = find_metric(second, "test.counter");
  EXPECT_EQ(nostd::get<std::int64_t>(only_point<sdkmetrics::SumPointData>(m2).value_), 10);
  EXPECT_EQ(m2->start_ts, m1->start_ts);
  EXPECT_GT(m2->end_ts.time_since_epoch(), m1->end_ts.time_since_epoch());
  EXPECT_EQ(s.reader->scopes().at(0), "nemo.lens");
}

TEST_F(MetricsPipeline, CounterDeltaResetsAndStartsWhereTheLastEnded) {
  PipelineRig& s = make(TemporalityPreference::delta);
  auto counter = s.handle.meter()->CreateDoubleCounter("test.delta");
  counter->Add(1.5);
  counter->Add(2.5);
  auto first = s.reader->collect();
  const auto* m1 = find_metric(first, "test.delta");
  ASSERT_NE(m1, nullptr);
  EXPECT_EQ(m1->aggregation_temporality, sdkmetrics::AggregationTemporality::kDelta);
  EXPECT_EQ(nostd::get<double>(only_point<sdkmetrics::SumPointData>(m1).value_), 4.0);
  counter->Add(0.25);
  auto second = s.reader->collect();
  const auto* m2 = find_metric(second, "test.delta");
  EXPECT_EQ(nostd::get<double>(only_point<sdkmetrics::SumPointData>(m2).value_), 0.25);
  // opentelemetry-cpp 1.19 does not start a delta interval exactly where the previous one
  // ended (it may reuse the previous start, or a time shortly before the previous end).
  EXPECT_GE(m2->start_ts.time_since_epoch(), m1->start_ts.time_since_epoch());
  EXPECT_LE(m2->start_ts.time_since_epoch(), m1->end_ts.time_since_epoch());
}

TEST_F(MetricsPipeline, UpDownCounterStaysCumulativeUnderDelta) {
  PipelineRig& s = make(TemporalityPreference::delta);
  auto counter = s.handle.meter()->CreateInt64UpDownCounter("test.updown");
  counter->Add(5);
  counter->Add(-2);
  auto first = s.reader->collect();
  const auto* m1 = find_metric(first, "test.updown");
  ASSERT_NE(m1, nullptr);
  EXPECT_EQ(m1->aggregation_temporality, sdkmetrics::AggregationTemporality::kCumulative);
  EXPECT_EQ(nostd::get<std::int64_t>(only_point<sdkmetrics::SumPointData>(m1).value_), 3);
  EXPECT_FALSE(only_point<sdkmetrics::SumPointData>(m1).is_monotonic_);
  counter->Add(-4);
  auto second = s.reader->collect();
  EXPECT_EQ(nostd::get<std::int64_t>(
                only_point<sdkmetrics::SumPointData>(find_metric(second, "test.updown")).value_),
            -1);
}

TEST_F(MetricsPipeline, HistogramBucketsAtTheDefaultBoundaries) {
  for (auto temporality : {TemporalityPreference::cumulative, TemporalityPreference::delta}) {
    PipelineRig& s = make(temporality);
    auto histogram = s.handle.meter()->CreateDoubleHistogram("test.histogram", "", "ms");
    // Buckets are (-inf, 0], (0, 5], (5, 10], ... (7500, 10000], (10000, +inf).
    for (double v : {0.0, 5.0, 5.5, 10.0, 10000.0, 10000.5}) {
      histogram->Record(v, opentelemetry::context::Context{});
    }
    auto first = s.reader->collect();
    const auto& point =
        only_point<sdkmetrics::HistogramPointData>(find_metric(first, "test.histogram"));
    EXPECT_EQ(point.boundaries_, metrics::default_histogram_boundaries());
    std::vector<std::uint64_t> expected(16, 0);
    expected[0] = 1;
    expected[1] = 1;
    expected[2] = 2;
    expected[14] = 1;
    expected[15] = 1;
    EXPECT_EQ(point.counts_, expected);
    EXPECT_EQ(point.count_, 6U);
    EXPECT_EQ(nostd::get<double>(point.sum_), 20021.0);
    EXPECT_EQ(nostd::get<double>(point.min_), 0.0);
    EXPECT_EQ(nostd::get<double>(point.max_), 10000.5);
    histogram->Record(1.0, opentelemetry::context::Context{});
    auto second = s.reader->collect();
    const auto& next =
        only_point<sdkmetrics::HistogramPointData>(find_metric(second, "test.histogram"));
    const bool delta = temporality == TemporalityPreference::delta;
    EXPECT_EQ(next.count_, delta ? 1U : 7U);
    EXPECT_EQ(next.counts_[1], delta ? 1U : 2U);
    EXPECT_EQ(nostd::get<double>(next.sum_), delta ? 1.0 : 20022.0);
    s.handle.shutdown(std::chrono::milliseconds(2000)).ok();
  }
}

TEST_F(MetricsPipeline, HistogramViewSetsBoundariesAndDropsMinMax) {
  std::vector<metrics::MetricView> views;
  views.push_back(metrics::histogram_view("test.custom", {1.0, 2.0}, false));
  PipelineRig& s = make(TemporalityPreference::cumulative, std::move(views));
  auto histogram = s.handle.meter()->CreateUInt64Histogram("test.custom");
  for (std::uint64_t v : {1U, 2U, 3U, 3U}) histogram->Record(v, opentelemetry::context::Context{});
  auto data = s.reader->collect();
  const auto& point = only_point<sdkmetrics::HistogramPointData>(find_metric(data, "test.custom"));
  EXPECT_EQ(point.boundaries_, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(point.counts_, (std::vector<std::uint64_t>{1, 1, 2}));
  EXPECT_EQ(nostd::get<std::int64_t>(point.sum_), 9);
  EXPECT_FALSE(point.record_min_max_);
}

TEST_F(MetricsPipeline, GaugeReportsTheLastValuePerAttributeSet) {
  PipelineRig& s = make(TemporalityPreference::delta);
  auto meter = s.handle.meter();
  auto gauge = metrics::create_double_gauge(*meter, "test.gauge", "", "GiB");
  gauge.record(1.5);
  gauge.record(2.5);
  gauge.record(7.0, {{"device", std::int64_t{1}}});
  auto first = s.reader->collect();
  const auto* metric = find_metric(first, "test.gauge");
  ASSERT_NE(metric, nullptr);
  ASSERT_EQ(metric->point_data_attr_.size(), 2U);
  std::map<std::size_t, double> by_size;
  for (const auto& point : metric->point_data_attr_) {
    by_size[point.attributes.size()] =
        nostd::get<double>(nostd::get<sdkmetrics::LastValuePointData>(point.point_data).value_);
  }
  EXPECT_EQ(by_size[0], 2.5);
  EXPECT_EQ(by_size[1], 7.0);
  // Reported again at the next collection, with the value recorded since.
  gauge.record(3.0);
  auto second = s.reader->collect();
  EXPECT_EQ(find_metric(second, "test.gauge")->point_data_attr_.size(), 2U);
}

// Every kind of attribute value reaches the export, arrays of booleans and strings included.
TEST_F(MetricsPipeline, GaugeExportsBoolAndArrayAttributes) {
  PipelineRig& s = make(TemporalityPreference::cumulative);
  auto gauge = metrics::create_double_gauge(*s.handle.meter(), "test.gauge.attributes");
  gauge.record(4.0, {{"healthy", true},
                     {"flags", std::vector<bool>{true, false}},
                     {"devices", std::vector<std::string>{"gpu0", "gpu1"}}});
  auto data = s.reader->collect();
  const auto* metric = find_metric(data, "test.gauge.attributes");
  ASSERT_NE(metric, nullptr);
  ASSERT_EQ(metric->point_data_attr_.size(), 1U);
  const auto& point = metric->point_data_attr_.at(0).attributes;
  ASSERT_EQ(point.size(), 3U);
  EXPECT_EQ(nostd::get<bool>(point.at("healthy")), true);
  EXPECT_EQ(nostd::get<std::vector<bool>>(point.at("flags")), (std::vector<bool>{true, false}));
  EXPECT_EQ(nostd::get<std::vector<std::string>>(point.at("devices")),
            (std::vector<std::string>{"gpu0", "gpu1"}));
}

TEST_F(MetricsPipeline, OverflowSeriesAtTheCardinalityLimit) {
  PipelineRig& s = make(TemporalityPreference::cumulative);
  auto counter = s.handle.meter()->CreateUInt64Counter("test.cardinality");
  for (int i = 0; i < 2100; ++i) {
    counter->Add(1, {{"id", i}});
  }
  auto data = s.reader->collect();
  const auto* metric = find_metric(data, "test.cardinality");
  ASSERT_NE(metric, nullptr);
  // opentelemetry-cpp 1.19 (limit 2000, not configurable) keeps 1998 series of their own plus
  // the overflow series: one fewer than the specification's limit.
  ASSERT_EQ(metric->point_data_attr_.size(), 1999U);
  std::int64_t overflow = -1;
  std::int64_t total = 0;
  for (const auto& point : metric->point_data_attr_) {
    const auto value =
        nostd::get<std::int64_t>(nostd::get<sdkmetrics::SumPointData>(point.point_data).value_);
    total += value;
    if (point.attributes.count("otel.metric.overflow") == 1) {
      EXPECT_EQ(point.attributes.size(), 1U);
      EXPECT_TRUE(nostd::get<bool>(point.attributes.at("otel.metric.overflow")));
      overflow = value;
    }
    EXPECT_EQ(point.attributes.count("otel.metrics.overflow"), 0U);
  }
  // opentelemetry-cpp 1.19 re-creates the overflow aggregation for every new attribute set past
  // the limit, so the overflow series holds only the last of those measurements (upstream
  // bug; docs/metrics.md). Pinned here so that an SDK upgrade that fixes it shows up.
  EXPECT_EQ(overflow, 1);
  EXPECT_EQ(total, 1999);
}

TEST_F(MetricsPipeline, ObservableCallbackRunsOncePerCollection) {
  PipelineRig& s = make(TemporalityPreference::cumulative);
  struct State {
    std::atomic<int> calls{0};
  } state;
  auto observable = s.handle.meter()->CreateInt64ObservableCounter("test.observed");
  auto callback = [](opentelemetry::metrics::ObserverResult result, void* p) {
    auto* st = static_cast<State*>(p);
    const int n = ++st->calls;
    nostd::get<nostd::shared_ptr<opentelemetry::metrics::ObserverResultT<std::int64_t>>>(result)
        ->Observe(n * 10);
  };
  observable->AddCallback(callback, &state);
  auto first = s.reader->collect();
  EXPECT_EQ(state.calls.load(), 1);
  EXPECT_EQ(nostd::get<std::int64_t>(
                only_point<sdkmetrics::SumPointData>(find_metric(first, "test.observed")).value_),
            10);
  auto second = s.reader->collect();
  EXPECT_EQ(state.calls.load(), 2);
  EXPECT_EQ(nostd::get<std::int64_t>(
                only_point<sdkmetrics::SumPointData>(find_metric(second, "test.observed")).value_),
            20);
  observable->RemoveCallback(callback, &state);
}

TEST_F(MetricsPipeline, ConcurrentRecordingSumsExactly) {
  PipelineRig& s = make(TemporalityPreference::cumulative);
  auto counter = s.handle.meter()->CreateUInt64Counter("test.concurrent");
  auto histogram = s.handle.meter()->CreateDoubleHistogram("test.concurrent.histogram");
  constexpr int kThreads = 4;
  constexpr int kAdds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAdds; ++i) {
        counter->Add(1, {{"thread", t % 2}});
        histogram->Record(2.0, opentelemetry::context::Context{});
      }
    });
  }
  // Collections race with the recording threads and lose nothing.
  for (int i = 0; i < 5; ++i) s.reader->collect();
  for (auto& thread : threads) thread.join();
  auto data = s.reader->collect();
  std::int64_t total = 0;
  for (const auto& point : find_metric(data, "test.concurrent")->point_data_attr_) {
    const auto v =
        nostd::get<std::int64_t>(nostd::get<sdkmetrics::SumPointData>(point.point_data).value_);
    EXPECT_EQ(v, 2 * kAdds);
    total += v;
  }
  EXPECT_EQ(total, kThreads * kAdds);
  const auto& h =
      only_point<sdkmetrics::HistogramPointData>(find_metric(data, "test.concurrent.histogram"));
  EXPECT_EQ(h.count_, static_cast<std::uint64_t>(kThreads * kAdds));
  EXPECT_EQ(nostd::get<double>(h.sum_), 2.0 * kThreads * kAdds);
}

TEST_F(MetricsPipeline, InvalidInstrumentNameGivesANoopInstrument) {
  PipelineRig& s = make(TemporalityPreference::cumulative);
  auto counter = s.handle.meter()->CreateUInt64Counter("1-starts-with-a-digit");
  ASSERT_NE(counter, nullptr);
  counter->Add(5);
  auto data = s.reader->collect();
  EXPECT_EQ(find_metric(data, "1-starts-with-a-digit"), nullptr);
}

TEST_F(MetricsPipeline, SelfMetricsCountExportsPerSignal) {
  PipelineRig& s = make(TemporalityPreference::cumulative);
  auto data = s.reader->collect();
  for (const char* name :
       {"lens.exporter.exported", "lens.exporter.failed", "lens.exporter.dropped"}) {
    const auto* metric = find_metric(data, name);
    ASSERT_NE(metric, nullptr) << name;
    ASSERT_EQ(metric->point_data_attr_.size(), 1U) << name;  // metrics only: traces and logs off
    EXPECT_EQ(nostd::get<std::string>(metric->point_data_attr_[0].attributes.at("signal")),
              "metrics");
  }
  EXPECT_NE(find_metric(data, "lens.queue.size"), nullptr);
  // Traces and logs off: no limit counts.
  EXPECT_EQ(find_metric(data, "lens.limits.dropped"), nullptr);
  EXPECT_EQ(find_metric(data, "lens.limits.truncated_values"), nullptr);
}

// With traces on, what the span limits cut is counted per item, and cut values on their own.
TEST_F(MetricsPipeline, SelfMetricsCountWhatTheSpanLimitsCut) {
  Config config = test_support::metrics_only_config("limits-run");
  config.traces_enabled = true;
  config.span_groups = "all";
  config.otel.limits.span_attribute_count = {std::int64_t{1}, "test"};
  config.otel.limits.attribute_value_length = {std::int64_t{2}, "test"};
  auto reader = std::make_shared<ManualMetricReader>();
  SetupOverrides overrides;
  overrides.env = Env::from({});
  overrides.metric_readers.push_back(reader);
  auto made = setup_telemetry(config, test_support::rank_of(0, 1), {}, std::move(overrides));
  ASSERT_TRUE(made.ok()) << made.message();
  TelemetryHandle handle = *made;
  { LENS_SPAN(lens::SpanSite("limited", "step"), {"kept", "long"}, {"cut", 1}); }
  ASSERT_TRUE(handle.force_flush(std::chrono::milliseconds(5000)).ok());
  const auto data = reader->collect();
  const auto* dropped = find_metric(data, "lens.limits.dropped");
  ASSERT_NE(dropped, nullptr);
  std::map<std::string, std::int64_t> by_item;
  for (const auto& point : dropped->point_data_attr_) {
    by_item[nostd::get<std::string>(point.attributes.at("item"))] =
        nostd::get<std::int64_t>(nostd::get<sdkmetrics::SumPointData>(point.point_data).value_);
  }
  EXPECT_EQ(by_item,
            (std::map<std::string, std::int64_t>{{"attribute", 1}, {"event", 0}, {"link", 0}}));
  const auto& truncated =
      only_point<sdkmetrics::SumPointData>(find_metric(data, "lens.limits.truncated_values"));
  EXPECT_EQ(nostd::get<std::int64_t>(truncated.value_), 1);
  EXPECT_TRUE(handle.shutdown(std::chrono::milliseconds(2000)).ok());
}

TEST_F(MetricsPipeline, NonExportingRankHasANoopMeter) {
  Config config = test_support::metrics_only_config("metrics-run");
  config.rank_strategy = "single_rank";
  auto reader = std::make_shared<ManualMetricReader>();
  SetupOverrides overrides;
  overrides.env = Env::from({});
  overrides.metric_readers.push_back(reader);
  auto made = setup_telemetry(config, test_support::rank_of(0, 2), {}, std::move(overrides));
  ASSERT_TRUE(made.ok());
  made->meter()->CreateUInt64Counter("x")->Add(1);
  EXPECT_TRUE(reader->collect().empty());
  EXPECT_TRUE(made->shutdown().ok());
}

}  // namespace
}  // namespace lens
