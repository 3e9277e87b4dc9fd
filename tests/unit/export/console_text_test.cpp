// The text console (exporter=console, CONSOLE_FORMAT=text): the exact lines of spans, metrics,
// log records and the resource; one resource line per stream; lines that stay whole next to the
// process's own printf output; and the depth of native, API, cross-thread, remote and
// cross-batch spans through setup_telemetry and the native span pipeline.
#include "export/console_text.hpp"

#include <gtest/gtest.h>
#include <opentelemetry/context/runtime_context.h>
#include <opentelemetry/sdk/resource/resource.h>
#include <opentelemetry/sdk/trace/span_data.h>
#include <opentelemetry/trace/scope.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "export/exporters.hpp"
#include "export/text_console.hpp"
#include "lens/groups.hpp"
#include "lens/propagation.hpp"
#include "lens/span.hpp"
#include "lens/telemetry.hpp"
#include "telemetry/plan.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

namespace otel = opentelemetry;
namespace sdktrace = opentelemetry::sdk::trace;
namespace sdkmetrics = opentelemetry::sdk::metrics;
using namespace std::chrono_literals;

std::vector<std::string> text_console_lines(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::vector<std::string> lines;
  std::string current;
  int c = 0;
  while ((c = std::fgetc(file)) != EOF) {
    if (c == '\n') {
      lines.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(c);
    }
  }
  EXPECT_EQ(current, "") << "unterminated last line";
  return lines;
}

