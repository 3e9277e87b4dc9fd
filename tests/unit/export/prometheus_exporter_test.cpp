// The Prometheus pull exporter: OTEL_METRICS_EXPORTER / OTEL_EXPORTER_PROMETHEUS_* parsing and
// errors, the OpenTelemetry-to-Prometheus mapping as exact exposition text (names, units,
// _total, histograms, scope labels, target_info, label sanitising), and a rank's endpoint set up
// by setup_telemetry and scraped over HTTP on loopback, its text accepted by `promtool check
// metrics`.
#include <gtest/gtest.h>
#include <httplib.h>
#include <opentelemetry/context/context.h>
#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/resource/resource.h>
#include <opentelemetry/sdk/version/version.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "export/prometheus_endpoint.hpp"
#include "export/prometheus_mapping.hpp"
#include "lens/config.hpp"
#include "lens/telemetry.hpp"
#include "telemetry/plan.hpp"
#include "telemetry/prometheus_pull.hpp"
#include "unit/support/otlp_test_servers.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

namespace sdkmetrics = opentelemetry::sdk::metrics;
using test_support::config_from;

OtelSettings parse(Env::Map vars) { return OtelSettings::from_env(Env::from(std::move(vars))); }

std::string only_problem(Env::Map vars) {
  const OtelSettings s = parse(std::move(vars));
  EXPECT_EQ(s.problems.size(), 1U);
  return s.problems.empty() ? "" : s.problems.front().message();
}

TEST(PrometheusSettings, DefaultsAndLists) {
  const OtelSettings defaults = parse({});
  EXPECT_TRUE(defaults.metrics_exporters.value.empty());
  EXPECT_EQ(defaults.prometheus_host.value, "localhost");
  EXPECT_EQ(defaults.prometheus_port.value, 9464);

  const OtelSettings both = parse({{"OTEL_METRICS_EXPORTER", " OTLP , prometheus,otlp "},
                                   {"OTEL_EXPORTER_PROMETHEUS_HOST", "0.0.0.0"},
                                   {"OTEL_EXPORTER_PROMETHEUS_PORT", "19000"}});
  EXPECT_TRUE(both.problems.empty());
  EXPECT_EQ(both.metrics_exporters.value,
            (std::vector<MetricsExporter>{MetricsExporter::otlp, MetricsExporter::prometheus}));
  EXPECT_EQ(both.metrics_exporters.source, "env:OTEL_METRICS_EXPORTER");
  EXPECT_EQ(both.prometheus_host.value, "0.0.0.0");
  EXPECT_EQ(both.prometheus_port.value, 19000);
  EXPECT_EQ(to_string(MetricsExporter::prometheus), "prometheus");
}

telemetry::MetricsRouting routing_of(const Config& config) {
  return telemetry::metrics_routing(config.otel.metrics_exporters.value, config.exporter);
}

TEST(PrometheusSettings, RoutingFollowsOtelMetricsExporterOverExporter) {
  Config file = config_from({{"NEMO_LENS_EXPORTER", "file"}});
  EXPECT_EQ(routing_of(file).push, ExporterKind::file);
  EXPECT_FALSE(routing_of(file).prometheus);

  Config pull_only =
      config_from({{"NEMO_LENS_EXPORTER", "file"}, {"OTEL_METRICS_EXPORTER", "prometheus"}});
  EXPECT_FALSE(routing_of(pull_only).push.has_value());
  EXPECT_TRUE(routing_of(pull_only).prometheus);

  Config both =
      config_from({{"NEMO_LENS_EXPORTER", "file"}, {"OTEL_METRICS_EXPORTER", "prometheus,otlp"}});
  EXPECT_EQ(routing_of(both).push, ExporterKind::otlp);
  EXPECT_TRUE(routing_of(both).prometheus);

  Config none = config_from({{"OTEL_METRICS_EXPORTER", "none"}});
  EXPECT_FALSE(routing_of(none).push.has_value());
  EXPECT_FALSE(routing_of(none).prometheus);
}

