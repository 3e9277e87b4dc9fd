// Bound counters and histograms (lens/metrics.hpp): exact sums from many threads (also after the
// threads exited), delta resets and cumulative start times through ManualMetricReader, histogram
// buckets at the boundaries with min/max/sum, the fixed attribute set on the data point, the
// per-thread binding cache of Counter::add, the attribute-set limit, no-op instruments, several
// readers, export through setup's periodic reader and file exporter, and fork().
#include <gtest/gtest.h>
#include <opentelemetry/metrics/noop.h>
#include <opentelemetry/sdk/metrics/data/metric_data.h>
#include <opentelemetry/sdk/metrics/view/instrument_selector_factory.h>
#include <opentelemetry/sdk/metrics/view/meter_selector_factory.h>
#include <opentelemetry/sdk/metrics/view/view_factory.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "lens/metric_setup.hpp"
#include "lens/metrics.hpp"
#include "lens/telemetry.hpp"
#include "lens/testing/manual_metric_reader.hpp"
#include "unit/metrics/metrics_test_support.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

namespace nostd = opentelemetry::nostd;
using test_support::collect_metric;
using test_support::find_metric;
using testing::ManualMetricReader;

struct BoundRig {
  TelemetryHandle handle;
  std::vector<std::shared_ptr<ManualMetricReader>> readers;
};

class BoundInstruments : public ::testing::Test {
 protected:
  void TearDown() override {
    for (auto& r : rigs_) EXPECT_TRUE(r.handle.shutdown(std::chrono::milliseconds(2000)).ok());
  }
  BoundRig& make(std::vector<TemporalityPreference> temporalities,
                 std::vector<metrics::MetricView> views = {}) {
    BoundRig rig;
    for (auto t : temporalities) rig.readers.push_back(std::make_shared<ManualMetricReader>(t));
    rig.handle = test_support::setup_metrics_only("bound-run", rig.readers, std::move(views));
    rigs_.push_back(std::move(rig));
    return rigs_.back();
  }
  BoundRig& make(TemporalityPreference t) { return make(std::vector<TemporalityPreference>{t}); }
  std::list<BoundRig> rigs_;
};

std::int64_t sum_of(const sdkmetrics::MetricData* metric, std::size_t i = 0) {
  return nostd::get<std::int64_t>(
      nostd::get<sdkmetrics::SumPointData>(metric->point_data_attr_.at(i).point_data).value_);
}

const sdkmetrics::HistogramPointData& histogram_of(const sdkmetrics::MetricData* metric,
                                                   std::size_t i = 0) {
  return nostd::get<sdkmetrics::HistogramPointData>(metric->point_data_attr_.at(i).point_data);
}
const sdkmetrics::HistogramPointData& histogram_of(
    const std::optional<sdkmetrics::MetricData>& metric) {
  return histogram_of(&metric.value());
}

template <class F>
void in_threads(int n, F f) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(f, i);
  for (auto& t : threads) t.join();
}

TEST_F(BoundInstruments, CounterSumsExactlyFromManyThreadsAfterTheyExit) {
  BoundRig& rig = make(TemporalityPreference::cumulative);
  auto counter = metrics::create_bound_uint64_counter(*rig.handle.meter(), "test.bound.counter",
                                                      {{"rank", std::int64_t{3}}, {"phase", "fwd"}},
                                                      "tokens", "{token}");
  ASSERT_TRUE(counter);
  in_threads(8, [&](int) {
    for (int i = 0; i < 100000; ++i) counter.add(3);
  });
  counter.add(1);  // this thread too
  auto first = rig.readers[0]->collect();
  const auto* m = find_metric(first, "test.bound.counter");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->instrument_descriptor.type_, sdkmetrics::InstrumentType::kObservableCounter);
  EXPECT_EQ(m->instrument_descriptor.unit_, "{token}");
  EXPECT_EQ(m->instrument_descriptor.description_, "tokens");
  EXPECT_EQ(m->aggregation_temporality, sdkmetrics::AggregationTemporality::kCumulative);
  ASSERT_EQ(m->point_data_attr_.size(), 1U);
  EXPECT_EQ(sum_of(m), 2400001);
  const auto& attributes = m->point_data_attr_[0].attributes;
  ASSERT_EQ(attributes.size(), 2U);
  EXPECT_EQ(nostd::get<std::int64_t>(attributes.at("rank")), 3);
  EXPECT_EQ(nostd::get<std::string>(attributes.at("phase")), "fwd");
  // New threads take over the slots of exited ones: nothing is lost.
  in_threads(3, [&](int) { counter.add(2); });
  auto second = rig.readers[0]->collect();
  EXPECT_EQ(sum_of(find_metric(second, "test.bound.counter")), 2400007);
  EXPECT_EQ(rig.readers[0]->scopes().at(0), "nemo.lens");
}