TEST(TextConsoleLines, DurationsHaveThreeSignificantDigitsAndAUnit) {
  EXPECT_EQ(exporters::text_duration(0ns), "0 ns");
  EXPECT_EQ(exporters::text_duration(850ns), "850 ns");
  EXPECT_EQ(exporters::text_duration(1500ns), "1.50 us");
  EXPECT_EQ(exporters::text_duration(12345ns), "12.3 us");
  EXPECT_EQ(exporters::text_duration(41'200'000ns), "41.2 ms");
  EXPECT_EQ(exporters::text_duration(123'456'789ns), "123 ms");
  EXPECT_EQ(exporters::text_duration(3'210'000'000ns), "3.21 s");
  EXPECT_EQ(exporters::text_duration(5400s), "5400 s");
}

TEST(TextConsoleLines, ASpanIsIndentedNamedTimedWithItsAttributesByKeyAndItsError) {
  sdktrace::SpanData span;
  span.SetName("megatron.train_step");
  span.SetDuration(41'200'000ns);
  span.SetAttribute("megatron.iteration", 7);
  span.SetAttribute("megatron.loss", 2.5);
  span.SetAttribute("megatron.grad_norm", 1.5798349838140564);
  span.SetAttribute("phase", "forward pass");
  span.SetAttribute("ok", true);
  EXPECT_EQ(
      exporters::text_line(span, 2),
      "[lens]     megatron.train_step 41.2 ms megatron.grad_norm=1.57983 megatron.iteration=7 "
      "megatron.loss=2.5 ok=true phase=\"forward pass\"");
  span.SetStatus(otel::trace::StatusCode::kError, "out of memory");
  EXPECT_EQ(exporters::text_line(span, 0),
            "[lens] megatron.train_step 41.2 ms megatron.grad_norm=1.57983 megatron.iteration=7 "
            "megatron.loss=2.5 ok=true phase=\"forward pass\" ERROR: \"out of memory\"");
  sdktrace::SpanData ok;
  ok.SetName("fwd");
  ok.SetDuration(900ns);
  ok.SetStatus(otel::trace::StatusCode::kOk, "");
  EXPECT_EQ(exporters::text_line(ok, 1), "[lens]   fwd 900 ns");
}

TEST(TextConsoleLines, ValuesStayOnOneLineAndLongOnesAreCut) {
  sdktrace::SpanData span;
  span.SetName("s");
  span.SetDuration(1ms);
  span.SetAttribute("path", "a\nb\t\"c\"\\");
  span.SetAttribute("long", std::string(70, 'x'));
  const std::vector<std::int64_t> ranks = {0, 1, 2};
  span.SetAttribute("ranks", otel::nostd::span<const std::int64_t>(ranks));
  EXPECT_EQ(exporters::text_line(span, 0), "[lens] s 1.00 ms long=" + std::string(60, 'x') +
                                               "... path=\"a\\nb\\t\\\"c\\\"\\\\\" ranks=[0,1,2]");
}

TEST(TextConsoleLines, AtMostEightAttributesThenTheCountOfTheOthers) {
  sdktrace::SpanData span;
  span.SetName("s");
  span.SetDuration(2s);
  for (char key = 'a'; key <= 'j'; ++key) span.SetAttribute(std::string(1, key), key - 'a');
  EXPECT_EQ(exporters::text_line(span, 0), "[lens] s 2.00 s a=0 b=1 c=2 d=3 e=4 f=5 g=6 h=7 +2");
}

sdkmetrics::MetricData text_console_metric(const std::string& name, const std::string& unit,
                                           std::vector<sdkmetrics::PointType> points) {
  sdkmetrics::MetricData metric;
  metric.instrument_descriptor.name_ = name;
  metric.instrument_descriptor.unit_ = unit;
  int series = 0;
  for (auto& point : points) {
    sdkmetrics::PointDataAttributes attributed;
    attributed.attributes.SetAttribute("series", series++);
    attributed.point_data = std::move(point);
    metric.point_data_attr_.push_back(std::move(attributed));
  }
  return metric;
}

TEST(TextConsoleLines, OneLinePerCollectionWithOneValuePerMetric) {
  sdkmetrics::SumPointData tokens;
  tokens.value_ = std::int64_t{4096};
  tokens.is_monotonic_ = true;
  sdkmetrics::LastValuePointData loss;
  loss.value_ = 2.25;
  sdkmetrics::HistogramPointData step_time;
  step_time.count_ = 3;
  step_time.sum_ = 1.5;
  sdkmetrics::SumPointData a;
  a.value_ = 1.0;
  sdkmetrics::SumPointData b;
  b.value_ = 2.0;
  sdkmetrics::ScopeMetrics scope;
  scope.metric_data_.push_back(text_console_metric("tokens", "{token}", {tokens}));
  scope.metric_data_.push_back(text_console_metric("loss", "1", {loss}));
  scope.metric_data_.push_back(text_console_metric("step_time", "s", {step_time}));
  scope.metric_data_.push_back(text_console_metric("per_rank", "By", {a, b}));
  scope.metric_data_.push_back(text_console_metric("empty", "", {}));
  sdkmetrics::ResourceMetrics data;
  data.scope_metric_data_.push_back(std::move(scope));
  EXPECT_EQ(exporters::text_line(data),
            "[lens] metrics tokens=4096 loss=2.25 step_time=count:3,sum:1.5s per_rank=[2 series]");
  EXPECT_EQ(exporters::text_line(sdkmetrics::ResourceMetrics{}), "[lens] metrics (no data points)");
}

TEST(TextConsoleLines, ALogRecordAndTheResource) {
  exporters::LogRecordData record;
  record.SetSeverity(otel::logs::Severity::kWarn);
  record.SetBody("iteration 7 | loss 2.5");
  record.SetAttribute("megatron.iteration", 7);
  EXPECT_EQ(exporters::text_line(record),
            "[lens] log WARN \"iteration 7 | loss 2.5\" megatron.iteration=7");
  const auto resource = otel::sdk::resource::Resource::Create(
      {{"service.name", "nemo"}, {"nemo.rank", 3}, {"host.name", "node 1"}});
  const std::string version =
      otel::nostd::get<std::string>(resource.GetAttributes().at("telemetry.sdk.version"));
  EXPECT_EQ(exporters::text_resource_line(resource),
            "[lens] resource host.name=\"node 1\" nemo.rank=3 service.name=nemo "
            "telemetry.sdk.language=cpp telemetry.sdk.name=opentelemetry "
            "telemetry.sdk.version=" +
                version);
}

TEST(TextConsoleStream, TheResourceLineIsWrittenOnceUntilItChanges) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  exporters::TextConsole console(out);
  EXPECT_TRUE(console.write("[lens] resource a=1", {"[lens] one"}));
  EXPECT_TRUE(console.write("[lens] resource a=1", {"[lens] two", "[lens] three"}));
  EXPECT_TRUE(console.write("[lens] resource a=2", {"[lens] four"}));
  EXPECT_TRUE(console.write("", {"[lens] five"}));
  EXPECT_EQ(
      text_console_lines(out),
      (std::vector<std::string>{"[lens] resource a=1", "[lens] one", "[lens] two", "[lens] three",
                                "[lens] resource a=2", "[lens] four", "[lens] five"}));
  std::fclose(out);
}

// The trainer prints through stdio on the same stream from another thread: every line of both
// arrives whole, and what the trainer printed before a lens line comes before it.
TEST(TextConsoleStream, LinesNeverMixWithTheProcesssOwnPrintfLines) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  exporters::TextConsole console(out);
  std::fputs("trainer before\n", out);  // still in the stream's buffer
  ASSERT_TRUE(console.write("", {"[lens] first"}));
  constexpr int kLines = 2000;
  std::thread trainer([out] {
    for (int i = 0; i < kLines; ++i) std::fprintf(out, "trainer line %d of the loop\n", i);
  });
  for (int i = 0; i < kLines; ++i) {
    ASSERT_TRUE(console.write("", {"[lens] span " + std::to_string(i) + " 1.00 ms"}));
  }
  trainer.join();
  const auto lines = text_console_lines(out);
  std::fclose(out);
  ASSERT_EQ(lines.size(), 2U + 2U * kLines);
  EXPECT_EQ(lines[0], "trainer before");
  EXPECT_EQ(lines[1], "[lens] first");
  const std::regex whole(R"((trainer line \d+ of the loop)|(\[lens\] span \d+ 1\.00 ms))");
  int trainer_next = 0;
  int lens_next = 0;
  for (std::size_t i = 2; i < lines.size(); ++i) {
    ASSERT_TRUE(std::regex_match(lines[i], whole)) << lines[i];
    if (lines[i][0] == 't') {
      EXPECT_EQ(lines[i], "trainer line " + std::to_string(trainer_next++) + " of the loop");
    } else {
      EXPECT_EQ(lines[i], "[lens] span " + std::to_string(lens_next++) + " 1.00 ms");
    }
  }
}

