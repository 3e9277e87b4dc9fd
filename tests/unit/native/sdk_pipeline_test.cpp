// The export pipeline through its processor (spans made with opentelemetry-cpp's Tracer, as
// third-party instrumentation makes them): span limits with exact kept values and counts, and
// the concurrent exports — batches sent in order on sender threads (or several at once on
// several senders), at most one waiting while the senders are busy, flush and shutdown waiting
// for what was handed over within their timeout, and a shutdown that times out leaving the
// exporter's shutdown to the export thread, after every batch. (Named after the sdk_ wrappers
// whose tests it took over, which keeps the unity build's file groups as they were.)
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/utf8.hpp"
#include "export/export_report.hpp"
#include "lens/testing/in_memory_exporter.hpp"
#include "native/span_pipeline.hpp"
#include "opentelemetry/common/key_value_iterable_view.h"
#include "opentelemetry/sdk/resource/resource.h"
#include "opentelemetry/sdk/trace/span_data.h"
#include "opentelemetry/sdk/trace/tracer_provider.h"
#include "opentelemetry/trace/span_context_kv_iterable_view.h"
#include "unit/support/test_support.hpp"

namespace {

namespace otel_sdk = opentelemetry::sdk::trace;
namespace nostd = opentelemetry::nostd;
using lens::native::SpanLimits;
using lens::native::SpanPipeline;
using lens::native::SpanPipelineOptions;
using opentelemetry::sdk::common::ExportResult;
using RecordablePtr = std::unique_ptr<otel_sdk::Recordable>;
using namespace std::chrono_literals;

// A pipeline with a tracer provider in front, as setup builds it (without the closer).
struct Piped {
  Piped(std::unique_ptr<otel_sdk::SpanExporter> exporter, const SpanPipelineOptions& options)
      : pipeline(std::make_shared<SpanPipeline>(
            options, std::move(exporter), opentelemetry::sdk::resource::Resource::Create({}))),
        provider(std::make_shared<otel_sdk::TracerProvider>(pipeline->make_processor())),
        tracer(provider->GetTracer("export-pipeline-test")) {}

  void end(const std::string& name) { tracer->StartSpan(name)->End(); }

