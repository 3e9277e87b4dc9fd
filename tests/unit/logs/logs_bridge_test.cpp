// Logs through setup_telemetry(): the bridge (lens::log, the spdlog sink) gated by its level and
// by the presence of a logger provider, idempotent set-up, trace correlation ids, attributes and
// event names, the console log line's keys, the OTLP JSON file line, and the statistics.
#include <gtest/gtest.h>
#include <opentelemetry/exporters/memory/in_memory_span_exporter.h>
#include <opentelemetry/proto/collector/logs/v1/logs_service.pb.h>
#include <opentelemetry/sdk/trace/span_data.h>
#include <spdlog/logger.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "export/console_json.hpp"
#include "export/log_record_data.hpp"
#include "lens/log.hpp"
#include "lens/otlp_json.hpp"
#include "lens/span.hpp"
#include "lens/spdlog_sink.hpp"
#include "lens/telemetry.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

namespace sdklogs = opentelemetry::sdk::logs;
using exporters::LogRecordData;

struct Captured {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::unique_ptr<LogRecordData>> records;
  std::vector<std::string> lines;
  bool blocked = false;     // Export waits while set
  int exports_waiting = 0;  // calls of Export waiting on `blocked`
  std::set<std::thread::id> export_threads;
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
    std::unique_lock<std::mutex> lock(captured_->mutex);
    captured_->export_threads.insert(std::this_thread::get_id());
    ++captured_->exports_waiting;
    captured_->changed.notify_all();
    captured_->changed.wait(lock, [this] { return !captured_->blocked; });
    --captured_->exports_waiting;
    for (auto& record : records) {
      auto* data = static_cast<LogRecordData*>(record.release());
      captured_->lines.push_back(exporters::console_line(*data));
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
  Config config = test_support::exporting_config("logs-run", ExporterKind::none);
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
  log::emit(log::Level::warn, "loss spike", {{"megatron.iteration", 7}, {"skipped", nullptr}},
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
  EXPECT_EQ(warn.attributes().size(), 1U);  // the null value is skipped
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

// Native spans and native logs are stamped with CPU ticks and converted on two export threads:
// a line logged inside a span must still fall between its start and end once both are exported,
// in every export pass (the conversion is refreshed on every pass).
TEST_F(LogsBridge, ALineLoggedInsideANativeSpanIsStampedWithinIt) {
  detail::reset_span_groups_for_testing();
  Config config = logs_config();
  config.span_groups = "all";
  auto span_exporter =
      std::make_unique<opentelemetry::exporter::memory::InMemorySpanExporter>(100000);
  const auto spans_data = span_exporter->GetData();
  SetupOverrides overrides;
  overrides.env = Env::from({});
  overrides.span_exporter = std::move(span_exporter);
  overrides.log_record_exporter = std::make_unique<CapturingExporter>(captured_);
  auto made =
      setup_telemetry(std::move(config), test_support::rank_of(0, 1), {}, std::move(overrides));
  ASSERT_TRUE(made.ok()) << made.message();
  handle_ = *made;
  setup_logging_bridge();
  constexpr int kRounds = 100;
  constexpr int kPerRound = 20;  // well inside the per-thread queue, even under a sanitizer
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kPerRound; ++i) {
      LENS_SPAN(lens::SpanSite("work", "step"), {"i", round * kPerRound + i});
      log::info("inside");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
  }
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(5000)).ok());
  const auto spans = spans_data->GetSpans();
  ASSERT_EQ(spans.size(), static_cast<std::size_t>(kRounds * kPerRound));
  // A line the full queue refused is counted, never lost silently.
  ASSERT_GT(captured_->records.size(), 0U);
  ASSERT_EQ(captured_->records.size() + handle_.stats().log_records_dropped, spans.size());
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> span_times;  // span id -> times
  for (const auto& span : spans) {
    const std::int64_t start = span->GetStartTime().time_since_epoch().count();
    span_times[test_support::hex(span->GetSpanId())] = {start, start + span->GetDuration().count()};
  }
  test_support::FailureCounter outside;
  for (const auto& record : captured_->records) {
    const auto it = span_times.find(test_support::hex(record->span_id()));
    ASSERT_NE(it, span_times.end());
    const std::int64_t at = record->timestamp().time_since_epoch().count();
    const auto [start, end] = it->second;
    if (at < start || at > end) {
      outside.add([&] {
        return "log at " + std::to_string(at) + " outside its span [" + std::to_string(start) +
               ", " + std::to_string(end) + "]: " + std::to_string(at - start) +
               " ns after start, " + std::to_string(end - at) + " ns before end";
      });
    }
  }
  EXPECT_EQ(outside.count(), 0);
  detail::reset_span_groups_for_testing();
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
  // A null value is skipped before the count limit: "a" is the one attribute kept.
  log::emit(log::Level::info, "limited",
            {{"n", nullptr}, {"a", std::string("abcdef")}, {"b", std::int64_t{1}}});
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
  config.exporter = lens::ExporterKind::file;
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

// ---- The native log path: lens::log writes into per-thread buffers, lens's export thread
// makes the exporter's records.

using opentelemetry::nostd::get;

TEST_F(LogsBridge, RecordsCarryEveryFieldExactly) {
  set_up();
  setup_logging_bridge(log::Level::trace);
  opentelemetry::trace::SpanContext span_context = opentelemetry::trace::SpanContext::GetInvalid();
  const auto before = std::chrono::system_clock::now();
  {
    LENS_SPAN_CM_NAMED(outer, "outer");
    span_context = outer.context();
    log::emit(log::Level::error, "all the types",
              {{"s", std::string("text")},
               {"i", std::int64_t{-3}},
               {"d", 2.5},
               {"b", true},
               {"ai", std::vector<std::int64_t>{1, 2}},
               {"ad", std::vector<double>{0.5}},
               {"ab", std::vector<bool>{true, false}},
               {"as", std::vector<std::string>{"x", "yz"}}},
              "train.event");
  }
  log::trace("outside");
  const auto after = std::chrono::system_clock::now();
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(2000)).ok());
  ASSERT_EQ(captured_->records.size(), 2U);
  const LogRecordData& r = *captured_->records[0];
  EXPECT_EQ(get<std::string>(*r.body()), "all the types");
  EXPECT_EQ(r.severity(), opentelemetry::logs::Severity::kError);
  EXPECT_EQ(r.event_name(), "train.event");
  ASSERT_EQ(r.attributes().size(), 8U);
  EXPECT_EQ(get<std::string>(r.attributes().at("s")), "text");
  EXPECT_EQ(get<std::int64_t>(r.attributes().at("i")), -3);
  EXPECT_EQ(get<double>(r.attributes().at("d")), 2.5);
  EXPECT_EQ(get<bool>(r.attributes().at("b")), true);
  EXPECT_EQ(get<std::vector<std::int64_t>>(r.attributes().at("ai")),
            (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(get<std::vector<double>>(r.attributes().at("ad")), (std::vector<double>{0.5}));
  EXPECT_EQ(get<std::vector<bool>>(r.attributes().at("ab")), (std::vector<bool>{true, false}));
  EXPECT_EQ(get<std::vector<std::string>>(r.attributes().at("as")),
            (std::vector<std::string>{"x", "yz"}));
  // The native span's ids, and its sampled flag.
  EXPECT_EQ(test_support::hex(r.trace_id()), test_support::hex(span_context.trace_id()));
  EXPECT_EQ(test_support::hex(r.span_id()), test_support::hex(span_context.span_id()));
  EXPECT_EQ(r.trace_flags().flags(), 1);
  // Stamped from the tick clock: within the call's window (1 ms for the calibration).
  const auto at = r.timestamp().time_since_epoch();
  EXPECT_GE(at, before.time_since_epoch() - std::chrono::milliseconds(1));
  EXPECT_LE(at, after.time_since_epoch() + std::chrono::milliseconds(1));
  EXPECT_EQ(r.observed_timestamp().time_since_epoch(), at);
  ASSERT_NE(r.scope(), nullptr);
  EXPECT_EQ(r.scope()->GetName(), "nemo.lens");
  EXPECT_EQ(get<std::string>(r.resource()->GetAttributes().at("nemo.run.id")), "logs-run");
  // After the span: no ids.
  const LogRecordData& outside = *captured_->records[1];
  EXPECT_EQ(get<std::string>(*outside.body()), "outside");
  EXPECT_EQ(outside.severity(), opentelemetry::logs::Severity::kTrace);
  EXPECT_FALSE(outside.trace_id().IsValid());
  EXPECT_FALSE(outside.span_id().IsValid());
}

TEST_F(LogsBridge, LargeBodiesAndStringArraysSurviveAndAreLimited) {
  Config config = logs_config();
  config.otel =
      OtelSettings::from_env(Env::from({{"OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT", "4"}}));
  set_up(config);
  setup_logging_bridge();
  // Over the 8 KiB inline part: body and attributes go out of line.
  std::string big(20000, 'x');
  big.back() = 'y';
  // The limit counts characters: "aééb" is 4 of them in 6 bytes.
  const std::string accented =
      "a\xC3\xA9\xC3\xA9"
      "bc";
  log::emit(log::Level::info, big,
            {{"k", accented}, {"list", std::vector<std::string>{"abcdef", "ab"}}});
  log::emit(log::Level::info, "small", {{"k", accented}});
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(2000)).ok());
  ASSERT_EQ(captured_->records.size(), 2U);
  EXPECT_EQ(get<std::string>(*captured_->records[0]->body()), big);
  for (const auto& record : captured_->records) {
    EXPECT_EQ(get<std::string>(record->attributes().at("k")), accented.substr(0, 6));
  }
  EXPECT_EQ(get<std::vector<std::string>>(captured_->records[0]->attributes().at("list")),
            (std::vector<std::string>{"abcd", "ab"}));
}

