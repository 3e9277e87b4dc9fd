// Native spans (lens's one span model) end to end through setup_telemetry and an in-memory
// exporter: what a span record carries once converted to the exporter's recordable, nesting and
// interplay with opentelemetry-cpp's context, samplers, several producer threads, threads that
// exit, a full buffer, shutdown with spans still open on this and other threads (truncated,
// exactly once), fork.
#include <gtest/gtest.h>
#include <opentelemetry/context/runtime_context.h>
#include <opentelemetry/nostd/variant.h>
#include <opentelemetry/sdk/trace/span_data.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/scope.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lens/groups.hpp"
#include "lens/propagation.hpp"
#include "lens/span.hpp"
#include "lens/span_ref.hpp"
#include "lens/telemetry.hpp"
#include "native/thread_spans.hpp"
#include "unit/support/blocking_exporters.hpp"
#include "unit/support/in_memory_spans.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

using lens::test_support::failure_of;

namespace otel = opentelemetry;
namespace sdktrace = opentelemetry::sdk::trace;
using namespace std::chrono_literals;

using test_support::attr;
using test_support::find_span;
using test_support::find_spans;
using test_support::has_attr;
using test_support::hex;
using test_support::InMemorySpanData;
using test_support::InMemorySpanExporter;
using test_support::SpanDataPtr;

// An exporting rank with the in-memory exporter; every test shuts it down.
class NativeSpans : public ::testing::Test {
 protected:
  void SetUp() override { detail::reset_span_groups_for_testing(); }
  void TearDown() override {
    if (handle_) static_cast<void>(handle_->shutdown(2000ms));
    detail::reset_span_groups_for_testing();
  }

  void start(const Env::Map& variables = {}) {
    Env::Map env = variables;
    env.emplace("NEMO_LENS_ENABLED", "1");
    env.emplace("NEMO_LENS_RANK_STRATEGY", "all_ranks");
    env.emplace("NEMO_LENS_RUN_ID", "native-test");
    env.emplace("NEMO_LENS_EXPORTER", "none");
    env.emplace("NEMO_LENS_METRICS_ENABLED", "0");
    env.emplace("NEMO_LENS_SPAN_GROUPS", "all");
    Config config = test_support::config_from(env);
    auto exporter = std::make_unique<InMemorySpanExporter>(1000000);
    data_ = exporter->GetData();
    SetupOverrides overrides;
    overrides.span_exporter = std::move(exporter);
    overrides.env = Env::from(env);
    auto made = setup_telemetry(config, test_support::rank_of(0, 1), {}, std::move(overrides));
    ASSERT_TRUE(made.ok()) << made.message();
    handle_ = *made;
  }

  std::vector<SpanDataPtr> flushed() {
    const Status flushed = handle_->force_flush(5000ms);
    EXPECT_TRUE(flushed.ok()) << flushed.message();
    return data_->GetSpans();
  }
  std::vector<SpanDataPtr> after_shutdown() {
    const Status done = handle_->shutdown(5000ms);
    EXPECT_TRUE(done.ok()) << done.message();
    return data_->GetSpans();
  }

  // The handle's span counts, all four at once.
  void expect_span_stats(std::uint64_t started, std::uint64_t ended, std::uint64_t exported,
                         std::uint64_t dropped) const {
    const TelemetryStats stats = handle_->stats();
    EXPECT_EQ(stats.spans_started, started);
    EXPECT_EQ(stats.spans_ended, ended);
    EXPECT_EQ(stats.spans_exported, exported);
    EXPECT_EQ(stats.spans_dropped, dropped);
  }

  std::optional<TelemetryHandle> handle_;
  std::shared_ptr<InMemorySpanData> data_;
};

TEST_F(NativeSpans, ARecordedSpanCarriesNameAttributesIdsTimesResourceAndScope) {
  start();
  otel::trace::SpanContext seen = otel::trace::SpanContext::GetInvalid();
  const auto before = std::chrono::system_clock::now();
  {
    LENS_SPAN_NAMED(step, lens::SpanSite("megatron.train_step", "step"), {"iteration", 7},
                    {"phase", "forward"}, {"lr", 0.5}, {"ok", true}, {"skipped", nullptr});
    seen = step.context();
    std::this_thread::sleep_for(20ms);
  }
  const auto after = std::chrono::system_clock::now();
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 1U);
  const sdktrace::SpanData& span = *spans[0];
  EXPECT_EQ(span.GetName(), "megatron.train_step");
  EXPECT_EQ(attr<std::int64_t>(span, "iteration"), 7);
  EXPECT_EQ(attr<std::string>(span, "phase"), "forward");
  EXPECT_EQ(attr<double>(span, "lr"), 0.5);
  EXPECT_EQ(attr<bool>(span, "ok"), true);
  EXPECT_FALSE(has_attr(span, "skipped"));
  EXPECT_EQ(span.GetAttributes().size(), 4U);
  EXPECT_EQ(hex(span.GetSpanId()), hex(seen.span_id()));
  EXPECT_EQ(hex(span.GetTraceId()), hex(seen.trace_id()));
  EXPECT_FALSE(span.GetParentSpanId().IsValid());
  // Sampled, the same flags exported as propagated (no W3C level-2 random flag: the
  // opentelemetry-cpp spans of the same trace cannot carry it).
  EXPECT_EQ(span.GetFlags().flags(), 0x01);
  EXPECT_EQ(seen.trace_flags().flags(), 0x01);
  EXPECT_EQ(span.GetSpanKind(), otel::trace::SpanKind::kInternal);
  EXPECT_EQ(span.GetStatus(), otel::trace::StatusCode::kUnset);
  const auto start = span.GetStartTime();
  EXPECT_GE(std::chrono::system_clock::time_point(start), before - 5ms);
  EXPECT_LE(std::chrono::system_clock::time_point(start) + span.GetDuration(), after + 5ms);
  EXPECT_GE(span.GetDuration(), 19ms);
  EXPECT_LT(span.GetDuration(), 2000ms);
  EXPECT_EQ(span.GetInstrumentationScope().GetName(), "nemo.lens");
  const auto& resource = span.GetResource().GetAttributes();
  ASSERT_EQ(resource.count("nemo.run.id"), 1U);
  EXPECT_EQ(otel::nostd::get<std::string>(resource.at("nemo.run.id")), "native-test");
}