  std::shared_ptr<SpanPipeline> pipeline;
  std::shared_ptr<otel_sdk::TracerProvider> provider;
  nostd::shared_ptr<opentelemetry::trace::Tracer> tracer;
};

struct Limited : Piped {
  explicit Limited(const SpanLimits& limits, lens::testing::InMemorySpans memory =
                                                 lens::testing::make_in_memory_span_exporter())
      : Piped(std::move(memory.exporter), options_with(limits)), data(memory.data) {}
  static SpanPipelineOptions options_with(const SpanLimits& limits) {
    SpanPipelineOptions options;
    options.limits = limits;
    return options;
  }
  std::unique_ptr<otel_sdk::SpanData> only_span() {
    EXPECT_TRUE(pipeline->force_flush(10s));
    auto spans = lens::testing::take_spans(data);
    EXPECT_EQ(spans.size(), 1U);
    return spans.empty() ? nullptr : std::move(spans[0]);
  }
  std::shared_ptr<lens::testing::InMemorySpanData> data;
};

opentelemetry::trace::SpanContext link_target(std::uint8_t tag) {
  std::uint8_t trace[16] = {tag, 1};
  std::uint8_t span[8] = {tag, 2};
  return opentelemetry::trace::SpanContext(opentelemetry::trace::TraceId(trace),
                                           opentelemetry::trace::SpanId(span),
                                           opentelemetry::trace::TraceFlags(1), false);
}

// Every field of `limits`, to compare them all at once.
std::string described(const SpanLimits& limits) {
  std::ostringstream out;
  out << "attributes " << limits.attribute_count << ", value length ";
  if (limits.attribute_value_length) {
    out << *limits.attribute_value_length;
  } else {
    out << "unlimited";
  }
  out << ", events " << limits.event_count << ", links " << limits.link_count
      << ", event attributes " << limits.event_attribute_count << ", link attributes "
      << limits.link_attribute_count;
  return out.str();
}

TEST(SpanLimits, FromSettingsPreferTheSpanSpecificVariables) {
  lens::LimitSettings settings;
  EXPECT_EQ(described(SpanLimits::from(settings)),
            "attributes 128, value length unlimited, events 128, links 128, event attributes "
            "128, link attributes 128");

  settings.attribute_count = {10, "env:OTEL_ATTRIBUTE_COUNT_LIMIT"};
  settings.attribute_value_length = {std::int64_t{20}, "env:OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"};
  EXPECT_EQ(described(SpanLimits::from(settings)),
            "attributes 10, value length 20, events 128, links 128, event attributes 10, link "
            "attributes 10");

  settings.span_attribute_count = {5, "env:OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT"};
  settings.span_attribute_value_length = {std::int64_t{3},
                                          "env:OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT"};
  settings.span_event_count = {2, "env:OTEL_SPAN_EVENT_COUNT_LIMIT"};
  settings.span_link_count = {1, "env:OTEL_SPAN_LINK_COUNT_LIMIT"};
  settings.event_attribute_count = {4, "env:OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT"};
  settings.link_attribute_count = {6, "env:OTEL_LINK_ATTRIBUTE_COUNT_LIMIT"};
  EXPECT_EQ(described(SpanLimits::from(settings)),
            "attributes 5, value length 3, events 2, links 1, event attributes 4, link "
            "attributes 6");
}

TEST(SpanLimits, AttributeCountKeepsTheFirstKeysAndAllowsUpdates) {
  SpanLimits limits;
  limits.attribute_count = 3;
  Limited limited(limits);
  auto span = limited.tracer->StartSpan("count");
  span->SetAttribute("a", 1);
  span->SetAttribute("b", 2);
  span->SetAttribute("c", 3);
  span->SetAttribute("d", 4);   // dropped
  span->SetAttribute("e", 5);   // dropped
  span->SetAttribute("a", 10);  // update of a kept key
  span->End();
  auto data = limited.only_span();
  ASSERT_NE(data, nullptr);
  const auto& attributes = data->GetAttributes();
  ASSERT_EQ(attributes.size(), 3U);
  EXPECT_EQ(nostd::get<int32_t>(attributes.at("a")), 10);
  EXPECT_EQ(nostd::get<int32_t>(attributes.at("b")), 2);
  EXPECT_EQ(nostd::get<int32_t>(attributes.at("c")), 3);
  EXPECT_EQ(limited.pipeline->counts().dropped_attributes, 2U);
}

TEST(SpanLimits, ValueLengthTruncatesStringsAndStringArraysByCodePoint) {
  SpanLimits limits;
  limits.attribute_value_length = 4;
  Limited limited(limits);
  auto span = limited.tracer->StartSpan("length");
  span->SetAttribute("view", nostd::string_view("abcdefgh"));
  span->SetAttribute("cstr", "123456");
  span->SetAttribute("short", "ab");
  span->SetAttribute("utf8", nostd::string_view("h\xc3\xa9llo w"));  // "héllo w"
  const nostd::string_view items[] = {"xyz", "uvwxyz", ""};
  span->SetAttribute("array", nostd::span<const nostd::string_view>(items));
  span->SetAttribute("number", 123456789);
  span->End();
  auto data = limited.only_span();
  ASSERT_NE(data, nullptr);
  const auto& attributes = data->GetAttributes();
  EXPECT_EQ(nostd::get<std::string>(attributes.at("view")), "abcd");
  EXPECT_EQ(nostd::get<std::string>(attributes.at("cstr")), "1234");
  EXPECT_EQ(nostd::get<std::string>(attributes.at("short")), "ab");
  EXPECT_EQ(nostd::get<std::string>(attributes.at("utf8")), "h\xc3\xa9ll");
  EXPECT_EQ(nostd::get<std::vector<std::string>>(attributes.at("array")),
            (std::vector<std::string>{"xyz", "uvwx", ""}));
  EXPECT_EQ(nostd::get<int32_t>(attributes.at("number")), 123456789);
  EXPECT_EQ(limited.pipeline->counts().truncated_values, 4U);
  EXPECT_EQ(limited.pipeline->counts().dropped_attributes, 0U);
  EXPECT_EQ(lens::core::utf8_prefix_bytes("h\xc3\xa9llo", 2), 3U);
}

TEST(SpanLimits, EventsBeyondTheLimitAndTheirExtraAttributesAreDropped) {
  SpanLimits limits;
  limits.event_count = 2;
  limits.event_attribute_count = 1;
  limits.attribute_value_length = 3;
  Limited limited(limits);
  auto span = limited.tracer->StartSpan("events");
  const std::map<std::string, std::string> two{{"k1", "value"}, {"k2", "v2"}};
  span->AddEvent("first", opentelemetry::common::KeyValueIterableView<decltype(two)>(two));
  span->AddEvent("second");
  span->AddEvent("third");  // dropped
  span->End();
  auto data = limited.only_span();
  ASSERT_NE(data, nullptr);
  const auto& events = data->GetEvents();
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].GetName(), "first");
  ASSERT_EQ(events[0].GetAttributes().size(), 1U);
  EXPECT_EQ(nostd::get<std::string>(events[0].GetAttributes().at("k1")), "val");
  EXPECT_EQ(events[1].GetName(), "second");
  EXPECT_EQ(limited.pipeline->counts().dropped_events, 1U);
  EXPECT_EQ(limited.pipeline->counts().dropped_attributes, 1U);
}

