// Logs through setup_telemetry(): the bridge (lens::log, the spdlog sink) gated by its level and
// by the presence of a logger provider, idempotent set-up, trace correlation ids, attributes and
// event names, the console log line's keys, the OTLP JSON file line, and the statistics.
#include <gtest/gtest.h>
#include <opentelemetry/proto/collector/logs/v1/logs_service.pb.h>
#include <spdlog/logger.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "export/console_log_exporter.hpp"
#include "export/log_record_data.hpp"
#include "export/otlp_json.hpp"
#include "lens/log.hpp"
#include "lens/spdlog_sink.hpp"
#include "lens/telemetry.hpp"
#include "unit/test_support.hpp"

namespace lens {
namespace {

namespace sdklogs = opentelemetry::sdk::logs;
using exporters::LogRecordData;

struct Captured {
  std::mutex mutex;
  std::vector<std::unique_ptr<LogRecordData>> records;
  std::vector<std::string> lines;
};

// Keeps every exported record and its console line.
class CapturingExporter final : public sdklogs::LogRecordExporter {
 public:
  explicit CapturingExporter(std::shared_ptr<Captured> captured) : captured_(std::move(captured)) {}
  std::unique_ptr<sdklogs::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<LogRecordData>();
  }
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<sdklogs::Recordable>>& records) noexcept
      override {
    std::lock_guard<std::mutex> lock(captured_->mutex);
    for (auto& record : records) {
      auto* data = static_cast<LogRecordData*>(record.release());
      captured_->lines.push_back(exporters::console_log_line(*data));
      captured_->records.emplace_back(data);
    }
    return opentelemetry::sdk::common::ExportResult::kSuccess;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return true; }

 private:
  std::shared_ptr<Captured> captured_;
};

Config logs_config() {
  Config config;
  config.enabled = true;
  config.rank_strategy = "all_ranks";
  config.run_id = "logs-run";
  config.exporter = "none";
  config.metrics_enabled = false;
  config.logs_enabled = true;
  config.otel = OtelSettings::from_env(
      Env::from({{"OTEL_BSP_SCHEDULE_DELAY", "200"}, {"OTEL_BLRP_SCHEDULE_DELAY", "200"}}));
  return config;
}

class LogsBridge : public ::testing::Test {
 protected:
  void SetUp() override { remove_logging_bridge(); }
  void TearDown() override {
    remove_logging_bridge();
    EXPECT_TRUE(handle_.shutdown(std::chrono::milliseconds(2000)).ok());
  }
  void set_up(Config config = logs_config()) {
    SetupOverrides overrides;
    overrides.env = Env::from({});
    overrides.log_record_exporter = std::make_unique<CapturingExporter>(captured_);
    auto made =
        setup_telemetry(std::move(config), test_support::rank_of(0, 1), {}, std::move(overrides));
    ASSERT_TRUE(made.ok()) << made.message();
    handle_ = *made;
  }
  std::shared_ptr<Captured> captured_ = std::make_shared<Captured>();
  TelemetryHandle handle_;
};

TEST_F(LogsBridge, NothingFlowsWithoutTheBridge) {
  set_up();
  EXPECT_FALSE(log::enabled(log::Level::fatal));
  log::fatal("dropped at the level check");
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(2000)).ok());
  EXPECT_TRUE(captured_->records.empty());
}

TEST_F(LogsBridge, BridgeLevelGatesAndSetupIsIdempotent) {
  set_up();
  EXPECT_TRUE(setup_logging_bridge(log::Level::info));
  EXPECT_TRUE(setup_logging_bridge(log::Level::info));  // a second call adds nothing
  EXPECT_FALSE(log::enabled(log::Level::debug));
  EXPECT_TRUE(log::enabled(log::Level::info));
  log::debug("not recorded");
  log::info("step ", 7, " loss ", 2.5, " ok ", true);
  log::emit(log::Level::warn, "loss spike", {{"megatron.iteration", std::int64_t{7}}},
            "megatron.loss_spike");
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(2000)).ok());
  ASSERT_EQ(captured_->records.size(), 2U);
  const auto& info = *captured_->records[0];
  EXPECT_EQ(opentelemetry::nostd::get<std::string>(*info.body()), "step 7 loss 2.5 ok true");
  EXPECT_EQ(info.severity(), opentelemetry::logs::Severity::kInfo);
  EXPECT_FALSE(info.trace_id().IsValid());
  const auto& warn = *captured_->records[1];
  EXPECT_EQ(warn.severity(), opentelemetry::logs::Severity::kWarn);
  EXPECT_EQ(opentelemetry::nostd::get<std::int64_t>(warn.attributes().at("megatron.iteration")), 7);
  EXPECT_EQ(warn.event_name(), "megatron.loss_spike");
  EXPECT_EQ(
      opentelemetry::nostd::get<std::string>(warn.resource()->GetAttributes().at("nemo.run.id")),
      "logs-run");
  const TelemetryStats stats = handle_.stats();
  EXPECT_EQ(stats.log_records_emitted, 2U);
  EXPECT_EQ(stats.log_records_exported, 2U);
  EXPECT_EQ(stats.log_records_dropped, 0U);
}

