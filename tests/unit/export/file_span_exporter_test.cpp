// exporter=file: spans from setup_telemetry() land in <file_path>/traces.jsonl as OTLP JSON
// lines (read back here with nlohmann, independently of the codec); later setups append; an
// uncreatable directory fails setup; write failures are failed exports reported once; and
// concurrent exports (threads and two exporters sharing the file) give whole lines only.
#include <gtest/gtest.h>
#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/resource/resource.h>
#include <opentelemetry/trace/span_context.h>
#include <stdlib.h>

#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "export/exporters.hpp"
#include "lens/groups.hpp"
#include "lens/log.hpp"
#include "lens/span.hpp"
#include "lens/strategies.hpp"
#include "lens/telemetry.hpp"
#include "telemetry/plan.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

using lens::test_support::failure_of;

namespace fs = std::filesystem;
namespace sdktrace = opentelemetry::sdk::trace;
using opentelemetry::sdk::common::ExportResult;
using test_support::rank_of;

std::string hex_of(const opentelemetry::trace::TraceId& id) {
  std::array<char, 32> buffer{};
  id.ToLowerBase16(buffer);
  return std::string(buffer.data(), buffer.size());
}

std::string hex_of(const opentelemetry::trace::SpanId& id) {
  std::array<char, 16> buffer{};
  id.ToLowerBase16(buffer);
  return std::string(buffer.data(), buffer.size());
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Every span of every line, each parsed as a whole line (a torn line fails to parse).
std::vector<nlohmann::json> spans_of(const std::vector<std::string>& lines) {
  std::vector<nlohmann::json> spans;
  for (const std::string& line : lines) {
    const auto request = nlohmann::json::parse(line);
    for (const auto& resource_spans : request.at("resourceSpans")) {
      for (const auto& scope_spans : resource_spans.at("scopeSpans")) {
        for (const auto& span : scope_spans.at("spans")) spans.push_back(span);
      }
    }
  }
  return spans;
}

// The attributes of a span or resource as key -> OTLP AnyValue JSON.
std::map<std::string, nlohmann::json> attributes_of(const nlohmann::json& holder) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& attribute : holder.at("attributes")) {
    out[attribute.at("key").get<std::string>()] = attribute.at("value");
  }
  return out;
}