// The span limits apply to a native record as the pipeline converts it: the first keys kept
// (a kept key updated), values cut, events and their attributes beyond their counts dropped.
TEST_F(NativeSpans, SpanLimitsApplyAsARecordIsConverted) {
  start({{"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "2"},
         {"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "3"},
         {"OTEL_SPAN_EVENT_COUNT_LIMIT", "1"},
         {"OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "1"}});
  {
    LENS_SPAN_NAMED(step, lens::SpanSite("limited", "step"), {"a", "abcdef"}, {"b", 2}, {"c", 3});
    step.set_attribute("a", "wxyz");
    step.add_event("first", {{"k1", "long"}, {"k2", 2}});
    step.add_event("second");
  }
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 1U);
  const sdktrace::SpanData& span = *spans[0];
  EXPECT_EQ(span.GetAttributes().size(), 2U);
  EXPECT_EQ(attr<std::string>(span, "a"), "wxy");
  EXPECT_EQ(attr<std::int64_t>(span, "b"), 2);
  EXPECT_FALSE(has_attr(span, "c"));
  const auto& events = span.GetEvents();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].GetName(), "first");
  ASSERT_EQ(events[0].GetAttributes().size(), 1U);
  EXPECT_EQ(otel::nostd::get<std::string>(events[0].GetAttributes().at("k1")), "lon");
  // The handle's statistics say what the limits cut: "c" and the event's "k2"; the second
  // event; "abcdef", its update "wxyz" and the event's "long".
  const TelemetryStats stats = handle_->stats();
  EXPECT_EQ(stats.attributes_dropped, 2U);
  EXPECT_EQ(stats.events_dropped, 1U);
  EXPECT_EQ(stats.links_dropped, 0U);
  EXPECT_EQ(stats.values_truncated, 3U);
  EXPECT_EQ(stats.spans_truncated, 0U);
}

TEST_F(NativeSpans, NestedSpansShareTheTraceAndPointToTheirParents) {
  start();
  {
    LENS_SPAN(lens::SpanSite("outer", "step"));
    {
      LENS_SPAN(lens::SpanSite("middle", "step"));
      { LENS_SPAN(lens::SpanSite("inner", "step")); }
    }
    { LENS_SPAN(lens::SpanSite("sibling", "step")); }
  }
  { LENS_SPAN(lens::SpanSite("next-root", "step")); }
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 5U);
  // Exported in the order they ended.
  EXPECT_EQ(spans[0]->GetName(), "inner");
  EXPECT_EQ(spans[1]->GetName(), "middle");
  EXPECT_EQ(spans[2]->GetName(), "sibling");
  EXPECT_EQ(spans[3]->GetName(), "outer");
  EXPECT_EQ(spans[4]->GetName(), "next-root");
  EXPECT_EQ(spans[0]->GetParentSpanId(), spans[1]->GetSpanId());
  EXPECT_EQ(spans[1]->GetParentSpanId(), spans[3]->GetSpanId());
  EXPECT_EQ(spans[2]->GetParentSpanId(), spans[3]->GetSpanId());
  EXPECT_FALSE(spans[3]->GetParentSpanId().IsValid());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(spans[i]->GetTraceId(), spans[3]->GetTraceId());
  EXPECT_NE(spans[4]->GetTraceId(), spans[3]->GetTraceId());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(spans[i]->GetFlags().flags(), 0x01);
}

TEST_F(NativeSpans, StringsUnderRedactedKeysAreRedactedAndLongDataSpillsWithoutLoss) {
  start();
  const std::string long_name(300, 'n');
  const std::string long_value(500, 'v');
  {
    ManagedSpan span("step", long_name,
                     {{"password", "hunter2"}, {"token", "abc"}, {"key", 5}, {"model", "gpt"}});
    for (int i = 0; i < 40; ++i) span.set_attribute("a" + std::to_string(i), i);
    span.set_attribute("big", long_value);
    span.set_attribute("ints", std::vector<std::int64_t>{1, 2, 3});
    span.set_attribute("names", std::vector<std::string>{"x", "y"});
    span.set_attribute("flags", std::vector<bool>{true, false});
    span.set_attribute("doubles", std::vector<double>{0.25, 0.5});
  }
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 1U);
  const sdktrace::SpanData& span = *spans[0];
  EXPECT_EQ(span.GetName(), long_name);
  EXPECT_EQ(attr<std::string>(span, "password"), "[REDACTED]");
  EXPECT_EQ(attr<std::string>(span, "token"), "[REDACTED]");
  EXPECT_EQ(attr<std::int64_t>(span, "key"), 5);  // only strings are redacted
  EXPECT_EQ(attr<std::string>(span, "model"), "gpt");
  for (int i = 0; i < 40; ++i) EXPECT_EQ(attr<std::int64_t>(span, "a" + std::to_string(i)), i);
  EXPECT_EQ(attr<std::string>(span, "big"), long_value);
  EXPECT_EQ(attr<std::vector<std::int64_t>>(span, "ints"), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(attr<std::vector<std::string>>(span, "names"), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(attr<std::vector<bool>>(span, "flags"), (std::vector<bool>{true, false}));
  EXPECT_EQ(attr<std::vector<double>>(span, "doubles"), (std::vector<double>{0.25, 0.5}));
  EXPECT_EQ(span.GetAttributes().size(), 49U);
}

// One table (lens/redaction.hpp) decides for every path: lens::redact_value with its default
// set, a native span's start attributes and set_attribute (the payload writer), and event
// attributes. Each of the eight keys is redacted everywhere; near misses nowhere.
TEST_F(NativeSpans, EveryPathRedactsExactlyTheKeysOfTheOneTable) {
  ASSERT_EQ(lens::kDefaultRedactKeys.size(), 8U);
  EXPECT_EQ(lens::default_redact_keys(),
            (std::set<std::string>{"prompt", "input_text", "output_text", "text", "password",
                                   "token", "secret", "key"}));
  std::vector<std::pair<std::string, bool>> cases;
  for (const std::string_view key : lens::kDefaultRedactKeys) cases.emplace_back(key, true);
  for (const char* near : {"Key", "keys", "tokens", "TEXT", "pass", "input", "model"}) {
    cases.emplace_back(near, false);
  }
  start();
  for (const auto& [key, redact] : cases) {
    const std::string expected = redact ? "[REDACTED]" : "v";
    EXPECT_EQ(lens::is_default_redact_key(key), redact) << key;
    EXPECT_EQ(lens::redact_value(key, "v").as_string(), expected) << key;
    ManagedSpan span("step", "redact:" + key, {{key, "v"}});
    span.set_attribute("set." + key, "v");  // prefixed: never a key itself
    span.set_attribute(key, "v");
    span.add_event("event", {{key, "v"}});
  }
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), cases.size());
  for (const auto& [key, redact] : cases) {
    const std::string expected = redact ? "[REDACTED]" : "v";
    const auto* span = find_span(spans, "redact:" + key);
    ASSERT_NE(span, nullptr) << key;
    EXPECT_EQ(attr<std::string>(*span, key), expected) << key;
    EXPECT_EQ(attr<std::string>(*span, "set." + key), "v") << key;
    ASSERT_EQ(span->GetEvents().size(), 1U) << key;
    EXPECT_EQ(otel::nostd::get<std::string>(span->GetEvents()[0].GetAttributes().at(key)), expected)
        << key;
  }
}

