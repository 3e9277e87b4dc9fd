// setup's typed plan (src/telemetry/plan.hpp): the Config read once into each component's own
// options — exporter options per signal, pipeline options, the metrics routing, the resolved
// strategies and span groups — and a rank that does not export planned no further.
#include <gtest/gtest.h>

#include <chrono>

#include "export/exporters.hpp"
#include "lens/groups.hpp"
#include "lens/validate.hpp"
#include "telemetry/plan.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

using lens::test_support::failure_of;

using test_support::rank_of;

const Env::Map kFileSetup = {{"NEMO_LENS_ENABLED", "true"},
                             {"NEMO_LENS_EXPORTER", "file"},
                             {"NEMO_LENS_FILE_PATH", "/tmp/lens-plan"},
                             {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
                             {"NEMO_LENS_SAMPLING_STRATEGY", "rank_aware"},
                             {"NEMO_LENS_EXPORT_SAMPLE_RATE", "0.5"},
                             {"NEMO_LENS_RUN_ID", "run-7"},
                             {"NEMO_LENS_LOGS_ENABLED", "true"},
                             {"OTEL_METRICS_EXPORTER", "prometheus,console"},
                             {"OTEL_EXPORTER_PROMETHEUS_PORT", "19464"},
                             {"OTEL_BSP_MAX_QUEUE_SIZE", "777"},
                             {"OTEL_BLRP_SCHEDULE_DELAY", "250"},
                             {"OTEL_METRIC_EXPORT_INTERVAL", "1500"}};

Result<telemetry::TelemetryPlan> plan_of(const Env::Map& variables, const RankInfo& rank,
                                         const SetupOverrides& overrides = {}) {
  return telemetry::make_plan(test_support::config_from(variables), rank, {}, overrides,
                              Env::from(variables));
}

TEST(TelemetryPlan, EachComponentGetsItsOwnOptionsFromTheConfig) {
  auto plan = plan_of(kFileSetup, rank_of(1, 4));
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_TRUE(plan->exporting);
  EXPECT_TRUE(plan->print_totals);
  EXPECT_EQ(plan->run_id.value, "run-7");
  EXPECT_EQ(plan->run_id.source, "env:NEMO_LENS_RUN_ID");
  EXPECT_EQ(plan->resource.at("nemo.run.id"), AttributeValue(std::string("run-7")));
  EXPECT_EQ(plan->span_groups,
            *resolve_span_groups(test_support::config_from(kFileSetup).span_groups));

  ASSERT_TRUE(plan->traces.has_value());
  EXPECT_EQ(plan->traces->exporter.kind, ExporterKind::file);
  EXPECT_EQ(plan->traces->exporter.file_path, "/tmp/lens-plan");
  EXPECT_EQ(plan->traces->exporter.file_path_label, "NEMO_LENS_FILE_PATH");
  EXPECT_EQ(plan->traces->pipeline.max_queue_size, 777u);
  EXPECT_EQ(plan->traces->pipeline.concurrent_exports, 0u);  // one batch at a time to a file
  // The sampling strategy was resolved with the strategy settings (the sample rate).
  ASSERT_NE(plan->traces->pipeline.sampler, nullptr);
  EXPECT_EQ(plan->traces->pipeline.sampler->description(), "RankAwareSampler(rank=1, rate=0.5)");

  // OTEL_METRICS_EXPORTER sends metrics to the console and a scrape endpoint, not to EXPORTER.
  ASSERT_TRUE(plan->metrics.has_value());
  ASSERT_TRUE(plan->metrics->push.has_value());
  EXPECT_EQ(plan->metrics->push->kind, ExporterKind::console);
  ASSERT_TRUE(plan->metrics->prometheus.has_value());
  EXPECT_EQ(plan->metrics->prometheus->port.value, 19464);
  EXPECT_EQ(plan->metrics->prometheus->port.source, "env:OTEL_EXPORTER_PROMETHEUS_PORT");
  EXPECT_EQ(plan->metrics->export_interval, std::chrono::milliseconds(1500));

  ASSERT_TRUE(plan->logs.has_value());
  EXPECT_EQ(plan->logs->exporter.kind, ExporterKind::file);
  EXPECT_EQ(plan->logs->pipeline.schedule_delay, std::chrono::milliseconds(250));
}

TEST(TelemetryPlan, ARankThatDoesNotExportIsPlannedNoFurther) {
  Env::Map variables = kFileSetup;
  variables["NEMO_LENS_RANK_STRATEGY"] = "single_rank";
  variables["NEMO_LENS_EXPORT_RANK"] = "0";
  auto plan = plan_of(variables, rank_of(1, 4));
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_FALSE(plan->exporting);
  EXPECT_FALSE(plan->traces.has_value());
  EXPECT_FALSE(plan->metrics.has_value());
  EXPECT_FALSE(plan->logs.has_value());
  EXPECT_TRUE(plan->resource.empty());
  EXPECT_EQ(plan->run_id.value, "run-7");
}

TEST(TelemetryPlan, OnlyLensOtlpSpanExporterGetsSeveralBatchesOnTheWire) {
  Env::Map variables = kFileSetup;
  variables["NEMO_LENS_EXPORTER"] = "otlp";
  auto plan = plan_of(variables, rank_of(0, 1));
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->traces->pipeline.concurrent_exports, 3u);

  SetupOverrides overrides;
  overrides.span_exporter = exporters::make_discarding_exporter<Signal::traces>();
  plan = plan_of(variables, rank_of(0, 1), overrides);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->traces->pipeline.concurrent_exports, 0u);
}

TEST(TelemetryPlan, TheOverridesStrategyDecidesWithTheStrategySettings) {
  SetupOverrides overrides;
  StrategySettings seen;
  overrides.rank_strategy = [&seen](const StrategySettings& settings, const RankInfo& rank) {
    seen = settings;
    return rank.rank == 2;
  };
  Env::Map variables = kFileSetup;
  variables["NEMO_LENS_EXPORT_RANK"] = "3";
  auto plan = plan_of(variables, rank_of(2, 4), overrides);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_TRUE(plan->exporting);
  EXPECT_EQ(seen.export_rank, 3);
  EXPECT_EQ(seen.export_sample_rate, 0.5);
}

TEST(TelemetryPlan, AnInvalidConfigFailsWithValidatesMessage) {
  Env::Map variables = kFileSetup;
  variables["NEMO_LENS_RANK_STRATEGY"] = "nobody";
  const Config config = test_support::config_from(variables);
  const RankInfo rank = rank_of(0, 1);
  auto plan = plan_of(variables, rank);
  ASSERT_EQ(failure_of(plan), validate(config, &rank).message());
  EXPECT_EQ(plan.message().rfind("Unknown rank strategy 'nobody' in NEMO_LENS_RANK_STRATEGY", 0),
            0u);
}

}  // namespace
}  // namespace lens
