// The table of variables lens reads (it must match what the readers look up), the
// unknown-variable warnings with their "did you mean" suggestions, setup printing them once
// per node, and closed sets of words accepted in any case.
#include "lens/known_variables.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "config/edit_distance.hpp"
#include "lens/config.hpp"
#include "lens/strategies.hpp"
#include "lens/telemetry.hpp"
#include "lens/validate.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

// Every name Config::from_env looks up with the given prefixes and variables.
std::set<std::string> names_read(const Env::Map& variables, std::string_view prefix,
                                 std::string_view fallback) {
  std::set<std::string> names;
  const Env env = Env::recording(variables, [&](std::string_view name) { names.emplace(name); });
  EXPECT_TRUE(Config::from_env(prefix, fallback, env).ok());
  return names;
}

template <class Names>
bool listed(const Names& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(KnownVariables, EveryVariableTheConfigReadsIsListed) {
  // Unset, and with the values that make a reader look further (ratio sampler, per-signal
  // settings at the general level only).
  std::set<std::string> read = names_read({}, "MEGATRON_OTEL", "NEMO_LENS");
  for (const auto& name : names_read({{"OTEL_TRACES_SAMPLER", "traceidratio"},
                                      {"NEMO_LENS_SAMPLER_ENABLED", "1"},
                                      {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"}},
                                     "NEMO_LENS", "")) {
    read.insert(name);
  }
  std::set<std::string> keys_read;
  for (const std::string& name : read) {
    std::string key;
    for (std::string_view prefix : {"MEGATRON_OTEL_", "NEMO_LENS_"}) {
      if (name.rfind(prefix, 0) == 0) key = name.substr(prefix.size());
    }
    if (!key.empty()) {
      EXPECT_TRUE(listed(known_prefixed_keys(), key))
          << name << " is read but its key is not in known_prefixed_keys()";
      keys_read.insert(key);
    } else if (name.rfind("OTEL_", 0) == 0) {
      EXPECT_TRUE(listed(known_otel_variables(), name))
          << name << " is read but not in known_otel_variables()";
    }
  }
  // And the other way round: nothing is listed that the config does not read.
  for (std::string_view key : known_prefixed_keys()) {
    EXPECT_EQ(keys_read.count(std::string(key)), 1U) << key << " is listed but never read";
  }
  for (const std::string& name : known_otel_variables()) {
    EXPECT_EQ(read.count(name), 1U) << name << " is listed but never read";
  }
  EXPECT_EQ(known_otel_variables().size(), 66U);
}

TEST(KnownVariables, StandardVariablesNotReadAreNotInTheReadList) {
  for (std::string_view name : unread_standard_otel_variables()) {
    EXPECT_FALSE(listed(known_otel_variables(), name)) << name;
  }
}

std::vector<std::string> warnings_for(const Env::Map& variables,
                                      std::string_view prefix = "MEGATRON_OTEL",
                                      std::string_view fallback = "NEMO_LENS") {
  return unknown_variable_warnings(Env::from(variables), prefix, fallback);
}

TEST(UnknownVariableWarnings, TheThreeMisspellingsOfTheIssueGetOneWarningEach) {
  EXPECT_EQ(warnings_for({{"MEGATRON_OTEL_ENABLE", "1"},
                          {"MEGATRON_OTEL_SPAN_GROUP", "per_step"},
                          {"OTEL_TRACE_SAMPLER", "traceidratio"}}),
            (std::vector<std::string>{
                "MEGATRON_OTEL_ENABLE is set but nothing reads it; did you mean "
                "MEGATRON_OTEL_ENABLED?",
                "MEGATRON_OTEL_SPAN_GROUP is set but nothing reads it; did you mean "
                "MEGATRON_OTEL_SPAN_GROUPS?",
                "OTEL_TRACE_SAMPLER is set but nothing reads it; did you mean "
                "OTEL_TRACES_SAMPLER?"}));
}

TEST(UnknownVariableWarnings, KnownVariablesAndOtherNamesAreNotReported) {
  EXPECT_EQ(warnings_for({{"MEGATRON_OTEL_ENABLED", "1"},
                          {"NEMO_LENS_SPAN_GROUPS", "per_step"},
                          {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://x:4317"},
                          {"OTEL_PYTHON_LOG_CORRELATION", "true"},
                          {"OTEL_JAVAAGENT_ENABLED", "true"},
                          {"PATH", "/usr/bin"},
                          {"SLURM_JOB_ID", "1"}}),
            std::vector<std::string>{});
}

TEST(UnknownVariableWarnings, FallbackPrefixIsCheckedWithItsOwnNames) {
  EXPECT_EQ(warnings_for({{"NEMO_LENS_EXPORTR", "console"}}),
            std::vector<std::string>{
                "NEMO_LENS_EXPORTR is set but nothing reads it; did you mean NEMO_LENS_EXPORTER?"});
}

TEST(UnknownVariableWarnings, OnlyTheActivePrefixesAreChecked) {
  // With the default prefix alone, MEGATRON_OTEL_* belongs to someone else (`lens config` says
  // which prefix reads it).
  EXPECT_EQ(warnings_for({{"MEGATRON_OTEL_ENABLE", "1"}}, "NEMO_LENS", ""),
            std::vector<std::string>{});
}

TEST(UnknownVariableWarnings, ConsoleFormatIsKnownUnderBothPrefixesAndCloseMisspellingsAreNamed) {
  EXPECT_EQ(warnings_for(
                {{"MEGATRON_OTEL_CONSOLE_FORMAT", "text"}, {"NEMO_LENS_CONSOLE_FORMAT", "text"}}),
            std::vector<std::string>{});
  EXPECT_EQ(warnings_for({{"MEGATRON_OTEL_CONSOLE_FORMATS", "text"}}),
            std::vector<std::string>{"MEGATRON_OTEL_CONSOLE_FORMATS is set but nothing reads it; "
                                     "did you mean MEGATRON_OTEL_CONSOLE_FORMAT?"});
}

TEST(UnknownVariableWarnings, FarFromEveryNameGetsThePointerToTheDocs) {
  EXPECT_EQ(warnings_for({{"NEMO_LENS_COLOUR", "red"}, {"OTEL_FOO", "1"}}),
            (std::vector<std::string>{
                "NEMO_LENS_COLOUR is set but nothing reads it; the variables lens reads are listed "
                "in docs/configuration.md",
                "OTEL_FOO is set but nothing reads it; the variables lens reads are listed in "
                "docs/configuration.md"}));
}

TEST(UnknownVariableWarnings, StandardVariablesLensDoesNotReadAreNamedAsSuch) {
  EXPECT_EQ(warnings_for({{"OTEL_TRACES_EXPORTER", "console"}}),
            std::vector<std::string>{
                "OTEL_TRACES_EXPORTER is an OpenTelemetry variable that lens does not read "
                "(another OpenTelemetry SDK in this job may); see docs/configuration.md"});
}

TEST(UnknownVariableWarnings, CaseMistakesPointAtTheRightSpelling) {
  EXPECT_EQ(warnings_for({{"MEGATRON_OTEL_Enabled", "1"}}),
            std::vector<std::string>{"MEGATRON_OTEL_Enabled is set but nothing reads it; did you "
                                     "mean MEGATRON_OTEL_ENABLED?"});
}

TEST(ClosestName, AllowsMoreEditsForLongerNames) {
  const std::vector<std::string> names = {"ENABLED", "SPAN_GROUPS", "EXPORT_SAMPLE_RATE"};
  EXPECT_EQ(closest_name("ENABLE", names), "ENABLED");
  EXPECT_EQ(closest_name("EANBLED", names), "ENABLED");   // one swap
  EXPECT_EQ(closest_name("ENABL", names), std::nullopt);  // two edits on 5 characters
  EXPECT_EQ(closest_name("SPAN_GRUP", names), "SPAN_GROUPS");
  EXPECT_EQ(closest_name("EXPORT_SAMPLERATES", names), "EXPORT_SAMPLE_RATE");
  EXPECT_EQ(closest_name("RUN", names), std::nullopt);
}

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(detail::edit_distance("", ""), 0U);
  EXPECT_EQ(detail::edit_distance("abc", ""), 3U);
  EXPECT_EQ(detail::edit_distance("", "ab"), 2U);
  EXPECT_EQ(detail::edit_distance("kitten", "sitting"), 3U);
  EXPECT_EQ(detail::edit_distance("ab", "ba"), 1U);
  EXPECT_EQ(detail::edit_distance("ca", "abc"), 3U);  // optimal string alignment, not Damerau
}

TEST(SetupWarnings, UnknownVariablesArePrintedByTheFirstLocalRankEvenWhenDisabled) {
  const Env env = Env::from({{"NEMO_LENS_ENABLE", "1"}});
  auto config = Config::from_env("NEMO_LENS", "", env);
  ASSERT_TRUE(config.ok());
  for (int local_rank : {0, 1}) {
    SetupOverrides overrides;
    overrides.env = env;
    const RankInfo rank = *RankInfo::make(local_rank, 2, local_rank, 2, 0);
    ::testing::internal::CaptureStderr();
    auto handle = setup_telemetry(*config, rank, {}, std::move(overrides));
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(handle.ok());
    EXPECT_EQ(err, local_rank == 0 ? "lens: warning: NEMO_LENS_ENABLE is set but nothing reads "
                                     "it; did you mean NEMO_LENS_ENABLED?\n"
                                   : "");
  }
}

TEST(ClosedSetsAnyCase, ExporterNames) {
  EXPECT_EQ(test_support::config_from({{"NEMO_LENS_EXPORTER", "Console"}}).exporter,
            ExporterKind::console);
  EXPECT_EQ(test_support::config_from({{"NEMO_LENS_EXPORTER", "OTLP"}}).exporter,
            ExporterKind::otlp);
  EXPECT_EQ(test_support::config_from({{"NEMO_LENS_EXPORTER", "File"}}).exporter,
            ExporterKind::file);
  const Config bad = test_support::config_from({{"NEMO_LENS_EXPORTER", "Consol"}});
  ASSERT_EQ(bad.problems.size(), 1U);
  EXPECT_EQ(bad.problems.front().message(),
            "Unknown exporter 'Consol' in NEMO_LENS_EXPORTER; accepted: otlp, console, file, none");
}

TEST(ClosedSetsAnyCase, ProtocolAndSampler) {
  const Config config = test_support::config_from(
      {{"OTEL_EXPORTER_OTLP_PROTOCOL", "HTTP/JSON"}, {"OTEL_TRACES_SAMPLER", "TraceIdRatio"}});
  EXPECT_EQ(config.otel.traces.protocol.value, OtlpProtocol::http_json);
  EXPECT_EQ(config.otel.traces_sampler.value, SamplerKind::traceidratio);
}

TEST(ClosedSetsAnyCase, RankAndSamplingStrategies) {
  const Config config = test_support::config_from({{"NEMO_LENS_ENABLED", "1"},
                                                   {"NEMO_LENS_RANK_STRATEGY", "ALL_RANKS"},
                                                   {"NEMO_LENS_SAMPLING_STRATEGY", "Rank_Aware"}});
  const RankInfo rank = *RankInfo::make(3, 4, 3, 4, 0);
  EXPECT_TRUE(validate(config, &rank).ok()) << validate(config, &rank).message();
  auto exporting = should_export(config, rank);
  ASSERT_TRUE(exporting.ok()) << exporting.message();
  EXPECT_TRUE(*exporting);  // all_ranks: rank 3 exports (single_rank would pick rank 3 too)
  const Config first =
      test_support::config_from({{"NEMO_LENS_RANK_STRATEGY", "First_Rank_Per_Node"}});
  const RankInfo second_local = *RankInfo::make(1, 4, 1, 4, 0);
  EXPECT_FALSE(*should_export(first, second_local));
  // Single_Rank keeps the world-size check of single_rank.
  const Config single = test_support::config_from(
      {{"NEMO_LENS_RANK_STRATEGY", "Single_Rank"}, {"NEMO_LENS_EXPORT_RANK", "9"}});
  EXPECT_EQ(validate(single, &rank).message(),
            "Invalid value for NEMO_LENS_EXPORT_RANK: '9' is not a rank of this job (world size "
            "4), so no rank would export; accepted: -1 (last rank) or 0..3");
  const Config unknown = test_support::config_from({{"NEMO_LENS_RANK_STRATEGY", "all_rank"}});
  EXPECT_EQ(validate(unknown, &rank)
                .message()
                .rfind("Unknown rank strategy 'all_rank' in "
                       "NEMO_LENS_RANK_STRATEGY; accepted: ",
                       0),
            0U);
}

}  // namespace
}  // namespace lens