TEST_F(LogsBridge, SeveralThreadsLoseNothingAndKeepTheirOrder) {
  Config config = logs_config();
  config.otel = OtelSettings::from_env(Env::from(
      {{"OTEL_BLRP_MAX_QUEUE_SIZE", "100000"}, {"OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", "64"}}));
  set_up(config);
  setup_logging_bridge();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    // Each thread exits right after its last record: its buffer is handed over and drained.
    threads.emplace_back([t] {
      for (int i = 0; i < kPerThread; ++i) log::info(t, " ", i);
    });
  }
  for (auto& thread : threads) thread.join();
  // Generous: the capturing exporter formats a console line per record (slow under TSan).
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(30000)).ok());
  ASSERT_EQ(captured_->records.size(), static_cast<std::size_t>(kThreads * kPerThread));
  std::vector<int> next(kThreads, 0);
  for (const auto& record : captured_->records) {
    const std::string body = get<std::string>(*record->body());
    const int t = std::stoi(body.substr(0, body.find(' ')));
    const int i = std::stoi(body.substr(body.find(' ') + 1));
    ASSERT_EQ(i, next[static_cast<std::size_t>(t)]) << "thread " << t;
    ++next[static_cast<std::size_t>(t)];
  }
  // One export thread for everything.
  EXPECT_EQ(captured_->export_threads.size(), 1U);
  const TelemetryStats stats = handle_.stats();
  EXPECT_EQ(stats.log_records_emitted, static_cast<std::uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(stats.log_records_exported, static_cast<std::uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(stats.log_records_dropped, 0U);
}

TEST_F(LogsBridge, AFullQueueDropsAndCountsWithoutBlockingTheCaller) {
  Config config = logs_config();
  config.otel = OtelSettings::from_env(Env::from({{"OTEL_BLRP_MAX_QUEUE_SIZE", "100"},
                                                  {"OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", "1"},
                                                  {"OTEL_BLRP_SCHEDULE_DELAY", "10"}}));
  set_up(config);
  setup_logging_bridge();
  {
    std::lock_guard<std::mutex> lock(captured_->mutex);
    captured_->blocked = true;
  }
  log::info("first");
  {
    // The export thread took the first record and hangs in the exporter.
    std::unique_lock<std::mutex> lock(captured_->mutex);
    ASSERT_TRUE(captured_->changed.wait_for(lock, std::chrono::seconds(10),
                                            [&] { return captured_->exports_waiting == 1; }));
  }
  for (int i = 0; i < 1000; ++i) log::info("more ", i);
  // 100 records wait per thread, counting the one in the exporter (the drain is not over).
  TelemetryStats stats = handle_.stats();
  EXPECT_EQ(stats.log_records_emitted, 100U);
  EXPECT_EQ(stats.log_records_dropped, 901U);
  {
    std::lock_guard<std::mutex> lock(captured_->mutex);
    captured_->blocked = false;
  }
  captured_->changed.notify_all();
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(5000)).ok());
  ASSERT_EQ(captured_->records.size(), 100U);
  EXPECT_EQ(get<std::string>(*captured_->records[0]->body()), "first");
  EXPECT_EQ(get<std::string>(*captured_->records[99]->body()), "more 98");
  stats = handle_.stats();
  EXPECT_EQ(stats.log_records_exported, 100U);
  EXPECT_EQ(stats.log_records_dropped, 901U);
}