TEST_F(BoundInstruments, CounterDeltaResetsEachCollection) {
  BoundRig& rig = make(TemporalityPreference::delta);
  auto counter = metrics::create_bound_double_counter(*rig.handle.meter(), "test.bound.delta");
  counter.add(1.5);
  counter.add(2.5);
  counter.add(-1.0);  // a counter only grows: ignored, as the SDK does
  auto first = rig.readers[0]->collect();
  const auto* m1 = find_metric(first, "test.bound.delta");
  ASSERT_NE(m1, nullptr);
  EXPECT_EQ(m1->aggregation_temporality, sdkmetrics::AggregationTemporality::kDelta);
  EXPECT_EQ(nostd::get<double>(
                nostd::get<sdkmetrics::SumPointData>(m1->point_data_attr_.at(0).point_data).value_),
            4.0);
  in_threads(2, [&](int) { counter.add(0.25); });
  auto second = rig.readers[0]->collect();
  const auto* m2 = find_metric(second, "test.bound.delta");
  ASSERT_NE(m2, nullptr);
  EXPECT_EQ(nostd::get<double>(
                nostd::get<sdkmetrics::SumPointData>(m2->point_data_attr_.at(0).point_data).value_),
            0.5);
}

TEST_F(BoundInstruments, HistogramBucketsAtTheBoundariesWithMinMaxSum) {
  BoundRig& rig = make(TemporalityPreference::cumulative);
  auto histogram = metrics::create_bound_double_histogram(*rig.handle.meter(), "test.bound.hist",
                                                          {{"phase", "forward"}}, "step", "ms");
  // Default boundaries 0, 5, 10, 25, ..., 10000: a value equal to a boundary falls in the
  // bucket that boundary closes.
  for (double v : {0.0, 5.0, 5.5, 10.0, 10000.0, 10000.5, 2.0}) histogram.record(v);
  histogram.record(-1.0);  // rejected, as the SDK rejects it
  histogram.record(std::numeric_limits<double>::quiet_NaN());
  auto data = rig.readers[0]->collect();
  const auto* m = find_metric(data, "test.bound.hist");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->instrument_descriptor.type_, sdkmetrics::InstrumentType::kHistogram);
  EXPECT_EQ(m->instrument_descriptor.value_type_, sdkmetrics::InstrumentValueType::kDouble);
  EXPECT_EQ(m->instrument_descriptor.unit_, "ms");
  EXPECT_EQ(m->aggregation_temporality, sdkmetrics::AggregationTemporality::kCumulative);
  const auto& h = histogram_of(m);
  EXPECT_EQ(h.boundaries_, metrics::default_histogram_boundaries());
  std::vector<std::uint64_t> expected(16, 0);
  expected[0] = 1;   // 0
  expected[1] = 2;   // 2, 5
  expected[2] = 2;   // 5.5, 10
  expected[14] = 1;  // 10000
  expected[15] = 1;  // 10000.5
  EXPECT_EQ(h.counts_, expected);
  EXPECT_EQ(h.count_, 7U);
  EXPECT_EQ(nostd::get<double>(h.sum_), 20023.0);
  EXPECT_EQ(nostd::get<double>(h.min_), 0.0);
  EXPECT_EQ(nostd::get<double>(h.max_), 10000.5);
  EXPECT_TRUE(h.record_min_max_);
  EXPECT_EQ(nostd::get<std::string>(m->point_data_attr_[0].attributes.at("phase")), "forward");
  EXPECT_EQ(rig.readers[0]->scopes().back(), "nemo.lens");
}