TEST(PrometheusSettings, ErrorsNameTheVariableTheValueAndWhatIsAccepted) {
  EXPECT_EQ(only_problem({{"OTEL_METRICS_EXPORTER", "otlp,prom"}}),
            "Invalid exporter in OTEL_METRICS_EXPORTER: 'prom'; accepted: otlp, prometheus, "
            "console, none, or a comma-separated list such as otlp,prometheus");
  EXPECT_EQ(only_problem({{"OTEL_METRICS_EXPORTER", "none,prometheus"}}),
            "Invalid value for OTEL_METRICS_EXPORTER: 'none,prometheus'; 'none' cannot be "
            "combined with other exporters; accepted: otlp, prometheus, console, none, or a "
            "comma-separated list such as otlp,prometheus");
  EXPECT_EQ(only_problem({{"OTEL_METRICS_EXPORTER", "otlp,console"}}),
            "Invalid value for OTEL_METRICS_EXPORTER: 'otlp,console'; otlp and console both "
            "push, choose one; accepted: otlp, prometheus, console, none, or a comma-separated "
            "list such as otlp,prometheus");
  const std::string accepted_port =
      "; accepted: an integer from 0 to 65535 such as 9464 (each rank listens on it plus its "
      "local rank; 0: any free port)";
  EXPECT_EQ(only_problem({{"OTEL_EXPORTER_PROMETHEUS_PORT", "70000"}}),
            "Invalid port for OTEL_EXPORTER_PROMETHEUS_PORT: '70000'" + accepted_port);
  EXPECT_EQ(only_problem({{"OTEL_EXPORTER_PROMETHEUS_PORT", "http"}}),
            "Invalid port for OTEL_EXPORTER_PROMETHEUS_PORT: 'http'" + accepted_port);
  EXPECT_EQ(only_problem({{"OTEL_EXPORTER_PROMETHEUS_HOST", "http://node1"}}),
            "Invalid host for OTEL_EXPORTER_PROMETHEUS_HOST: 'http://node1'; accepted: a host "
            "name or IP address to listen on, such as localhost, 127.0.0.1 or 0.0.0.0 (no scheme, "
            "port or path)");
}

// A hand-made collection: one resource, one scope, one metric of each kind lens exports.
struct Collection {
  opentelemetry::sdk::resource::Resource resource = opentelemetry::sdk::resource::Resource::Create(
      {{"service.name", "trainer"}, {"dl.rank", std::int64_t{1}}, {"9.bad-key", true}}, "");
  std::unique_ptr<opentelemetry::sdk::instrumentationscope::InstrumentationScope> scope =
      opentelemetry::sdk::instrumentationscope::InstrumentationScope::Create("nemo.lens", "1.2.3");
  sdkmetrics::ResourceMetrics data;

  static sdkmetrics::MetricData metric(std::string name, std::string description, std::string unit,
                                       sdkmetrics::InstrumentType type) {
    sdkmetrics::MetricData m;
    m.instrument_descriptor = {std::move(name), std::move(description), std::move(unit), type,
                               sdkmetrics::InstrumentValueType::kDouble};
    m.aggregation_temporality = sdkmetrics::AggregationTemporality::kCumulative;
    return m;
  }
  static sdkmetrics::PointAttributes attributes(
      std::initializer_list<std::pair<std::string, std::string>> pairs) {
    sdkmetrics::PointAttributes out;
    for (const auto& [key, value] : pairs) {
      out.SetAttribute(key, opentelemetry::nostd::string_view(value));
    }
    return out;
  }