TEST_F(LogsBridge, OpenTelemetryLoggersShareTheExportStream) {
  set_up();
  setup_logging_bridge();
  auto logger = handle_.logger();
  {
    LENS_SPAN_CM_NAMED(outer, "outer");
    const auto context = outer.context();
    log::info("from lens");
    // Third-party code on the global provider: its logger sees the native span too.
    logger->EmitLogRecord(opentelemetry::logs::Severity::kWarn, "from opentelemetry-cpp");
    ASSERT_TRUE(handle_.force_flush(std::chrono::milliseconds(2000)).ok());
    std::lock_guard<std::mutex> lock(captured_->mutex);
    ASSERT_EQ(captured_->records.size(), 2U);
    for (const auto& record : captured_->records) {
      EXPECT_EQ(test_support::hex(record->span_id()), test_support::hex(context.span_id()));
    }
  }
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(2000)).ok());
  EXPECT_EQ(captured_->export_threads.size(), 1U);
  const TelemetryStats stats = handle_.stats();
  EXPECT_EQ(stats.log_records_emitted, 2U);
  EXPECT_EQ(stats.log_records_exported, 2U);
}

TEST_F(LogsBridge, ShutdownExportsWhatIsBufferedAndLaterRecordsGoNowhere) {
  set_up();  // OTEL_BLRP_SCHEDULE_DELAY=200: nothing is exported before the shutdown
  setup_logging_bridge();
  for (int i = 0; i < 1000; ++i) log::info("record ", i);
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(2000)).ok());
  EXPECT_EQ(captured_->records.size(), 1000U);
  EXPECT_FALSE(log::enabled(log::Level::fatal));
  log::emit(log::Level::fatal, "after shutdown");
  EXPECT_EQ(captured_->records.size(), 1000U);
  EXPECT_EQ(handle_.stats().log_records_emitted, 1000U);
}