TEST(TextConsoleFactory, ConsoleFormatTextMakesTheTextConsoleForEverySignal) {
  Config config = test_support::config_from(
      {{"NEMO_LENS_EXPORTER", "console"}, {"NEMO_LENS_CONSOLE_FORMAT", "Text"}});
  auto spans =
      exporters::make_exporter<Signal::traces>(telemetry::exporter_options(config, Signal::traces));
  ASSERT_TRUE(spans.ok()) << spans.message();
  EXPECT_NE(dynamic_cast<exporters::SpanDataWithDepth*>((*spans)->MakeRecordable().get()), nullptr);
  config.console_format = ConsoleFormat::json;
  auto json =
      exporters::make_exporter<Signal::traces>(telemetry::exporter_options(config, Signal::traces));
  ASSERT_TRUE(json.ok()) << json.message();
  EXPECT_EQ(dynamic_cast<exporters::SpanDataWithDepth*>((*json)->MakeRecordable().get()), nullptr);
}

// Setup with the text console on a temporary file, native and API spans through the pipeline.
class TextConsoleDepth : public ::testing::Test {
 protected:
  void SetUp() override {
    detail::reset_span_groups_for_testing();
    out_ = std::tmpfile();
    ASSERT_NE(out_, nullptr);
    Env::Map env = {{"NEMO_LENS_ENABLED", "1"},         {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
                    {"NEMO_LENS_RUN_ID", "text-test"},  {"NEMO_LENS_EXPORTER", "none"},
                    {"NEMO_LENS_METRICS_ENABLED", "0"}, {"NEMO_LENS_SPAN_GROUPS", "all"}};
    SetupOverrides overrides;
    overrides.span_exporter = exporters::make_text_console_exporter<Signal::traces>(
        std::make_shared<exporters::TextConsole>(out_));
    overrides.env = Env::from(env);
    auto made = setup_telemetry(test_support::config_from(env), test_support::rank_of(0, 1), {},
                                std::move(overrides));
    ASSERT_TRUE(made.ok()) << made.message();
    handle_ = *made;
  }
  void TearDown() override {
    if (handle_) static_cast<void>(handle_->shutdown(2000ms));
    detail::reset_span_groups_for_testing();
    if (out_ != nullptr) std::fclose(out_);
  }

  void flush() { ASSERT_TRUE(handle_->force_flush(5000ms).ok()); }

  // "<indent><name>" of every span line (the duration varies), the resource line checked apart.
  std::vector<std::string> span_lines() {
    const auto lines = text_console_lines(out_);
    std::vector<std::string> out;
    const std::regex span(R"(\[lens\] ( *\S+) [0-9.]+ (ns|us|ms|s)( .*)?)");
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (i == 0) {
        EXPECT_EQ(lines[i].rfind("[lens] resource ", 0), 0U) << lines[i];
        EXPECT_NE(lines[i].find(" nemo.run.id=text-test"), std::string::npos) << lines[i];
        continue;
      }
      std::smatch match;
      EXPECT_TRUE(std::regex_match(lines[i], match, span)) << lines[i];
      if (!match.empty()) out.push_back(match[1]);
    }
    return out;
  }