TEST_F(NativeSpans, ExceptionsEventsAndStatusReachTheRecord) {
  start();
  try {
    LENS_SPAN_NAMED(guard, lens::SpanSite("fails", "step"));
    guard.add_event("checkpoint", {{"step", 3}, {"secret", "s3"}});
    try {
      throw std::runtime_error("disk full");
    } catch (const std::exception& e) {
      guard.record_exception(e);
      throw;
    }
  } catch (const std::exception&) {
  }
  try {
    LENS_SPAN(lens::SpanSite("unknown", "step"));
    throw 42;
  } catch (int) {
  }
  {
    ScopedSpan quiet("quiet", {}, /*record_exception=*/false);
    quiet.record_exception(std::logic_error("bad"));
  }
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 3U);
  const auto* fails = find_span(spans, "fails");
  ASSERT_NE(fails, nullptr);
  EXPECT_EQ(fails->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(fails->GetDescription(), "disk full");
  const auto& events = fails->GetEvents();
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].GetName(), "checkpoint");
  EXPECT_EQ(otel::nostd::get<std::int64_t>(events[0].GetAttributes().at("step")), 3);
  EXPECT_EQ(otel::nostd::get<std::string>(events[0].GetAttributes().at("secret")), "[REDACTED]");
  EXPECT_EQ(events[1].GetName(), "exception");
  EXPECT_EQ(otel::nostd::get<std::string>(events[1].GetAttributes().at("exception.type")),
            "std::runtime_error");
  EXPECT_EQ(otel::nostd::get<std::string>(events[1].GetAttributes().at("exception.message")),
            "disk full");
  EXPECT_GE(events[1].GetTimestamp().time_since_epoch(), fails->GetStartTime().time_since_epoch());

  const auto* unknown = find_span(spans, "unknown");
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(unknown->GetDescription(), "unknown exception");
  ASSERT_EQ(unknown->GetEvents().size(), 1U);
  EXPECT_EQ(
      otel::nostd::get<std::string>(unknown->GetEvents()[0].GetAttributes().at("exception.type")),
      "unknown");

  const auto* quiet = find_span(spans, "quiet");
  ASSERT_NE(quiet, nullptr);
  EXPECT_EQ(quiet->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(quiet->GetDescription(), "bad");
  EXPECT_TRUE(quiet->GetEvents().empty());
}

// Third-party opentelemetry code sees a native span's context (to parent and propagate); it
// cannot change the span: lens spans change through lens's API only.
TEST_F(NativeSpans, OpentelemetryCodeSeesTheContextOfTheCurrentNativeSpan) {
  start();
  {
    LENS_SPAN_NAMED(guard, lens::SpanSite("viewed", "step"));
    const auto current = otel::trace::GetSpan(otel::context::RuntimeContext::GetCurrent());
    EXPECT_EQ(current->GetContext().span_id(), guard.context().span_id());
    EXPECT_EQ(current->GetContext().trace_id(), guard.context().trace_id());
    EXPECT_TRUE(current->GetContext().IsSampled());
    EXPECT_FALSE(current->IsRecording());
    current->SetAttribute("via.view", 11);
    current->UpdateName("renamed");
  }
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 1U);
  EXPECT_EQ(spans[0]->GetName(), "viewed");
  EXPECT_EQ(spans[0]->GetAttributes().count("via.view"), 0U);
}