TEST_F(LogsBridge, AForkedChildLogsNothingAndMaySetUpAgain) {
  set_up();
  setup_logging_bridge();
  log::info("parent before");
  // The export thread idle at the fork, as a program forking its data loaders would see it.
  ASSERT_TRUE(handle_.force_flush(std::chrono::milliseconds(2000)).ok());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: the parent's pipeline is gone (its thread did not survive the fork).
    int failures = 0;
    if (log::enabled(log::Level::fatal)) ++failures;
    log::fatal("child");
    auto captured = std::make_shared<Captured>();
    SetupOverrides overrides;
    overrides.env = Env::from({});
    overrides.log_record_exporter = std::make_unique<CapturingExporter>(captured);
    auto made =
        setup_telemetry(logs_config(), test_support::rank_of(0, 1), {}, std::move(overrides));
    if (!made.ok()) _exit(10);
    log::info("child after setup");
    if (!made->shutdown(std::chrono::milliseconds(2000)).ok()) ++failures;
    if (captured->records.size() != 1) ++failures;
    _exit(failures);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  log::info("parent after");
  ASSERT_TRUE(handle_.shutdown(std::chrono::milliseconds(2000)).ok());
  ASSERT_EQ(captured_->records.size(), 2U);
  EXPECT_EQ(get<std::string>(*captured_->records[1]->body()), "parent after");
}

}  // namespace
}  // namespace lens