TEST(SpanLimits, LinksBeyondTheLimitAndTheirExtraAttributesAreDropped) {
  SpanLimits limits;
  limits.link_count = 1;
  limits.link_attribute_count = 2;
  Limited limited(limits);
  const std::map<std::string, int> three{{"a", 1}, {"b", 2}, {"c", 3}};
  const std::vector<std::pair<opentelemetry::trace::SpanContext, std::map<std::string, int>>> links{
      {link_target(1), three}, {link_target(2), {}}};
  opentelemetry::trace::SpanContextKeyValueIterableView<decltype(links)> links_view(links);
  const std::map<std::string, int> no_attributes;
  auto span = limited.tracer->StartSpan(
      "links", opentelemetry::common::KeyValueIterableView<decltype(no_attributes)>(no_attributes),
      links_view);
  span->End();
  auto data = limited.only_span();
  ASSERT_NE(data, nullptr);
  const auto& kept = data->GetLinks();
  ASSERT_EQ(kept.size(), 1U);
  EXPECT_EQ(kept[0].GetSpanContext().trace_id(), link_target(1).trace_id());
  ASSERT_EQ(kept[0].GetAttributes().size(), 2U);
  EXPECT_EQ(nostd::get<int32_t>(kept[0].GetAttributes().at("a")), 1);
  EXPECT_EQ(nostd::get<int32_t>(kept[0].GetAttributes().at("b")), 2);
  EXPECT_EQ(limited.pipeline->counts().dropped_links, 1U);
  EXPECT_EQ(limited.pipeline->counts().dropped_attributes, 1U);
}

// What the exporter saw, readable after the exporter moved into the pipeline.
struct SenderScript {
  std::mutex mutex;
  std::condition_variable changed;
  bool gate_open = true;  // Export returns only while open
  std::vector<std::vector<std::string>> batches;
  std::vector<std::thread::id> export_threads;
  int force_flushes = 0;
  int shutdowns = 0;
  std::size_t batches_at_shutdown = 0;
  // Each span's scope name and service.name, read once the gate let its batch through.
  std::vector<std::string> origins;
  int in_export = 0;  // Export calls under way, and their most at once
  int most_in_export = 0;

  void set_gate(bool open) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      gate_open = open;
    }
    changed.notify_all();
  }
  template <class T, class F>
  T read(F&& f) {
    std::lock_guard<std::mutex> lock(mutex);
    return f();
  }
  bool wait_for(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, 10s, done);
  }
};