TEST_F(BoundInstruments, ViewsApplyAsToTheSdksHistograms) {
  std::vector<metrics::MetricView> views;
  views.push_back(metrics::histogram_view("test.view.buckets", {1.0, 10.0}));
  for (const auto& [selected, name, aggregation] :
       {std::tuple{"test.view.renamed", "test.view.new_name",
                   sdkmetrics::AggregationType::kDefault},
        std::tuple{"test.view.dropped", "", sdkmetrics::AggregationType::kDrop}}) {
    metrics::MetricView view;
    view.instrument = sdkmetrics::InstrumentSelectorFactory::Create(
        sdkmetrics::InstrumentType::kHistogram, selected, "");
    view.meter = sdkmetrics::MeterSelectorFactory::Create("", "", "");
    view.view = sdkmetrics::ViewFactory::Create(name, "from the view", "", aggregation);
    views.push_back(std::move(view));
  }
  BoundRig& rig = make({TemporalityPreference::cumulative}, std::move(views));
  auto buckets = metrics::create_bound_double_histogram(*rig.handle.meter(), "test.view.buckets");
  auto renamed = metrics::create_bound_uint64_histogram(*rig.handle.meter(), "test.view.renamed",
                                                        {}, "own description");
  auto dropped = metrics::create_bound_double_histogram(*rig.handle.meter(), "test.view.dropped");
  for (double v : {0.5, 1.0, 5.0, 20.0}) buckets.record(v);
  renamed.record(7);
  dropped.record(1.0);
  EXPECT_FALSE(static_cast<bool>(dropped));
  auto data = rig.readers[0]->collect();
  const auto* m = find_metric(data, "test.view.buckets");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(histogram_of(m).boundaries_, (std::vector<double>{1.0, 10.0}));
  EXPECT_EQ(histogram_of(m).counts_, (std::vector<std::uint64_t>{2, 1, 1}));
  const auto* r = find_metric(data, "test.view.new_name");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->instrument_descriptor.description_, "from the view");
  EXPECT_EQ(histogram_of(r).count_, 1U);
  EXPECT_EQ(find_metric(data, "test.view.renamed"), nullptr);
  EXPECT_EQ(find_metric(data, "test.view.dropped"), nullptr);
}

TEST_F(BoundInstruments, HistogramDeltaAndCumulativeStartTimes) {
  BoundRig& rig = make({TemporalityPreference::delta, TemporalityPreference::cumulative});
  auto& delta = *rig.readers[0];
  auto& cumulative = *rig.readers[1];
  const auto before = std::chrono::system_clock::now();
  auto histogram = metrics::create_bound_uint64_histogram(*rig.handle.meter(), "test.bound.uh", {},
                                                          "", "", {10, 20});
  histogram.record(5);
  histogram.record(20);
  const auto md1 = collect_metric(delta, "test.bound.uh");
  const auto mc1 = collect_metric(cumulative, "test.bound.uh");
  ASSERT_TRUE(md1 && mc1);
  EXPECT_EQ(md1->aggregation_temporality, sdkmetrics::AggregationTemporality::kDelta);
  EXPECT_EQ(mc1->aggregation_temporality, sdkmetrics::AggregationTemporality::kCumulative);
  EXPECT_EQ(md1->instrument_descriptor.value_type_, sdkmetrics::InstrumentValueType::kLong);
  // The first interval of each starts at the instrument's creation.
  EXPECT_GE(md1->start_ts.time_since_epoch(), before.time_since_epoch());
  EXPECT_EQ(md1->start_ts, mc1->start_ts);
  EXPECT_EQ(histogram_of(md1).counts_, (std::vector<std::uint64_t>{1, 1, 0}));
  EXPECT_EQ(nostd::get<std::int64_t>(histogram_of(md1).sum_), 25);
  histogram.record(30);
  const auto md2 = collect_metric(delta, "test.bound.uh");
  const auto mc2 = collect_metric(cumulative, "test.bound.uh");
  ASSERT_TRUE(md2 && mc2);
  // Delta: only the new value, from where the previous interval ended.
  EXPECT_EQ(md2->start_ts, md1->end_ts);
  EXPECT_EQ(histogram_of(md2).count_, 1U);
  EXPECT_EQ(histogram_of(md2).counts_, (std::vector<std::uint64_t>{0, 0, 1}));
  EXPECT_EQ(nostd::get<std::int64_t>(histogram_of(md2).min_), 30);
  EXPECT_EQ(nostd::get<std::int64_t>(histogram_of(md2).max_), 30);
  // Cumulative: everything, from the same start.
  EXPECT_EQ(mc2->start_ts, mc1->start_ts);
  EXPECT_EQ(histogram_of(mc2).count_, 3U);
  EXPECT_EQ(histogram_of(mc2).counts_, (std::vector<std::uint64_t>{1, 1, 1}));
  EXPECT_EQ(nostd::get<std::int64_t>(histogram_of(mc2).sum_), 55);
  EXPECT_EQ(nostd::get<std::int64_t>(histogram_of(mc2).min_), 5);
  EXPECT_EQ(nostd::get<std::int64_t>(histogram_of(mc2).max_), 30);
  // Nothing new: no delta point at all, the cumulative one stays.
  EXPECT_FALSE(collect_metric(delta, "test.bound.uh"));
  const auto mc3 = collect_metric(cumulative, "test.bound.uh");
  ASSERT_TRUE(mc3);
  EXPECT_EQ(histogram_of(mc3).count_, 3U);
}