TEST_F(NativeSpans, OpenTelemetrySeesTheNativeSpanAsCurrentAndNestsBothWays) {
  start();
  std::string native_id;
  {
    LENS_SPAN_NAMED(outer, lens::SpanSite("native-outer", "step"));
    native_id = hex(outer.context().span_id());
    const auto current = otel::trace::GetSpan(otel::context::RuntimeContext::GetCurrent());
    EXPECT_EQ(hex(current->GetContext().span_id()), native_id);
    // Third-party opentelemetry-cpp code nests under the native span ...
    auto tracer = handle_->tracer();
    auto third = tracer->StartSpan("third-party");
    {
      otel::trace::Scope scope(third);
      // ... and a native span started while the third-party span is current nests under it.
      LENS_SPAN(lens::SpanSite("native-inner", "step"));
    }
    third->End();
    { LENS_SPAN(lens::SpanSite("native-after", "step")); }
  }
  EXPECT_FALSE(
      otel::trace::GetSpan(otel::context::RuntimeContext::GetCurrent())->GetContext().IsValid());
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 4U);
  const auto [outer, third, inner, after] =
      find_spans(spans, {"native-outer", "third-party", "native-inner", "native-after"});
  ASSERT_TRUE(outer && third && inner && after);
  EXPECT_EQ(hex(third->GetParentSpanId()), native_id);
  EXPECT_EQ(inner->GetParentSpanId(), third->GetSpanId());
  EXPECT_EQ(after->GetParentSpanId(), outer->GetSpanId());
  EXPECT_EQ(third->GetTraceId(), outer->GetTraceId());
  EXPECT_EQ(inner->GetTraceId(), outer->GetTraceId());
  // Ended order across both paths.
  EXPECT_EQ(spans[0]->GetName(), "native-inner");
  EXPECT_EQ(spans[1]->GetName(), "third-party");
  EXPECT_EQ(spans[3]->GetName(), "native-outer");
}

TEST_F(NativeSpans, ContextHandOffAndPropagationCarryTheNativeSpan) {
  start();
  Carrier carrier;
  std::string outer_id;
  {
    LENS_SPAN_NAMED(job, lens::SpanSite("outer", "job"));
    outer_id = hex(job.context().span_id());
    inject_context(carrier);
    auto task = wrap_with_context([] { LENS_SPAN(lens::SpanSite("pooled", "step")); });
    std::thread worker(task);
    worker.join();
    const auto captured = capture_context();
    std::thread scoped([&captured] {
      ContextScope scope(captured);
      LENS_SPAN(lens::SpanSite("scoped", "step"));
    });
    scoped.join();
  }
  {
    // A remote parent: extracted and attached on a thread with no native span open.
    ContextScope remote(extract_context(carrier, otel::context::Context{}));
    LENS_SPAN(lens::SpanSite("remote-child", "step"));
  }
  ASSERT_EQ(carrier.count("traceparent"), 1U);
  EXPECT_EQ(carrier["traceparent"].substr(36, 16), outer_id);
  EXPECT_EQ(carrier["traceparent"].substr(53), "01");
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 4U);
  const auto* outer = find_span(spans, "outer");
  ASSERT_NE(outer, nullptr);
  for (const char* child : {"pooled", "scoped", "remote-child"}) {
    const auto* span = find_span(spans, child);
    ASSERT_NE(span, nullptr) << child;
    EXPECT_EQ(span->GetParentSpanId(), outer->GetSpanId()) << child;
    EXPECT_EQ(span->GetTraceId(), outer->GetTraceId()) << child;
  }
}

TEST_F(NativeSpans, TheSamplerDecidesAndDroppedSpansStillPropagateTheirContext) {
  start({{"OTEL_TRACES_SAMPLER", "traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "0.5"}});
  int kept_roots = 0;
  Carrier dropped_carrier;
  for (int i = 0; i < 400; ++i) {
    LENS_SPAN_NAMED(root, lens::SpanSite("root", "step"));
    { LENS_SPAN(lens::SpanSite("child", "step")); }
    if (!root.context().IsSampled()) {
      if (dropped_carrier.empty()) inject_context(dropped_carrier);
    } else {
      ++kept_roots;
    }
  }
  const auto spans = flushed();
  // traceidratio (not parent-based) decides each span on the shared trace id: the child of a
  // kept root is kept, the child of a dropped root is dropped.
  EXPECT_EQ(spans.size(), static_cast<std::size_t>(2 * kept_roots));
  EXPECT_GT(kept_roots, 120);
  EXPECT_LT(kept_roots, 280);
  ASSERT_FALSE(dropped_carrier.empty());
  EXPECT_EQ(dropped_carrier["traceparent"].substr(53), "00");
  const TelemetryStats stats = handle_->stats();
  EXPECT_EQ(stats.spans_started, spans.size());
}

// The samplers the hot path applies without a call (Sampler::shape()) decide as
// the samplers themselves: roots, children of a sampled and of an unsampled remote parent.
TEST_F(NativeSpans, FixedRuleSamplersDecideAsTheSamplersThemselves) {
  struct Case {
    const char* sampler;
    bool root, child_of_sampled, child_of_unsampled;  // recorded?
  };
  const Case cases[] = {
      {"always_on", true, true, true},
      {"always_off", false, false, false},
      {"parentbased_always_on", true, true, false},
      {"parentbased_always_off", false, true, false},
      {"parentbased_traceidratio", true, true, false},  // with ratio 1: roots always kept
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sampler);
    start({{"OTEL_TRACES_SAMPLER", c.sampler}, {"OTEL_TRACES_SAMPLER_ARG", "1"}});
    { LENS_SPAN(lens::SpanSite("root", "step")); }
    for (const char* flags : {"01", "00"}) {
      Carrier carrier{
          {"traceparent",
           std::string("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-") + flags}};
      ContextScope remote(extract_context(carrier, otel::context::Context{}));
      // The name changes from pass to pass: a guard, not a LENS_SPAN site.
      ManagedSpan child(
          "step", std::string_view(flags) == "01" ? "child-of-sampled" : "child-of-unsampled");
    }
    const auto spans = flushed();
    EXPECT_EQ(find_span(spans, "root") != nullptr, c.root);
    EXPECT_EQ(find_span(spans, "child-of-sampled") != nullptr, c.child_of_sampled);
    EXPECT_EQ(find_span(spans, "child-of-unsampled") != nullptr, c.child_of_unsampled);
    for (const auto& span : spans) {
      if (std::string(span->GetName()) == "root") continue;
      EXPECT_EQ(hex(span->GetParentSpanId()), "b7ad6b7169203331");
      EXPECT_EQ(hex(span->GetTraceId()), "0af7651916cd43dd8448eb211c80319c");
    }
    ASSERT_TRUE(handle_->shutdown(2000ms).ok());
    handle_.reset();
  }
}

TEST_F(NativeSpans, SeveralProducerThreadsLoseAndDuplicateNothing) {
  start();
  constexpr int kThreads = 4;
  constexpr int kSpansPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kSpansPerThread; ++i) {
        LENS_SPAN(lens::SpanSite("work", "step"), {"thread", t}, {"i", i});
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), static_cast<std::size_t>(kThreads * kSpansPerThread));
  std::set<std::string> ids;
  std::map<std::int64_t, std::int64_t> next_i;
  for (const auto& span : spans) {
    ids.insert(hex(span->GetSpanId()));
    // Within a thread, spans arrive in the order they ended.
    const auto t = attr<std::int64_t>(*span, "thread");
    EXPECT_EQ(attr<std::int64_t>(*span, "i"), next_i[t]++);
  }
  EXPECT_EQ(ids.size(), spans.size());
  const TelemetryStats stats = handle_->stats();
  EXPECT_EQ(stats.spans_started, spans.size());
  EXPECT_EQ(stats.spans_ended, spans.size());
  EXPECT_EQ(stats.spans_exported, spans.size());
  EXPECT_EQ(stats.spans_dropped, 0U);
}