class ScriptedBatchExporter final : public otel_sdk::SpanExporter {
 public:
  explicit ScriptedBatchExporter(std::shared_ptr<SenderScript> script)
      : script_(std::move(script)) {}
  RecordablePtr MakeRecordable() noexcept override {
    return std::make_unique<otel_sdk::SpanData>();
  }
  ExportResult Export(const nostd::span<RecordablePtr>& spans) noexcept override {
    std::vector<std::string> names;
    for (const auto& span : spans) {
      names.emplace_back(static_cast<otel_sdk::SpanData*>(span.get())->GetName());
    }
    std::unique_lock<std::mutex> lock(script_->mutex);
    script_->most_in_export = std::max(script_->most_in_export, ++script_->in_export);
    script_->changed.notify_all();
    script_->changed.wait(lock, [this] { return script_->gate_open; });
    for (const auto& span : spans) {
      const auto& data = *static_cast<otel_sdk::SpanData*>(span.get());
      const auto& attributes = data.GetResource().GetAttributes();
      const auto service = attributes.find("service.name");
      script_->origins.push_back(data.GetInstrumentationScope().GetName() + " " +
                                 (service == attributes.end()
                                      ? std::string("-")
                                      : nostd::get<std::string>(service->second)));
    }
    --script_->in_export;
    script_->batches.push_back(std::move(names));
    script_->export_threads.push_back(std::this_thread::get_id());
    script_->changed.notify_all();
    return ExportResult::kSuccess;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override {
    std::lock_guard<std::mutex> lock(script_->mutex);
    ++script_->force_flushes;
    return true;
  }
  bool Shutdown(std::chrono::microseconds) noexcept override {
    std::lock_guard<std::mutex> lock(script_->mutex);
    ++script_->shutdowns;
    script_->batches_at_shutdown = script_->batches.size();
    script_->changed.notify_all();
    return true;
  }

 private:
  std::shared_ptr<SenderScript> script_;
};

SpanPipelineOptions concurrent(std::size_t senders, std::size_t batch_size) {
  SpanPipelineOptions options;
  options.concurrent_exports = senders;
  options.max_export_batch_size = batch_size;
  options.drain_interval = 1ms;
  return options;
}

Piped scripted(const std::shared_ptr<SenderScript>& script, const SpanPipelineOptions& options) {
  return Piped(std::make_unique<ScriptedBatchExporter>(script), options);
}

using Batches = std::vector<std::vector<std::string>>;

TEST(PipelineSenders, SendBatchesInOrderOffTheCallersThread) {
  auto script = std::make_shared<SenderScript>();
  Piped piped = scripted(script, concurrent(1, 2));
  for (const char* name : {"a0", "a1", "b0", "b1", "c0", "c1"}) piped.end(name);
  ASSERT_TRUE(piped.pipeline->force_flush(10s));
  EXPECT_EQ(script->read<Batches>([&] { return script->batches; }),
            (Batches{{"a0", "a1"}, {"b0", "b1"}, {"c0", "c1"}}));
  for (const auto& id :
       script->read<std::vector<std::thread::id>>([&] { return script->export_threads; })) {
    EXPECT_NE(id, std::this_thread::get_id());
  }
  EXPECT_EQ(script->read<int>([&] { return script->force_flushes; }), 1);
  EXPECT_TRUE(piped.pipeline->shutdown(10s));
  EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 1);
}