  // `with_clashing_gauge`: also a gauge whose Prometheus name is the counter's.
  explicit Collection(bool with_clashing_gauge = false) {
    sdkmetrics::ScopeMetrics scoped;
    scoped.scope_ = scope.get();

    auto counter =
        metric("lens.tokens", "Tokens seen", "{token}", sdkmetrics::InstrumentType::kCounter);
    sdkmetrics::SumPointData tokens;
    tokens.value_ = std::int64_t{42};
    tokens.is_monotonic_ = true;
    counter.point_data_attr_.push_back({attributes({{"phase", "train"}}), tokens});
    // Two keys that meet once sanitised: values joined in the order of the original keys.
    counter.point_data_attr_.push_back(
        {attributes({{"http_method", "POST"}, {"http.method", "GET"}}), tokens});
    scoped.metric_data_.push_back(counter);

    auto updown = metric("queue.depth", "Items waiting", "{item}",
                         sdkmetrics::InstrumentType::kUpDownCounter);
    sdkmetrics::SumPointData depth;
    depth.value_ = std::int64_t{-3};
    depth.is_monotonic_ = false;
    updown.point_data_attr_.push_back({attributes({}), depth});
    scoped.metric_data_.push_back(updown);

    auto gauge = metric("megatron.training.loss", "Training loss", "",
                        sdkmetrics::InstrumentType::kObservableGauge);
    sdkmetrics::LastValuePointData loss;
    loss.value_ = 2.5;
    loss.is_lastvalue_valid_ = true;
    gauge.point_data_attr_.push_back({attributes({}), loss});
    scoped.metric_data_.push_back(gauge);

    auto memory = metric("gpu.memory.used", "Device memory in use", "By",
                         sdkmetrics::InstrumentType::kObservableGauge);
    sdkmetrics::LastValuePointData used;
    used.value_ = std::int64_t{1024};
    memory.point_data_attr_.push_back({attributes({{"gpu", "0"}}), used});
    scoped.metric_data_.push_back(memory);

    auto histogram = metric("megatron.training.step_duration_ms", "Step time", "ms",
                            sdkmetrics::InstrumentType::kHistogram);
    sdkmetrics::HistogramPointData steps;
    steps.boundaries_ = {10.0, 100.0};
    steps.counts_ = {1, 2, 1};
    steps.count_ = 4;
    steps.sum_ = 1120.5;
    histogram.point_data_attr_.push_back({attributes({}), steps});
    scoped.metric_data_.push_back(histogram);

    // A delta sum has no Prometheus form: dropped.
    auto delta = metric("delta.sum", "", "", sdkmetrics::InstrumentType::kCounter);
    delta.aggregation_temporality = sdkmetrics::AggregationTemporality::kDelta;
    delta.point_data_attr_.push_back({attributes({}), tokens});
    scoped.metric_data_.push_back(delta);

    if (with_clashing_gauge) {
      auto clash =
          metric("lens.tokens.total", "", "{token}", sdkmetrics::InstrumentType::kObservableGauge);
      clash.point_data_attr_.push_back({attributes({}), loss});
      scoped.metric_data_.push_back(clash);
    }

    data.resource_ = &resource;
    data.scope_metric_data_.push_back(std::move(scoped));
  }
};

TEST(PrometheusMapping, ExactTextForEachKindWithUnitsScopeAndTargetInfo) {
  const Collection collection;
  const std::string text =
      prometheus::TextSerializer().Serialize(exporters::to_metric_families(collection.data));
  EXPECT_EQ(text,
            "# HELP target_info Target metadata\n"
            "# TYPE target_info gauge\n"
            "target_info{_9_bad_key=\"true\",dl_rank=\"1\",service_name=\"trainer\","
            "telemetry_sdk_language=\"cpp\",telemetry_sdk_name=\"opentelemetry\","
            "telemetry_sdk_version=\"" OPENTELEMETRY_SDK_VERSION
            "\"} 1\n"
            "# HELP gpu_memory_used_bytes Device memory in use\n"
            "# TYPE gpu_memory_used_bytes gauge\n"
            "gpu_memory_used_bytes{gpu=\"0\",otel_scope_name=\"nemo.lens\","
            "otel_scope_version=\"1.2.3\"} 1024\n"
            "# HELP lens_tokens_total Tokens seen\n"
            "# TYPE lens_tokens_total counter\n"
            "lens_tokens_total{http_method=\"GET;POST\",otel_scope_name=\"nemo.lens\","
            "otel_scope_version=\"1.2.3\"} 42\n"
            "lens_tokens_total{phase=\"train\",otel_scope_name=\"nemo.lens\","
            "otel_scope_version=\"1.2.3\"} 42\n"
            "# HELP megatron_training_loss Training loss\n"
            "# TYPE megatron_training_loss gauge\n"
            "megatron_training_loss{otel_scope_name=\"nemo.lens\",otel_scope_version=\"1.2.3\"} "
            "2.5\n"
            "# HELP megatron_training_step_duration_ms_milliseconds Step time\n"
            "# TYPE megatron_training_step_duration_ms_milliseconds histogram\n"
            "megatron_training_step_duration_ms_milliseconds_count{otel_scope_name=\"nemo.lens\","
            "otel_scope_version=\"1.2.3\"} 4\n"
            "megatron_training_step_duration_ms_milliseconds_sum{otel_scope_name=\"nemo.lens\","
            "otel_scope_version=\"1.2.3\"} 1120.5\n"
            "megatron_training_step_duration_ms_milliseconds_bucket{otel_scope_name=\"nemo.lens\","
            "otel_scope_version=\"1.2.3\",le=\"10\"} 1\n"
            "megatron_training_step_duration_ms_milliseconds_bucket{otel_scope_name=\"nemo.lens\","
            "otel_scope_version=\"1.2.3\",le=\"100\"} 3\n"
            "megatron_training_step_duration_ms_milliseconds_bucket{otel_scope_name=\"nemo.lens\","
            "otel_scope_version=\"1.2.3\",le=\"+Inf\"} 4\n"
            "# HELP queue_depth Items waiting\n"
            "# TYPE queue_depth gauge\n"
            "queue_depth{otel_scope_name=\"nemo.lens\",otel_scope_version=\"1.2.3\"} -3\n");
}