TEST_F(NativeSpans, SpansOneAfterAnotherOnAThreadNeverOverlapOnceExported) {
  start();
  // Converted over many export passes (every 10 ms), each refreshing the tick rate.
  constexpr int kRounds = 40;
  constexpr int kSpansPerRound = 1000;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kSpansPerRound; ++i) {
      LENS_SPAN(lens::SpanSite("work", "step"), {"i", round * kSpansPerRound + i});
    }
    std::this_thread::sleep_for(3ms);
  }
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), static_cast<std::size_t>(kRounds * kSpansPerRound));
  std::vector<std::pair<std::int64_t, std::int64_t>> times(spans.size());  // by "i"
  for (const auto& span : spans) {
    const std::int64_t begin = span->GetStartTime().time_since_epoch().count();
    times.at(static_cast<std::size_t>(attr<std::int64_t>(*span, "i"))) = {
        begin, begin + span->GetDuration().count()};
  }
  test_support::FailureCounter overlaps;
  for (std::size_t i = 1; i < times.size(); ++i) {
    if (times[i].first < times[i - 1].second) {
      overlaps.add([&] {
        return "span " + std::to_string(i) + " starts " +
               std::to_string(times[i - 1].second - times[i].first) + " ns before span " +
               std::to_string(i - 1) + " ends";
      });
    }
  }
  EXPECT_EQ(overlaps.count(), 0);
}

TEST_F(NativeSpans, AThreadThatExitsRightAfterItsSpansHandsThemOver) {
  start();
  for (int round = 0; round < 20; ++round) {
    std::thread([round] {
      for (int i = 0; i < 50; ++i) {
        LENS_SPAN(lens::SpanSite("short-lived", "step"), {"round", round});
      }
    }).join();
  }
  EXPECT_EQ(flushed().size(), 1000U);
}

TEST(NativeSpansBuffer, AFullBufferDropsAndCountsAndNeverBlocksTheProducer) {
  detail::reset_span_groups_for_testing();
  const Env::Map env = {
      {"NEMO_LENS_ENABLED", "1"},         {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
      {"NEMO_LENS_RUN_ID", "buffer"},     {"NEMO_LENS_EXPORTER", "none"},
      {"NEMO_LENS_METRICS_ENABLED", "0"}, {"NEMO_LENS_SPAN_GROUPS", "all"},
      {"NEMO_LENS_SPAN_BUFFER_MB", "1"},  {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "16"}};
  Config config = test_support::config_from(env);
  auto gate = std::make_shared<test_support::ExportGate>();
  SetupOverrides overrides;
  overrides.span_exporter = std::make_unique<test_support::BlockingSpanExporter>(gate);
  overrides.env = Env::from(env);
  auto made = setup_telemetry(config, test_support::rank_of(0, 1), {}, std::move(overrides));
  ASSERT_TRUE(made.ok()) << made.message();
  TelemetryHandle handle = *made;
  constexpr std::uint64_t kProduced = 100000;  // ~13 MiB of records against a 1 MiB buffer
  const auto began = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < kProduced; ++i) {
    LENS_SPAN(lens::SpanSite("burst", "step"), {"i", static_cast<std::int64_t>(i)});
  }
  const auto produce_time = std::chrono::steady_clock::now() - began;
  EXPECT_LT(produce_time, 10s);  // a guard against blocking, not a benchmark
  const TelemetryStats during = handle.stats();
  EXPECT_EQ(during.spans_started, kProduced);
  EXPECT_GT(during.spans_dropped, kProduced / 2);
  gate->release();
  ASSERT_TRUE(handle.shutdown(5000ms).ok());
  const TelemetryStats after = handle.stats();
  EXPECT_EQ(after.spans_exported, gate->exported.load());
  EXPECT_EQ(after.spans_exported + after.spans_dropped, kProduced);
  EXPECT_EQ(after.spans_dropped, during.spans_dropped);
  detail::reset_span_groups_for_testing();
}