TEST_F(LogsBridge, RecordsCarryTheActiveSpansIds) {
  set_up();
  setup_logging_bridge();
  auto span = handle_.tracer()->StartSpan("megatron.train_step");
  {
    auto scope = handle_.tracer()->WithActiveSpan(span);
    log::info("inside");
  }
  span->End();
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(2000)).ok());
  ASSERT_EQ(captured_->records.size(), 1U);
  const auto& record = *captured_->records[0];
  EXPECT_EQ(record.trace_id(), span->GetContext().trace_id());
  EXPECT_EQ(record.span_id(), span->GetContext().span_id());
  EXPECT_EQ(record.trace_flags(), span->GetContext().trace_flags());
  // The console line: exactly the keys of the Python original, in its order.
  const auto line = nlohmann::ordered_json::parse(captured_->lines.at(0));
  std::vector<std::string> keys;
  for (const auto& item : line.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"body", "severity_number", "severity_text",
                                            "attributes", "dropped_attributes", "timestamp",
                                            "observed_timestamp", "trace_id", "span_id",
                                            "trace_flags", "resource", "event_name"}));
  char trace_hex[32];
  span->GetContext().trace_id().ToLowerBase16(trace_hex);
  EXPECT_EQ(line["trace_id"], "0x" + std::string(trace_hex, 32));
  EXPECT_EQ(line["severity_number"], 9);
  EXPECT_EQ(line["severity_text"], "INFO");
  EXPECT_EQ(line["body"], "inside");
  EXPECT_TRUE(line["attributes"].is_null());
  EXPECT_EQ(line["resource"]["attributes"]["nemo.run.id"], "logs-run");
}

TEST_F(LogsBridge, SpdlogSinkForwardsMessagesWithTheLoggerName) {
  set_up();
  setup_logging_bridge(log::Level::warn);
  auto sink = std::make_shared<SpdlogSink>();
  spdlog::logger logger("trainer", sink);
  logger.set_level(spdlog::level::trace);
  logger.info("below the bridge level");
  logger.warn("iteration {} skipped", 12);
  logger.error("nan loss");
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(2000)).ok());
  ASSERT_EQ(captured_->records.size(), 2U);
  EXPECT_EQ(opentelemetry::nostd::get<std::string>(*captured_->records[0]->body()),
            "iteration 12 skipped");
  EXPECT_EQ(captured_->records[0]->severity(), opentelemetry::logs::Severity::kWarn);
  EXPECT_EQ(
      opentelemetry::nostd::get<std::string>(captured_->records[0]->attributes().at("logger.name")),
      "trainer");
  EXPECT_EQ(captured_->records[1]->severity(), opentelemetry::logs::Severity::kError);
}

TEST_F(LogsBridge, AttributeLimitsApply) {
  Config config = logs_config();
  config.otel =
      OtelSettings::from_env(Env::from({{"OTEL_BLRP_SCHEDULE_DELAY", "200"},
                                        {"OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT", "1"},
                                        {"OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT", "3"}}));
  set_up(config);
  setup_logging_bridge();
  log::emit(log::Level::info, "limited", {{"a", std::string("abcdef")}, {"b", std::int64_t{1}}});
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(2000)).ok());
  ASSERT_EQ(captured_->records.size(), 1U);
  const auto& attributes = captured_->records[0]->attributes();
  ASSERT_EQ(attributes.size(), 1U);
  EXPECT_EQ(opentelemetry::nostd::get<std::string>(attributes.at("a")), "abc");
}

TEST_F(LogsBridge, NoLoggerProviderMeansNothingFlows) {
  Config config = logs_config();
  config.logs_enabled = false;
  set_up(config);
  EXPECT_FALSE(setup_logging_bridge());
  EXPECT_FALSE(log::enabled(log::Level::fatal));
}

TEST_F(LogsBridge, FileExporterWritesOneExportLogsServiceRequestPerLine) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("lens-logs-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Config config = logs_config();
  config.exporter = "file";
  config.traces_enabled = false;
  config.file_path = dir.string();
  SetupOverrides overrides;
  overrides.env = Env::from({});
  auto made = setup_telemetry(config, test_support::rank_of(0, 1), {}, std::move(overrides));
  ASSERT_TRUE(made.ok()) << made.message();
  setup_logging_bridge();
  log::error("disk ", 3, " failed");
  ASSERT_TRUE(made->shutdown(std::chrono::milliseconds(2000)).ok());
  std::ifstream in(dir / "logs.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  // An independent decoder: nlohmann, with the OTLP JSON field names.
  const auto json = nlohmann::json::parse(line);
  const auto& record = json["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
  EXPECT_EQ(record["body"]["stringValue"], "disk 3 failed");
  EXPECT_EQ(record["severityNumber"], 17);
  EXPECT_EQ(json["resourceLogs"][0]["scopeLogs"][0]["scope"]["name"], "nemo.lens");
  // And the project's own codec agrees.
  opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest request;
  ASSERT_TRUE(otlp_json::decode(line, request).ok());
  EXPECT_EQ(request.resource_logs(0).scope_logs(0).log_records_size(), 1);
  EXPECT_FALSE(std::getline(in, line));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lens
