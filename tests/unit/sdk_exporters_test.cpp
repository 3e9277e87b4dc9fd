// LimitingExporter (span limits), the reporting wrapper's counts and lens::testing's in-memory
// exporter, with exact kept values.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/utf8.hpp"
#include "export/export_report.hpp"
#include "lens/testing/in_memory_exporter.hpp"
#include "opentelemetry/common/key_value_iterable_view.h"
#include "opentelemetry/sdk/resource/resource.h"
#include "opentelemetry/sdk/trace/simple_processor.h"
#include "opentelemetry/sdk/trace/tracer_provider.h"
#include "opentelemetry/trace/span_context_kv_iterable_view.h"
#include "sdk/limiting_exporter.hpp"

namespace {

namespace otel_sdk = opentelemetry::sdk::trace;
namespace nostd = opentelemetry::nostd;
using lens::exporters::ExportReport;
using lens::exporters::make_reporting_exporter;
using lens::sdk::LimitingExporter;
using lens::sdk::SpanLimits;

struct Limited {
  std::shared_ptr<otel_sdk::TracerProvider> provider;
  std::shared_ptr<lens::testing::InMemorySpanData> data;
  std::shared_ptr<const lens::sdk::LimitCounters> counters;
  nostd::shared_ptr<opentelemetry::trace::Tracer> tracer;
};

Limited make_limited(const SpanLimits& limits) {
  auto memory = lens::testing::make_in_memory_span_exporter();
  auto limiting = std::make_unique<LimitingExporter>(std::move(memory.exporter), limits);
  Limited limited;
  limited.counters = limiting->counters();
  limited.data = memory.data;
  limited.provider = std::make_shared<otel_sdk::TracerProvider>(
      std::make_unique<otel_sdk::SimpleSpanProcessor>(std::move(limiting)));
  limited.tracer = limited.provider->GetTracer("sdk-limits-test");
  return limited;
}

std::unique_ptr<otel_sdk::SpanData> only_span(const Limited& limited) {
  auto spans = lens::testing::take_spans(limited.data);
  EXPECT_EQ(spans.size(), 1U);
  return spans.empty() ? nullptr : std::move(spans[0]);
}

opentelemetry::trace::SpanContext link_target(std::uint8_t tag) {
  std::uint8_t trace[16] = {tag, 1};
  std::uint8_t span[8] = {tag, 2};
  return opentelemetry::trace::SpanContext(opentelemetry::trace::TraceId(trace),
                                           opentelemetry::trace::SpanId(span),
                                           opentelemetry::trace::TraceFlags(1), false);
}

TEST(SdkLimitingExporter, LimitsFromSettingsPreferTheSpanSpecificVariables) {
  lens::LimitSettings settings;
  SpanLimits limits = SpanLimits::from(settings);
  EXPECT_EQ(limits.attribute_count, 128U);
  EXPECT_FALSE(limits.attribute_value_length.has_value());
  EXPECT_EQ(limits.event_count, 128U);
  EXPECT_EQ(limits.link_count, 128U);
  EXPECT_EQ(limits.event_attribute_count, 128U);
  EXPECT_EQ(limits.link_attribute_count, 128U);

  settings.attribute_count = {10, "env:OTEL_ATTRIBUTE_COUNT_LIMIT"};
  settings.attribute_value_length = {std::int64_t{20}, "env:OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"};
  limits = SpanLimits::from(settings);
  EXPECT_EQ(limits.attribute_count, 10U);
  EXPECT_EQ(limits.attribute_value_length, 20U);
  EXPECT_EQ(limits.event_attribute_count, 10U);
  EXPECT_EQ(limits.link_attribute_count, 10U);

  settings.span_attribute_count = {5, "env:OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT"};
  settings.span_attribute_value_length = {std::int64_t{3},
                                          "env:OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT"};
  settings.span_event_count = {2, "env:OTEL_SPAN_EVENT_COUNT_LIMIT"};
  settings.span_link_count = {1, "env:OTEL_SPAN_LINK_COUNT_LIMIT"};
  settings.event_attribute_count = {4, "env:OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT"};
  settings.link_attribute_count = {6, "env:OTEL_LINK_ATTRIBUTE_COUNT_LIMIT"};
  limits = SpanLimits::from(settings);
  EXPECT_EQ(limits.attribute_count, 5U);
  EXPECT_EQ(limits.attribute_value_length, 3U);
  EXPECT_EQ(limits.event_count, 2U);
  EXPECT_EQ(limits.link_count, 1U);
  EXPECT_EQ(limits.event_attribute_count, 4U);
  EXPECT_EQ(limits.link_attribute_count, 6U);
}

TEST(SdkLimitingExporter, AttributeCountKeepsTheFirstKeysAndAllowsUpdates) {
  SpanLimits limits;
  limits.attribute_count = 3;
  auto limited = make_limited(limits);
  auto span = limited.tracer->StartSpan("count");
  span->SetAttribute("a", 1);
  span->SetAttribute("b", 2);
  span->SetAttribute("c", 3);
  span->SetAttribute("d", 4);   // dropped
  span->SetAttribute("e", 5);   // dropped
  span->SetAttribute("a", 10);  // update of a kept key
  span->End();
  auto data = only_span(limited);
  ASSERT_NE(data, nullptr);
  const auto& attributes = data->GetAttributes();
  ASSERT_EQ(attributes.size(), 3U);
  EXPECT_EQ(nostd::get<int32_t>(attributes.at("a")), 10);
  EXPECT_EQ(nostd::get<int32_t>(attributes.at("b")), 2);
  EXPECT_EQ(nostd::get<int32_t>(attributes.at("c")), 3);
  EXPECT_EQ(limited.counters->dropped_attributes.load(), 2U);
}

TEST(SdkLimitingExporter, ValueLengthTruncatesStringsAndStringArraysByCodePoint) {
  SpanLimits limits;
  limits.attribute_value_length = 4;
  auto limited = make_limited(limits);
  auto span = limited.tracer->StartSpan("length");
  span->SetAttribute("view", nostd::string_view("abcdefgh"));
  span->SetAttribute("cstr", "123456");
  span->SetAttribute("short", "ab");
  span->SetAttribute("utf8", nostd::string_view("h\xc3\xa9llo w"));  // "héllo w"
  const nostd::string_view items[] = {"xyz", "uvwxyz", ""};
  span->SetAttribute("array", nostd::span<const nostd::string_view>(items));
  span->SetAttribute("number", 123456789);
  span->End();
  auto data = only_span(limited);
  ASSERT_NE(data, nullptr);
  const auto& attributes = data->GetAttributes();
  EXPECT_EQ(nostd::get<std::string>(attributes.at("view")), "abcd");
  EXPECT_EQ(nostd::get<std::string>(attributes.at("cstr")), "1234");
  EXPECT_EQ(nostd::get<std::string>(attributes.at("short")), "ab");
  EXPECT_EQ(nostd::get<std::string>(attributes.at("utf8")), "h\xc3\xa9ll");
  EXPECT_EQ(nostd::get<std::vector<std::string>>(attributes.at("array")),
            (std::vector<std::string>{"xyz", "uvwx", ""}));
  EXPECT_EQ(nostd::get<int32_t>(attributes.at("number")), 123456789);
  EXPECT_EQ(limited.counters->truncated_values.load(), 4U);
  EXPECT_EQ(limited.counters->dropped_attributes.load(), 0U);
  EXPECT_EQ(lens::core::utf8_prefix_bytes("h\xc3\xa9llo", 2), 3U);
}

TEST(SdkLimitingExporter, EventsBeyondTheLimitAndTheirExtraAttributesAreDropped) {
  SpanLimits limits;
  limits.event_count = 2;
  limits.event_attribute_count = 1;
  limits.attribute_value_length = 3;
  auto limited = make_limited(limits);
  auto span = limited.tracer->StartSpan("events");
  const std::map<std::string, std::string> two{{"k1", "value"}, {"k2", "v2"}};
  span->AddEvent("first", opentelemetry::common::KeyValueIterableView<decltype(two)>(two));
  span->AddEvent("second");
  span->AddEvent("third");  // dropped
  span->End();
  auto data = only_span(limited);
  ASSERT_NE(data, nullptr);
  const auto& events = data->GetEvents();
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].GetName(), "first");
  ASSERT_EQ(events[0].GetAttributes().size(), 1U);
  EXPECT_EQ(nostd::get<std::string>(events[0].GetAttributes().at("k1")), "val");
  EXPECT_EQ(events[1].GetName(), "second");
  EXPECT_EQ(limited.counters->dropped_events.load(), 1U);
  EXPECT_EQ(limited.counters->dropped_attributes.load(), 1U);
}