TEST_F(NativeSpans, ShutdownExportsSpansStillOpenHereAndOnOtherThreadsOnceAsTruncated) {
  start();
  std::mutex mutex;
  std::condition_variable cv;
  bool opened = false;
  bool release = false;
  std::thread worker([&] {
    LENS_SPAN_NAMED(held, lens::SpanSite("worker-open", "step"), {"where", "worker"});
    { LENS_SPAN(lens::SpanSite("worker-done", "step")); }
    {
      std::unique_lock<std::mutex> lock(mutex);
      opened = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    }
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return opened; });
  }
  std::vector<SpanDataPtr> spans;
  {
    LENS_SPAN_NAMED(outer, lens::SpanSite("main-open", "step"));
    outer.add_event("before-shutdown");
    LENS_SPAN(lens::SpanSite("main-inner-open", "step"));
    spans = after_shutdown();
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    release = true;
  }
  cv.notify_all();
  worker.join();
  ASSERT_EQ(spans.size(), 4U);
  EXPECT_EQ(spans[0]->GetName(), "worker-done");
  EXPECT_FALSE(has_attr(*spans[0], "nemo.span.truncated"));
  // Truncated: newest started first.
  EXPECT_EQ(spans[1]->GetName(), "main-inner-open");
  EXPECT_EQ(spans[2]->GetName(), "main-open");
  EXPECT_EQ(spans[3]->GetName(), "worker-open");
  for (int i = 1; i < 4; ++i) {
    EXPECT_TRUE(attr<bool>(*spans[i], "nemo.span.truncated")) << spans[i]->GetName();
    const auto& events = spans[i]->GetEvents();
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().GetName(), "nemo.span.truncated");
    EXPECT_EQ(otel::nostd::get<std::string>(
                  events.back().GetAttributes().at("nemo.span.truncated.reason")),
              "still open at telemetry shutdown");
  }
  EXPECT_EQ(handle_->stats().spans_truncated, 3U);
  EXPECT_EQ(spans[1]->GetParentSpanId(), spans[2]->GetSpanId());
  EXPECT_EQ(attr<std::string>(*spans[3], "where"), "worker");
  // This thread's open span keeps its events; another thread's inline data only.
  ASSERT_EQ(spans[2]->GetEvents().size(), 2U);
  EXPECT_EQ(spans[2]->GetEvents()[0].GetName(), "before-shutdown");
  // The spans that ended after shutdown were not exported a second time.
  EXPECT_EQ(data_->GetSpans().size(), 0U);
  expect_span_stats(4, 4, 4, 0);
  handle_.reset();
}

TEST_F(NativeSpans, ASpanOpenAtShutdownKeepsItsTraceState) {
  start();
  Carrier carrier{{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
                  {"tracestate", "vendor=value"}};
  std::vector<SpanDataPtr> spans;
  {
    ContextScope remote(extract_context(carrier, otel::context::Context{}));
    LENS_SPAN(lens::SpanSite("open-with-state", "step"));
    spans = after_shutdown();
  }
  ASSERT_EQ(spans.size(), 1U);
  EXPECT_TRUE(attr<bool>(*spans[0], "nemo.span.truncated"));
  EXPECT_EQ(spans[0]->GetSpanContext().trace_state()->ToHeader(), "vendor=value");
  handle_.reset();
}

TEST_F(NativeSpans, NewTraceRootsTakeTheGivenTraceIdAndLink) {
  start();
  NewTrace root;
  for (std::size_t i = 0; i < 16; ++i) root.trace_id[i] = static_cast<std::uint8_t>(i + 1);
  std::string link_span;
  {
    LENS_SPAN_NAMED(run, lens::SpanSite("run", "job"));
    root.link = run.context();
    link_span = hex(root.link.span_id());
    ManagedSpan step(span_group_handle("step"), "step", {}, root);
    { LENS_SPAN(lens::SpanSite("inside", "step")); }
  }
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 3U);
  const auto [step, inside] = find_spans(spans, {"step", "inside"});
  ASSERT_TRUE(step && inside);
  EXPECT_EQ(hex(step->GetTraceId()), "0102030405060708090a0b0c0d0e0f10");
  EXPECT_FALSE(step->GetParentSpanId().IsValid());
  ASSERT_EQ(step->GetLinks().size(), 1U);
  EXPECT_EQ(hex(step->GetLinks()[0].GetSpanContext().span_id()), link_span);
  EXPECT_EQ(inside->GetParentSpanId(), step->GetSpanId());
  EXPECT_EQ(inside->GetTraceId(), step->GetTraceId());
}

// ---- Spans that are not scopes (lens::Span) ---------------------------------------------------