TEST_F(BoundInstruments, HistogramFromManyThreadsIsExact) {
  BoundRig& rig = make(TemporalityPreference::delta);
  auto histogram =
      metrics::make_histogram<double>(*rig.handle.meter(), "test.bound.mt", "", "", {1.0, 2.0});
  auto a = histogram.bind({{"side", "a"}});
  auto b = histogram.bind({{"side", "b"}});
  std::atomic<bool> stop{false};
  std::uint64_t collected_a = 0;
  double sum_a = 0;
  // Collections run while the threads record: every value lands in exactly one interval.
  std::thread collector([&] {
    while (!stop.load()) {
      auto data = rig.readers[0]->collect();
      if (const auto* m = find_metric(data, "test.bound.mt")) {
        for (const auto& p : m->point_data_attr_) {
          if (nostd::get<std::string>(p.attributes.at("side")) != "a") continue;
          const auto& h = nostd::get<sdkmetrics::HistogramPointData>(p.point_data);
          collected_a += h.count_;
          sum_a += nostd::get<double>(h.sum_);
          EXPECT_EQ(h.counts_[0] + h.counts_[1] + h.counts_[2], h.count_);
        }
      }
    }
  });
  in_threads(4, [&](int t) {
    for (int i = 0; i < 50000; ++i) {
      a.record(t == 0 ? 0.5 : 1.5);
      b.record(3.0);
    }
  });
  stop.store(true);
  collector.join();
  auto last = rig.readers[0]->collect();
  const auto* m = find_metric(last, "test.bound.mt");
  if (m != nullptr) {
    for (const auto& p : m->point_data_attr_) {
      if (nostd::get<std::string>(p.attributes.at("side")) != "a") continue;
      const auto& h = nostd::get<sdkmetrics::HistogramPointData>(p.point_data);
      collected_a += h.count_;
      sum_a += nostd::get<double>(h.sum_);
    }
  }
  EXPECT_EQ(collected_a, 200000U);
  EXPECT_EQ(sum_a, 50000 * 0.5 + 150000 * 1.5);
}

TEST_F(BoundInstruments, HistogramSeriesShareOneMetric) {
  BoundRig& rig = make(TemporalityPreference::cumulative);
  auto histogram = metrics::make_histogram<double>(*rig.handle.meter(), "test.bound.two");
  histogram.bind({{"k", "x"}}).record(1.0);
  histogram.bind({{"k", "y"}}).record(2.0);
  histogram.record(3.0, {{"k", "x"}});
  auto data = rig.readers[0]->collect();
  const auto* m = find_metric(data, "test.bound.two");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->point_data_attr_.size(), 2U);
  for (const auto& p : m->point_data_attr_) {
    const auto& h = nostd::get<sdkmetrics::HistogramPointData>(p.point_data);
    if (nostd::get<std::string>(p.attributes.at("k")) == "x") {
      EXPECT_EQ(h.count_, 2U);
      EXPECT_EQ(nostd::get<double>(h.sum_), 4.0);
    } else {
      EXPECT_EQ(h.count_, 1U);
      EXPECT_EQ(nostd::get<double>(h.sum_), 2.0);
    }
  }
}