TEST(PrometheusMapping, NamesAndUnits) {
  EXPECT_EQ(exporters::prometheus_unit("ms"), "milliseconds");
  EXPECT_EQ(exporters::prometheus_unit("s"), "seconds");
  EXPECT_EQ(exporters::prometheus_unit("By"), "bytes");
  EXPECT_EQ(exporters::prometheus_unit("1"), "ratio");
  EXPECT_EQ(exporters::prometheus_unit("{iteration}"), "");
  EXPECT_EQ(exporters::prometheus_unit("{token}/s"), "per_second");
  EXPECT_EQ(exporters::prometheus_unit("By/s"), "bytes_per_second");
  EXPECT_EQ(exporters::prometheus_unit("TFLOP/s"), "TFLOP_per_second");
  EXPECT_EQ(exporters::prometheus_unit("GiB"), "GiB");
  EXPECT_EQ(exporters::prometheus_metric_name("http.server.duration", "s", false),
            "http_server_duration_seconds");
  EXPECT_EQ(exporters::prometheus_metric_name("latency_seconds", "s", false), "latency_seconds");
  EXPECT_EQ(exporters::prometheus_metric_name("requests_total", "", true), "requests_total");
  EXPECT_EQ(exporters::prometheus_metric_name("io.read", "By", true), "io_read_bytes_total");
  EXPECT_EQ(exporters::prometheus_metric_name("a..b--c", "", false), "a_b_c");
  EXPECT_EQ(exporters::prometheus_metric_name("9lives", "", false), "_9lives");
  EXPECT_EQ(exporters::prometheus_metric_name("ns:name", "", false), "ns:name");
  EXPECT_EQ(exporters::prometheus_label_name("k8s.pod:name"), "k8s_pod_name");
  EXPECT_EQ(exporters::prometheus_label_name("__reserved"), "_reserved");
}

TEST(PrometheusMapping, OneTypePerNameTheLaterMetricIsDropped) {
  const Collection collection(/*with_clashing_gauge=*/true);
  int lens_tokens_types = 0;
  for (const auto& family : exporters::to_metric_families(collection.data)) {
    if (family.name == "lens_tokens_total") {
      ++lens_tokens_types;
      EXPECT_EQ(family.type, prometheus::MetricType::Counter);
      EXPECT_EQ(family.metric.size(), 2U);
    }
  }
  EXPECT_EQ(lens_tokens_types, 1);
}

// `promtool check metrics` on `text`: its exit status and what it printed.
std::pair<int, std::string> promtool_check(const std::string& text) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("lens-promtool-" + std::to_string(::getpid()));
  std::ofstream(file) << text;
  const std::string command = "promtool check metrics < " + file.string() + " 2>&1";
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  char buffer[512];
  while (pipe != nullptr && std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pipe == nullptr ? -1 : ::pclose(pipe);
  std::filesystem::remove(file);
  return {status, output};
}