TEST_F(NativeSpans, ASpanThatIsNotAScopeEndsElsewhereAndParentsWhatRunsInItsScope) {
  start();
  Span job = start_span("megatron.pretrain", {{"megatron.train_iters", 10}, {"token", "t"}});
  ASSERT_TRUE(job);
  const otel::trace::SpanContext context = job.context();
  ASSERT_TRUE(context.IsValid());
  EXPECT_TRUE(context.IsSampled());
  {
    SpanScope scope(job);
    EXPECT_EQ(
        otel::trace::GetSpan(otel::context::RuntimeContext::GetCurrent())->GetContext().span_id(),
        context.span_id());
    LENS_SPAN(lens::SpanSite("inside", "step"));
  }
  { LENS_SPAN(lens::SpanSite("outside", "step")); }
  job.set_attribute("megatron.train_iters", 20);
  job.add_event("checkpoint", {{"iteration", 5}});
  std::thread([&job] { job.end(); }).join();
  EXPECT_FALSE(job);
  job.end();  // a second end does nothing
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 3U);
  const auto [pretrain, inside, outside] =
      find_spans(spans, {"megatron.pretrain", "inside", "outside"});
  ASSERT_TRUE(pretrain && inside && outside);
  EXPECT_EQ(hex(pretrain->GetSpanId()), hex(context.span_id()));
  EXPECT_FALSE(pretrain->GetParentSpanId().IsValid());
  EXPECT_EQ(attr<std::int64_t>(*pretrain, "megatron.train_iters"), 20);
  EXPECT_EQ(attr<std::string>(*pretrain, "token"), "[REDACTED]");
  EXPECT_FALSE(has_attr(*pretrain, "nemo.span.truncated"));
  ASSERT_EQ(pretrain->GetEvents().size(), 1U);
  EXPECT_EQ(pretrain->GetEvents()[0].GetName(), "checkpoint");
  EXPECT_EQ(inside->GetParentSpanId(), pretrain->GetSpanId());
  EXPECT_EQ(inside->GetTraceId(), pretrain->GetTraceId());
  EXPECT_FALSE(outside->GetParentSpanId().IsValid());
  EXPECT_NE(outside->GetTraceId(), pretrain->GetTraceId());
  EXPECT_LE(pretrain->GetStartTime().time_since_epoch(), inside->GetStartTime().time_since_epoch());
  const TelemetryStats stats = handle_->stats();
  EXPECT_EQ(stats.spans_started, 3U);
  EXPECT_EQ(stats.spans_ended, 3U);
}

TEST_F(NativeSpans, ASpanThatIsNotAScopeRecordsErrorsAndExceptions) {
  start();
  Span interrupted = start_span("megatron.train");
  interrupted.set_error("interrupted by SIGTERM");
  Span failed = start_span("checkpoint.save");
  failed.record_exception(std::runtime_error("disk full"));
  interrupted.end();
  failed.end();
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 2U);
  EXPECT_EQ(spans[0]->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(spans[0]->GetDescription(), "interrupted by SIGTERM");
  EXPECT_TRUE(spans[0]->GetEvents().empty());
  EXPECT_EQ(spans[1]->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(spans[1]->GetDescription(), "disk full");
  ASSERT_EQ(spans[1]->GetEvents().size(), 1U);
  const auto& event = spans[1]->GetEvents()[0];
  EXPECT_EQ(event.GetName(), "exception");
  EXPECT_EQ(otel::nostd::get<std::string>(event.GetAttributes().at("exception.type")),
            "std::runtime_error");
  EXPECT_EQ(otel::nostd::get<std::string>(event.GetAttributes().at("exception.message")),
            "disk full");
}

// What language bindings need of a lens::Span: status, renaming, links, events at given times, and
// start and end times given as Unix nanoseconds (a phase recorded after it ran).
TEST_F(NativeSpans, ASpanTakesGivenTimesNamesLinksAndStatus) {
  start();
  Span first = start_span("first");
  const otel::trace::SpanContext first_context = first.context();
  first.end();
  Span job = start_span("startup.imports");
  job.set_start_time(1'700'000'000'000'000'000);
  job.update_name("megatron.startup.imports");
  job.add_link(first_context);
  job.add_link(otel::trace::SpanContext::GetInvalid());  // not a link: ignored
  const std::pair<std::string_view, AttributeArg> phase[] = {{"phase", "import"}};
  job.add_event("loaded", phase, 1'700'000'000'100'000'000);
  job.set_status(SpanStatusCode::ok, "ignored: only ERROR keeps a description");
  job.end(1'700'000'000'250'000'000);
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 2U);
  const auto* imports = find_span(spans, "megatron.startup.imports");
  ASSERT_NE(imports, nullptr);
  EXPECT_EQ(imports->GetStartTime().time_since_epoch(),
            std::chrono::nanoseconds(1'700'000'000'000'000'000));
  EXPECT_EQ(imports->GetDuration(), std::chrono::nanoseconds(250'000'000));
  EXPECT_EQ(imports->GetStatus(), otel::trace::StatusCode::kOk);
  EXPECT_EQ(imports->GetDescription(), "");
  ASSERT_EQ(imports->GetLinks().size(), 1U);
  EXPECT_EQ(hex(imports->GetLinks()[0].GetSpanContext().span_id()), hex(first_context.span_id()));
  ASSERT_EQ(imports->GetEvents().size(), 1U);
  EXPECT_EQ(imports->GetEvents()[0].GetName(), "loaded");
  EXPECT_EQ(imports->GetEvents()[0].GetTimestamp().time_since_epoch(),
            std::chrono::nanoseconds(1'700'000'000'100'000'000));
  EXPECT_EQ(otel::nostd::get<std::string>(imports->GetEvents()[0].GetAttributes().at("phase")),
            "import");
}

