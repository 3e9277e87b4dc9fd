// exporter=file writes what the OpenTelemetry Collector's otlpjsonfile receiver reads
// (docs/backends.md): each line of traces.jsonl, metrics.jsonl and logs.jsonl is one whole
// Export{Trace,Metrics,Logs}ServiceRequest. Each line is parsed here by protobuf's own JSON
// parser against the OTLP schema, strictly (an unknown field or a wrong type fails), after
// turning the hex ids of OTLP/JSON into the base64 of protobuf's JSON mapping — done here by hand,
// independently of lens's codec.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <opentelemetry/context/context.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lens/groups.hpp"
#include "lens/log.hpp"
#include "lens/strategies.hpp"
#include "lens/telemetry.hpp"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string base64_of_hex(const std::string& hex) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t chunk = 0;
    for (std::size_t j = 0; j < 3; ++j) {
      chunk = (chunk << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0U);
    }
    for (std::size_t j = 0; j < 4; ++j) {
      out += j <= n ? kAlphabet[(chunk >> (18 - 6 * j)) & 0x3F] : '=';
    }
  }
  return out;
}

// The id fields OTLP/JSON writes in hex, in base64 as protobuf's JSON parser wants them.
void ids_to_base64(json& node) {
  if (node.is_object()) {
    for (auto& [key, value] : node.items()) {
      if ((key == "traceId" || key == "spanId" || key == "parentSpanId") && value.is_string()) {
        value = base64_of_hex(value.get<std::string>());
      } else {
        ids_to_base64(value);
      }
    }
  } else if (node.is_array()) {
    for (json& item : node) ids_to_base64(item);
  }
}

// Every line of `file` parsed strictly into a `Request`; the requests.
template <class Request>
std::vector<Request> requests_in(const fs::path& file) {
  std::vector<Request> requests;
  std::ifstream in(file);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    json parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(parsed.is_object()) << file << ":" << number << " is not one JSON object";
    if (!parsed.is_object()) continue;
    ids_to_base64(parsed);
    Request request;
    google::protobuf::util::JsonParseOptions strict;
    strict.ignore_unknown_fields = false;
    const auto status =
        google::protobuf::util::JsonStringToMessage(parsed.dump(), &request, strict);
    EXPECT_TRUE(status.ok()) << file << ":" << number << ": " << status.ToString() << "\n" << line;
    if (status.ok()) requests.push_back(std::move(request));
  }
  return requests;
}

TEST(FileExporterCollectorInput, EveryLineIsOneExportRequestOfTheOtlpSchema) {
  detail::reset_span_groups_for_testing();
  std::string pattern = (fs::temp_directory_path() / "lens-otlpjsonfile-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern;

  Config config = test_support::exporting_config("collector-input", ExporterKind::file);
  config.logs_enabled = true;
  config.file_path = dir.string();
  config.otel = OtelSettings::from_env(Env::from({{"OTEL_BSP_SCHEDULE_DELAY", "200"}}));
  SetupOverrides overrides;
  overrides.env = Env::from({});
  auto handle = setup_telemetry(config, test_support::rank_of(0, 1), {}, std::move(overrides));
  ASSERT_TRUE(handle.ok()) << handle.message();
  setup_logging_bridge(log::Level::info);
  {
    auto parent = handle->tracer()->StartSpan("step");
    auto scope = handle->tracer()->WithActiveSpan(parent);
    handle->tracer()->StartSpan("forward")->End();
    log::info("loss ", 2.5);
    parent->End();
  }
  handle->meter()->CreateUInt64Counter("lens.test.steps", "Steps", "{step}")->Add(3);
  handle->meter()
      ->CreateDoubleHistogram("lens.test.step_ms", "Step time", "ms")
      ->Record(12.5, opentelemetry::context::Context{});
  ASSERT_TRUE(handle->shutdown(std::chrono::milliseconds(5000)).ok());
  remove_logging_bridge();

  namespace collector = opentelemetry::proto::collector;
  const auto traces =
      requests_in<collector::trace::v1::ExportTraceServiceRequest>(dir / "traces.jsonl");
  const auto metrics =
      requests_in<collector::metrics::v1::ExportMetricsServiceRequest>(dir / "metrics.jsonl");
  const auto logs = requests_in<collector::logs::v1::ExportLogsServiceRequest>(dir / "logs.jsonl");

  int spans = 0;
  for (const auto& request : traces) {
    for (const auto& resource : request.resource_spans()) {
      for (const auto& scope : resource.scope_spans()) spans += scope.spans_size();
    }
  }
  EXPECT_EQ(spans, 2);
  std::vector<std::string> metric_names;
  for (const auto& request : metrics) {
    for (const auto& resource : request.resource_metrics()) {
      for (const auto& scope : resource.scope_metrics()) {
        for (const auto& metric : scope.metrics()) metric_names.push_back(metric.name());
      }
    }
  }
  EXPECT_NE(std::find(metric_names.begin(), metric_names.end(), "lens.test.steps"),
            metric_names.end());
  EXPECT_NE(std::find(metric_names.begin(), metric_names.end(), "lens.test.step_ms"),
            metric_names.end());
  int records = 0;
  for (const auto& request : logs) {
    for (const auto& resource : request.resource_logs()) {
      for (const auto& scope : resource.scope_logs()) {
        for (const auto& record : scope.log_records()) {
          ++records;
          EXPECT_EQ(record.body().string_value(), "loss 2.5");
        }
      }
    }
  }
  EXPECT_EQ(records, 1);
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  detail::reset_span_groups_for_testing();
}

}  // namespace
}  // namespace lens
