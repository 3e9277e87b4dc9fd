// `lens config` as an operator runs it: golden JSON for a set of environments (host-specific
// values masked), the text table, and the error contract (exit 2, nothing on stdout, one
// line on stderr starting "lens: " that names the variable or flag, the value and what is
// accepted). Set LENS_UPDATE_GOLDEN=1 to rewrite the golden files after a reviewed change.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/run_process.hpp"

namespace lens {
namespace {

using OrderedJson = nlohmann::ordered_json;
using testing::run_process;
using Vars = std::map<std::string, std::string>;

// Every case runs with a fixed GPU list so that host.gpu.count does not depend on the machine.
Vars with_base(Vars vars) {
  vars.emplace("CUDA_VISIBLE_DEVICES", "0,1");
  return vars;
}

// Replaces the values that depend on the host running the test.
OrderedJson normalize(OrderedJson out) {
  OrderedJson& resource = out["resource"];
  EXPECT_TRUE(resource.contains("host.name"));
  EXPECT_TRUE(resource["process.pid"].is_number_integer());
  resource["host.name"] = "<host>";
  resource["process.pid"] = 0;
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct GoldenCase {
  std::string name;
  Vars env;
  std::vector<std::string> args;
};

// Readable test parameters in ctest output.
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

class LensConfigGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(LensConfigGolden, MatchesGoldenJson) {
  const GoldenCase& c = GetParam();
  const auto result = run_process(
      LENS_CLI_PATH,
      [&] {
        std::vector<std::string> args{"config"};
        args.insert(args.end(), c.args.begin(), c.args.end());
        return args;
      }(),
      with_base(c.env));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const OrderedJson got = normalize(OrderedJson::parse(result.out));
  const std::string path = std::string(LENS_GOLDEN_DIR) + "/config/" + c.name + ".json";
  if (std::getenv("LENS_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << got.dump(2) << "\n";
  }
  const std::string golden_text = read_file(path);
  ASSERT_FALSE(golden_text.empty()) << "missing golden file " << path;
  EXPECT_EQ(got.dump(2) + "\n", golden_text) << "golden file: " << path;
}

const GoldenCase kGoldenCases[] = {
    {"defaults_disabled", {{"NEMO_LENS_RUN_ID", "golden-run"}}, {}},
    {"enabled_console_all_ranks",
     {{"NEMO_LENS_ENABLED", "1"},
      {"NEMO_LENS_EXPORTER", "console"},
      {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
      {"NEMO_LENS_RUN_ID", "run-42"},
      {"NEMO_LENS_USER_ID", "team-alpha"}},
     {"--rank", "2", "--world-size", "4"}},
    {"megatron_prefix_non_exporting_rank",
     {{"MEGATRON_OTEL_ENABLED", "1"},
      {"NEMO_LENS_SPAN_GROUPS", "per_step"},
      {"NEMO_LENS_RUN_ID", "mega-1"}},
     {"--prefix", "MEGATRON_OTEL", "--rank", "0", "--world-size", "8"}},
    {"megatron_cli_overrides",
     {{"OTEL_SERVICE_NAME", "from-env"},
      {"MEGATRON_OTEL_SPAN_GROUPS", "default"},
      {"NEMO_LENS_RUN_ID", "mega-2"}},
     {"--prefix", "MEGATRON_OTEL", "--otel-enabled", "--otel-service-name", "gpt-175b",
      "--otel-span-groups", "profiling", "--rank", "7", "--world-size", "8", "--local-rank", "3"}},
    {"torchrun_launcher",
     {{"NEMO_LENS_ENABLED", "true"},
      {"RANK", "3"},
      {"WORLD_SIZE", "4"},
      {"LOCAL_RANK", "1"},
      {"LOCAL_WORLD_SIZE", "2"},
      {"GROUP_RANK", "1"},
      {"TORCHELASTIC_RUN_ID", "elastic-abc"}},
     {}},
    {"slurm_launcher_first_rank_per_node",
     {{"NEMO_LENS_ENABLED", "1"},
      {"NEMO_LENS_RANK_STRATEGY", "first_rank_per_node"},
      {"SLURM_PROCID", "5"},
      {"SLURM_NTASKS", "8"},
      {"SLURM_LOCALID", "1"},
      {"SLURM_NODEID", "2"},
      {"SLURM_JOB_ID", "4242"},
      {"SLURM_JOB_NAME", "pretrain"},
      {"SLURM_CLUSTER_NAME", "eos"},
      {"SLURM_NNODES", "4"},
      {"SLURM_NODELIST", "node[1-4]"},
      {"SLURM_PARTITION", "batch"},
      {"SLURM_RESTART_COUNT", "2"}},
     {}},
    {"openmpi_sampled",
     {{"NEMO_LENS_ENABLED", "1"},
      {"NEMO_LENS_RANK_STRATEGY", "sampled"},
      {"NEMO_LENS_EXPORT_SAMPLE_RATE", "0.5"},
      {"OMPI_COMM_WORLD_RANK", "0"},
      {"OMPI_COMM_WORLD_SIZE", "2"},
      {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
      {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
      {"OMPI_MCA_ess_base_jobid", "1234567"}},
     {}},
    {"otlp_http_settings",
     {{"NEMO_LENS_ENABLED", "1"},
      {"NEMO_LENS_RUN_ID", "otlp-1"},
      {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
      {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"},
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example:4318"},
      {"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "https://logs.example/ingest"},
      {"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20planted-secret,x-team=ml"},
      {"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"},
      {"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "2000"},
      {"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta"},
      {"OTEL_BSP_MAX_QUEUE_SIZE", "65536"},
      {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096"},
      {"OTEL_METRIC_EXPORT_INTERVAL", "1000"},
      {"OTEL_PROPAGATORS", "tracecontext"},
      {"OTEL_RESOURCE_ATTRIBUTES", "team=ml%2Cinfra,service.name=from-attributes,dl.rank=99"}},
     {"--rank", "0", "--world-size", "1"}},
    {"rank_aware_sampling_alias",
     {{"NEMO_LENS_ENABLED", "1"},
      {"NEMO_LENS_RUN_ID", "sampling-1"},
      {"NEMO_LENS_EXPORT_STRATEGY", "all_ranks"},
      {"NEMO_LENS_SAMPLER_ENABLED", "1"},
      {"NEMO_LENS_EXPORT_SAMPLE_RATE", "0.1"},
      {"OTEL_TRACES_SAMPLER", "traceidratio"},
      {"OTEL_TRACES_SAMPLER_ARG", "0.1"}},
     {"--rank", "3", "--world-size", "16"}},
    {"prometheus_pull_text_console",
     {{"NEMO_LENS_ENABLED", "1"},
      {"NEMO_LENS_RUN_ID", "prom-1"},
      {"NEMO_LENS_EXPORTER", "Console"},
      {"NEMO_LENS_CONSOLE_FORMAT", "Text"},
      {"NEMO_LENS_HANG_TIMEOUT", "90"},
      {"OTEL_METRICS_EXPORTER", "prometheus,otlp"},
      {"OTEL_EXPORTER_PROMETHEUS_HOST", "0.0.0.0"},
      {"OTEL_EXPORTER_PROMETHEUS_PORT", "9500"}},
     {"--rank", "1", "--world-size", "2"}},
    {"sdk_disabled",
     {{"NEMO_LENS_ENABLED", "1"}, {"NEMO_LENS_RUN_ID", "off-1"}, {"OTEL_SDK_DISABLED", "TRUE"}},
     {"--rank", "0", "--world-size", "1"}},
    {"kubernetes_and_deployment",
     {{"NEMO_LENS_ENABLED", "1"},
      {"NEMO_LENS_RUN_ID", "k8s-1"},
      {"NEMO_LENS_EXPORTER", "file"},
      {"NEMO_LENS_FILE_PATH", "/data/telemetry"},
      {"NEMO_LENS_LOGS_ENABLED", "1"},
      {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
      {"K8S_NAMESPACE", "ml"},
      {"K8S_POD_NAME", "trainer-0"},
      {"DEPLOYMENT_ENV", ""},
      {"ENVIRONMENT", "staging"},
      {"WANDB_ENTITY", "nvidia"},
      {"WANDB_PROJECT", "gpt"}},
     {"--rank", "0", "--world-size", "1"}},
};

INSTANTIATE_TEST_SUITE_P(Environments, LensConfigGolden, ::testing::ValuesIn(kGoldenCases),
                         [](const auto& test_info) { return test_info.param.name; });

TEST(LensConfig, HeaderValuesNeverAppearInAnyOutput) {
  for (const char* format : {"json", "text"}) {
    const auto result = run_process(
        LENS_CLI_PATH, {"config", "--format", format},
        with_base({{"NEMO_LENS_ENABLED", "1"},
                   {"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20planted-secret"},
                   {"OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x-key=planted-secret"}}));
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out.find("planted-secret"), std::string::npos) << format;
    EXPECT_EQ(result.err.find("planted-secret"), std::string::npos) << format;
    EXPECT_NE(result.out.find("[REDACTED]"), std::string::npos) << format;
  }
}

TEST(LensConfig, RandomRunIdWarnsOnStderr) {
  const auto result =
      run_process(LENS_CLI_PATH, {"config", "--rank", "1", "--world-size", "2"}, with_base({}));
  ASSERT_EQ(result.exit_code, 0);
  const OrderedJson out = OrderedJson::parse(result.out);
  const std::string run_id = out["run_id"];
  EXPECT_EQ(run_id.size(), 12U);
  EXPECT_EQ(run_id.find_first_not_of("0123456789abcdef"), std::string::npos) << run_id;
  EXPECT_EQ(out["resource"]["service.instance.id"], run_id + "-rank1");
  EXPECT_EQ(out["sources"]["run_id"], "default");
  EXPECT_THAT(result.err, ::testing::StartsWith("lens: warning: rank 1 uses the random run id"));
  EXPECT_THAT(result.err, ::testing::HasSubstr("NEMO_LENS_RUN_ID"));
}

// One process has nobody to share its run id with: no warning.
TEST(LensConfig, RandomRunIdOfASingleProcessIsQuiet) {
  const auto result = run_process(LENS_CLI_PATH, {"config"}, with_base({}));
  ASSERT_EQ(result.exit_code, 0);
  EXPECT_EQ(OrderedJson::parse(result.out)["run_id"].get<std::string>().size(), 12U);
  EXPECT_EQ(result.err, "");
}

// Found by fuzzing: a value that is not UTF-8 used to abort `lens config` (exit 134).
TEST(LensConfig, ValuesThatAreNotUtf8AreReplacedNotFatal) {
  const auto result = run_process(LENS_CLI_PATH, {"config", "--otel-service-name", "bad\xff"},
                                  with_base({{"OTEL_RESOURCE_ATTRIBUTES", "k=%FF"}}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const OrderedJson out = OrderedJson::parse(result.out);
  EXPECT_EQ(out["service_name"], "bad\xef\xbf\xbd");  // U+FFFD
  EXPECT_EQ(out["resource"]["k"], "\xef\xbf\xbd");
}

TEST(LensConfig, TextFormatIsAnAlignedTableWithSources) {
  const auto result =
      run_process(LENS_CLI_PATH, {"config", "--format", "text", "--rank", "1", "--world-size", "2"},
                  with_base({{"NEMO_LENS_ENABLED", "1"}, {"NEMO_LENS_RUN_ID", "text-1"}}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::istringstream lines(result.out);
  std::string header;
  std::getline(lines, header);
  EXPECT_THAT(header, ::testing::MatchesRegex("field +value +source"));
  const auto value_column = header.find("value");
  const auto source_column = header.find("source");
  std::map<std::string, std::string> rows;
  for (std::string line; std::getline(lines, line);) {
    rows[line.substr(0, line.find(' '))] = line;
  }
  ASSERT_TRUE(rows.count("enabled"));
  EXPECT_EQ(rows["enabled"].substr(value_column, 4), "true");
  EXPECT_EQ(rows["enabled"].substr(source_column), "env:NEMO_LENS_ENABLED");
  EXPECT_EQ(rows["rank"].substr(source_column), "cli:--rank");
  EXPECT_EQ(rows["service_name"].substr(value_column, 4), "nemo");
  EXPECT_EQ(rows["resolved_span_groups"].substr(value_column), "checkpoint, evaluate, job");
  EXPECT_EQ(rows["otel.exporter_otlp.traces.endpoint"].substr(value_column, 21),
            "http://localhost:4317");
  EXPECT_EQ(rows["otel.exporter_otlp.traces.endpoint"].substr(source_column), "default");
  EXPECT_EQ(rows["resource.service.instance.id"].substr(value_column), "text-1-rank1");
  EXPECT_EQ(rows["is_exporting"].substr(value_column), "true");
}

// span-groups.md: an empty variable counts as unset (the default spec), a spec of only commas
// enables no group, and the flag refuses an empty spec.
TEST(LensConfig, EmptySpanGroupSpecIsUnsetAndACommaMeansNoGroups) {
  const auto empty =
      run_process(LENS_CLI_PATH, {"config"},
                  with_base({{"NEMO_LENS_ENABLED", "1"}, {"NEMO_LENS_SPAN_GROUPS", ""}}));
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  const OrderedJson unset = OrderedJson::parse(empty.out);
  EXPECT_EQ(unset["span_groups"], "default");
  EXPECT_EQ(unset["sources"]["span_groups"], "default");
  EXPECT_EQ(unset["resolved_span_groups"], OrderedJson::array({"checkpoint", "evaluate", "job"}));

  const auto comma =
      run_process(LENS_CLI_PATH, {"config"},
                  with_base({{"NEMO_LENS_ENABLED", "1"}, {"NEMO_LENS_SPAN_GROUPS", ","}}));
  ASSERT_EQ(comma.exit_code, 0) << comma.err;
  const OrderedJson none = OrderedJson::parse(comma.out);
  EXPECT_EQ(none["sources"]["span_groups"], "env:NEMO_LENS_SPAN_GROUPS");
  EXPECT_EQ(none["resolved_span_groups"], OrderedJson::array());

  const auto flag = run_process(LENS_CLI_PATH, {"config", "--otel-span-groups", ""}, with_base({}));
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_EQ(flag.out, "");
  EXPECT_EQ(flag.err,
            "lens: invalid value for --otel-span-groups: ''; accepted: a non-empty span-group "
            "spec\n");
}

struct ErrorCase {
  std::string name;
  Vars env;
  std::vector<std::string> args;
  std::string expected_stderr;
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class LensConfigErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(LensConfigErrors, ExitTwoWithOneLineOnStderr) {
  const ErrorCase& c = GetParam();
  std::vector<std::string> args{"config"};
  args.insert(args.end(), c.args.begin(), c.args.end());
  const auto result = run_process(LENS_CLI_PATH, args, with_base(c.env));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, c.expected_stderr + "\n");
}

const ErrorCase kErrorCases[] = {
    {"InvalidEnabled",
     {{"NEMO_LENS_ENABLED", "maybe"}},
     {},
     "lens: Invalid boolean for NEMO_LENS_ENABLED: 'maybe'; accepted: 1, true, yes, on / 0, "
     "false, no, off (any case)"},
    {"InvalidIntegerReportedEvenWhenDisabled",
     {{"NEMO_LENS_EXPORT_RANK", "last"}},
     {},
     "lens: Invalid integer for NEMO_LENS_EXPORT_RANK: 'last'; accepted: a whole number such as "
     "-1 (last rank), 0 or 7"},
    {"UnknownSpanGroup",
     {{"NEMO_LENS_ENABLED", "1"}, {"NEMO_LENS_SPAN_GROUPS", "default,bogus"}},
     {},
     "lens: Invalid span-group spec in NEMO_LENS_SPAN_GROUPS: Unknown span group or preset: "
     "'bogus'. Valid options: [all, checkpoint, default, evaluate, forward_backward, job, "
     "load_checkpoint, model_init, optimizer, per_step, step]"},
    {"MegatronGroupWithoutMegatronPrefix",
     {{"NEMO_LENS_SPAN_GROUPS", "microbatch"}},
     {},
     "lens: Invalid span-group spec in NEMO_LENS_SPAN_GROUPS: Unknown span group or preset: "
     "'microbatch'. Valid options: [all, checkpoint, default, evaluate, forward_backward, job, "
     "load_checkpoint, model_init, optimizer, per_step, step]"},
    {"UnknownExporter",
     {{"MEGATRON_OTEL_EXPORTER", "Consol"}},
     {"--prefix", "MEGATRON_OTEL"},
     "lens: Unknown exporter 'Consol' in MEGATRON_OTEL_EXPORTER; accepted: otlp, console, "
     "file, none"},
    {"UnknownRankStrategy",
     {{"NEMO_LENS_RANK_STRATEGY", "every_other"}},
     {},
     "lens: Unknown rank strategy 'every_other' in NEMO_LENS_RANK_STRATEGY; accepted: "
     "all_ranks, first_rank_per_node, sampled, single_rank (or a name registered with "
     "register_rank_strategy())"},
    {"UnknownSamplingStrategy",
     {{"NEMO_LENS_SAMPLING_STRATEGY", "tail"}},
     {},
     "lens: Unknown sampling strategy 'tail' in NEMO_LENS_SAMPLING_STRATEGY; accepted: empty "
     "(the OTEL_TRACES_SAMPLER default), rank_aware (or a name registered with "
     "register_sampling_strategy())"},
    {"SampleRateOutOfRange",
     {{"NEMO_LENS_EXPORT_SAMPLE_RATE", "1.5"}},
     {},
     "lens: Invalid value for NEMO_LENS_EXPORT_SAMPLE_RATE: '1.5'; accepted: export_sample_rate "
     "in [0.0, 1.0]"},
    {"AliasConflict",
     {{"MEGATRON_OTEL_RANK_STRATEGY", "all_ranks"}, {"MEGATRON_OTEL_EXPORT_STRATEGY", "sampled"}},
     {"--prefix", "MEGATRON_OTEL"},
     "lens: Conflicting settings: MEGATRON_OTEL_RANK_STRATEGY='all_ranks' and "
     "MEGATRON_OTEL_EXPORT_STRATEGY='sampled'; MEGATRON_OTEL_EXPORT_STRATEGY is an alias of "
     "MEGATRON_OTEL_RANK_STRATEGY, set only one of them"},
    {"EndpointWithoutScheme",
     {{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector/otlp"}},
     {},
     "lens: Invalid URL for OTEL_EXPORTER_OTLP_ENDPOINT: 'collector/otlp'; accepted: an http:// "
     "or https:// URL such as http://localhost:4317, or HOST:PORT for gRPC"},
    {"HeaderWithoutEqualsHidesTheValue",
     {{"OTEL_EXPORTER_OTLP_HEADERS", "Bearer planted-secret"}},
     {},
     "lens: Invalid entry in OTEL_EXPORTER_OTLP_HEADERS: item 1 (value not shown) has no '='; "
     "accepted: key=value pairs separated by commas, values percent-encoded"},
    {"FramingHeaderIsRefusedByName",
     {{"OTEL_EXPORTER_OTLP_HEADERS", "Content-Length=5"}},
     {},
     "lens: Invalid header name in OTEL_EXPORTER_OTLP_HEADERS: 'Content-Length' is set by the "
     "exporter itself (message framing or connection); accepted: any other name, such as "
     "authorization or x-tenant"},
    {"GrpcMetadataOverEightKib",
     {{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-big=" + std::string(9000, 'v')}},
     {},
     "lens: Headers in OTEL_EXPORTER_OTLP_TRACES_HEADERS too large for gRPC metadata: 9037 bytes "
     "(names, values and 32 bytes per header; values not shown); accepted: at most 8192 bytes, "
     "the metadata limit of gRPC servers"},
    {"UnknownSampler",
     {{"OTEL_TRACES_SAMPLER", "probabilistic"}},
     {},
     "lens: Invalid sampler for OTEL_TRACES_SAMPLER: 'probabilistic'; accepted: always_on, "
     "always_off, traceidratio, parentbased_always_on, parentbased_always_off, "
     "parentbased_traceidratio"},
    {"MissingCertificateFile",
     {{"OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem"}},
     {},
     "lens: Cannot read the file in OTEL_EXPORTER_OTLP_CERTIFICATE: '/nonexistent/ca.pem' (No "
     "such file or directory); accepted: a readable PEM file"},
    // The pairing rule of setup (validate()), with the same message: a lone client key or
    // certificate is refused before any rank starts. Any readable file will do: the command.
    {"ClientKeyWithoutCertificate",
     {{"OTEL_EXPORTER_OTLP_CLIENT_KEY", LENS_CLI_PATH}},
     {},
     "lens: Client TLS files must come in pairs: OTEL_EXPORTER_OTLP_CLIENT_KEY='" LENS_CLI_PATH
     "' is set but OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE (or its general form) is not; "
     "accepted: both a client key and a client certificate (mTLS), or neither"},
    {"ClientCertificateWithoutKey",
     {{"OTEL_EXPORTER_OTLP_LOGS_CLIENT_CERTIFICATE", LENS_CLI_PATH}},
     {},
     "lens: Client TLS files must come in pairs: "
     "OTEL_EXPORTER_OTLP_LOGS_CLIENT_CERTIFICATE='" LENS_CLI_PATH
     "' is set but OTEL_EXPORTER_OTLP_LOGS_CLIENT_KEY (or its general form) is not; "
     "accepted: both a client key and a client certificate (mTLS), or neither"},
    {"ExportRankOutsideTheJob",
     {{"NEMO_LENS_EXPORT_RANK", "8"}},
     {"--rank", "0", "--world-size", "8"},
     "lens: Invalid value for NEMO_LENS_EXPORT_RANK: '8' is not a rank of this job (world size "
     "8), so no rank would export; accepted: -1 (last rank) or 0..7"},
    {"BadFormat",
     {},
     {"--format", "yaml"},
     "lens: invalid value for --format: 'yaml'; accepted: json, text"},
    {"UnknownOption",
     {},
     {"--verbose"},
     "lens: unknown option '--verbose' for 'lens config'; accepted: --fallback-prefix, --format, "
     "--help, --local-rank, --otel-enabled, --otel-service-name, --otel-span-groups, --prefix, "
     "--rank, --world-size"},
    {"MissingOptionValue", {}, {"--rank"}, "lens: option '--rank' of 'lens config' needs a value"},
    {"RankWithoutWorldSize",
     {},
     {"--rank", "1"},
     "lens: --rank and --world-size must be given together (--local-rank is optional)"},
    {"NegativeRankFlag",
     {},
     {"--rank", "-1", "--world-size", "2"},
     "lens: invalid value for --rank: '-1'; accepted: an integer >= 0"},
    {"EmptySpanGroupFlag",
     {},
     {"--otel-span-groups", " "},
     "lens: invalid value for --otel-span-groups: ' '; accepted: a non-empty span-group spec"},
    {"LauncherWorldSizeMissing",
     {{"RANK", "2"}},
     {},
     "lens: Missing WORLD_SIZE: RANK=2 is set but WORLD_SIZE is not; expected a positive integer"},
};

INSTANTIATE_TEST_SUITE_P(Cases, LensConfigErrors, ::testing::ValuesIn(kErrorCases),
                         [](const auto& test_info) { return test_info.param.name; });

// The three misspellings of issue 23, read as the trainer reads them: one warning each.
TEST(LensConfigWarnings, MisspeltVariablesAreNamedWithTheClosestKnownName) {
  const auto result = run_process(LENS_CLI_PATH, {"config", "--prefix", "MEGATRON_OTEL"},
                                  with_base({{"MEGATRON_OTEL_ENABLE", "1"},
                                             {"MEGATRON_OTEL_SPAN_GROUP", "per_step"},
                                             {"OTEL_TRACE_SAMPLER", "traceidratio"},
                                             {"NEMO_LENS_RUN_ID", "warn-1"}}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const OrderedJson out = OrderedJson::parse(result.out);
  EXPECT_EQ(out["enabled"], false);
  EXPECT_EQ(
      out["warnings"],
      OrderedJson::array({"MEGATRON_OTEL_ENABLE is set but nothing reads it; did you mean "
                          "MEGATRON_OTEL_ENABLED?",
                          "MEGATRON_OTEL_SPAN_GROUP is set but nothing reads it; did you mean "
                          "MEGATRON_OTEL_SPAN_GROUPS?",
                          "OTEL_TRACE_SAMPLER is set but nothing reads it; did you mean "
                          "OTEL_TRACES_SAMPLER?"}));
}

TEST(LensConfigWarnings, WithoutTheMegatronPrefixItsVariablesAreNoticed) {
  const auto result = run_process(LENS_CLI_PATH, {"config", "--format", "text"},
                                  with_base({{"MEGATRON_OTEL_ENABLED", "1"},
                                             {"MEGATRON_OTEL_EXPORTER", "console"},
                                             {"MEGATRON_OTEL_ENABLE", "1"},
                                             {"NEMO_LENS_RUN_ID", "warn-2"}}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const std::string warnings =
      "warning: MEGATRON_OTEL_ENABLE is set but nothing reads it; did you mean "
      "MEGATRON_OTEL_ENABLED?\n"
      "warning: MEGATRON_OTEL_ENABLED, MEGATRON_OTEL_EXPORTER are read only under the prefix "
      "MEGATRON_OTEL (the Megatron integration), not NEMO_LENS; run `lens config --prefix "
      "MEGATRON_OTEL` to see what the trainer reads\n";
  ASSERT_GE(result.out.size(), warnings.size()) << result.out;
  EXPECT_EQ(result.out.substr(result.out.size() - warnings.size()), warnings) << result.out;
  EXPECT_NE(result.out.find("\nenabled "), std::string::npos) << result.out;
}

TEST(LensConfigWarnings, NoWarningsIsAnEmptyArray) {
  const auto result =
      run_process(LENS_CLI_PATH, {"config"},
                  with_base({{"NEMO_LENS_ENABLED", "1"}, {"NEMO_LENS_RUN_ID", "w"}}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(OrderedJson::parse(result.out)["warnings"], OrderedJson::array());
}

TEST(LensCommand, UnknownCommandAndUsage) {
  auto result = run_process(LENS_CLI_PATH, {"frobnicate"}, {});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "lens: unknown command 'frobnicate'; accepted: config, collect, report, run\n");
  result = run_process(LENS_CLI_PATH, {}, {});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, ::testing::StartsWith("usage: lens <command>"));
  result = run_process(LENS_CLI_PATH, {"--version"}, {});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "lens 0.1.0\n");
  result = run_process(LENS_CLI_PATH, {"config", "--help"}, {});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, ::testing::StartsWith("usage: lens config"));
}

}  // namespace
}  // namespace lens