class FileSpanExporter : public ::testing::Test {
 protected:
  void SetUp() override {
    detail::reset_span_groups_for_testing();
    std::string pattern = (fs::temp_directory_path() / "lens-file-exporter-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    detail::reset_span_groups_for_testing();
    detail::reset_strategies_for_testing();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  Config file_config(const fs::path& path) const {
    Config config = test_support::exporting_config("file-run", ExporterKind::file);
    config.service_name = "file-test";
    config.file_path = path.string();
    // opentelemetry-cpp 1.19's batch processor can miss the shutdown wake-up (upstream issue
    // #4373): keep its schedule well below the shutdown timeout.
    config.otel = OtelSettings::from_env(Env::from({{"OTEL_BSP_SCHEDULE_DELAY", "200"}}));
    return config;
  }

  static SetupOverrides overrides() {
    SetupOverrides o;
    o.env = Env::from({});
    return o;
  }

  // One span named `name` through a whole setup/shutdown cycle.
  void run_once(const fs::path& path, const std::string& name) {
    auto handle = setup_telemetry(file_config(path), rank_of(0, 1), {}, overrides());
    ASSERT_TRUE(handle.ok()) << handle.message();
    handle->tracer()->StartSpan(name)->End();
    const Status status = handle->shutdown(std::chrono::milliseconds(5000));
    EXPECT_TRUE(status.ok()) << status.message();
  }

  fs::path dir_;
};

TEST_F(FileSpanExporter, WritesParentAndChildAsOtlpJsonLines) {
  const fs::path path = dir_ / "nested" / "telemetry";  // created recursively
  auto handle = setup_telemetry(file_config(path), rank_of(0, 1), {}, overrides());
  ASSERT_TRUE(handle.ok()) << handle.message();
  auto tracer = handle->tracer();

  auto parent = tracer->StartSpan("train");
  opentelemetry::trace::StartSpanOptions options;
  options.parent = parent->GetContext();
  auto child = tracer->StartSpan("step", options);
  child->SetAttribute("step", std::int64_t{42});
  child->SetAttribute("loss", 0.5);
  child->SetAttribute("phase", "forward");
  child->SetAttribute("ok", true);
  const auto parent_context = parent->GetContext();
  const auto child_context = child->GetContext();
  child->End();
  parent->End();
  const Status status = handle->shutdown(std::chrono::milliseconds(5000));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(handle->stats().spans_exported, 2U);
  EXPECT_EQ(handle->stats().spans_dropped, 0U);

  const auto lines = lines_of(path / "traces.jsonl");
  ASSERT_FALSE(lines.empty());
  for (const std::string& line : lines) {
    const auto request = nlohmann::json::parse(line);
    const auto resource = attributes_of(request["resourceSpans"][0]["resource"]);
    EXPECT_EQ(resource.at("service.name"), nlohmann::json({{"stringValue", "file-test"}}));
  }
  const auto spans = spans_of(lines);
  ASSERT_EQ(spans.size(), 2U);
  const nlohmann::json& step = spans[0]["name"] == "step" ? spans[0] : spans[1];
  const nlohmann::json& train = spans[0]["name"] == "step" ? spans[1] : spans[0];
  EXPECT_EQ(step["name"], "step");
  EXPECT_EQ(train["name"], "train");

  EXPECT_EQ(train["traceId"], hex_of(parent_context.trace_id()));
  EXPECT_EQ(train["spanId"], hex_of(parent_context.span_id()));
  EXPECT_FALSE(train.contains("parentSpanId"));
  EXPECT_EQ(step["traceId"], hex_of(parent_context.trace_id()));
  EXPECT_EQ(step["spanId"], hex_of(child_context.span_id()));
  EXPECT_EQ(step["parentSpanId"], hex_of(parent_context.span_id()));
  EXPECT_EQ(step["kind"], 1);  // SPAN_KIND_INTERNAL, as an integer

  const auto attributes = attributes_of(step);
  EXPECT_EQ(attributes.at("step"), nlohmann::json({{"intValue", "42"}}));
  EXPECT_EQ(attributes.at("loss"), nlohmann::json({{"doubleValue", 0.5}}));
  EXPECT_EQ(attributes.at("phase"), nlohmann::json({{"stringValue", "forward"}}));
  EXPECT_EQ(attributes.at("ok"), nlohmann::json({{"boolValue", true}}));
  EXPECT_TRUE(step["startTimeUnixNano"].is_string());
}

// OTLP keys are unique: a key set again keeps its last value, in every attribute list; and
// spans made natively and through the opentelemetry API share one resource in a request.
TEST_F(FileSpanExporter, EachKeyOnceWithItsLastValueAndOneResourcePerRequest) {
  const fs::path path = dir_ / "unique";
  Config config = file_config(path);
  config.span_groups = "all";
  auto handle = setup_telemetry(config, rank_of(0, 1), {}, overrides());
  ASSERT_TRUE(handle.ok()) << handle.message();
  {
    LENS_SPAN(lens::SpanSite("native", "step"), {"a", 1}, {"b", "x"}, {"a", 3});
    auto job = handle->tracer()->StartSpan("job", {{"a", 1}, {"b", "x"}});
    job->SetAttribute("a", 2);
    job->AddEvent("e", {{"x", 1}, {"y", 0}, {"x", 2}});
    job->End();
  }
  const Status status = handle->shutdown(std::chrono::milliseconds(5000));
  ASSERT_TRUE(status.ok()) << status.message();
  const auto lines = lines_of(path / "traces.jsonl");
  ASSERT_EQ(lines.size(), 1U);
  const auto request = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(request["resourceSpans"].size(), 1U) << lines[0];
  const auto spans = spans_of(lines);
  ASSERT_EQ(spans.size(), 2U);
  for (const auto& span : spans) {
    const nlohmann::json& attributes = span.at("attributes");
    ASSERT_EQ(attributes.size(), 2U) << span.dump();
    EXPECT_EQ(attributes[0]["key"], "a");
    EXPECT_EQ(attributes[0]["value"]["intValue"], span["name"] == "job" ? "2" : "3");
    EXPECT_EQ(attributes[1]["key"], "b");
    if (span["name"] == "job") {
      EXPECT_EQ(span["events"][0]["attributes"],
                nlohmann::json::parse(R"([{"key":"x","value":{"intValue":"2"}},)"
                                      R"({"key":"y","value":{"intValue":"0"}}])"));
    }
  }
}

// One trace, one set of flags: native spans, opentelemetry API spans nested either way, a link
// and a log record inside a span all say sampled (1), as traceparent does.
TEST_F(FileSpanExporter, OneTraceHasOneSetOfFlags) {
  const fs::path path = dir_ / "flags";
  Config config = file_config(path);
  config.span_groups = "all";
  config.logs_enabled = true;
  auto handle = setup_telemetry(config, rank_of(0, 1), {}, overrides());
  ASSERT_TRUE(handle.ok()) << handle.message();
  ASSERT_TRUE(setup_logging_bridge(log::Level::info));
  auto tracer = handle->tracer();
  opentelemetry::trace::SpanContext job_context = opentelemetry::trace::SpanContext::GetInvalid();
  {
    LENS_SPAN(lens::SpanSite("native-root", "step"));
    auto api_child = tracer->StartSpan("api-child");
    {
      auto scope = tracer->WithActiveSpan(api_child);
      LENS_SPAN(lens::SpanSite("native-grandchild", "step"));
      log::info("inside");
    }
    api_child->End();
    job_context = api_child->GetContext();
  }
  auto linked = tracer->StartSpan("linked", {}, {{job_context, {{"why", "next"}}}});
  linked->End();
  remove_logging_bridge();
  const Status status = handle->shutdown(std::chrono::milliseconds(5000));
  ASSERT_TRUE(status.ok()) << status.message();

  const auto spans = spans_of(lines_of(path / "traces.jsonl"));
  ASSERT_EQ(spans.size(), 4U);
  for (const auto& span : spans) {
    EXPECT_EQ(span.value("flags", 0), 1) << span.dump();
    if (span["name"] == "linked") {
      ASSERT_EQ(span["links"].size(), 1U);
      EXPECT_EQ(span["links"][0].value("flags", 0), 1) << span.dump();
    }
  }
  const auto log_lines = lines_of(path / "logs.jsonl");
  ASSERT_EQ(log_lines.size(), 1U);
  const auto record =
      nlohmann::json::parse(log_lines[0])["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
  EXPECT_EQ(record.value("flags", 0), 1) << record.dump();
}

TEST_F(FileSpanExporter, LaterSetupsAppendToTheSameFile) {
  run_once(dir_, "first");
  run_once(dir_, "second");
  const auto lines = lines_of(dir_ / "traces.jsonl");
  ASSERT_EQ(lines.size(), 2U);
  const auto spans = spans_of(lines);
  ASSERT_EQ(spans.size(), 2U);
  EXPECT_EQ(spans[0]["name"], "first");
  EXPECT_EQ(spans[1]["name"], "second");
}

TEST_F(FileSpanExporter, UncreatableDirectoryFailsSetup) {
  const fs::path blocker = dir_ / "regular-file";
  std::ofstream(blocker) << "not a directory";
  const fs::path path = blocker / "telemetry";

  Config config = test_support::config_from({{"NEMO_LENS_ENABLED", "true"},
                                             {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
                                             {"NEMO_LENS_RUN_ID", "file-run"},
                                             {"NEMO_LENS_EXPORTER", "file"},
                                             {"NEMO_LENS_FILE_PATH", path.string()}});
  auto handle = setup_telemetry(config, rank_of(0, 1), {}, overrides());
  ASSERT_EQ(failure_of(handle),
            "Cannot create directory '" + path.string() +
                "' (NEMO_LENS_FILE_PATH) for the file exporter: Not a directory");

  // Set in code, the message names the config field.
  auto made = exporters::make_exporter<Signal::traces>(
      telemetry::exporter_options(file_config(path), Signal::traces));
  ASSERT_EQ(failure_of(made), "Cannot create directory '" + path.string() +
                                  "' (config.file_path) for the file exporter: Not a directory");
}

TEST_F(FileSpanExporter, UnopenableFileFailsSetup) {
  fs::create_directory(dir_ / "traces.jsonl");  // a directory where the file should be
  auto made = exporters::make_exporter<Signal::traces>(
      telemetry::exporter_options(file_config(dir_), Signal::traces));
  ASSERT_EQ(failure_of(made), "Cannot open '" + (dir_ / "traces.jsonl").string() +
                                  "' (config.file_path) for appending: Is a directory");
}

// Recordables as the SDK fills them, for driving the exporter directly.
class Batches {
 public:
  explicit Batches(sdktrace::SpanExporter& exporter) : exporter_(exporter) {}

  ExportResult export_batch(const std::string& name, int spans, std::size_t payload) {
    std::vector<std::unique_ptr<sdktrace::Recordable>> batch;
    const std::string text(payload, 'x');
    for (int i = 0; i < spans; ++i) {
      auto recordable = exporter_.MakeRecordable();
      const std::array<std::uint8_t, 16> trace_bytes{
          1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, static_cast<std::uint8_t>(i)};
      const std::array<std::uint8_t, 8> span_bytes{1, 1, 1, 1,
                                                   1, 1, 1, static_cast<std::uint8_t>(i + 1)};
      recordable->SetIdentity(
          opentelemetry::trace::SpanContext(
              opentelemetry::trace::TraceId(trace_bytes), opentelemetry::trace::SpanId(span_bytes),
              opentelemetry::trace::TraceFlags(opentelemetry::trace::TraceFlags::kIsSampled),
              false),
          opentelemetry::trace::SpanId());
      recordable->SetResource(resource_);
      recordable->SetInstrumentationScope(*scope_);
      recordable->SetName(name);
      recordable->SetAttribute("payload", opentelemetry::nostd::string_view(text));
      batch.push_back(std::move(recordable));
    }
    return exporter_.Export(opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>(
        batch.data(), batch.size()));
  }

 private:
  sdktrace::SpanExporter& exporter_;
  opentelemetry::sdk::resource::Resource resource_ =
      opentelemetry::sdk::resource::Resource::Create({{"service.name", "direct"}});
  std::unique_ptr<opentelemetry::sdk::instrumentationscope::InstrumentationScope> scope_ =
      opentelemetry::sdk::instrumentationscope::InstrumentationScope::Create("direct");
};

TEST_F(FileSpanExporter, ConcurrentExportsWriteWholeLines) {
  // Two exporters on one directory stand for two rank processes; several threads each.
  auto first = exporters::make_exporter<Signal::traces>(
      telemetry::exporter_options(file_config(dir_), Signal::traces));
  auto second = exporters::make_exporter<Signal::traces>(
      telemetry::exporter_options(file_config(dir_), Signal::traces));
  ASSERT_TRUE(first.ok()) << first.message();
  ASSERT_TRUE(second.ok()) << second.message();
  constexpr int kThreadsPerExporter = 3;
  constexpr int kBatches = 20;
  constexpr int kSpansPerBatch = 5;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  // Made here, one after another: opentelemetry-cpp's Resource::Create is not thread-safe.
  std::vector<std::unique_ptr<Batches>> producers;
  for (sdktrace::SpanExporter* exporter : {first->get(), second->get()}) {
    for (int t = 0; t < kThreadsPerExporter; ++t) {
      producers.push_back(std::make_unique<Batches>(*exporter));
    }
  }
  for (std::size_t p = 0; p < producers.size(); ++p) {
    const int t = static_cast<int>(p) % kThreadsPerExporter;
    threads.emplace_back([producer = producers[p].get(), t, &failures] {
      for (int b = 0; b < kBatches; ++b) {
        // Lines of ~50 KiB: far beyond any single-page write.
        if (producer->export_batch("t" + std::to_string(t), kSpansPerBatch, 10000) !=
            ExportResult::kSuccess) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE((*first)->Shutdown(std::chrono::microseconds(1000000)));
  EXPECT_TRUE((*second)->Shutdown(std::chrono::microseconds(1000000)));

  const auto lines = lines_of(dir_ / "traces.jsonl");
  EXPECT_EQ(lines.size(), 2U * kThreadsPerExporter * kBatches);
  const auto spans = spans_of(lines);  // throws on a torn line
  EXPECT_EQ(spans.size(), 2U * kThreadsPerExporter * kBatches * kSpansPerBatch);
  for (const auto& span : spans) {
    EXPECT_EQ(attributes_of(span).at("payload")["stringValue"].get<std::string>().size(), 10000U);
  }
}

TEST_F(FileSpanExporter, ExportAfterShutdownFails) {
  auto exporter = exporters::make_exporter<Signal::traces>(
      telemetry::exporter_options(file_config(dir_), Signal::traces));
  ASSERT_TRUE(exporter.ok()) << exporter.message();
  Batches batches(**exporter);
  EXPECT_EQ(batches.export_batch("before", 1, 1), ExportResult::kSuccess);
  EXPECT_TRUE((*exporter)->Shutdown(std::chrono::microseconds(1000000)));
  EXPECT_TRUE((*exporter)->Shutdown(std::chrono::microseconds(1000000)));  // idempotent
  EXPECT_EQ(batches.export_batch("after", 1, 1), ExportResult::kFailure);
  EXPECT_EQ(lines_of(dir_ / "traces.jsonl").size(), 1U);
}

TEST_F(FileSpanExporter, WriteFailuresAreFailedExportsReportedOnce) {
  // Writes to /dev/full fail with ENOSPC.
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  fs::create_symlink("/dev/full", dir_ / "traces.jsonl");
  auto exporter = exporters::make_exporter<Signal::traces>(
      telemetry::exporter_options(file_config(dir_), Signal::traces));
  ASSERT_TRUE(exporter.ok()) << exporter.message();
  Batches batches(**exporter);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(batches.export_batch("a", 1, 1), ExportResult::kFailure);
  EXPECT_EQ(batches.export_batch("b", 1, 1), ExportResult::kFailure);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "lens: file exporter: " + (dir_ / "traces.jsonl").string() +
                     ": No space left on device; spans of failed exports are dropped (further "
                     "errors are not reported)\n");
  EXPECT_TRUE((*exporter)->Shutdown(std::chrono::microseconds(1000000)));

  // Through setup: the failed export counts its spans as dropped; setup succeeds, shutdown
  // says what it could not deliver.
  ::testing::internal::CaptureStderr();
  auto handle = setup_telemetry(file_config(dir_), rank_of(0, 1), {}, overrides());
  ASSERT_TRUE(handle.ok()) << handle.message();
  handle->tracer()->StartSpan("lost")->End();
  EXPECT_EQ(handle->shutdown(std::chrono::milliseconds(5000)).message(),
            "Telemetry shutdown could not deliver 1 spans (the export failures are on stderr)");
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("No space left on device"),
            std::string::npos);
  EXPECT_EQ(handle->stats().spans_exported, 0U);
  EXPECT_EQ(handle->stats().spans_dropped, 1U);
}

}  // namespace
}  // namespace lens
