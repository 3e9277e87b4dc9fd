// validate(): every check (docs/configuration.md, "Validation") in its fixed order, with the exact
// one-line messages (the variable or flag, the bad value, what is accepted).
#include "lens/validate.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "lens/groups.hpp"
#include "lens/megatron/config.hpp"
#include "lens/megatron/span_groups.hpp"
#include "lens/sampling.hpp"
#include "lens/strategies.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

using test_support::config_from;
using test_support::rank_of;

class Validate : public ::testing::Test {
 protected:
  void SetUp() override {
    detail::reset_span_groups_for_testing();
    detail::reset_strategies_for_testing();
  }
  void TearDown() override {
    detail::reset_span_groups_for_testing();
    detail::reset_strategies_for_testing();
  }
};

TEST_F(Validate, DefaultConfigIsValidEnabledOrNot) {
  Config config;
  EXPECT_TRUE(validate(config).ok());
  config.enabled = true;
  EXPECT_TRUE(validate(config).ok());
  EXPECT_TRUE(validate(config, nullptr).ok());
}

TEST_F(Validate, ReportsTheFirstParseProblemFirst) {
  const Config config = config_from({{"NEMO_LENS_EXPORT_RANK", "last"},
                                     {"NEMO_LENS_SPAN_GROUPS", "bogus"},
                                     {"OTEL_TRACES_SAMPLER", "nope"}});
  EXPECT_EQ(validate(config).message(),
            "Invalid integer for NEMO_LENS_EXPORT_RANK: 'last'; accepted: a whole number such as "
            "-1 (last rank), 0 or 7");
}

TEST_F(Validate, OtelProblemsComeAfterLensProblems) {
  const Config config = config_from({{"OTEL_TRACES_SAMPLER", "nope"}});
  EXPECT_EQ(validate(config).message(),
            "Invalid sampler for OTEL_TRACES_SAMPLER: 'nope'; accepted: always_on, always_off, "
            "traceidratio, parentbased_always_on, parentbased_always_off, "
            "parentbased_traceidratio");
}

TEST_F(Validate, UnknownRankStrategyListsRegisteredNames) {
  const Config config = config_from({{"NEMO_LENS_RANK_STRATEGY", "All_Rank"}});
  EXPECT_EQ(validate(config).message(),
            "Unknown rank strategy 'All_Rank' in NEMO_LENS_RANK_STRATEGY; accepted: all_ranks, "
            "first_rank_per_node, sampled, single_rank (or a name registered with "
            "register_rank_strategy())");
}

TEST_F(Validate, RegisteredRankStrategyIsAccepted) {
  ASSERT_TRUE(register_rank_strategy("even", [](const StrategySettings&, const RankInfo& r) {
                return r.rank % 2 == 0;
              }).ok());
  const Config config = config_from({{"NEMO_LENS_RANK_STRATEGY", "even"}});
  EXPECT_TRUE(validate(config).ok());
}

TEST_F(Validate, SampleRateRangeIncludingDirectConstruction) {
  for (double bad : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    Config config;
    config.export_sample_rate = bad;
    const std::string message = validate(config).message();
    EXPECT_NE(message.find("Invalid value for config.export_sample_rate: '"), std::string::npos)
        << message;
    EXPECT_NE(message.find("accepted: export_sample_rate in [0.0, 1.0]"), std::string::npos);
  }
  for (double good : {0.0, 0.5, 1.0}) {
    Config config;
    config.export_sample_rate = good;
    EXPECT_TRUE(validate(config).ok()) << good;
  }
}

TEST_F(Validate, SampleRateFromEnvNamesTheVariable) {
  EXPECT_EQ(validate(config_from({{"NEMO_LENS_EXPORT_SAMPLE_RATE", "-0.1"}})).message(),
            "Invalid value for NEMO_LENS_EXPORT_SAMPLE_RATE: '-0.1'; accepted: export_sample_rate "
            "in [0.0, 1.0]");
  EXPECT_EQ(validate(config_from({{"NEMO_LENS_EXPORT_SAMPLE_RATE", "nan"}})).message(),
            "Invalid value for NEMO_LENS_EXPORT_SAMPLE_RATE: 'nan'; accepted: export_sample_rate "
            "in [0.0, 1.0]");
  EXPECT_TRUE(validate(config_from({{"NEMO_LENS_EXPORT_SAMPLE_RATE", "0.0"}})).ok());
  EXPECT_TRUE(validate(config_from({{"NEMO_LENS_EXPORT_SAMPLE_RATE", "1.0"}})).ok());
}

TEST_F(Validate, ExportRankOutsideTheJobOnlyWithRankInfo) {
  const Config config = config_from({{"NEMO_LENS_EXPORT_RANK", "4"}});
  EXPECT_TRUE(validate(config).ok());
  const RankInfo rank = rank_of(1, 4);
  EXPECT_EQ(validate(config, &rank).message(),
            "Invalid value for NEMO_LENS_EXPORT_RANK: '4' is not a rank of this job (world size "
            "4), so no rank would export; accepted: -1 (last rank) or 0..3");
  const RankInfo bigger = rank_of(1, 5);
  EXPECT_TRUE(validate(config, &bigger).ok());
  Config all = config;
  all.rank_strategy = "all_ranks";  // EXPORT_RANK only matters for single_rank
  EXPECT_TRUE(validate(all, &rank).ok());
}

