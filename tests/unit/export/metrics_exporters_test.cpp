// Metric exporters: the console line's keys (docs/metrics.md, "Console line"), the OTLP JSON file
// line read by an independent decoder (nlohmann), exporter=none, temporality per preference,
// unknown exporters, and a shutdown that returns within its timeout when the metric exporter
// blocks.
#include <gtest/gtest.h>
#include <opentelemetry/metrics/sync_instruments.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "export/exporters.hpp"
#include "lens/megatron/training_metrics.hpp"
#include "lens/otlp_json.hpp"
#include "lens/telemetry.hpp"
#include "telemetry/plan.hpp"
#include "unit/support/blocking_exporters.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

namespace sdkmetrics = opentelemetry::sdk::metrics;

Config exporting(ExporterKind exporter) {
  Config config = test_support::exporting_config("exp-run", exporter);
  config.traces_enabled = false;
  return config;
}

std::vector<std::string> keys_of(const nlohmann::ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  return keys;
}

// Telemetry whose metrics go to the console exporter, writing to `out`.
Result<TelemetryHandle> console_metrics_to(std::FILE* out, TemporalityPreference temporality) {
  SetupOverrides overrides;
  overrides.env = Env::from({});
  overrides.metric_exporter = exporters::make_console_exporter<Signal::metrics>(out, temporality);
  return setup_telemetry(exporting(ExporterKind::console), test_support::rank_of(0, 1), {},
                         std::move(overrides));
}

TEST(MetricsExporters, ConsoleLineHasThePythonShapes) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  auto handle = console_metrics_to(out, TemporalityPreference::delta);
  ASSERT_TRUE(handle.ok()) << handle.message();
  handle->meter()->CreateUInt64Counter("test.sum", "a sum", "{item}")->Add(3, {{"k", "v"}});
  handle->meter()
      ->CreateDoubleHistogram("test.hist")
      ->Record(7.0, opentelemetry::context::Context{});
  auto gauge = metrics::create_double_gauge(*handle->meter(), "test.gauge");
  gauge.record(1.5);
  ASSERT_TRUE(handle->shutdown(std::chrono::milliseconds(2000)).ok());
  std::rewind(out);
  char buffer[65536];
  const std::size_t size = std::fread(buffer, 1, sizeof(buffer), out);
  std::fclose(out);
  const std::string text(buffer, size);
  // One line per export. The periodic reader may collect at any moment (opentelemetry-cpp's
  // reader also collects once as soon as its thread starts), so every line is checked for its
  // shape and each metric is taken from the line where it has data points.
  std::map<std::string, nlohmann::ordered_json> by_name;
  std::size_t lines = 0;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "every line ends with a newline";
    const auto line = nlohmann::ordered_json::parse(text.substr(start, end - start));
    start = end + 1;
    ++lines;
    EXPECT_EQ(keys_of(line), (std::vector<std::string>{"resource_metrics"}));
    const auto& rm = line["resource_metrics"][0];
    EXPECT_EQ(keys_of(rm), (std::vector<std::string>{"resource", "scope_metrics", "schema_url"}));
    EXPECT_EQ(rm["resource"]["attributes"]["nemo.run.id"], "exp-run");
    for (const auto& sm : rm["scope_metrics"]) {
      EXPECT_EQ(keys_of(sm), (std::vector<std::string>{"scope", "metrics", "schema_url"}));
      EXPECT_EQ(keys_of(sm["scope"]),
                (std::vector<std::string>{"name", "version", "schema_url", "attributes"}));
      EXPECT_EQ(sm["scope"]["name"], "nemo.lens");
      for (const auto& metric : sm["metrics"]) {
        EXPECT_EQ(keys_of(metric),
                  (std::vector<std::string>{"name", "description", "unit", "data"}));
        if (!metric["data"]["data_points"].empty()) by_name.try_emplace(metric["name"], metric);
      }
    }
  }
  ASSERT_GE(lines, 1u);
  ASSERT_EQ(by_name.count("test.sum"), 1u) << text;
  ASSERT_EQ(by_name.count("test.hist"), 1u) << text;
  ASSERT_EQ(by_name.count("test.gauge"), 1u) << text;
  const auto& sum = by_name.at("test.sum");
  EXPECT_EQ(sum["unit"], "{item}");
  EXPECT_EQ(keys_of(sum["data"]),
            (std::vector<std::string>{"data_points", "aggregation_temporality", "is_monotonic"}));
  EXPECT_EQ(sum["data"]["aggregation_temporality"], 1);  // delta
  EXPECT_EQ(sum["data"]["is_monotonic"], true);
  const auto& point = sum["data"]["data_points"][0];
  EXPECT_EQ(keys_of(point), (std::vector<std::string>{"attributes", "start_time_unix_nano",
                                                      "time_unix_nano", "value", "exemplars"}));
  EXPECT_EQ(point["value"], 3);
  EXPECT_EQ(point["attributes"]["k"], "v");
  const auto& hist = by_name.at("test.hist");
  EXPECT_EQ(keys_of(hist["data"]),
            (std::vector<std::string>{"data_points", "aggregation_temporality"}));
  EXPECT_EQ(keys_of(hist["data"]["data_points"][0]),
            (std::vector<std::string>{"attributes", "start_time_unix_nano", "time_unix_nano",
                                      "count", "sum", "bucket_counts", "explicit_bounds", "min",
                                      "max", "exemplars"}));
  EXPECT_EQ(hist["data"]["data_points"][0]["sum"], 7.0);
  const auto& g = by_name.at("test.gauge");
  EXPECT_EQ(keys_of(g["data"]), (std::vector<std::string>{"data_points"}));
  EXPECT_EQ(g["data"]["data_points"][0]["value"], 1.5);
  EXPECT_TRUE(g["data"]["data_points"][0]["start_time_unix_nano"].is_null());
}

