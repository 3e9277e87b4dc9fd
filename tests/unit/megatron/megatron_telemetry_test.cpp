// set_telemetry / get_telemetry / end_job_telemetry (docs/megatron.md, "Lifecycle"): the Megatron
// prefixes with NEMO_LENS_* fallback and --otel-* flags on top, the training resource attributes on
// exporting ranks only, job spans ended interval-first, and a shutdown that happens exactly once.
#include <gtest/gtest.h>
#include <opentelemetry/exporters/memory/in_memory_span_exporter.h>

#include <memory>
#include <string>

#include "lens/megatron/telemetry.hpp"
#include "lens/megatron/training_args.hpp"

namespace lens::megatron {
namespace {

using opentelemetry::exporter::memory::InMemorySpanData;
using opentelemetry::exporter::memory::InMemorySpanExporter;

class MegatronTelemetry : public ::testing::Test {
 protected:
  void TearDown() override {
    (void)end_job_telemetry(std::chrono::milliseconds(2000));
    reset_telemetry();
  }

  // Options with an in-memory exporter, the given environment, and no process-wide hooks.
  SetTelemetryOptions options(Env::Map variables) {
    variables.emplace("OTEL_BSP_SCHEDULE_DELAY", "200");
    // Spans go to the in-memory exporter; metrics would go to the default OTLP endpoint.
    variables.emplace("MEGATRON_OTEL_METRICS_ENABLED", "0");
    auto exporter = std::make_unique<InMemorySpanExporter>(1000);
    spans_ = exporter->GetData();
    SetTelemetryOptions out;
    out.env = Env::from(std::move(variables));
    out.install_exit_hooks = false;
    out.overrides.span_exporter = std::move(exporter);
    return out;
  }

  static TrainingArgs args_for(const RankInfo& rank, std::vector<std::string> flags = {}) {
    Result<TrainingArgs> args = parse_training_args(flags);
    EXPECT_TRUE(args.ok()) << args.message();
    EXPECT_TRUE(resolve_parallelism(*args, rank).ok());
    return *args;
  }

  static RankInfo rank_of(int rank, int world_size) { return *RankInfo::make(rank, world_size); }

  std::shared_ptr<InMemorySpanData> spans_;
};

TEST_F(MegatronTelemetry, DisabledByDefaultGivesANonExportingHandleWithoutAttributes) {
  const RankInfo rank = rank_of(0, 1);
  ASSERT_TRUE(set_telemetry(args_for(rank), rank, options({})).ok());
  std::shared_ptr<TelemetryHandle> handle = get_telemetry();
  ASSERT_NE(handle, nullptr);
  EXPECT_FALSE(handle->is_exporting());
  EXPECT_TRUE(handle->resource().empty());
}

TEST_F(MegatronTelemetry, MegatronPrefixEnablesAndCarriesTheTrainingAttributes) {
  const RankInfo rank = rank_of(1, 2);
  const TrainingArgs args = args_for(rank, {"--micro-batch-size", "2", "--bf16"});
  ASSERT_TRUE(set_telemetry(args, rank,
                            options({{"MEGATRON_OTEL_ENABLED", "1"},
                                     {"MEGATRON_OTEL_RANK_STRATEGY", "all_ranks"},
                                     {"NEMO_LENS_RUN_ID", "run-7"}}))
                  .ok());
  std::shared_ptr<TelemetryHandle> handle = get_telemetry();
  ASSERT_NE(handle, nullptr);
  ASSERT_TRUE(handle->is_exporting());
  const Attributes& resource = handle->resource();
  EXPECT_EQ(resource.at("service.name"), AttributeValue(std::string("megatron-lm")));
  EXPECT_EQ(resource.at("service.instance.id"), AttributeValue(std::string("run-7-rank1")));
  for (const auto& [key, value] : training_resource_attributes(args, rank)) {
    ASSERT_EQ(resource.count(key), 1U) << key;
    EXPECT_EQ(resource.at(key), value) << key;
  }
  EXPECT_EQ(resource.at("dl.data_parallel.size"), AttributeValue(std::int64_t{2}));
  EXPECT_EQ(resource.at("megatron.precision"), AttributeValue(std::string("bf16")));
}

TEST_F(MegatronTelemetry, FlagsBeatTheEnvironmentAndFallbackPrefixIsRead) {
  const RankInfo rank = rank_of(0, 1);
  const TrainingArgs args = args_for(rank, {"--otel-enabled", "--otel-service-name", "gpt-small"});
  // Only the fallback prefix says anything; the flag turns telemetry on.
  ASSERT_TRUE(set_telemetry(args, rank,
                            options({{"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
                                     {"OTEL_SERVICE_NAME", "from-env"}}))
                  .ok());
  std::shared_ptr<TelemetryHandle> handle = get_telemetry();
  ASSERT_TRUE(handle->is_exporting());
  EXPECT_EQ(handle->resource().at("service.name"), AttributeValue(std::string("gpt-small")));
}

TEST_F(MegatronTelemetry, BadConfigurationIsSetupsErrorAndLeavesNoHandle) {
  const RankInfo rank = rank_of(0, 1);
  const TrainingArgs args = args_for(rank, {"--otel-enabled", "--otel-span-groups", "stepz"});
  Status status = set_telemetry(args, rank, options({}));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("--otel-span-groups"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("stepz"), std::string::npos) << status.message();
  EXPECT_EQ(get_telemetry(), nullptr);
}

TEST_F(MegatronTelemetry, EndJobTelemetryEndsIntervalThenStartupAndShutsDownOnce) {
  const RankInfo rank = rank_of(0, 1);
  ASSERT_TRUE(set_telemetry(args_for(rank), rank,
                            options({{"MEGATRON_OTEL_ENABLED", "1"},
                                     {"MEGATRON_OTEL_RANK_STRATEGY", "all_ranks"}}))
                  .ok());
  std::shared_ptr<TelemetryHandle> handle = get_telemetry();
  ASSERT_TRUE(handle->is_exporting());
  set_job_span(JobSpan::startup, start_span("megatron.startup"));
  set_job_span(JobSpan::interval, start_span("megatron.training.interval"));

  ASSERT_TRUE(end_job_telemetry(std::chrono::milliseconds(5000)).ok());
  const auto finished = spans_->GetSpans();
  ASSERT_EQ(finished.size(), 2U);
  // Exported in the order they ended: the interval first.
  EXPECT_EQ(finished[0]->GetName(), "megatron.training.interval");
  EXPECT_EQ(finished[1]->GetName(), "megatron.startup");
  EXPECT_EQ(handle->stats().spans_exported, 2U);

  // Later calls (atexit after a normal end, a late SIGTERM) change nothing.
  EXPECT_TRUE(end_job_telemetry(std::chrono::milliseconds(5000)).ok());
  EXPECT_EQ(handle->stats().spans_exported, 2U);
}

TEST_F(MegatronTelemetry, EndJobTelemetryWithoutSetupIsANoOp) {
  reset_telemetry();
  EXPECT_EQ(get_telemetry(), nullptr);
  EXPECT_TRUE(end_job_telemetry(std::chrono::milliseconds(100)).ok());
}

}  // namespace
}  // namespace lens::megatron