TEST(PrometheusEndpoint, SetupServesTheRanksMetricsAndPromtoolAcceptsThem) {
  if (!std::filesystem::exists("/usr/bin/promtool")) GTEST_SKIP() << "/usr/bin/promtool absent";
  const int base = test_servers::free_port();
  Config config = config_from({{"NEMO_LENS_ENABLED", "1"},
                               {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
                               {"NEMO_LENS_RUN_ID", "prom-unit"},
                               {"NEMO_LENS_TRACES_ENABLED", "0"},
                               {"OTEL_METRICS_EXPORTER", "prometheus"},
                               {"OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1"},
                               {"OTEL_EXPORTER_PROMETHEUS_PORT", std::to_string(base - 1)}});
  SetupOverrides overrides;
  overrides.env = Env::from({});
  overrides.allow_reinit = true;
  // Local rank 1 of 2: its port is the base plus one.
  auto rank = RankInfo::make(1, 2, 1, 2);
  ASSERT_TRUE(rank.ok());
  auto handle = setup_telemetry(config, *rank, {}, std::move(overrides));
  ASSERT_TRUE(handle.ok()) << handle.message();
  auto counter = handle->meter()->CreateUInt64Counter("lens.test.steps", "Steps", "{step}");
  counter->Add(7, {{"phase", "train"}});
  ASSERT_TRUE(handle->force_flush().ok());

  httplib::Client client("127.0.0.1", base);
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  const auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << "no answer on 127.0.0.1:" << base;
  EXPECT_EQ(response->status, 200);
  const std::string& text = response->body;
  EXPECT_NE(text.find("lens_test_steps_total{phase=\"train\",otel_scope_name=\"nemo.lens\","),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("target_info{"), std::string::npos) << text;
  EXPECT_NE(text.find("dl_rank=\"1\""), std::string::npos) << text;
  const auto [status, output] = promtool_check(text);
  EXPECT_EQ(status, 0) << output << "\n" << text;
  EXPECT_EQ(output, "");

  ASSERT_TRUE(handle->shutdown().ok());
  // Shut down, the port is free again.
  EXPECT_FALSE(client.Get("/metrics"));
}

TEST(PrometheusEndpoint, ErrorsNameTheAddressAndTheSettings) {
  // A port taken by another endpoint.
  auto snapshot = std::make_shared<exporters::PrometheusSnapshot>();
  auto first = exporters::PrometheusEndpoint::start("127.0.0.1", 0, snapshot, "first");
  ASSERT_TRUE(first.ok()) << first.message();
  const int taken = (*first)->port();
  Config config = config_from({{"OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1"},
                               {"OTEL_EXPORTER_PROMETHEUS_PORT", std::to_string(taken)}});
  auto busy = telemetry::start_prometheus_pull(telemetry::prometheus_options(config),
                                               test_support::rank_of(0, 1));
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(
      busy.message().rfind("Cannot serve Prometheus metrics on 127.0.0.1:" + std::to_string(taken) +
                               " (OTEL_EXPORTER_PROMETHEUS_HOST=127.0.0.1, "
                               "OTEL_EXPORTER_PROMETHEUS_PORT=" +
                               std::to_string(taken) + " + local rank 0): ",
                           0),
      0U)
      << busy.message();
  EXPECT_NE(busy.message().find("set OTEL_EXPORTER_PROMETHEUS_PORT to another port, or 0 for "
                                "any free port"),
            std::string::npos);

  // A port past 65535 once the local rank is added.
  Config high = config_from({{"OTEL_EXPORTER_PROMETHEUS_PORT", "65535"}});
  auto rank = RankInfo::make(3, 4, 3, 4);
  ASSERT_TRUE(rank.ok());
  EXPECT_EQ(telemetry::start_prometheus_pull(telemetry::prometheus_options(high), *rank).message(),
            "Invalid port for OTEL_EXPORTER_PROMETHEUS_PORT: '65535'; local rank 3 would listen "
            "on 65538; accepted: a port such that port + local rank <= 65535, or 0 for any free "
            "port");
}

}  // namespace
}  // namespace lens