TEST(SdkLimitingExporter, LinksBeyondTheLimitAndTheirExtraAttributesAreDropped) {
  SpanLimits limits;
  limits.link_count = 1;
  limits.link_attribute_count = 2;
  auto limited = make_limited(limits);
  const std::map<std::string, int> three{{"a", 1}, {"b", 2}, {"c", 3}};
  const std::vector<std::pair<opentelemetry::trace::SpanContext, std::map<std::string, int>>> links{
      {link_target(1), three}, {link_target(2), {}}};
  opentelemetry::trace::SpanContextKeyValueIterableView<decltype(links)> links_view(links);
  const std::map<std::string, int> no_attributes;
  auto span = limited.tracer->StartSpan(
      "links", opentelemetry::common::KeyValueIterableView<decltype(no_attributes)>(no_attributes),
      links_view);
  span->End();
  auto data = only_span(limited);
  ASSERT_NE(data, nullptr);
  const auto& kept = data->GetLinks();
  ASSERT_EQ(kept.size(), 1U);
  EXPECT_EQ(kept[0].GetSpanContext().trace_id(), link_target(1).trace_id());
  ASSERT_EQ(kept[0].GetAttributes().size(), 2U);
  EXPECT_EQ(nostd::get<int32_t>(kept[0].GetAttributes().at("a")), 1);
  EXPECT_EQ(nostd::get<int32_t>(kept[0].GetAttributes().at("b")), 2);
  EXPECT_EQ(limited.counters->dropped_links.load(), 1U);
  EXPECT_EQ(limited.counters->dropped_attributes.load(), 1U);
}

