// The megatron.training.* instruments and the GenAI inference instruments (docs/metrics.md,
// "Training and GenAI instruments"), read back through a manual reader.
#include <gtest/gtest.h>
#include <opentelemetry/metrics/noop.h>
#include <opentelemetry/sdk/metrics/meter_provider.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "lens/genai_metrics.hpp"
#include "lens/megatron/training_metrics.hpp"
#include "lens/metrics.hpp"
#include "lens/testing/manual_metric_reader.hpp"

namespace lens {
namespace {

namespace sdkmetrics = opentelemetry::sdk::metrics;
namespace nostd = opentelemetry::nostd;

struct Provider {
  std::shared_ptr<sdkmetrics::MeterProvider> provider =
      std::make_shared<sdkmetrics::MeterProvider>();
  std::shared_ptr<testing::ManualMetricReader> reader =
      std::make_shared<testing::ManualMetricReader>();
  Provider() { provider->AddMetricReader(reader); }
  ~Provider() { metrics::clear_instrument_cache(); }
  nostd::shared_ptr<opentelemetry::metrics::Meter> meter(const char* name = "m") {
    return provider->GetMeter(name, "1");
  }
  std::map<std::string, sdkmetrics::MetricData> collect() {
    std::map<std::string, sdkmetrics::MetricData> out;
    for (auto& m : reader->collect()) out.emplace(m.instrument_descriptor.name_, std::move(m));
    return out;
  }
};

double value_of(const sdkmetrics::MetricData& metric) {
  const auto& point = metric.point_data_attr_.at(0).point_data;
  if (const auto* last = nostd::get_if<sdkmetrics::LastValuePointData>(&point)) {
    return nostd::get<double>(last->value_);
  }
  const auto& sum = nostd::get<sdkmetrics::SumPointData>(point);
  return static_cast<double>(nostd::get<std::int64_t>(sum.value_));
}

TEST(TrainingMetrics, EveryArgumentRecordsItsInstrumentOfTheRightKind) {
  Provider p;
  megatron::record_training_metrics(*p.meter(), {.step_duration_ms = 412.0,
                                                 .loss = 2.5,
                                                 .throughput_tflops = 180.0,
                                                 .tokens_per_sec = 5000.0,
                                                 .grad_norm = 1.25,
                                                 .skipped_iters = 2,
                                                 .learning_rate = 3e-4,
                                                 .memory_allocated_gb = 40.5});
  auto data = p.collect();
  std::set<std::string> names;
  for (const auto& [name, metric] : data) {
    EXPECT_EQ(name.rfind("megatron.training.", 0), 0U) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 8U);
  const auto& step = data.at("megatron.training.step_duration_ms");
  EXPECT_EQ(step.instrument_descriptor.type_, sdkmetrics::InstrumentType::kHistogram);
  EXPECT_EQ(step.instrument_descriptor.unit_, "ms");
  EXPECT_EQ(
      nostd::get<double>(
          nostd::get<sdkmetrics::HistogramPointData>(step.point_data_attr_[0].point_data).sum_),
      412.0);
  EXPECT_EQ(value_of(data.at("megatron.training.loss")), 2.5);
  EXPECT_EQ(data.at("megatron.training.loss").instrument_descriptor.type_,
            sdkmetrics::InstrumentType::kObservableGauge);
  EXPECT_EQ(value_of(data.at("megatron.training.throughput_tflops")), 180.0);
  EXPECT_EQ(value_of(data.at("megatron.training.tokens_per_sec")), 5000.0);
  EXPECT_EQ(value_of(data.at("megatron.training.grad_norm")), 1.25);
  EXPECT_EQ(value_of(data.at("megatron.training.skipped_iters")), 2.0);
  EXPECT_EQ(data.at("megatron.training.skipped_iters").instrument_descriptor.type_,
            sdkmetrics::InstrumentType::kCounter);
  EXPECT_EQ(value_of(data.at("megatron.training.learning_rate")), 3e-4);
  EXPECT_EQ(value_of(data.at("megatron.training.memory_allocated_gb")), 40.5);
}

// Megatron-LM's own catalogue (megatron/core/telemetry/training_metrics.py): a unit on the
// step-duration histogram only. Any other unit would change the Prometheus names (a unit is
// appended to the name) that Megatron's dashboards query.
TEST(TrainingMetrics, NamesKindsAndUnitsAreMegatronLms) {
  Provider p;
  megatron::record_training_metrics(*p.meter(), {.step_duration_ms = 1.0,
                                                 .loss = 1.0,
                                                 .throughput_tflops = 1.0,
                                                 .tokens_per_sec = 1.0,
                                                 .grad_norm = 1.0,
                                                 .skipped_iters = 1,
                                                 .learning_rate = 1.0,
                                                 .memory_allocated_gb = 1.0});
  using Kind = sdkmetrics::InstrumentType;
  const std::map<std::string, std::pair<Kind, std::string>> megatron_lm = {
      {"megatron.training.step_duration_ms", {Kind::kHistogram, "ms"}},
      {"megatron.training.loss", {Kind::kObservableGauge, ""}},
      {"megatron.training.throughput_tflops", {Kind::kObservableGauge, ""}},
      {"megatron.training.grad_norm", {Kind::kObservableGauge, ""}},
      {"megatron.training.skipped_iters", {Kind::kCounter, ""}},
      {"megatron.training.learning_rate", {Kind::kObservableGauge, ""}},
      {"megatron.training.tokens_per_sec", {Kind::kObservableGauge, ""}},
      {"megatron.training.memory_allocated_gb", {Kind::kObservableGauge, ""}}};
  std::map<std::string, std::pair<Kind, std::string>> recorded;
  for (const auto& [name, metric] : p.collect()) {
    recorded[name] = {metric.instrument_descriptor.type_, metric.instrument_descriptor.unit_};
  }
  EXPECT_EQ(recorded, megatron_lm);
}

TEST(TrainingMetrics, OnlyGivenValuesAreRecordedAndValuesAccumulate) {
  Provider p;
  auto meter = p.meter();
  megatron::record_training_metrics(*meter, {});
  EXPECT_TRUE(p.collect().empty());
  megatron::record_training_metrics(*meter, {.loss = 0.0});  // zero is a value
  auto data = p.collect();
  ASSERT_EQ(data.size(), 1U);
  EXPECT_EQ(value_of(data.at("megatron.training.loss")), 0.0);
  megatron::record_training_metrics(*meter, {.skipped_iters = 0});  // not > 0: not added
  megatron::record_training_metrics(*meter, {.skipped_iters = 3});
  megatron::record_training_metrics(*meter, {.loss = 1.5, .skipped_iters = 4});
  data = p.collect();
  EXPECT_EQ(value_of(data.at("megatron.training.skipped_iters")), 7.0);
  EXPECT_EQ(value_of(data.at("megatron.training.loss")), 1.5);
}

TEST(TrainingMetrics, InstrumentsAreCreatedOncePerMeter) {
  Provider p;
  auto first = p.meter("a");
  auto second = p.meter("b");
  megatron::record_training_metrics(*first, {.skipped_iters = 1});
  megatron::record_training_metrics(*first, {.skipped_iters = 1});
  megatron::record_training_metrics(*second, {.skipped_iters = 5});
  auto data = p.reader->collect();
  std::vector<double> values;
  for (const auto& m : data) values.push_back(value_of(m));
  std::sort(values.begin(), values.end());
  // One counter per meter: 2 on the first (created once, added twice), 5 on the second.
  EXPECT_EQ(values, (std::vector<double>{2.0, 5.0}));
}

TEST(TrainingMetrics, NoopMeterRecordsNothingAndDoesNotFail) {
  opentelemetry::metrics::NoopMeter meter;
  megatron::record_training_metrics(meter, {.loss = 1.0, .skipped_iters = 1});
  SUCCEED();
}

struct Throwing {
  static constexpr const char* kDomain = "throwing";
  static std::shared_ptr<Throwing> make(opentelemetry::metrics::Meter&) {
    throw std::runtime_error("boom");
  }
};

TEST(InstrumentCache, CreationFailureIsReportedAndNothingIsCached) {
  Provider p;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(metrics::instruments_for<Throwing>(*p.meter()), nullptr);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "lens: warning: Failed to create throwing metric instruments: boom\n");
}

TEST(InferenceMetrics, DurationAndTokenUsageWithTheirAttributes) {
  Provider p;
  metrics::record_inference_metrics(
      *p.meter(),
      {.request_duration_s = 0.25, .model = "llama", .input_tokens = 100, .output_tokens = 50});
  auto data = p.collect();
  const auto& duration = data.at("gen_ai.server.request.duration");
  EXPECT_EQ(duration.instrument_descriptor.unit_, "s");
  const auto& attributes = duration.point_data_attr_.at(0).attributes;
  EXPECT_EQ(nostd::get<std::string>(attributes.at("gen_ai.operation.name")), "text_completion");
  EXPECT_EQ(nostd::get<std::string>(attributes.at("gen_ai.provider.name")), "nemo");
  EXPECT_EQ(nostd::get<std::string>(attributes.at("gen_ai.request.model")), "llama");
  const auto& usage = data.at("gen_ai.client.token.usage");
  EXPECT_EQ(usage.instrument_descriptor.unit_, "{token}");
  ASSERT_EQ(usage.point_data_attr_.size(), 2U);
  std::map<std::string, std::int64_t> sums;
  for (const auto& point : usage.point_data_attr_) {
    sums[nostd::get<std::string>(point.attributes.at("gen_ai.token.type"))] =
        nostd::get<std::int64_t>(nostd::get<sdkmetrics::HistogramPointData>(point.point_data).sum_);
  }
  EXPECT_EQ(sums, (std::map<std::string, std::int64_t>{{"input", 100}, {"output", 50}}));
}

}  // namespace
}  // namespace lens