TEST(MetricsExporters, FileLinesDecodeWithAnIndependentDecoder) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("lens-metrics-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Config config = exporting(ExporterKind::file);
  config.file_path = dir.string();
  SetupOverrides overrides;
  overrides.env = Env::from({});
  auto handle = setup_telemetry(config, test_support::rank_of(0, 1), {}, std::move(overrides));
  ASSERT_TRUE(handle.ok()) << handle.message();
  auto counter = handle->meter()->CreateUInt64Counter("test.file");
  counter->Add(41);
  counter->Add(1);
  ASSERT_TRUE(handle->shutdown(std::chrono::milliseconds(2000)).ok());
  // Cumulative: the last line holds the final sum. Earlier lines may exist (the periodic reader
  // can collect at any moment); every one must decode.
  std::ifstream in(dir / "metrics.jsonl");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_FALSE(lines.empty());
  for (const auto& line : lines) {
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
    EXPECT_TRUE(otlp_json::decode(line, request).ok()) << line;
  }
  const auto decoded = nlohmann::json::parse(lines.back());
  const auto& rm = decoded["resourceMetrics"][0];
  bool run_id_seen = false;
  for (const auto& attribute : rm["resource"]["attributes"]) {
    if (attribute["key"] == "nemo.run.id") {
      run_id_seen = true;
      EXPECT_EQ(attribute["value"]["stringValue"], "exp-run");
    }
  }
  EXPECT_TRUE(run_id_seen);
  bool found = false;
  for (const auto& metric : rm["scopeMetrics"][0]["metrics"]) {
    if (metric["name"] != "test.file") continue;
    found = true;
    EXPECT_EQ(metric["sum"]["dataPoints"][0]["asInt"], "42");  // 64-bit integers as strings
    EXPECT_EQ(metric["sum"]["aggregationTemporality"], 2);
    EXPECT_EQ(metric["sum"]["isMonotonic"], true);
  }
  EXPECT_TRUE(found) << lines.back();
  std::filesystem::remove_all(dir);
}