// An exporter whose result is scripted, to count failures.
class ScriptedExporter final : public otel_sdk::SpanExporter {
 public:
  explicit ScriptedExporter(bool succeed) : succeed_(succeed) {}
  std::unique_ptr<otel_sdk::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<otel_sdk::SpanData>();
  }
  opentelemetry::sdk::common::ExportResult Export(
      const nostd::span<std::unique_ptr<otel_sdk::Recordable>>&) noexcept override {
    return succeed_ ? opentelemetry::sdk::common::ExportResult::kSuccess
                    : opentelemetry::sdk::common::ExportResult::kFailure;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return true; }

 private:
  bool succeed_;
};

// The one count of a signal's exports: the reporting wrapper counts every Export of any exporter
// (here from four threads at once, then after the inner exporter's shutdown, then failing).
TEST(ReportingExporter, CountsExportedAndFailedSpans) {
  auto memory = lens::testing::make_in_memory_span_exporter();
  std::vector<std::string> lines;
  auto report = std::make_shared<ExportReport>(
      lens::Signal::traces, [&](std::string_view line) { lines.emplace_back(line); });
  auto provider = std::make_shared<otel_sdk::TracerProvider>(
      std::make_unique<otel_sdk::SimpleSpanProcessor>(make_reporting_exporter<lens::Signal::traces>(
          std::move(memory.exporter), report, "memory")));
  auto tracer = provider->GetTracer("counting");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) tracer->StartSpan("s")->End();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(report->counts().items_exported, 100U);
  EXPECT_EQ(report->counts().items_failed, 0U);
  EXPECT_EQ(memory.take_spans().size(), 100U);
  provider->Shutdown();
  tracer->StartSpan("after-shutdown")->End();  // in-memory exporter is shut down: kFailure
  EXPECT_EQ(report->counts().items_exported, 100U);
  EXPECT_EQ(report->counts().items_failed, 1U);
  EXPECT_EQ(lines,
            std::vector<std::string>{"lens: traces export to memory failed; its spans are "
                                     "dropped (further occurrences are counted, not shown)"});

  auto failing = make_reporting_exporter<lens::Signal::traces>(
      std::make_unique<ScriptedExporter>(false), report, "scripted", /*explain_failures=*/false);
  std::vector<std::unique_ptr<otel_sdk::Recordable>> batch;
  batch.push_back(failing->MakeRecordable());
  batch.push_back(failing->MakeRecordable());
  batch.push_back(failing->MakeRecordable());
  EXPECT_EQ(failing->Export(nostd::span<std::unique_ptr<otel_sdk::Recordable>>(batch.data(), 3)),
            opentelemetry::sdk::common::ExportResult::kFailure);
  EXPECT_EQ(report->counts().items_failed, 4U);
  EXPECT_EQ(report->counts().exports_failed, 2U);
  EXPECT_EQ(lines.size(), 1U);  // explain_failures off: the exporter says why itself
}

TEST(SdkInMemoryExporter, SpansStayReadableAfterTheExporterMovedAway) {
  auto memory = lens::testing::make_in_memory_span_exporter(2);
  {
    auto provider = std::make_shared<otel_sdk::TracerProvider>(
        std::make_unique<otel_sdk::SimpleSpanProcessor>(std::move(memory.exporter)));
    auto tracer = provider->GetTracer("memory");
    tracer->StartSpan("one")->End();
    tracer->StartSpan("two")->End();
    tracer->StartSpan("three")->End();  // buffer of 2: dropped
    provider->Shutdown();
  }
  EXPECT_EQ(memory.exporter, nullptr);
  auto spans = memory.take_spans();
  ASSERT_EQ(spans.size(), 2U);
  EXPECT_EQ(spans[0]->GetName(), "one");
  EXPECT_EQ(spans[1]->GetName(), "two");
  EXPECT_TRUE(memory.take_spans().empty());
}

}  // namespace