TEST_F(Validate, UnknownSamplingStrategy) {
  EXPECT_EQ(validate(config_from({{"NEMO_LENS_SAMPLING_STRATEGY", "tail"}})).message(),
            "Unknown sampling strategy 'tail' in NEMO_LENS_SAMPLING_STRATEGY; accepted: empty "
            "(the OTEL_TRACES_SAMPLER default), rank_aware (or a name registered with "
            "register_sampling_strategy())");
  EXPECT_TRUE(validate(config_from({{"NEMO_LENS_SAMPLING_STRATEGY", "rank_aware"}})).ok());
}

TEST_F(Validate, SpanGroupSpecIsResolvedStrictly) {
  EXPECT_EQ(validate(config_from({{"NEMO_LENS_SPAN_GROUPS", "default, step, typo"}})).message(),
            "Invalid span-group spec in NEMO_LENS_SPAN_GROUPS: Unknown span group or preset: "
            "'typo'. Valid options: [all, checkpoint, default, evaluate, forward_backward, job, "
            "load_checkpoint, model_init, optimizer, per_step, step]");
  EXPECT_TRUE(validate(config_from({{"NEMO_LENS_SPAN_GROUPS", "DEFAULT, step"}})).ok());
  EXPECT_TRUE(validate(config_from({{"NEMO_LENS_SPAN_GROUPS", " , "}})).ok());
}

TEST_F(Validate, SpanGroupFlagIsNamedWhenItHeldTheValue) {
  Config config;
  config.apply({false, std::nullopt, std::string("profiling")});
  EXPECT_EQ(validate(config).message(),
            "Invalid span-group spec in --otel-span-groups: Unknown span group or preset: "
            "'profiling'. Valid options: [all, checkpoint, default, evaluate, forward_backward, "
            "job, load_checkpoint, model_init, optimizer, per_step, step]");
}

TEST_F(Validate, MegatronVocabularyMakesItsGroupsValid) {
  auto config = megatron::config_from_env(
      Env::from({{"MEGATRON_OTEL_ENABLED", "1"}, {"NEMO_LENS_SPAN_GROUPS", "profiling,layer"}}));
  ASSERT_TRUE(config.ok()) << config.message();
  EXPECT_EQ(config->service_name, "megatron-lm");
  EXPECT_TRUE(validate(*config).ok());
}

TEST_F(Validate, ExporterNamesInAnyCase) {
  for (const char* good : {"otlp", "console", "file", "none", "OTLP", "Console", "NONE"}) {
    EXPECT_TRUE(validate(config_from({{"NEMO_LENS_EXPORTER", good}})).ok()) << good;
  }
  EXPECT_EQ(validate(config_from({{"NEMO_LENS_EXPORTER", "OTLPX"}})).message(),
            "Unknown exporter 'OTLPX' in NEMO_LENS_EXPORTER; accepted: otlp, console, file, none");
  // The name is parsed once, into the kind that setup, the exporters and `lens config` use.
  for (const ExporterKind kind :
       {ExporterKind::otlp, ExporterKind::console, ExporterKind::file, ExporterKind::none}) {
    EXPECT_EQ(exporter_kind(to_string(kind)), kind);
  }
  EXPECT_EQ(exporter_kind("jaeger"), std::nullopt);
}

TEST_F(Validate, FileExporterNeedsAPath) {
  Config config;
  config.exporter = lens::ExporterKind::file;
  config.file_path = "";
  EXPECT_EQ(validate(config).message(),
            "Empty file path in config.file_path; accepted: a directory for traces.jsonl, "
            "metrics.jsonl and logs.jsonl");
}

TEST_F(Validate, TlsFilesMustBeReadableForOtlpOnly) {
  const auto path = std::filesystem::temp_directory_path() / "lens-validate-ca.pem";
  std::ofstream(path) << "-----BEGIN CERTIFICATE-----\n";
  EXPECT_TRUE(validate(config_from({{"OTEL_EXPORTER_OTLP_CERTIFICATE", path.string()}})).ok());
  std::filesystem::remove(path);
  EXPECT_EQ(validate(config_from({{"OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", "/no/such/key.pem"}}))
                .message(),
            "Cannot read the file in OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY: '/no/such/key.pem' "
            "(No such file or directory); accepted: a readable PEM file");
  EXPECT_TRUE(validate(config_from({{"OTEL_EXPORTER_OTLP_CERTIFICATE", "/no/such/ca.pem"},
                                    {"NEMO_LENS_EXPORTER", "console"}}))
                  .ok());
}

TEST_F(Validate, AliasConflictIsReported) {
  EXPECT_EQ(validate(config_from({{"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
                                  {"NEMO_LENS_EXPORT_STRATEGY", "sampled"}}))
                .message()
                .substr(0, 22),
            "Conflicting settings: ");
}

}  // namespace
}  // namespace lens