// With the sender stuck, the export thread hands one batch over and holds the next: the spans
// after it stay in the queue (one here), and one more is refused.
TEST(PipelineSenders, AtMostOneBatchWaitsWhileOneIsBeingSent) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  SpanPipelineOptions options = concurrent(1, 1);
  options.max_queue_size = 1;
  Piped piped = scripted(script, options);
  piped.end("first");
  ASSERT_TRUE(script->wait_for([&] { return script->in_export == 1; }));
  piped.end("second");  // waits for the sender
  std::this_thread::sleep_for(300ms);
  piped.end("third");  // held by the export thread
  std::this_thread::sleep_for(300ms);
  piped.end("fourth");  // in the queue
  piped.end("fifth");   // refused: the queue is full
  EXPECT_EQ(piped.pipeline->counts().dropped_full_queue, 1U);
  EXPECT_FALSE(piped.pipeline->force_flush(200ms));
  EXPECT_EQ(script->read<int>([&] { return script->most_in_export; }), 1);
  script->set_gate(true);
  ASSERT_TRUE(piped.pipeline->force_flush(10s));
  EXPECT_EQ(script->read<Batches>([&] { return script->batches; }),
            (Batches{{"first"}, {"second"}, {"third"}, {"fourth"}}));
}

TEST(PipelineSenders, WithThreeSendersThreeBatchesAreSentAtOnce) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  Piped piped = scripted(script, concurrent(3, 2));
  for (const char* prefix : {"a", "b", "c", "d", "e"}) {
    piped.end(std::string(prefix) + "0");
    piped.end(std::string(prefix) + "1");
  }
  ASSERT_TRUE(script->wait_for([&] { return script->in_export == 3; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(script->read<int>([&] { return script->most_in_export; }), 3);
  script->set_gate(true);
  ASSERT_TRUE(piped.pipeline->force_flush(10s));
  auto sent = script->read<Batches>([&] { return script->batches; });
  std::sort(sent.begin(), sent.end());  // several senders: any order
  EXPECT_EQ(sent, (Batches{{"a0", "a1"}, {"b0", "b1"}, {"c0", "c1"}, {"d0", "d1"}, {"e0", "e1"}}));
  EXPECT_EQ(script->read<int>([&] { return script->most_in_export; }), 3);
  EXPECT_TRUE(piped.pipeline->shutdown(10s));
  EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 1);
}

TEST(PipelineSenders, WithSeveralSendersTheExporterShutsDownOnceAfterEveryBatch) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  {
    Piped piped = scripted(script, concurrent(3, 1));
    for (const char* name : {"a", "b", "c"}) piped.end(name);
    ASSERT_TRUE(script->wait_for([&] { return script->in_export == 3; }));
    EXPECT_FALSE(piped.pipeline->shutdown(100ms));
    EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 0);
  }  // destroyed with three batches in flight
  script->set_gate(true);
  ASSERT_TRUE(script->wait_for([&] { return script->shutdowns == 1; }));
  EXPECT_EQ(script->read<std::size_t>([&] { return script->batches_at_shutdown; }), 3U);
  std::this_thread::sleep_for(100ms);  // no second shutdown
  EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 1);
}

// A sender thread that cannot start (a process or container limit) fails the constructor with
// that error, after the senders that did start are stopped and joined; left joinable, their
// std::thread objects would end the process (std::terminate, SIGABRT).
TEST(PipelineSenders, InAForkedChildWithRoomForOneSenderTheConstructorThrowsAndJoinsIt) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's own mappings make an address-space limit meaningless";
#else
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Room for one thread stack, not two.
    if (!lens::test_support::limit_address_space(lens::test_support::kLimitedThreadStack * 3 / 2)) {
      _exit(10);
    }
    try {
      SpanPipeline pipeline(
          concurrent(3, 1),
          std::make_unique<ScriptedBatchExporter>(std::make_shared<SenderScript>()),
          opentelemetry::sdk::resource::Resource::Create({}));
      _exit(11);  // every thread started: the limit did not bite
    } catch (const std::system_error&) {
      // The sender that started was joined.
      _exit(lens::test_support::thread_count() == 1 ? 0 : 12);
    } catch (...) {
      _exit(13);
    }
  }
  int status = 0;
  pid_t waited = 0;
  for (int i = 0; i < 1000 && waited == 0; ++i) {
    waited = waitpid(pid, &status, WNOHANG);
    if (waited == 0) std::this_thread::sleep_for(10ms);
  }
  if (waited == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "the child did not exit within 10 s";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "the child was ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10: limit not set, 11: every thread started, 12: a sender left running, 13: another "
         "exception";
#endif
}