  std::FILE* out_ = nullptr;
  std::optional<TelemetryHandle> handle_;
};

TEST_F(TextConsoleDepth, NativeAndApiSpansNestAndTheOrderIsTheEndOrder) {
  {
    LENS_SPAN(lens::SpanSite("outer", "step"));
    {
      LENS_SPAN(lens::SpanSite("mid", "step"));
      auto tracer = handle_->tracer();
      auto third = tracer->StartSpan("third-party");
      {
        otel::trace::Scope scope(third);
        { LENS_SPAN(lens::SpanSite("native-under-api", "step")); }
        auto api_child = tracer->StartSpan("api-under-api");
        api_child->End();
      }
      third->End();
    }
  }
  flush();
  EXPECT_EQ(span_lines(), (std::vector<std::string>{"      native-under-api", "      api-under-api",
                                                    "    third-party", "  mid", "outer"}));
}

TEST_F(TextConsoleDepth, AParentThatEndsInALaterBatchKeepsItsChildrenIndented) {
  {
    LENS_SPAN(lens::SpanSite("train", "step"));
    { LENS_SPAN(lens::SpanSite("step-1", "step")); }
    flush();  // step-1 goes out while train is still open
    {
      LENS_SPAN(lens::SpanSite("step-2", "step"));
      { LENS_SPAN(lens::SpanSite("forward", "step")); }
    }
  }
  flush();
  EXPECT_EQ(span_lines(),
            (std::vector<std::string>{"  step-1", "    forward", "  step-2", "train"}));
}

TEST_F(TextConsoleDepth, ASpanThatIsNotAScopeParentsWhatRunsInItsScope) {
  {
    LENS_SPAN(lens::SpanSite("outer", "step"));
    Span job = start_span("job", {});
    ASSERT_TRUE(job);
    {
      SpanScope scope(job);
      LENS_SPAN(lens::SpanSite("inside", "step"));
    }
    job.end();
  }
  flush();
  EXPECT_EQ(span_lines(), (std::vector<std::string>{"    inside", "  job", "outer"}));
}

TEST_F(TextConsoleDepth, OtherThreadsAttachedContextsAndRemoteParents) {
  Carrier carrier;
  {
    LENS_SPAN(lens::SpanSite("outer", "step"));
    {
      LENS_SPAN(lens::SpanSite("inner", "step"));
      inject_context(carrier);
      const auto captured = capture_context();
      std::thread([&captured] {
        // The parent is open in this process, on another thread's stack.
        ContextScope scope(captured);
        LENS_SPAN(lens::SpanSite("on-another-thread", "step"));
      }).join();
    }
  }
  {
    ContextScope remote(extract_context(carrier, otel::context::Context{}));
    LENS_SPAN(lens::SpanSite("remote-child", "step"));
  }
  flush();
  EXPECT_EQ(span_lines(), (std::vector<std::string>{"    on-another-thread", "  inner", "outer",
                                                    "remote-child"}));
}

}  // namespace
}  // namespace lens