TEST_F(BoundInstruments, CounterAddFindsTheSetInAnyOrder) {
  BoundRig& rig = make(TemporalityPreference::cumulative);
  auto counter = metrics::make_counter<std::uint64_t>(*rig.handle.meter(), "test.bound.lookup");
  in_threads(2, [&](int) {
    for (int i = 0; i < 1000; ++i) {
      counter.add(1, {{"rank", 3}, {"phase", "forward"}, {"ok", true}});
      counter.add(1, {{"ok", true}, {"rank", std::int64_t{3}}, {"phase", "forward"}});
      counter.add(2, {{"rank", 4}, {"phase", "forward"}, {"ok", true}});
      counter.add(5, {{"rank", 3}, {"rank", 3}, {"phase", "forward"}});  // repeated key
      counter.add(1, {{"rank", 4}, {"none", nullptr}, {"phase", "forward"}, {"ok", true}});
    }
  });
  counter.bind({{"rank", std::int64_t{3}}, {"phase", "forward"}, {"ok", true}}).add(7);
  auto data = rig.readers[0]->collect();
  const auto* m = find_metric(data, "test.bound.lookup");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->point_data_attr_.size(), 3U);
  std::map<std::pair<std::int64_t, std::size_t>, std::int64_t> by_rank;  // (rank, #attrs)
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& attributes = m->point_data_attr_[i].attributes;
    by_rank[{nostd::get<std::int64_t>(attributes.at("rank")), attributes.size()}] = sum_of(m, i);
  }
  EXPECT_EQ((by_rank[{3, 3}]), 4007);
  EXPECT_EQ((by_rank[{4, 3}]), 6000);  // a null value is skipped: the same set
  EXPECT_EQ((by_rank[{3, 2}]), 10000);
}

TEST_F(BoundInstruments, AttributeSetsPastTheLimitGoToTheOverflowSeries) {
  BoundRig& rig = make(TemporalityPreference::cumulative);
  auto counter = metrics::make_counter<std::uint64_t>(*rig.handle.meter(), "test.bound.limit");
  for (int i = 0; i < 2100; ++i) counter.add(1, {{"id", i}});
  auto data = rig.readers[0]->collect();
  const auto* m = find_metric(data, "test.bound.limit");
  ASSERT_NE(m, nullptr);
  // 1997 sets of their own and the overflow series, below the SDK's own limit.
  ASSERT_EQ(m->point_data_attr_.size(), 1998U);
  std::int64_t overflow = -1;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < m->point_data_attr_.size(); ++i) {
    total += sum_of(m, i);
    if (m->point_data_attr_[i].attributes.count("otel.metric.overflow") != 0) {
      overflow = sum_of(m, i);
    }
  }
  EXPECT_EQ(overflow, 2100 - 1997);
  EXPECT_EQ(total, 2100);
}

TEST(BoundInstrumentsNoop, NoopMeterAndRejectedNamesRecordNothing) {
  opentelemetry::metrics::NoopMeter meter;
  auto counter = metrics::create_bound_uint64_counter(meter, "test.noop");
  auto histogram = metrics::create_bound_double_histogram(meter, "test.noop.h");
  EXPECT_FALSE(counter);
  EXPECT_FALSE(histogram);
  counter.add(1);
  histogram.record(1.0);
  metrics::Counter<double> unmade;
  unmade.add(1.0, {{"k", 1}});
  EXPECT_FALSE(unmade.bind({}));

  // Telemetry off: the handle's meter is a no-op meter.
  Config off;
  off.enabled = false;
  SetupOverrides overrides;
  overrides.env = Env::from({});
  auto handle = setup_telemetry(off, test_support::rank_of(0, 1), {}, std::move(overrides));
  ASSERT_TRUE(handle.ok()) << handle.message();
  auto disabled = metrics::create_bound_uint64_counter(*handle->meter(), "test.off");
  EXPECT_FALSE(disabled);
  disabled.add(5);
  EXPECT_TRUE(handle->shutdown(std::chrono::milliseconds(1000)).ok());
}

TEST_F(BoundInstruments, InvalidNameOrBoundariesGiveANoopInstrument) {
  BoundRig& rig = make(TemporalityPreference::cumulative);
  EXPECT_FALSE(metrics::create_bound_uint64_counter(*rig.handle.meter(), "1-invalid name"));
  EXPECT_FALSE(metrics::create_bound_double_histogram(*rig.handle.meter(), "1-invalid name"));
  ::testing::internal::CaptureStderr();
  auto bad = metrics::create_bound_double_histogram(*rig.handle.meter(), "test.bound.bad", {}, "",
                                                    "", {5.0, 1.0});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(bad);
  EXPECT_NE(err.find("lens: invalid histogram boundaries for test.bound.bad"), std::string::npos)
      << err;
  bad.record(1.0);
}