// lens::span_ref: a stack span opened and closed by hand parents what starts inside it, and takes
// the same changes as a lens::Span; a root begins a new trace.
TEST_F(NativeSpans, AHandOpenedStackSpanParentsItsChildrenAndTakesChanges) {
  start();
  ASSERT_TRUE(span_ref::recording());
  const SpanRef step = span_ref::begin("step", {{"iteration", 3}});
  ASSERT_TRUE(span_ref::is_recording(step));
  const otel::trace::SpanContext step_context = span_ref::context(step);
  { LENS_SPAN(lens::SpanSite("child", "step")); }
  span_ref::set_attribute(step, "loss", 2.5);
  span_ref::set_attribute(step, "token", "secret");  // redacted like any span's
  span_ref::update_name(step, "megatron.train_step");
  span_ref::set_status(step, SpanStatusCode::error, "ValueError: bad batch");
  span_ref::record_exception(step, "ValueError", "bad batch");
  span_ref::set_start_time(step, 1'700'000'000'000'000'000);
  span_ref::end(step, 1'700'000'000'040'000'000);
  const SpanRef root = span_ref::begin_root("interval", {}, NewTrace{});
  span_ref::end(root);
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 3U);
  const auto [train_step, child, interval] =
      find_spans(spans, {"megatron.train_step", "child", "interval"});
  ASSERT_TRUE(train_step && child && interval);
  EXPECT_EQ(hex(child->GetParentSpanId()), hex(step_context.span_id()));
  EXPECT_EQ(attr<std::int64_t>(*train_step, "iteration"), 3);
  EXPECT_EQ(attr<double>(*train_step, "loss"), 2.5);
  EXPECT_EQ(attr<std::string>(*train_step, "token"), "[REDACTED]");
  EXPECT_EQ(train_step->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(train_step->GetDescription(), "bad batch");
  ASSERT_EQ(train_step->GetEvents().size(), 1U);
  EXPECT_EQ(train_step->GetEvents()[0].GetName(), "exception");
  EXPECT_EQ(train_step->GetDuration(), std::chrono::nanoseconds(40'000'000));
  EXPECT_FALSE(interval->GetParentSpanId().IsValid());
  EXPECT_NE(hex(interval->GetTraceId()), hex(step_context.trace_id()));
}

TEST_F(NativeSpans, ASpanOpenAtShutdownIsExportedTruncatedOnceAndItsLateEndDoesNothing) {
  start();
  Span job = start_span("megatron.train", {{"megatron.train_iters", 3}});
  job.add_event("started");
  Span moved = std::move(job);
  EXPECT_FALSE(job);
  ASSERT_TRUE(moved);
  const auto spans = after_shutdown();
  ASSERT_EQ(spans.size(), 1U);
  EXPECT_EQ(spans[0]->GetName(), "megatron.train");
  EXPECT_TRUE(attr<bool>(*spans[0], "nemo.span.truncated"));
  EXPECT_EQ(attr<std::int64_t>(*spans[0], "megatron.train_iters"), 3);
  ASSERT_EQ(spans[0]->GetEvents().size(), 2U);
  EXPECT_EQ(spans[0]->GetEvents()[0].GetName(), "started");
  EXPECT_EQ(spans[0]->GetEvents()[1].GetName(), "nemo.span.truncated");
  moved.end();
  EXPECT_EQ(data_->GetSpans().size(), 0U);
  expect_span_stats(1, 1, 1, 0);
}

TEST_F(NativeSpans, ASpanTheSamplerDropsStillCarriesItsContext) {
  start({{"OTEL_TRACES_SAMPLER", "always_off"}});
  Span dropped = start_span("megatron.pretrain");
  ASSERT_TRUE(dropped);
  EXPECT_TRUE(dropped.context().IsValid());
  EXPECT_FALSE(dropped.context().IsSampled());
  {
    SpanScope scope(dropped);
    LENS_SPAN_NAMED(child, lens::SpanSite("child", "step"));
    EXPECT_EQ(child.context().trace_id(), dropped.context().trace_id());
    EXPECT_FALSE(child.context().IsSampled());
  }
  dropped.end();
  EXPECT_TRUE(flushed().empty());
}

TEST(NativeSpansOff, WithoutTelemetryASpanThatIsNotAScopeIsEmpty) {
  Span span = start_span("megatron.pretrain", {{"a", 1}});
  EXPECT_FALSE(span);
  EXPECT_FALSE(span.context().IsValid());
  SpanScope scope(span);
  EXPECT_FALSE(
      otel::trace::GetSpan(otel::context::RuntimeContext::GetCurrent())->GetContext().IsValid());
  span.set_attribute("b", 2);
  span.set_error("x");
  span.end();
}

TEST_F(NativeSpans, AForkedChildRecordsNothingOfTheParentAndMaySetUpAgain) {
  start();
  LENS_SPAN_NAMED(open_in_parent, lens::SpanSite("parent-open", "step"));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: telemetry is off; spans are not recorded; the inherited span ends harmlessly.
    int failures = 0;
    if (native::active()) ++failures;
    { LENS_SPAN(lens::SpanSite("child-span", "step")); }
    _exit(failures);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  { LENS_SPAN(lens::SpanSite("parent-after", "step")); }
  const auto spans = flushed();
  ASSERT_EQ(spans.size(), 1U);
  EXPECT_EQ(spans[0]->GetName(), "parent-after");
}

TEST(NativeSpansConfig, BufferSizeIsValidated) {
  const Env::Map base = {{"NEMO_LENS_ENABLED", "1"},
                         {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
                         {"NEMO_LENS_RUN_ID", "v"}};
  Env::Map bad_size = base;
  bad_size.emplace("NEMO_LENS_SPAN_BUFFER_MB", "0");
  auto made = setup_telemetry(test_support::config_from(bad_size), test_support::rank_of(0, 1));
  ASSERT_EQ(failure_of(made),
            "Invalid value for NEMO_LENS_SPAN_BUFFER_MB: '0'; accepted: a whole number of MiB "
            "from 1 to 65536");
  Env::Map not_a_number = base;
  not_a_number.emplace("NEMO_LENS_SPAN_BUFFER_MB", "lots");
  made = setup_telemetry(test_support::config_from(not_a_number), test_support::rank_of(0, 1));
  ASSERT_EQ(failure_of(made),
            "Invalid integer for NEMO_LENS_SPAN_BUFFER_MB: 'lots'; accepted: a whole number of "
            "MiB from 1 to 65536 such as 64");
}

}  // namespace
}  // namespace lens