// Each flush reaches the exporter's ForceFlush once the batch in flight is sent.
TEST(PipelineSenders, ForceFlushWaitsForTheBatchInFlightWithinItsTimeout) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  Piped piped = scripted(script, concurrent(1, 512));
  for (const char* name : {"s0", "s1", "s2"}) piped.end(name);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(piped.pipeline->force_flush(100ms));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 100ms);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(script->read<int>([&] { return script->force_flushes; }), 0);  // not reached
  script->set_gate(true);
  EXPECT_TRUE(piped.pipeline->force_flush(10s));
  EXPECT_EQ(script->read<Batches>([&] { return script->batches; }), (Batches{{"s0", "s1", "s2"}}));
  EXPECT_EQ(script->read<int>([&] { return script->force_flushes; }), 2);
}

TEST(PipelineSenders, ShutdownSendsWhatWasHandedOverThenRefusesMore) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  auto report = std::make_shared<lens::exporters::ExportReport>(lens::Signal::traces);
  Piped piped(lens::exporters::make_reporting_exporter<lens::Signal::traces>(
                  std::make_unique<ScriptedBatchExporter>(script), report, "scripted"),
              concurrent(1, 5));
  for (int i = 0; i < 9; ++i) piped.end("x" + std::to_string(i));
  std::thread opener([&] {
    std::this_thread::sleep_for(50ms);
    script->set_gate(true);
  });
  EXPECT_TRUE(piped.pipeline->shutdown(10s));
  opener.join();
  EXPECT_EQ(report->counts().items_exported, 9U);
  EXPECT_EQ(report->counts().items_failed, 0U);
  EXPECT_EQ(script->read<std::size_t>([&] { return script->batches.size(); }), 2U);
  EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 1);
  piped.end("late");
  EXPECT_EQ(piped.pipeline->counts().dropped_full_queue, 1U);
  EXPECT_EQ(script->read<std::size_t>([&] { return script->batches.size(); }), 2U);
  EXPECT_TRUE(piped.pipeline->shutdown(10s));  // once only
  EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 1);
}

TEST(PipelineSenders, AShutdownThatTimesOutLeavesTheExporterShutdownToTheExportThread) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  {
    Piped piped = scripted(script, concurrent(1, 1));
    piped.end("stuck");
    ASSERT_TRUE(script->wait_for([&] { return script->in_export == 1; }));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(piped.pipeline->shutdown(100ms));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 0);
  }  // destroyed while the sender is still stuck: the export thread keeps what it uses
  script->set_gate(true);
  ASSERT_TRUE(script->wait_for([&] { return script->shutdowns == 1; }));
  EXPECT_EQ(script->read<std::size_t>([&] { return script->batches.size(); }), 1U);
}

// A span made through the opentelemetry API points at its provider's resource and its tracer's
// scope; the export thread that a timed-out shutdown leaves running writes it after both are
// gone, so the pipeline points it at copies of its own.
TEST(PipelineSenders, AnApiSpanWrittenAfterItsProviderIsGoneKeepsItsScopeAndResource) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  {
    Piped piped = scripted(script, concurrent(1, 1));
    piped.tracer = piped.provider->GetTracer("third-party", "2.0");
    piped.end("stuck");
    piped.end("queued");
    ASSERT_TRUE(script->wait_for([&] { return script->in_export == 1; }));
    EXPECT_FALSE(piped.pipeline->shutdown(100ms));
  }  // the provider, its resource and its tracers are gone; two spans are still to be written
  script->set_gate(true);
  ASSERT_TRUE(script->wait_for([&] { return script->shutdowns == 1; }));
  EXPECT_EQ(
      script->read<std::vector<std::string>>([&] { return script->origins; }),
      (std::vector<std::string>{"third-party unknown_service", "third-party unknown_service"}));
}

}  // namespace