TEST_F(BoundInstruments, HistogramOnlyMeterStillExportsAndDestroyedInstrumentsStop) {
  BoundRig& rig = make(TemporalityPreference::cumulative);
  auto meter = rig.handle.meter();
  {
    auto histogram = metrics::create_bound_double_histogram(*meter, "test.bound.alone");
    histogram.record(4.0);
    auto data = rig.readers[0]->collect();
    // The SDK had nothing for this meter: the histogram still comes out, under its scope.
    const auto* m = find_metric(data, "test.bound.alone");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(histogram_of(m).count_, 1U);
  }
  auto after = rig.readers[0]->collect();
  EXPECT_EQ(find_metric(after, "test.bound.alone"), nullptr);
}

// Through setup's own periodic reader and the file exporter: the bound histogram and counter
// arrive in metrics.jsonl at shutdown.
TEST(BoundInstrumentsExport, PeriodicReaderWritesBoundInstrumentsToTheFile) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("lens-bound-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Config config = test_support::metrics_only_config("bound-run");
  config.exporter = lens::ExporterKind::file;
  config.file_path = dir.string();
  SetupOverrides overrides;
  overrides.env = Env::from({});
  auto handle = setup_telemetry(config, test_support::rank_of(0, 1), {}, std::move(overrides));
  ASSERT_TRUE(handle.ok()) << handle.message();
  auto histogram = metrics::create_bound_double_histogram(*handle->meter(), "test.file.hist",
                                                          {{"rank", std::int64_t{0}}});
  auto counter = metrics::create_bound_uint64_counter(*handle->meter(), "test.file.count");
  histogram.record(7.0);
  histogram.record(70.0);
  counter.add(42);
  ASSERT_TRUE(handle->shutdown(std::chrono::milliseconds(2000)).ok());
  std::ifstream in(dir / "metrics.jsonl");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_FALSE(lines.empty());
  const auto json = nlohmann::json::parse(lines.back());
  bool hist_seen = false;
  bool count_seen = false;
  for (const auto& scope : json["resourceMetrics"][0]["scopeMetrics"]) {
    for (const auto& metric : scope["metrics"]) {
      if (metric["name"] == "test.file.hist") {
        hist_seen = true;
        const auto& p = metric["histogram"]["dataPoints"][0];
        EXPECT_EQ(p["count"], "2");
        EXPECT_EQ(p["sum"], 77.0);
        EXPECT_EQ(p["min"], 7.0);
        EXPECT_EQ(p["max"], 70.0);
        EXPECT_EQ(p["attributes"][0]["key"], "rank");
        EXPECT_EQ(metric["histogram"]["aggregationTemporality"], 2);
      }
      if (metric["name"] == "test.file.count") {
        count_seen = true;
        EXPECT_EQ(metric["sum"]["dataPoints"][0]["asInt"], "42");
      }
    }
  }
  EXPECT_TRUE(hist_seen) << lines.back();
  EXPECT_TRUE(count_seen) << lines.back();
  std::filesystem::remove_all(dir);
}

// A forked child (a data-loader worker) may keep calling the parent's bound instruments: it must
// not crash or block; what it records is dropped.
TEST_F(BoundInstruments, ForkedChildRecordsWithoutCrashing) {
  BoundRig& rig = make(TemporalityPreference::cumulative);
  auto counter = metrics::create_bound_uint64_counter(*rig.handle.meter(), "test.bound.fork");
  auto histogram = metrics::make_histogram<double>(*rig.handle.meter(), "test.bound.forkh");
  counter.add(1);  // this thread's slot exists before the fork
  histogram.record(1.0, {{"k", 1}});
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    counter.add(1);
    histogram.record(2.0, {{"k", 1}});
    histogram.record(2.0, {{"k", 2}});  // a new attribute set: dropped in the child
    histogram.bind({{"k", 3}}).record(1.0);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto data = rig.readers[0]->collect();
  EXPECT_EQ(sum_of(find_metric(data, "test.bound.fork")), 1);
  EXPECT_EQ(histogram_of(find_metric(data, "test.bound.forkh")).count_, 1U);
}

}  // namespace
}  // namespace lens
