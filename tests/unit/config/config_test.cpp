// Config::from_env, aliases and conflicts, CLI overlay, sources and labels (docs/configuration.md).
#include "lens/config.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "unit/support/test_support.hpp"

namespace lens {
namespace {

using lens::test_support::failure_of;

Config read(const Env::Map& vars, std::string_view prefix = "NEMO_LENS",
            std::string_view fallback = {}) {
  return test_support::config_from(vars, prefix, fallback);
}

std::string first_problem(const Config& config) {
  if (!config.problems.empty()) return config.problems.front().message();
  if (!config.otel.problems.empty()) return config.otel.problems.front().message();
  return "";
}

// The fields that the defaults and a full environment both give, with their expected values.
struct MainFields {
  bool enabled;
  std::string service_name;
  std::string rank_strategy;
  std::int64_t export_rank;
  double export_sample_rate;
  std::string sampling_strategy;
  bool traces_enabled;
  bool metrics_enabled;
  bool logs_enabled;
  std::string span_groups;
  ExporterKind exporter;
  std::string file_path;
  std::string run_id;
  std::string user_id;
};

void expect_main_fields(const Config& config, const MainFields& expected) {
  EXPECT_EQ(config.enabled, expected.enabled);
  EXPECT_EQ(config.service_name, expected.service_name);
  EXPECT_EQ(config.rank_strategy, expected.rank_strategy);
  EXPECT_EQ(config.export_rank, expected.export_rank);
  EXPECT_EQ(config.export_sample_rate, expected.export_sample_rate);
  EXPECT_EQ(config.sampling_strategy, expected.sampling_strategy);
  EXPECT_EQ(config.traces_enabled, expected.traces_enabled);
  EXPECT_EQ(config.metrics_enabled, expected.metrics_enabled);
  EXPECT_EQ(config.logs_enabled, expected.logs_enabled);
  EXPECT_EQ(config.span_groups, expected.span_groups);
  EXPECT_EQ(config.exporter, expected.exporter);
  EXPECT_EQ(config.file_path, expected.file_path);
  EXPECT_EQ(config.run_id, expected.run_id);
  EXPECT_EQ(config.user_id, expected.user_id);
}

TEST(ConfigDefaults, DefaultConstructedConfigMatchesSpec) {
  expect_main_fields(Config{}, {.enabled = false,
                                .service_name = "nemo",
                                .rank_strategy = "single_rank",
                                .export_rank = -1,
                                .export_sample_rate = 1.0,
                                .sampling_strategy = "",
                                .traces_enabled = true,
                                .metrics_enabled = true,
                                .logs_enabled = false,
                                .span_groups = "default",
                                .exporter = ExporterKind::otlp,
                                .file_path = "./lens-telemetry/",
                                .run_id = "",
                                .user_id = ""});
}

TEST(ConfigFromEnv, NoVariablesGivesDefaultsAllFromDefault) {
  const Config config = read({});
  EXPECT_FALSE(config.enabled);
  EXPECT_EQ(config.service_name, "nemo");
  EXPECT_EQ(config.export_rank, -1);
  EXPECT_TRUE(config.problems.empty());
  for (const std::string& field : config_field_names()) {
    EXPECT_EQ(config.source_of(field), "default") << field;
  }
}

TEST(ConfigFromEnv, ConsoleFormatJsonByDefaultTextInAnyCaseUnderEitherPrefix) {
  EXPECT_EQ(read({}).console_format, ConsoleFormat::json);
  for (const char* value : {"text", "Text", "TEXT", " text "}) {
    const Config config = read({{"NEMO_LENS_CONSOLE_FORMAT", value}});
    EXPECT_EQ(config.console_format, ConsoleFormat::text) << value;
    EXPECT_TRUE(config.problems.empty()) << value;
    EXPECT_EQ(config.source_of("console_format"), "env:NEMO_LENS_CONSOLE_FORMAT");
  }
  EXPECT_EQ(read({{"NEMO_LENS_CONSOLE_FORMAT", "JSON"}}).console_format, ConsoleFormat::json);
  const Config prefixed =
      read({{"MEGATRON_OTEL_CONSOLE_FORMAT", "text"}}, "MEGATRON_OTEL", "NEMO_LENS");
  EXPECT_EQ(prefixed.console_format, ConsoleFormat::text);
  EXPECT_EQ(prefixed.source_of("console_format"), "env:MEGATRON_OTEL_CONSOLE_FORMAT");
  EXPECT_EQ(to_string(ConsoleFormat::text), "text");
  EXPECT_EQ(to_string(ConsoleFormat::json), "json");
}

TEST(ConfigFromEnv, ConsoleFormatOutsideTheSetIsAProblemNamingVariableValueAndChoices) {
  const Config config =
      read({{"MEGATRON_OTEL_CONSOLE_FORMAT", "pretty"}}, "MEGATRON_OTEL", "NEMO_LENS");
  EXPECT_EQ(config.console_format, ConsoleFormat::json);
  EXPECT_EQ(first_problem(config),
            "Invalid console format for MEGATRON_OTEL_CONSOLE_FORMAT: 'pretty'; accepted: json, "
            "text (any case)");
}

TEST(ConfigFromEnv, EnabledTrueSpellings) {
  for (const char* value : {"1", "true", "yes", "on", "True", "YES", " on "}) {
    const Config config = read({{"NEMO_LENS_ENABLED", value}});
    EXPECT_TRUE(config.enabled) << value;
    EXPECT_EQ(config.source_of("enabled"), "env:NEMO_LENS_ENABLED");
  }
}

TEST(ConfigFromEnv, EnabledFalseSpellings) {
  for (const char* value : {"0", "false", "no", "off", "FALSE"}) {
    EXPECT_FALSE(read({{"NEMO_LENS_ENABLED", value}}).enabled) << value;
  }
}

TEST(ConfigFromEnv, InvalidEnabledIsAnErrorNamingTheVariable) {
  auto config = Config::from_env("NEMO_LENS", {}, Env::from({{"NEMO_LENS_ENABLED", "maybe"}}));
  ASSERT_EQ(failure_of(config),
            "Invalid boolean for NEMO_LENS_ENABLED: 'maybe'; accepted: 1, true, yes, on / 0, "
            "false, no, off (any case)");
}

TEST(ConfigFromEnv, InvalidEnabledFromFallbackNamesTheFallbackVariable) {
  auto config =
      Config::from_env("MEGATRON_OTEL", "NEMO_LENS", Env::from({{"NEMO_LENS_ENABLED", "maybe"}}));
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.message().find("NEMO_LENS_ENABLED: 'maybe'"), std::string::npos);
  EXPECT_EQ(config.message().find("MEGATRON_OTEL"), std::string::npos);
}

TEST(ConfigFromEnv, PrimaryPrefixIsRead) {
  const Config config = read({{"MEGATRON_OTEL_ENABLED", "1"}}, "MEGATRON_OTEL", "NEMO_LENS");
  EXPECT_TRUE(config.enabled);
  EXPECT_EQ(config.source_of("enabled"), "env:MEGATRON_OTEL_ENABLED");
  EXPECT_EQ(config.prefix, "MEGATRON_OTEL");
  EXPECT_EQ(config.fallback_prefix, "NEMO_LENS");
}

TEST(ConfigFromEnv, FallbackPrefixUsedWhenPrimaryUnset) {
  const Config config = read({{"NEMO_LENS_EXPORTER", "console"}}, "RL_OTEL", "NEMO_LENS");
  EXPECT_EQ(config.exporter, ExporterKind::console);
  EXPECT_EQ(config.source_of("exporter"), "env:NEMO_LENS_EXPORTER");
}

TEST(ConfigFromEnv, PrimaryBeatsFallback) {
  const Config config = read({{"RL_OTEL_EXPORTER", "console"}, {"NEMO_LENS_EXPORTER", "otlp"}},
                             "RL_OTEL", "NEMO_LENS");
  EXPECT_EQ(config.exporter, ExporterKind::console);
}

TEST(ConfigFromEnv, BlankPrimaryFallsThroughToFallback) {
  const Config config = read({{"RL_OTEL_EXPORTER", "   "}, {"NEMO_LENS_EXPORTER", "console"}},
                             "RL_OTEL", "NEMO_LENS");
  EXPECT_EQ(config.exporter, ExporterKind::console);
}

TEST(ConfigFromEnv, BlankMeansUnsetWithoutFallback) {
  const Config config = read({{"NEMO_LENS_SPAN_GROUPS", ""}, {"NEMO_LENS_EXPORT_RANK", " "}});
  EXPECT_EQ(config.span_groups, "default");
  EXPECT_EQ(config.export_rank, -1);
  EXPECT_TRUE(config.problems.empty());
}

TEST(ConfigFromEnv, StringsAreTrimmedButNotLowerCased) {
  const Config config = read({{"NEMO_LENS_RUN_ID", " Run-7 "}, {"NEMO_LENS_EXPORTER", " file "}});
  EXPECT_EQ(config.run_id, "Run-7");
  EXPECT_EQ(config.exporter, ExporterKind::file);
}

TEST(ConfigFromEnv, EveryKeyIsRead) {
  const Config config = read({{"NEMO_LENS_ENABLED", "1"},
                              {"OTEL_SERVICE_NAME", " my-training-run "},
                              {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
                              {"NEMO_LENS_EXPORT_RANK", "+1_0"},
                              {"NEMO_LENS_EXPORT_SAMPLE_RATE", "0.1"},
                              {"NEMO_LENS_SAMPLING_STRATEGY", "rank_aware"},
                              {"NEMO_LENS_TRACES_ENABLED", "off"},
                              {"NEMO_LENS_METRICS_ENABLED", "no"},
                              {"NEMO_LENS_LOGS_ENABLED", "1"},
                              {"NEMO_LENS_SPAN_GROUPS", "per_step"},
                              {"NEMO_LENS_EXPORTER", "file"},
                              {"NEMO_LENS_FILE_PATH", "/tmp/out"},
                              {"NEMO_LENS_RUN_ID", "run-7"},
                              {"NEMO_LENS_USER_ID", "team-alpha"},
                              {"WANDB_ENTITY", " ent "},
                              {"WANDB_PROJECT", "proj"}});
  expect_main_fields(config, {.enabled = true,
                              .service_name = "my-training-run",
                              .rank_strategy = "all_ranks",
                              .export_rank = 10,
                              .export_sample_rate = 0.1,
                              .sampling_strategy = "rank_aware",
                              .traces_enabled = false,
                              .metrics_enabled = false,
                              .logs_enabled = true,
                              .span_groups = "per_step",
                              .exporter = ExporterKind::file,
                              .file_path = "/tmp/out",
                              .run_id = "run-7",
                              .user_id = "team-alpha"});
  EXPECT_EQ(config.source_of("service_name"), "env:OTEL_SERVICE_NAME");
  EXPECT_EQ(config.wandb_entity, " ent ");  // verbatim, not trimmed
  EXPECT_EQ(config.wandb_project, "proj");
  EXPECT_TRUE(config.problems.empty());
}

TEST(ConfigFromEnv, SampleRateBoundariesAreExact) {
  EXPECT_EQ(read({{"NEMO_LENS_EXPORT_SAMPLE_RATE", "0.0"}}).export_sample_rate, 0.0);
  EXPECT_EQ(read({{"NEMO_LENS_EXPORT_SAMPLE_RATE", "1.0"}}).export_sample_rate, 1.0);
  EXPECT_EQ(read({{"NEMO_LENS_EXPORT_SAMPLE_RATE", ".5"}}).export_sample_rate, 0.5);
  EXPECT_EQ(read({{"NEMO_LENS_EXPORT_SAMPLE_RATE", "1e-1"}}).export_sample_rate, 0.1);
  EXPECT_TRUE(std::isnan(read({{"NEMO_LENS_EXPORT_SAMPLE_RATE", "nan"}}).export_sample_rate));
}

TEST(ConfigFromEnv, MalformedValuesAreRecordedAsProblemsNamingTheVariable) {
  EXPECT_EQ(first_problem(read({{"NEMO_LENS_EXPORT_RANK", "last"}})),
            "Invalid integer for NEMO_LENS_EXPORT_RANK: 'last'; accepted: a whole number such "
            "as -1 (last rank), 0 or 7");
  EXPECT_EQ(first_problem(read({{"NEMO_LENS_EXPORT_RANK", "3.0"}})).substr(0, 45),
            "Invalid integer for NEMO_LENS_EXPORT_RANK: '3");
  EXPECT_EQ(first_problem(read({{"NEMO_LENS_EXPORT_RANK", "0x10"}})).substr(0, 49),
            "Invalid integer for NEMO_LENS_EXPORT_RANK: '0x10'");
  EXPECT_EQ(first_problem(read({{"NEMO_LENS_EXPORT_SAMPLE_RATE", "high"}})),
            "Invalid float for NEMO_LENS_EXPORT_SAMPLE_RATE: 'high'; accepted: a number in "
            "[0.0, 1.0] such as 0.1");
  EXPECT_EQ(first_problem(read({{"NEMO_LENS_LOGS_ENABLED", "sometimes"}})),
            "Invalid boolean for NEMO_LENS_LOGS_ENABLED: 'sometimes'; accepted: 1, true, yes, "
            "on / 0, false, no, off (any case)");
}

TEST(ConfigFromEnv, MalformedValueKeepsTheDefault) {
  const Config config =
      read({{"NEMO_LENS_EXPORT_RANK", "last"}, {"NEMO_LENS_TRACES_ENABLED", "?"}});
  EXPECT_EQ(config.export_rank, -1);
  EXPECT_TRUE(config.traces_enabled);
  ASSERT_EQ(config.problems.size(), 2U);
  EXPECT_EQ(config.source_of("export_rank"), "default");
}

TEST(ConfigFromEnv, ProblemFromFallbackNamesTheFallbackVariable) {
  const Config config = read({{"NEMO_LENS_EXPORT_RANK", "last"}}, "MEGATRON_OTEL", "NEMO_LENS");
  EXPECT_NE(first_problem(config).find("NEMO_LENS_EXPORT_RANK: 'last'"), std::string::npos);
  EXPECT_EQ(first_problem(config).find("MEGATRON_OTEL_EXPORT_RANK"), std::string::npos);
}

TEST(ConfigAliases, ExportStrategyIsAnAliasOfRankStrategy) {
  const Config config = read({{"NEMO_LENS_EXPORT_STRATEGY", "all_ranks"}});
  EXPECT_EQ(config.rank_strategy, "all_ranks");
  EXPECT_EQ(config.source_of("rank_strategy"), "env:NEMO_LENS_EXPORT_STRATEGY");
}

TEST(ConfigAliases, BothSpellingsAgreeingIsFine) {
  const Config config =
      read({{"NEMO_LENS_EXPORT_STRATEGY", "sampled"}, {"NEMO_LENS_RANK_STRATEGY", "sampled"}});
  EXPECT_EQ(config.rank_strategy, "sampled");
  EXPECT_EQ(config.source_of("rank_strategy"), "env:NEMO_LENS_RANK_STRATEGY");
  EXPECT_TRUE(config.problems.empty());
}

TEST(ConfigAliases, BothSpellingsDisagreeingIsAConflictNamingBoth) {
  const Config config =
      read({{"NEMO_LENS_EXPORT_STRATEGY", "all_ranks"}, {"NEMO_LENS_RANK_STRATEGY", "sampled"}});
  EXPECT_EQ(first_problem(config),
            "Conflicting settings: NEMO_LENS_RANK_STRATEGY='sampled' and "
            "NEMO_LENS_EXPORT_STRATEGY='all_ranks'; NEMO_LENS_EXPORT_STRATEGY is an alias of "
            "NEMO_LENS_RANK_STRATEGY, set only one of them");
}

TEST(ConfigAliases, PrimaryLevelAliasBeatsFallbackLevelName) {
  const Config config =
      read({{"MEGATRON_OTEL_EXPORT_STRATEGY", "all_ranks"}, {"NEMO_LENS_RANK_STRATEGY", "sampled"}},
           "MEGATRON_OTEL", "NEMO_LENS");
  EXPECT_EQ(config.rank_strategy, "all_ranks");
  EXPECT_TRUE(config.problems.empty());
}

TEST(ConfigAliases, ConflictAtTheFallbackLevelIsReported) {
  const Config config =
      read({{"NEMO_LENS_EXPORT_STRATEGY", "all_ranks"}, {"NEMO_LENS_RANK_STRATEGY", "sampled"}},
           "MEGATRON_OTEL", "NEMO_LENS");
  EXPECT_NE(first_problem(config).find("Conflicting settings: NEMO_LENS_RANK_STRATEGY"),
            std::string::npos);
}

TEST(ConfigAliases, SamplerEnabledMeansRankAware) {
  const Config on = read({{"NEMO_LENS_SAMPLER_ENABLED", "1"}});
  EXPECT_EQ(on.sampling_strategy, "rank_aware");
  EXPECT_EQ(on.source_of("sampling_strategy"), "env:NEMO_LENS_SAMPLER_ENABLED");
  const Config off = read({{"NEMO_LENS_SAMPLER_ENABLED", "false"}});
  EXPECT_EQ(off.sampling_strategy, "");
  EXPECT_TRUE(off.problems.empty());
}

TEST(ConfigAliases, SamplerEnabledAgreeingWithSamplingStrategyIsFine) {
  const Config config =
      read({{"NEMO_LENS_SAMPLER_ENABLED", "yes"}, {"NEMO_LENS_SAMPLING_STRATEGY", "rank_aware"}});
  EXPECT_EQ(config.sampling_strategy, "rank_aware");
  EXPECT_TRUE(config.problems.empty());
}

TEST(ConfigAliases, SamplerEnabledDisagreeingIsAConflict) {
  const Config config =
      read({{"NEMO_LENS_SAMPLER_ENABLED", "0"}, {"NEMO_LENS_SAMPLING_STRATEGY", "rank_aware"}});
  EXPECT_EQ(first_problem(config),
            "Conflicting settings: NEMO_LENS_SAMPLING_STRATEGY='rank_aware' and "
            "NEMO_LENS_SAMPLER_ENABLED='0'; NEMO_LENS_SAMPLER_ENABLED=1 means "
            "NEMO_LENS_SAMPLING_STRATEGY=rank_aware and NEMO_LENS_SAMPLER_ENABLED=0 means no "
            "sampling strategy, set only one of them");
  const Config custom =
      read({{"NEMO_LENS_SAMPLER_ENABLED", "1"}, {"NEMO_LENS_SAMPLING_STRATEGY", "my_sampler"}});
  EXPECT_NE(first_problem(custom).find("Conflicting settings"), std::string::npos);
}

TEST(ConfigAliases, MalformedSamplerEnabledIsAProblem) {
  const Config config = read({{"NEMO_LENS_SAMPLER_ENABLED", "maybe"}});
  EXPECT_EQ(config.sampling_strategy, "");
  EXPECT_EQ(first_problem(config).substr(0, 55),
            "Invalid boolean for NEMO_LENS_SAMPLER_ENABLED: 'maybe';");
}

TEST(ConfigServiceName, BlankOtelServiceNameKeepsDefault) {
  const Config config = read({{"OTEL_SERVICE_NAME", "  "}});
  EXPECT_EQ(config.service_name, "nemo");
  EXPECT_EQ(config.source_of("service_name"), "default");
}

TEST(ConfigCli, OverridesBeatTheEnvironmentAndRecordSources) {
  Config config = read({{"OTEL_SERVICE_NAME", "env-name"}, {"NEMO_LENS_SPAN_GROUPS", "default"}});
  config.apply({true, std::string("cli-name"), std::string(" per_step ")});
  EXPECT_TRUE(config.enabled);
  EXPECT_EQ(config.service_name, "cli-name");
  EXPECT_EQ(config.span_groups, "per_step");
  EXPECT_EQ(config.source_of("enabled"), "cli:--otel-enabled");
  EXPECT_EQ(config.source_of("service_name"), "cli:--otel-service-name");
  EXPECT_EQ(config.source_of("span_groups"), "cli:--otel-span-groups");
  EXPECT_EQ(config.label_of("span_groups"), "--otel-span-groups");
}

TEST(ConfigCli, AbsentEnabledFlagDoesNotTurnTelemetryOff) {
  Config config = read({{"NEMO_LENS_ENABLED", "1"}});
  config.apply({});
  EXPECT_TRUE(config.enabled);
  EXPECT_EQ(config.source_of("enabled"), "env:NEMO_LENS_ENABLED");
}

TEST(ConfigCli, EmptyOverridesAreIgnored) {
  Config config;
  config.apply({false, std::string(""), std::string("  ")});
  EXPECT_EQ(config.service_name, "nemo");
  EXPECT_EQ(config.span_groups, "default");
}

TEST(ConfigLabels, LabelNamesTheVariableFlagOrField) {
  Config config = read({{"NEMO_LENS_EXPORTER", "file"}});
  EXPECT_EQ(config.label_of("exporter"), "NEMO_LENS_EXPORTER");
  EXPECT_EQ(config.label_of("export_rank"), "config.export_rank");
}

TEST(ConfigFromEnv, EmptyPrefixIsAnError) {
  auto config = Config::from_env("", {}, Env::from({}));
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.message().find("prefix"), std::string::npos);
}

}  // namespace
}  // namespace lens