// Gauges owned only by the instrument cache (the training metrics) report through callbacks: the
// final collection at shutdown must still see them.
TEST(MetricsExporters, CachedGaugesReachTheExportAtShutdown) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  auto handle = console_metrics_to(out, TemporalityPreference::cumulative);
  ASSERT_TRUE(handle.ok()) << handle.message();
  megatron::record_training_metrics(*handle->meter(), {.loss = 2.5, .learning_rate = 3e-4});
  ASSERT_TRUE(handle->shutdown(std::chrono::milliseconds(2000)).ok());
  std::rewind(out);
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof(buffer), out)) > 0;) text.append(buffer, n);
  std::fclose(out);
  std::map<std::string, double> last;  // gauge name -> last value exported
  for (std::size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
       start = end + 1) {
    const auto line = nlohmann::json::parse(text.substr(start, end - start));
    for (const auto& sm : line["resource_metrics"][0]["scope_metrics"]) {
      for (const auto& metric : sm["metrics"]) {
        if (!metric["data"]["data_points"].empty()) {
          last[metric["name"]] = metric["data"]["data_points"][0]["value"].get<double>();
        }
      }
    }
  }
  ASSERT_EQ(last.count("megatron.training.loss"), 1u) << text;
  EXPECT_EQ(last.at("megatron.training.loss"), 2.5);
  EXPECT_EQ(last.at("megatron.training.learning_rate"), 3e-4);
}

TEST(MetricsExporters, ACleanShutdownAndExitPrintNothingOnStderr) {
  ::testing::internal::CaptureStderr();
  {
    SetupOverrides overrides;
    overrides.env = Env::from({});
    auto handle = setup_telemetry(exporting(ExporterKind::none), test_support::rank_of(0, 1), {},
                                  std::move(overrides));
    ASSERT_TRUE(handle.ok()) << handle.message();
    handle->meter()->CreateUInt64Counter("test.quiet")->Add(1);
    ASSERT_TRUE(handle->shutdown(std::chrono::milliseconds(2000)).ok());
  }  // the providers are destroyed here, as at the end of a process
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(MetricsExporters, TemporalityFollowsThePreference) {
  using sdkmetrics::AggregationTemporality;
  using sdkmetrics::InstrumentType;
  struct Case {
    const char* preference;
    InstrumentType type;
    AggregationTemporality expected;
  };
  const Case cases[] = {
      {"cumulative", InstrumentType::kCounter, AggregationTemporality::kCumulative},
      {"delta", InstrumentType::kCounter, AggregationTemporality::kDelta},
      {"delta", InstrumentType::kObservableCounter, AggregationTemporality::kDelta},
      {"delta", InstrumentType::kHistogram, AggregationTemporality::kDelta},
      {"delta", InstrumentType::kUpDownCounter, AggregationTemporality::kCumulative},
      {"lowmemory", InstrumentType::kCounter, AggregationTemporality::kDelta},
      {"lowmemory", InstrumentType::kObservableCounter, AggregationTemporality::kCumulative},
      {"lowmemory", InstrumentType::kHistogram, AggregationTemporality::kDelta},
  };
  for (const Case& c : cases) {
    Config config = exporting(ExporterKind::none);
    config.otel = OtelSettings::from_env(
        Env::from({{"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", c.preference}}));
    auto exporter = exporters::make_exporter<Signal::metrics>(
        telemetry::exporter_options(config, Signal::metrics));
    ASSERT_TRUE(exporter.ok());
    EXPECT_EQ((*exporter)->GetAggregationTemporality(c.type), c.expected) << c.preference;
  }
}

TEST(MetricsExporters, ShutdownWithABlockedMetricExporterReturnsWithinItsTimeout) {
  auto gate = std::make_shared<test_support::ExportGate>();
  SetupOverrides overrides;
  overrides.env = Env::from({});
  overrides.metric_exporter = std::make_unique<test_support::BlockingMetricExporter>(gate);
  auto handle = setup_telemetry(exporting(ExporterKind::none), test_support::rank_of(0, 1), {},
                                std::move(overrides));
  ASSERT_TRUE(handle.ok());
  handle->meter()->CreateUInt64Counter("stuck")->Add(1);
  const auto start = std::chrono::steady_clock::now();
  const Status status = handle->shutdown(std::chrono::milliseconds(300));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status.message(),
            "Telemetry shutdown did not finish within 300 ms for metrics; the exporter is still "
            "busy and what it holds may be lost");
  EXPECT_LT(elapsed, std::chrono::milliseconds(1500));
  gate->release();
  // The helper thread finishes once the exporter returns.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

}  // namespace
}  // namespace lens
