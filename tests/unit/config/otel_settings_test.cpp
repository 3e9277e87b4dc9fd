// The standard OTEL_* environment parsed into typed settings: defaults, per-signal rules,
// and every parse error (OpenTelemetry environment and OTLP exporter specifications).
#include "lens/otel_settings.hpp"

#include <gtest/gtest.h>

namespace lens {
namespace {

OtelSettings parse(Env::Map vars) { return OtelSettings::from_env(Env::from(std::move(vars))); }

std::string problem(Env::Map vars) {
  const OtelSettings s = parse(std::move(vars));
  EXPECT_EQ(s.problems.size(), 1U);
  return s.problems.empty() ? "" : s.problems.front().message();
}

TEST(OtelSettingsDefaults, MatchTheSpecification) {
  const OtelSettings s = parse({});
  EXPECT_TRUE(s.problems.empty());
  EXPECT_FALSE(s.sdk_disabled.value);
  EXPECT_EQ(s.service_name.value, "");
  EXPECT_TRUE(s.resource_attributes.value.empty());
  EXPECT_EQ(s.traces_sampler.value, SamplerKind::parentbased_always_on);
  EXPECT_FALSE(s.traces_sampler_arg.value.has_value());
  EXPECT_EQ(s.sampler_ratio(), 1.0);
  EXPECT_EQ(s.propagators.value, (std::vector<std::string>{"tracecontext", "baggage"}));
  for (Signal signal : {Signal::traces, Signal::metrics, Signal::logs}) {
    const OtlpSignalSettings& o = s.signal(signal);
    EXPECT_EQ(o.protocol.value, OtlpProtocol::grpc);
    EXPECT_EQ(o.endpoint.value, "http://localhost:4317");
    EXPECT_EQ(o.endpoint.source, "default");
    EXPECT_TRUE(o.headers.value.empty());
    EXPECT_EQ(o.timeout_ms.value, 10000);
    EXPECT_EQ(o.compression.value, "none");
    EXPECT_FALSE(o.insecure.value);
  }
  EXPECT_EQ(s.metrics_temporality.value, TemporalityPreference::cumulative);
  EXPECT_EQ(s.bsp.schedule_delay_ms.value, 5000);
  EXPECT_EQ(s.bsp.export_timeout_ms.value, 30000);
  EXPECT_EQ(s.bsp.max_queue_size.value, 2048);
  EXPECT_EQ(s.bsp.max_export_batch_size.value, 512);
  EXPECT_EQ(s.blrp.schedule_delay_ms.value, 1000);
  EXPECT_EQ(s.blrp.export_timeout_ms.value, 30000);
  EXPECT_EQ(s.blrp.max_queue_size.value, 2048);
  EXPECT_EQ(s.blrp.max_export_batch_size.value, 512);
  EXPECT_EQ(s.metric_export_interval_ms.value, 10000);
  EXPECT_EQ(s.metric_export_timeout_ms.value, 30000);
  EXPECT_FALSE(s.limits.attribute_value_length.value.has_value());
  EXPECT_EQ(s.limits.attribute_count.value, 128);
  EXPECT_EQ(s.limits.span_attribute_count.value, 128);
  EXPECT_EQ(s.limits.span_event_count.value, 128);
  EXPECT_EQ(s.limits.span_link_count.value, 128);
  EXPECT_EQ(s.limits.event_attribute_count.value, 128);
  EXPECT_EQ(s.limits.link_attribute_count.value, 128);
  EXPECT_EQ(s.limits.logrecord_attribute_count.value, 128);
}

TEST(OtelSettingsParse, SdkDisabled) {
  EXPECT_TRUE(parse({{"OTEL_SDK_DISABLED", " TRUE "}}).sdk_disabled.value);
  EXPECT_FALSE(parse({{"OTEL_SDK_DISABLED", "false"}}).sdk_disabled.value);
  EXPECT_EQ(problem({{"OTEL_SDK_DISABLED", "1"}}),
            "Invalid boolean for OTEL_SDK_DISABLED: '1'; accepted: true, false (any case)");
}

TEST(OtelSettingsParse, ResourceAttributesArePercentDecodedInOrder) {
  const OtelSettings s = parse(
      {{"OTEL_RESOURCE_ATTRIBUTES", " team = ml%2Cinfra , region=us%3Deast,,empty=,k=a%20b"}});
  ASSERT_TRUE(s.problems.empty());
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(s.resource_attributes.value,
            (Pairs{{"team", "ml,infra"}, {"region", "us=east"}, {"empty", ""}, {"k", "a b"}}));
  EXPECT_EQ(s.resource_attributes.source, "env:OTEL_RESOURCE_ATTRIBUTES");
}

TEST(OtelSettingsParse, ResourceAttributeErrors) {
  EXPECT_EQ(problem({{"OTEL_RESOURCE_ATTRIBUTES", "a=1,broken"}}),
            "Invalid entry in OTEL_RESOURCE_ATTRIBUTES: 'broken' has no '='; accepted: key=value "
            "pairs separated by commas, values percent-encoded");
  EXPECT_EQ(problem({{"OTEL_RESOURCE_ATTRIBUTES", "=1"}}),
            "Invalid entry in OTEL_RESOURCE_ATTRIBUTES: '=1' has an empty key; accepted: "
            "key=value pairs separated by commas");
  EXPECT_EQ(problem({{"OTEL_RESOURCE_ATTRIBUTES", "a=%zz"}}),
            "Invalid entry in OTEL_RESOURCE_ATTRIBUTES: 'a=%zz' has a malformed percent escape; "
            "accepted: %XX with two hex digits");
  EXPECT_EQ(problem({{"OTEL_RESOURCE_ATTRIBUTES", "a=%4"}}).substr(0, 49),
            "Invalid entry in OTEL_RESOURCE_ATTRIBUTES: 'a=%4'");
}

TEST(OtelSettingsParse, AllSixSamplers) {
  const std::pair<const char*, SamplerKind> cases[] = {
      {"always_on", SamplerKind::always_on},
      {"always_off", SamplerKind::always_off},
      {"traceidratio", SamplerKind::traceidratio},
      {"parentbased_always_on", SamplerKind::parentbased_always_on},
      {"parentbased_always_off", SamplerKind::parentbased_always_off},
      {"ParentBased_TraceIdRatio", SamplerKind::parentbased_traceidratio}};
  for (const auto& [name, kind] : cases) {
    const OtelSettings s = parse({{"OTEL_TRACES_SAMPLER", name}});
    EXPECT_EQ(s.traces_sampler.value, kind) << name;
    EXPECT_TRUE(s.problems.empty());
  }
}

// One table names the samplers: to_string and parse_sampler_kind read it both ways, and the
// accepted list of the error messages is made from it.
TEST(OtelSettingsParse, SamplerNamesRoundTrip) {
  const SamplerKind kinds[] = {SamplerKind::always_on,
                               SamplerKind::always_off,
                               SamplerKind::traceidratio,
                               SamplerKind::parentbased_always_on,
                               SamplerKind::parentbased_always_off,
                               SamplerKind::parentbased_traceidratio};
  for (SamplerKind kind : kinds) {
    EXPECT_EQ(parse_sampler_kind(to_string(kind)), kind) << to_string(kind);
  }
  EXPECT_EQ(to_string(SamplerKind::parentbased_traceidratio), "parentbased_traceidratio");
  EXPECT_EQ(parse_sampler_kind("traceidratio"), SamplerKind::traceidratio);
  // Exact names only: the environment parser lowers the value first, callers of
  // parse_sampler_kind do not.
  EXPECT_EQ(parse_sampler_kind("Always_On"), std::nullopt);
  EXPECT_EQ(parse_sampler_kind("xray"), std::nullopt);
  EXPECT_EQ(parse_sampler_kind(""), std::nullopt);
  EXPECT_EQ(kAcceptedSamplers,
            "always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, "
            "parentbased_traceidratio");
}

TEST(OtelSettingsParse, SamplerErrors) {
  EXPECT_EQ(problem({{"OTEL_TRACES_SAMPLER", "xray"}}),
            "Invalid sampler for OTEL_TRACES_SAMPLER: 'xray'; accepted: always_on, always_off, "
            "traceidratio, parentbased_always_on, parentbased_always_off, "
            "parentbased_traceidratio");
  EXPECT_EQ(problem({{"OTEL_TRACES_SAMPLER", "traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "1.5"}}),
            "Invalid ratio for OTEL_TRACES_SAMPLER_ARG: '1.5'; accepted: a number in [0.0, 1.0] "
            "such as 0.1");
  EXPECT_EQ(
      problem({{"OTEL_TRACES_SAMPLER", "traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "-0.1"}}),
      "Invalid ratio for OTEL_TRACES_SAMPLER_ARG: '-0.1'; accepted: a number in [0.0, 1.0] such "
      "as 0.1");
  EXPECT_EQ(
      problem({{"OTEL_TRACES_SAMPLER", "traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "tenth"}}),
      "Invalid ratio for OTEL_TRACES_SAMPLER_ARG: 'tenth'; accepted: a number in [0.0, 1.0] such "
      "as 0.1");
}

TEST(OtelSettingsParse, SamplerArgOnlyMattersForRatioSamplers) {
  const OtelSettings ratio = parse(
      {{"OTEL_TRACES_SAMPLER", "parentbased_traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "0.1"}});
  EXPECT_DOUBLE_EQ(ratio.sampler_ratio(), 0.1);
  const OtelSettings on =
      parse({{"OTEL_TRACES_SAMPLER", "always_on"}, {"OTEL_TRACES_SAMPLER_ARG", "x"}});
  EXPECT_TRUE(on.problems.empty());
  EXPECT_EQ(on.sampler_ratio(), 1.0);
}

TEST(OtelSettingsParse, Propagators) {
  EXPECT_EQ(parse({{"OTEL_PROPAGATORS", "b3, TraceContext,b3"}}).propagators.value,
            (std::vector<std::string>{"b3", "tracecontext"}));
  EXPECT_TRUE(parse({{"OTEL_PROPAGATORS", "none"}}).propagators.value.empty());
  EXPECT_EQ(problem({{"OTEL_PROPAGATORS", "tracecontext,xray"}}),
            "Invalid propagator in OTEL_PROPAGATORS: 'xray'; accepted: tracecontext, baggage, b3, "
            "b3multi, jaeger, none");
}

TEST(OtelSettingsOtlp, ProtocolPerSignalBeatsGeneral) {
  const OtelSettings s = parse({{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
                                {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"},
                                {"OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "HTTP/JSON"}});
  EXPECT_EQ(s.traces.protocol.value, OtlpProtocol::http_protobuf);
  EXPECT_EQ(s.traces.protocol.source, "env:OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
  EXPECT_EQ(s.metrics.protocol.value, OtlpProtocol::grpc);
  EXPECT_EQ(s.metrics.protocol.source, "env:OTEL_EXPORTER_OTLP_PROTOCOL");
  EXPECT_EQ(s.logs.protocol.value, OtlpProtocol::http_json);
}

TEST(OtelSettingsOtlp, EmptySignalProtocolFallsThroughToGeneral) {
  const OtelSettings s = parse({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
                                {"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", " "}});
  EXPECT_EQ(s.metrics.protocol.value, OtlpProtocol::http_protobuf);
}

TEST(OtelSettingsOtlp, UnknownProtocolIsAnError) {
  const OtelSettings s = parse({{"OTEL_EXPORTER_OTLP_PROTOCOL", "foo"}});
  ASSERT_EQ(s.problems.size(), 3U);  // once per signal
  EXPECT_EQ(s.problems.front().message(),
            "Invalid protocol for OTEL_EXPORTER_OTLP_PROTOCOL: 'foo'; accepted: grpc, "
            "http/protobuf, http/json");
}

TEST(OtelSettingsOtlp, HttpDefaultEndpointsCarryTheSignalPath) {
  const OtelSettings s = parse({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}});
  EXPECT_EQ(s.traces.endpoint.value, "http://localhost:4318/v1/traces");
  EXPECT_EQ(s.metrics.endpoint.value, "http://localhost:4318/v1/metrics");
  EXPECT_EQ(s.logs.endpoint.value, "http://localhost:4318/v1/logs");
}

TEST(OtelSettingsOtlp, GeneralEndpointGetsThePathForHttpOnly) {
  const OtelSettings http = parse({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
                                   {"OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318"}});
  EXPECT_EQ(http.traces.endpoint.value, "https://collector:4318/v1/traces");
  EXPECT_EQ(http.traces.endpoint.source, "env:OTEL_EXPORTER_OTLP_ENDPOINT");
  const OtelSettings slash = parse({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
                                    {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/base/"}});
  EXPECT_EQ(slash.metrics.endpoint.value, "http://c:4318/base/v1/metrics");
  const OtelSettings grpc = parse({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"}});
  EXPECT_EQ(grpc.logs.endpoint.value, "http://collector:4317");
}

TEST(OtelSettingsOtlp, SignalEndpointIsUsedVerbatim) {
  const OtelSettings s =
      parse({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
             {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://general:4318"},
             {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://trace.example/otel/v1/traces"}});
  EXPECT_EQ(s.traces.endpoint.value, "https://trace.example/otel/v1/traces");
  EXPECT_EQ(s.traces.endpoint.source, "env:OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  EXPECT_EQ(s.metrics.endpoint.value, "http://general:4318/v1/metrics");
}

// grpc++ aborts the process on a metadata key or value it does not accept: such headers are
// configuration errors, and a secret value is never echoed.
TEST(OtelSettingsOtlp, HeadersGrpcWouldRejectAreErrorsThatHideTheValue) {
  EXPECT_EQ(problem({{"OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x team=1"}}),
            "Invalid header name in OTEL_EXPORTER_OTLP_LOGS_HEADERS: 'x team'; accepted: letters, "
            "digits, '-', '_' and '.'");
  EXPECT_EQ(problem({{"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "grpc-timeout=1S"}}),
            "Invalid header name in OTEL_EXPORTER_OTLP_METRICS_HEADERS: 'grpc-timeout'; names "
            "starting with 'grpc-' are reserved by gRPC");
  const std::string message =
      problem({{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "Authorization=Bearer%0Asecret-7f3a"}});
  EXPECT_EQ(message,
            "Invalid header value in OTEL_EXPORTER_OTLP_TRACES_HEADERS: the value of "
            "'Authorization' (not shown) has a control or non-ASCII character; accepted: "
            "printable ASCII, percent-encoded in the variable");
  EXPECT_EQ(message.find("secret-7f3a"), std::string::npos);
}

// A framing header sent as given made a receiver read 5 bytes of the body and answer 200 (every
// span lost, counted as exported); pseudo-headers and the exporter's own headers are refused.
TEST(OtelSettingsOtlp, FramingAndPseudoHeadersAreRefusedByName) {
  for (const char* header :
       {"Content-Length", "transfer-encoding", "Host", "Connection", "Upgrade", "Keep-Alive", "TE",
        "Trailer", "Expect", "Content-Encoding", "Content-Type", "Proxy-Connection"}) {
    EXPECT_EQ(problem({{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"},
                       {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", std::string(header) + "=5"}}),
              "Invalid header name in OTEL_EXPORTER_OTLP_TRACES_HEADERS: '" + std::string(header) +
                  "' is set by the exporter itself (message framing or connection); accepted: "
                  "any other name, such as authorization or x-tenant");
  }
  EXPECT_EQ(problem({{"OTEL_EXPORTER_OTLP_LOGS_HEADERS", ":path=/v1/other"}}),
            "Invalid header name in OTEL_EXPORTER_OTLP_LOGS_HEADERS: ':path'; accepted: letters, "
            "digits, '-', '_' and '.'");
  EXPECT_TRUE(
      parse({{"OTEL_EXPORTER_OTLP_HEADERS", "x-content-length=5,hostname=a"}}).problems.empty());
}

// gRPC servers refuse metadata over 8 KiB (RESOURCE_EXHAUSTED on every export): refused at
// setup, the value not shown. Over HTTP the same headers are accepted.
TEST(OtelSettingsOtlp, GrpcMetadataOverEightKibIsRefused) {
  const std::string big(8192 - 32 - 1, 's');  // "a" + value + 32 = 8192: at the limit
  EXPECT_TRUE(parse({{"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "a=" + big}}).problems.empty());
  const std::string message = problem({{"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "a=" + big + "s"}});
  EXPECT_EQ(message,
            "Headers in OTEL_EXPORTER_OTLP_METRICS_HEADERS too large for gRPC metadata: 8193 "
            "bytes (names, values and 32 bytes per header; values not shown); accepted: at most "
            "8192 bytes, the metadata limit of gRPC servers");
  EXPECT_EQ(message.find("sss"), std::string::npos);
  EXPECT_TRUE(parse({{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf"},
                     {"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "a=" + big + "s"}})
                  .problems.empty());
}

TEST(OtelSettingsOtlp, UrlWithoutSchemeIsAnErrorOverHttp) {
  EXPECT_EQ(problem({{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "localhost:4318"},
                     {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"}}),
            "Invalid URL for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'localhost:4318'; accepted: an "
            "http:// or https:// URL such as http://localhost:4318");
  EXPECT_EQ(problem({{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector/v1"}}),
            "Invalid URL for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector/v1'; accepted: an "
            "http:// or https:// URL such as http://localhost:4317, or HOST:PORT for gRPC");
  EXPECT_EQ(problem({{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://"}}).substr(0, 57),
            "Invalid URL for OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'htt");
}

// The OTLP specification's form for gRPC: no scheme, OTEL_EXPORTER_OTLP_INSECURE decides TLS.
TEST(OtelSettingsOtlp, GrpcTakesHostAndPortWithoutAScheme) {
  const OtelSettings s = parse({{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector.internal:4317"},
                                {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "[::1]:4317"}});
  ASSERT_TRUE(s.problems.empty()) << s.problems.front().message();
  EXPECT_EQ(s.traces.endpoint.value, "collector.internal:4317");
  EXPECT_EQ(s.metrics.endpoint.value, "[::1]:4317");
  for (const char* bad : {"::1:4317", "host:0", "host:65536", "host:", ":4317"}) {
    EXPECT_FALSE(parse({{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", bad}}).problems.empty()) << bad;
  }
}

TEST(OtelSettingsOtlp, HeadersArePercentDecodedAndSignalHeadersReplaceGeneral) {
  const OtelSettings s =
      parse({{"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20abc, x-team = ml "},
             {"OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x-logs=1"}});
  ASSERT_TRUE(s.problems.empty());
  ASSERT_EQ(s.traces.headers.value.size(), 2U);
  // Names lower-cased: gRPC metadata requires it, HTTP does not care.
  EXPECT_EQ(s.traces.headers.value[0].key, "authorization");
  EXPECT_EQ(s.traces.headers.value[0].value, "Bearer abc");
  EXPECT_EQ(s.traces.headers.value[1].key, "x-team");
  EXPECT_EQ(s.traces.headers.value[1].value, "ml");
  ASSERT_EQ(s.logs.headers.value.size(), 1U);
  EXPECT_EQ(s.logs.headers.value[0].key, "x-logs");
  EXPECT_EQ(s.logs.headers.source, "env:OTEL_EXPORTER_OTLP_LOGS_HEADERS");
}

TEST(OtelSettingsOtlp, HeaderErrorsNeverShowTheValue) {
  const OtelSettings s = parse({{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "ok=1,Bearer s3cr3t"}});
  ASSERT_EQ(s.problems.size(), 1U);
  EXPECT_EQ(s.problems.front().message(),
            "Invalid entry in OTEL_EXPORTER_OTLP_TRACES_HEADERS: item 2 (value not shown) has no "
            "'='; accepted: key=value pairs separated by commas, values percent-encoded");
  const OtelSettings escape = parse({{"OTEL_EXPORTER_OTLP_HEADERS", "auth=s3cr3t%g1"}});
  ASSERT_FALSE(escape.problems.empty());
  EXPECT_EQ(escape.problems.front().message().find("s3cr3t"), std::string::npos);
  EXPECT_NE(escape.problems.front().message().find("the value of 'auth'"), std::string::npos);
}

TEST(OtelSettingsOtlp, TimeoutCompressionTlsInsecure) {
  const OtelSettings s = parse({{"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"},
                                {"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "0"},
                                {"OTEL_EXPORTER_OTLP_COMPRESSION", "GZIP"},
                                {"OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ca.pem"},
                                {"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "/k.pem"},
                                {"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/c.pem"},
                                {"OTEL_EXPORTER_OTLP_LOGS_INSECURE", "true"}});
  ASSERT_TRUE(s.problems.empty());
  EXPECT_EQ(s.traces.timeout_ms.value, 2500);
  EXPECT_EQ(s.metrics.timeout_ms.value, 0);
  EXPECT_EQ(s.logs.compression.value, "gzip");
  EXPECT_EQ(s.metrics.certificate.value, "/etc/ca.pem");
  EXPECT_EQ(s.traces.client_key.value, "/k.pem");
  EXPECT_EQ(s.metrics.client_key.value, "");
  EXPECT_EQ(s.logs.client_certificate.value, "/c.pem");
  EXPECT_TRUE(s.logs.insecure.value);
  EXPECT_FALSE(s.traces.insecure.value);
}

TEST(OtelSettingsOtlp, TimeoutCompressionInsecureErrors) {
  const OtelSettings negative = parse({{"OTEL_EXPORTER_OTLP_TIMEOUT", "-5"}});
  ASSERT_EQ(negative.problems.size(), 3U);
  EXPECT_EQ(negative.problems.front().message(),
            "Invalid timeout for OTEL_EXPORTER_OTLP_TIMEOUT: '-5'; accepted: a non-negative "
            "integer number of milliseconds");
  EXPECT_EQ(problem({{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "10s"}}),
            "Invalid timeout for OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '10s'; accepted: a "
            "non-negative integer number of milliseconds");
  EXPECT_EQ(problem({{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "zstd"}}),
            "Invalid compression for OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'zstd'; accepted: "
            "gzip, none");
  EXPECT_EQ(problem({{"OTEL_EXPORTER_OTLP_METRICS_INSECURE", "yes"}}),
            "Invalid boolean for OTEL_EXPORTER_OTLP_METRICS_INSECURE: 'yes'; accepted: true, "
            "false (any case)");
}

TEST(OtelSettingsParse, TemporalityPreference) {
  EXPECT_EQ(parse({{"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "Delta"}})
                .metrics_temporality.value,
            TemporalityPreference::delta);
  EXPECT_EQ(parse({{"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "lowmemory"}})
                .metrics_temporality.value,
            TemporalityPreference::lowmemory);
  EXPECT_EQ(problem({{"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "gauge"}}),
            "Invalid temporality for OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'gauge'; "
            "accepted: cumulative, delta, lowmemory");
}

TEST(OtelSettingsParse, BatchProcessors) {
  const OtelSettings s = parse({{"OTEL_BSP_SCHEDULE_DELAY", "100"},
                                {"OTEL_BSP_EXPORT_TIMEOUT", "2000"},
                                {"OTEL_BSP_MAX_QUEUE_SIZE", "65536"},
                                {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096"},
                                {"OTEL_BLRP_SCHEDULE_DELAY", "50"},
                                {"OTEL_BLRP_MAX_QUEUE_SIZE", "10"},
                                {"OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", "10"}});
  ASSERT_TRUE(s.problems.empty());
  EXPECT_EQ(s.bsp.schedule_delay_ms.value, 100);
  EXPECT_EQ(s.bsp.export_timeout_ms.value, 2000);
  EXPECT_EQ(s.bsp.max_queue_size.value, 65536);
  EXPECT_EQ(s.bsp.max_export_batch_size.value, 4096);
  EXPECT_EQ(s.bsp.max_export_batch_size.source, "env:OTEL_BSP_MAX_EXPORT_BATCH_SIZE");
  EXPECT_EQ(s.blrp.schedule_delay_ms.value, 50);
  EXPECT_EQ(s.blrp.max_queue_size.value, 10);
}

TEST(OtelSettingsParse, BatchProcessorErrors) {
  EXPECT_EQ(problem({{"OTEL_BSP_SCHEDULE_DELAY", "-1"}}),
            "Invalid value for OTEL_BSP_SCHEDULE_DELAY: '-1'; accepted: a non-negative integer "
            "number of milliseconds");
  EXPECT_EQ(problem({{"OTEL_BLRP_MAX_QUEUE_SIZE", "0"}, {"OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", "1"}}),
            "Invalid value for OTEL_BLRP_MAX_QUEUE_SIZE: '0'; accepted: a positive integer");
  EXPECT_EQ(
      problem({{"OTEL_BSP_MAX_QUEUE_SIZE", "100"}, {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "200"}}),
      "Invalid value for OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '200'; accepted: a positive integer "
      "not above OTEL_BSP_MAX_QUEUE_SIZE (100)");
}

TEST(OtelSettingsParse, MetricIntervalAndTimeout) {
  const OtelSettings s =
      parse({{"OTEL_METRIC_EXPORT_INTERVAL", "1000"}, {"OTEL_METRIC_EXPORT_TIMEOUT", "500"}});
  EXPECT_EQ(s.metric_export_interval_ms.value, 1000);
  EXPECT_EQ(s.metric_export_timeout_ms.value, 500);
  EXPECT_EQ(problem({{"OTEL_METRIC_EXPORT_INTERVAL", "0"}}),
            "Invalid value for OTEL_METRIC_EXPORT_INTERVAL: '0'; accepted: a positive integer "
            "number of milliseconds");
  EXPECT_EQ(problem({{"OTEL_METRIC_EXPORT_TIMEOUT", "soon"}}),
            "Invalid value for OTEL_METRIC_EXPORT_TIMEOUT: 'soon'; accepted: a non-negative "
            "integer number of milliseconds");
}

TEST(OtelSettingsParse, LimitsWithSpecificOverGeneral) {
  const OtelSettings s = parse({{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "256"},
                                {"OTEL_ATTRIBUTE_COUNT_LIMIT", "64"},
                                {"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "32"},
                                {"OTEL_SPAN_EVENT_COUNT_LIMIT", "8"},
                                {"OTEL_SPAN_LINK_COUNT_LIMIT", "4"},
                                {"OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "2"},
                                {"OTEL_LINK_ATTRIBUTE_COUNT_LIMIT", "1"},
                                {"OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT", "1024"}});
  ASSERT_TRUE(s.problems.empty());
  EXPECT_EQ(s.limits.attribute_value_length.value, 256);
  EXPECT_EQ(s.limits.span_attribute_value_length.value, 256);  // inherited from the general
  EXPECT_EQ(s.limits.span_attribute_count.value, 32);
  EXPECT_EQ(s.limits.logrecord_attribute_count.value, 64);  // inherited
  EXPECT_EQ(s.limits.logrecord_attribute_value_length.value, 1024);
  EXPECT_EQ(s.limits.span_event_count.value, 8);
  EXPECT_EQ(s.limits.span_link_count.value, 4);
  EXPECT_EQ(s.limits.event_attribute_count.value, 2);
  EXPECT_EQ(s.limits.link_attribute_count.value, 1);
  EXPECT_EQ(problem({{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "-3"}}),
            "Invalid value for OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: '-3'; accepted: a "
            "non-negative integer");
}

TEST(OtelSettingsNames, EnumSpellings) {
  EXPECT_EQ(to_string(OtlpProtocol::http_json), "http/json");
  EXPECT_EQ(to_string(OtlpProtocol::http_protobuf), "http/protobuf");
  EXPECT_EQ(to_string(Signal::metrics), "metrics");
  EXPECT_EQ(to_string(TemporalityPreference::lowmemory), "lowmemory");
  EXPECT_EQ(to_string(SamplerKind::parentbased_traceidratio), "parentbased_traceidratio");
}

}  // namespace
}  // namespace lens
