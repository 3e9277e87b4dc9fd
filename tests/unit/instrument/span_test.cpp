// Tests of the span primitives (lens/span.hpp, docs/tracing.md) on an exporting rank set up by
// setup_telemetry with an in-memory exporter.
// Every test resets the span groups and the active tracer; single-threaded except the hand-off.
#include "lens/span.hpp"

#include <gtest/gtest.h>
#include <opentelemetry/context/runtime_context.h>
#include <opentelemetry/nostd/variant.h>
#include <opentelemetry/sdk/trace/span_data.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/noop.h>

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "lens/groups.hpp"
#include "lens/telemetry.hpp"
#include "unit/support/in_memory_spans.hpp"
#include "unit/support/test_support.hpp"

namespace {

namespace otel = opentelemetry;
namespace sdktrace = opentelemetry::sdk::trace;

using lens::test_support::has_attr;
using lens::test_support::hex;
using lens::test_support::InMemorySpanData;
using lens::test_support::InMemorySpanExporter;
using lens::test_support::SpanDataPtr;

// An exporting rank (setup_telemetry, native spans) whose exporter keeps spans in memory; no
// span group on until a test enables some.
class SpanFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    lens::detail::reset_span_groups_for_testing();
    auto exporter = std::make_unique<InMemorySpanExporter>(100000);
    data_ = exporter->GetData();
    lens::Config config =
        lens::test_support::exporting_config("span-test", lens::ExporterKind::none);
    config.metrics_enabled = false;
    lens::SetupOverrides overrides;
    overrides.span_exporter = std::move(exporter);
    overrides.env = lens::Env::from({});
    auto made =
        lens::setup_telemetry(config, lens::test_support::rank_of(0, 1), {}, std::move(overrides));
    ASSERT_TRUE(made.ok()) << made.message();
    handle_ = *made;
    tracer_ = handle_->tracer();
    lens::set_enabled_span_groups({});
  }
  void TearDown() override {
    if (handle_) static_cast<void>(handle_->shutdown(std::chrono::milliseconds(2000)));
    lens::detail::reset_span_groups_for_testing();
  }

  static void enable(std::initializer_list<std::string> groups) {
    lens::set_enabled_span_groups(std::set<std::string>(groups));
  }
  // Everything ended so far, once the pipeline has exported it.
  std::vector<SpanDataPtr> spans() {
    const lens::Status flushed = handle_->force_flush(std::chrono::milliseconds(5000));
    EXPECT_TRUE(flushed.ok()) << flushed.message();
    return data_->GetSpans();
  }

  static std::string str_attr(const sdktrace::SpanData& span, const std::string& key) {
    return lens::test_support::attr<std::string>(span, key);
  }
  static std::string event_attr(const sdktrace::SpanDataEvent& event, const std::string& key) {
    return otel::nostd::get<std::string>(event.GetAttributes().at(key));
  }

  std::shared_ptr<InMemorySpanData> data_;
  std::optional<lens::TelemetryHandle> handle_;
  opentelemetry::nostd::shared_ptr<otel::trace::Tracer> tracer_;
};

// ---- redact_value / safe_set_span_attributes (N.7 items 75, 76) --------------------------------

using SafeSpanAttributesTest = SpanFixture;

TEST_F(SafeSpanAttributesTest, DefaultRedactKeysAreExactlyTheEightSeedKeys) {
  EXPECT_EQ(lens::default_redact_keys(),
            (std::set<std::string>{"prompt", "input_text", "output_text", "text", "password",
                                   "token", "secret", "key"}));
}

TEST_F(SafeSpanAttributesTest, SensitiveKeyIsRedacted) {
  const auto v = lens::redact_value("password", "hunter2");
  ASSERT_TRUE(v.is_string());
  EXPECT_EQ(v.as_string(), "[REDACTED]");
}

TEST_F(SafeSpanAttributesTest, NormalKeyPassesThrough) {
  const auto v = lens::redact_value("model", "gpt");
  ASSERT_TRUE(v.is_string());
  EXPECT_EQ(v.as_string(), "gpt");
}

TEST_F(SafeSpanAttributesTest, CustomKeySetReplacesTheDefaults) {
  const std::set<std::string> keys = {"api_key"};
  EXPECT_EQ(lens::redact_value("api_key", "abc", keys).as_string(), "[REDACTED]");
  EXPECT_EQ(lens::redact_value("password", "abc", keys).as_string(), "abc");
}

TEST_F(SafeSpanAttributesTest, EveryDefaultKeyRedacts) {
  for (const auto& key : lens::default_redact_keys()) {
    EXPECT_EQ(lens::redact_value(key, std::string("v")).as_string(), "[REDACTED]") << key;
  }
}

TEST_F(SafeSpanAttributesTest, KeysAreCaseSensitiveAndExact) {
  EXPECT_EQ(lens::redact_value("Password", "x").as_string(), "x");
  EXPECT_EQ(lens::redact_value("password_hint", "x").as_string(), "x");
}

TEST_F(SafeSpanAttributesTest, NonStringValuesAreNeverRedacted) {
  const auto v = lens::redact_value("token", 42);
  ASSERT_EQ(v.kind(), lens::AttributeArg::Kind::kInt64);
  EXPECT_EQ(v.as_int64(), 42);
  const std::vector<std::string> list = {"a"};
  EXPECT_EQ(lens::redact_value("token", list).kind(), lens::AttributeArg::Kind::kStringArray);
}

TEST_F(SafeSpanAttributesTest, ScalarsAreSetNullSkippedPasswordRedacted) {
  auto span = tracer_->StartSpan("s");
  lens::safe_set_span_attributes(span.get(), {{"count", 3},
                                              {"name", "llama"},
                                              {"lr", 0.5},
                                              {"ok", true},
                                              {"missing", nullptr},
                                              {"none", std::monostate{}},
                                              {"null_cstr", static_cast<const char*>(nullptr)},
                                              {"password", std::string("hunter2")}});
  span->End();
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  const auto& attrs = out[0]->GetAttributes();
  EXPECT_EQ(attrs.size(), 5u);
  EXPECT_EQ(otel::nostd::get<int64_t>(attrs.at("count")), 3);
  EXPECT_EQ(str_attr(*out[0], "name"), "llama");
  EXPECT_EQ(otel::nostd::get<double>(attrs.at("lr")), 0.5);
  EXPECT_EQ(otel::nostd::get<bool>(attrs.at("ok")), true);
  EXPECT_EQ(str_attr(*out[0], "password"), "[REDACTED]");
  EXPECT_FALSE(has_attr(*out[0], "missing"));
  EXPECT_FALSE(has_attr(*out[0], "none"));
  EXPECT_FALSE(has_attr(*out[0], "null_cstr"));
}

TEST_F(SafeSpanAttributesTest, ArraysAreSetAsArraysAndTheirStringsAreNotRedacted) {
  const std::vector<std::string> strings = {"a", "b", "c"};
  const std::vector<std::int64_t> ints = {1, 2};
  const std::vector<double> doubles = {0.25};
  const std::vector<bool> bools = {true, false, true};
  const std::vector<std::int64_t> empty;
  auto span = tracer_->StartSpan("s");
  lens::safe_set_span_attributes(span.get(), {{"token", strings},
                                              {"ints", ints},
                                              {"doubles", doubles},
                                              {"bools", bools},
                                              {"empty", empty}});
  span->End();
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  const auto& attrs = out[0]->GetAttributes();
  EXPECT_EQ(otel::nostd::get<std::vector<std::string>>(attrs.at("token")), strings);
  EXPECT_EQ(otel::nostd::get<std::vector<int64_t>>(attrs.at("ints")), ints);
  EXPECT_EQ(otel::nostd::get<std::vector<double>>(attrs.at("doubles")), doubles);
  EXPECT_EQ(otel::nostd::get<std::vector<bool>>(attrs.at("bools")), bools);
  EXPECT_TRUE(otel::nostd::get<std::vector<int64_t>>(attrs.at("empty")).empty());
}

TEST_F(SafeSpanAttributesTest, IntegersOfEveryWidthAndLensAttributeValues) {
  auto span = tracer_->StartSpan("s");
  const lens::AttributeValue av = std::string("from-variant");
  const lens::AttributeValue secret = std::string("s3cret");
  lens::safe_set_span_attributes(span.get(), {{"u8", static_cast<std::uint8_t>(7)},
                                              {"i16", static_cast<std::int16_t>(-3)},
                                              {"u64", std::uint64_t{18446744073709551615ULL}},
                                              {"f", 1.5f},
                                              {"sv", std::string_view("view")},
                                              {"av", av},
                                              {"secret", secret}});
  span->End();
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  const auto& attrs = out[0]->GetAttributes();
  EXPECT_EQ(otel::nostd::get<int64_t>(attrs.at("u8")), 7);
  EXPECT_EQ(otel::nostd::get<int64_t>(attrs.at("i16")), -3);
  EXPECT_EQ(otel::nostd::get<uint64_t>(attrs.at("u64")), 18446744073709551615ULL);
  EXPECT_EQ(otel::nostd::get<double>(attrs.at("f")), 1.5);
  EXPECT_EQ(str_attr(*out[0], "sv"), "view");
  EXPECT_EQ(str_attr(*out[0], "av"), "from-variant");
  EXPECT_EQ(str_attr(*out[0], "secret"), "[REDACTED]");
}

TEST_F(SafeSpanAttributesTest, CustomRedactKeysApply) {
  auto span = tracer_->StartSpan("s");
  lens::safe_set_span_attributes(span.get(), {{"password", "p"}, {"user", "u"}}, {"user"});
  span->End();
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(str_attr(*out[0], "password"), "p");
  EXPECT_EQ(str_attr(*out[0], "user"), "[REDACTED]");
}

TEST_F(SafeSpanAttributesTest, NullAndNonRecordingSpansAreIgnored) {
  lens::safe_set_span_attributes(nullptr, {{"a", 1}});
  lens::safe_set_span_attributes(nullptr, {});
  const auto span = otel::nostd::shared_ptr<otel::trace::Span>(
      new otel::trace::DefaultSpan(otel::trace::SpanContext::GetInvalid()));
  EXPECT_FALSE(span->IsRecording());
  lens::safe_set_span_attributes(span.get(), {{"a", 1}});
  span->End();
  EXPECT_TRUE(spans().empty());
}

// Maps, sets, objects and raw pointers are skipped at compile time: no AttributeArg constructor
// accepts them (the Python original skipped them at run time).
TEST_F(SafeSpanAttributesTest, UnsupportedTypesAreRejectedAtCompileTime) {
  static_assert(!std::is_constructible_v<lens::AttributeArg, std::map<std::string, int>>);
  static_assert(!std::is_constructible_v<lens::AttributeArg, std::set<std::string>>);
  static_assert(!std::is_constructible_v<lens::AttributeArg, int*>);
  static_assert(!std::is_constructible_v<lens::AttributeArg, std::vector<int>>);
  static_assert(std::is_trivially_copyable_v<lens::AttributeArg>);
  static_assert(sizeof(lens::AttributeArg) <= 24);
  SUCCEED();
}

// ---- ManagedSpan (N.7 item 78)
// -------------------------------------------------------------------

using ManagedSpanTest = SpanFixture;

TEST_F(ManagedSpanTest, DisabledYieldsNullAndExportsNothing) {
  const auto step = lens::span_group_handle("step");
  {
    lens::ManagedSpan guard(step, "train_step", {{"iteration", 1}});
    EXPECT_FALSE(guard);
    EXPECT_FALSE(guard.context().IsValid());
    guard.set_attribute("a", 1);
    guard.add_event("e");
    guard.record_exception(std::runtime_error("x"));
  }
  EXPECT_TRUE(spans().empty());
}

TEST_F(ManagedSpanTest, EnabledExportsExactlyOneSpanWithTheName) {
  enable({"step"});
  {
    lens::ManagedSpan guard(lens::span_group_handle("step"), "train_step");
    EXPECT_TRUE(guard);
    EXPECT_TRUE(guard.context().IsValid());
    EXPECT_TRUE(guard.context().IsSampled());
  }
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetName(), "train_step");
  EXPECT_EQ(out[0]->GetStatus(), otel::trace::StatusCode::kUnset);
  EXPECT_EQ(out[0]->GetInstrumentationScope().GetName(), "nemo.lens");
}

TEST_F(ManagedSpanTest, GroupByNameOverloadIsGatedToo) {
  { lens::ManagedSpan off("job", "pretrain"); }
  enable({"job"});
  { lens::ManagedSpan on("job", "pretrain", {{"is_goodput_span", true}}); }
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetName(), "pretrain");
  EXPECT_EQ(otel::nostd::get<bool>(out[0]->GetAttributes().at("is_goodput_span")), true);
}

TEST_F(ManagedSpanTest, AttributesAreSetAndRedacted) {
  enable({"step"});
  { lens::ManagedSpan guard("step", "s", {{"prompt", "secret words"}, {"iteration", 7}}); }
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(str_attr(*out[0], "prompt"), "[REDACTED]");
  EXPECT_EQ(otel::nostd::get<int64_t>(out[0]->GetAttributes().at("iteration")), 7);
}

TEST_F(ManagedSpanTest, NestingJobStepForwardBackwardSetsParents) {
  enable({"job", "step", "forward_backward"});
  {
    lens::ManagedSpan job("job", "megatron.pretrain");
    {
      lens::ManagedSpan step("step", "megatron.train_step", {{"iteration", 3}});
      { lens::ManagedSpan fb("forward_backward", "megatron.forward_backward"); }
    }
  }
  auto out = spans();  // in end order: innermost first
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0]->GetName(), "megatron.forward_backward");
  EXPECT_EQ(out[1]->GetName(), "megatron.train_step");
  EXPECT_EQ(out[2]->GetName(), "megatron.pretrain");
  EXPECT_FALSE(out[2]->GetParentSpanId().IsValid());
  EXPECT_EQ(out[1]->GetParentSpanId(), out[2]->GetSpanId());
  EXPECT_EQ(out[0]->GetParentSpanId(), out[1]->GetSpanId());
  EXPECT_EQ(out[0]->GetTraceId(), out[2]->GetTraceId());
  EXPECT_EQ(out[1]->GetTraceId(), out[2]->GetTraceId());
  EXPECT_EQ(otel::nostd::get<int64_t>(out[1]->GetAttributes().at("iteration")), 3);
}

TEST_F(ManagedSpanTest, DisabledMiddleGroupIsSkippedInTheHierarchy) {
  enable({"job", "forward_backward"});
  {
    lens::ManagedSpan job("job", "pretrain");
    lens::ManagedSpan step("step", "train_step");
    lens::ManagedSpan fb("forward_backward", "fb");
  }
  auto out = spans();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->GetName(), "fb");
  EXPECT_EQ(out[0]->GetParentSpanId(), out[1]->GetSpanId());
}

TEST_F(ManagedSpanTest, SpanIsCurrentInsideTheScopeAndRestoredAfter) {
  enable({"step"});
  otel::trace::SpanId inside;
  {
    lens::ManagedSpan guard("step", "s");
    inside =
        otel::trace::GetSpan(otel::context::RuntimeContext::GetCurrent())->GetContext().span_id();
    EXPECT_EQ(inside, guard.context().span_id());
  }
  EXPECT_FALSE(
      otel::trace::GetSpan(otel::context::RuntimeContext::GetCurrent())->GetContext().IsValid());
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetSpanId(), inside);
}

TEST_F(ManagedSpanTest, ExceptionRecordedThenRethrownSetsErrorWithWhatAndOneEvent) {
  enable({"step"});
  EXPECT_THROW(
      {
        lens::ManagedSpan guard("step", "s");
        try {
          throw std::runtime_error("boom");
        } catch (const std::exception& e) {
          guard.record_exception(e);
          throw;
        }
      },
      std::runtime_error);
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(out[0]->GetDescription(), "boom");
  ASSERT_EQ(out[0]->GetEvents().size(), 1u);
  const auto& event = out[0]->GetEvents()[0];
  EXPECT_EQ(event.GetName(), "exception");
  EXPECT_EQ(event_attr(event, "exception.type"), "std::runtime_error");
  EXPECT_EQ(event_attr(event, "exception.message"), "boom");
}

TEST_F(ManagedSpanTest, EscapingExceptionWithoutRecordExceptionIsUnknown) {
  enable({"step"});
  EXPECT_THROW(
      {
        lens::ManagedSpan guard("step", "s");
        throw std::logic_error("not reachable from a destructor");
      },
      std::logic_error);
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(out[0]->GetDescription(), "unknown exception");
  ASSERT_EQ(out[0]->GetEvents().size(), 1u);
  EXPECT_EQ(out[0]->GetEvents()[0].GetName(), "exception");
  EXPECT_EQ(event_attr(out[0]->GetEvents()[0], "exception.type"), "unknown");
  EXPECT_EQ(event_attr(out[0]->GetEvents()[0], "exception.message"), "unknown");
}

TEST_F(ManagedSpanTest, ExceptionCaughtInsideTheScopeIsNotAnError) {
  enable({"step"});
  {
    lens::ManagedSpan guard("step", "s");
    try {
      throw std::runtime_error("handled");
    } catch (const std::exception&) {
    }
  }
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetStatus(), otel::trace::StatusCode::kUnset);
  EXPECT_TRUE(out[0]->GetEvents().empty());
}

struct OpensSpanInDestructor {
  ~OpensSpanInDestructor() { lens::ManagedSpan guard("step", "cleanup"); }
};

TEST_F(ManagedSpanTest, GuardOpenedDuringUnwindingIsNotAnError) {
  enable({"step"});
  EXPECT_THROW(
      {
        OpensSpanInDestructor cleanup;
        throw std::runtime_error("x");
      },
      std::runtime_error);
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetName(), "cleanup");
  EXPECT_EQ(out[0]->GetStatus(), otel::trace::StatusCode::kUnset);
}

TEST_F(ManagedSpanTest, SetAttributeAndAddEventFollowTheSafeRules) {
  enable({"step"});
  {
    lens::ManagedSpan guard("step", "s");
    guard.set_attribute("loss", 2.5);
    guard.set_attribute("token", "abc");
    guard.set_attribute("skipped", nullptr);
    guard.add_event("checkpoint.saved", {{"path", "/ckpt"}, {"secret", "x"}, {"n", nullptr}});
    guard.add_event("plain");
  }
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(otel::nostd::get<double>(out[0]->GetAttributes().at("loss")), 2.5);
  EXPECT_EQ(str_attr(*out[0], "token"), "[REDACTED]");
  EXPECT_FALSE(has_attr(*out[0], "skipped"));
  ASSERT_EQ(out[0]->GetEvents().size(), 2u);
  const auto& event = out[0]->GetEvents()[0];
  EXPECT_EQ(event.GetName(), "checkpoint.saved");
  EXPECT_EQ(event.GetAttributes().size(), 2u);
  EXPECT_EQ(event_attr(event, "path"), "/ckpt");
  EXPECT_EQ(event_attr(event, "secret"), "[REDACTED]");
  EXPECT_EQ(out[0]->GetEvents()[1].GetName(), "plain");
}

// ---- LENS_SPAN / LENS_TRACE_FUNCTION
// --------------------------------------------------------------

using SpanMacroTest = SpanFixture;

int run_site(int& evaluations) {
  LENS_SPAN(lens::SpanSite("site", "step"), {"iteration", ++evaluations}, {"rank", 0});
  return 1;
}

TEST_F(SpanMacroTest, AttributeExpressionsAreNotEvaluatedWhenOff) {
  int evaluations = 0;
  for (int i = 0; i < 3; ++i) {
    run_site(evaluations);
  }
  EXPECT_EQ(evaluations, 0);
  EXPECT_TRUE(spans().empty());
}

TEST_F(SpanMacroTest, SiteFollowsRuntimeToggles) {
  int evaluations = 0;
  run_site(evaluations);
  enable({"step"});
  run_site(evaluations);
  lens::set_enabled_span_groups({});
  run_site(evaluations);
  EXPECT_EQ(evaluations, 1);
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetName(), "site");
  EXPECT_EQ(otel::nostd::get<int64_t>(out[0]->GetAttributes().at("iteration")), 1);
  EXPECT_EQ(otel::nostd::get<int64_t>(out[0]->GetAttributes().at("rank")), 0);
}

TEST_F(SpanMacroTest, TwoSitesInOneScopeAndANamedGuard) {
  enable({"job", "step"});
  {
    LENS_SPAN(lens::SpanSite("outer", "job"));
    LENS_SPAN_NAMED(step, lens::SpanSite("inner", "step"), {"k", "v"});
    ASSERT_TRUE(step);
    step.set_attribute("extra", 1);
  }
  auto out = spans();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->GetName(), "inner");
  EXPECT_EQ(out[0]->GetParentSpanId(), out[1]->GetSpanId());
  EXPECT_EQ(str_attr(*out[0], "k"), "v");
  EXPECT_EQ(otel::nostd::get<int64_t>(out[0]->GetAttributes().at("extra")), 1);
}

int traced_function_under_test() {
  LENS_TRACE_FUNCTION("step");
  return lens_function_span ? 1 : 0;
}

TEST_F(SpanMacroTest, TraceFunctionNamesTheSpanAfterTheFunction) {
  EXPECT_EQ(traced_function_under_test(), 0);
  enable({"step"});
  EXPECT_EQ(traced_function_under_test(), 1);
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetName(), "traced_function_under_test");
}

// ---- ScopedSpan / span_cm (N.7 item 77) --------------------------------------------------------

using SpanCmTest = SpanFixture;

TEST_F(SpanCmTest, CreatesExactlyOneSpanWithNameAndAttributeUngated) {
  {
    lens::ScopedSpan span("checkpoint.save", {{"path", "/tmp/x"}});
    ASSERT_TRUE(span.context().IsValid());
  }
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetName(), "checkpoint.save");
  EXPECT_EQ(str_attr(*out[0], "path"), "/tmp/x");
}

TEST_F(SpanCmTest, MacroFormWorks) {
  {
    LENS_SPAN_CM("cm", {"a", 1});
    LENS_SPAN_CM_NAMED(inner, "cm.inner");
    inner.set_attribute("b", 2);
  }
  auto out = spans();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->GetName(), "cm.inner");
  EXPECT_EQ(out[0]->GetParentSpanId(), out[1]->GetSpanId());
}

// Without live telemetry (a rank that does not export, or before setup) the guard takes every
// call and nothing is exported.
TEST_F(SpanCmTest, WorksWithoutLiveTelemetry) {
  ASSERT_TRUE(handle_->shutdown(std::chrono::milliseconds(2000)).ok());
  {
    LENS_SPAN_CM("x", {"a", 1});
    lens::ScopedSpan span("y", {{"a", 1}});
    EXPECT_FALSE(span.context().IsValid());
    span.set_attribute("b", 2);
    span.add_event("e", {{"k", 1}});
    span.record_exception(std::runtime_error("ignored"));
  }
  EXPECT_TRUE(data_->GetSpans().empty());
}

TEST_F(SpanCmTest, ExceptionSetsErrorWithWhatAndRecordsTheEvent) {
  EXPECT_THROW(
      {
        lens::ScopedSpan span("x");
        try {
          throw std::invalid_argument("bad arg");
        } catch (const std::exception& e) {
          span.record_exception(e);
          throw;
        }
      },
      std::invalid_argument);
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(out[0]->GetDescription(), "bad arg");
  ASSERT_EQ(out[0]->GetEvents().size(), 1u);
  EXPECT_EQ(event_attr(out[0]->GetEvents()[0], "exception.type"), "std::invalid_argument");
}

TEST_F(SpanCmTest, RecordExceptionFalseSetsErrorWithoutEvent) {
  EXPECT_THROW(
      {
        lens::ScopedSpan span("x", {}, /*record_exception=*/false);
        try {
          throw std::runtime_error("quiet");
        } catch (const std::exception& e) {
          span.record_exception(e);
          throw;
        }
      },
      std::runtime_error);
  EXPECT_THROW(
      {
        lens::ScopedSpan span("y", {}, false);
        throw 7;
      },
      int);
  auto out = spans();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(out[0]->GetDescription(), "quiet");
  EXPECT_TRUE(out[0]->GetEvents().empty());
  EXPECT_EQ(out[1]->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(out[1]->GetDescription(), "unknown exception");
  EXPECT_TRUE(out[1]->GetEvents().empty());
}

// ---- trace_fn (N.7 item 79) ---------------------------------------------------------------------

using TraceFnSpanTest = SpanFixture;

int add(int a, int b) { return a + b; }

TEST_F(TraceFnSpanTest, DisabledCallsThroughWithoutSpan) {
  auto traced = lens::trace_fn("step", "add", add);
  EXPECT_EQ(traced(2, 3), 5);
  EXPECT_TRUE(spans().empty());
}

TEST_F(TraceFnSpanTest, EnabledMakesOneSpanAndReturnsTheResult) {
  enable({"step"});
  auto traced = lens::trace_fn("step", "math.add", add);
  EXPECT_EQ(traced(40, 2), 42);
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetName(), "math.add");
  EXPECT_TRUE(out[0]->GetAttributes().empty());
}

TEST_F(TraceFnSpanTest, ToggleAfterWrappingTakesEffect) {
  auto traced = lens::trace_fn("step", "f", [] { return 1; });
  traced();
  enable({"step"});
  traced();
  traced();
  lens::set_enabled_span_groups({});
  traced();
  EXPECT_EQ(spans().size(), 2u);
}

TEST_F(TraceFnSpanTest, ForwardsVoidReferencesAndMoveOnlyArguments) {
  enable({"step"});
  int value = 0;
  auto set = lens::trace_fn("step", "set", [&value](std::unique_ptr<int> p) { value = *p; });
  set(std::make_unique<int>(9));
  EXPECT_EQ(value, 9);
  auto ref = lens::trace_fn("step", "ref", [&value]() -> int& { return value; });
  ref() = 11;
  EXPECT_EQ(value, 11);
  int calls = 0;
  auto counter = lens::trace_fn("step", "mutable", [calls]() mutable { return ++calls; });
  EXPECT_EQ(counter(), 1);
  EXPECT_EQ(counter(), 2);
  EXPECT_EQ(spans().size(), 4u);
}

TEST_F(TraceFnSpanTest, StdExceptionIsRecordedWithWhatAndRethrown) {
  enable({"step"});
  auto traced =
      lens::trace_fn("step", "fails", []() -> int { throw std::out_of_range("index 5"); });
  EXPECT_THROW(traced(), std::out_of_range);
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(out[0]->GetDescription(), "index 5");
  ASSERT_EQ(out[0]->GetEvents().size(), 1u);
  EXPECT_EQ(event_attr(out[0]->GetEvents()[0], "exception.type"), "std::out_of_range");
  EXPECT_EQ(event_attr(out[0]->GetEvents()[0], "exception.message"), "index 5");
}

TEST_F(TraceFnSpanTest, OtherExceptionTypesAreUnknownAndRethrown) {
  enable({"step"});
  auto traced = lens::trace_fn("step", "fails", [] { throw 42; });
  EXPECT_THROW(traced(), int);
  auto out = spans();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->GetStatus(), otel::trace::StatusCode::kError);
  EXPECT_EQ(out[0]->GetDescription(), "unknown exception");
}

TEST_F(TraceFnSpanTest, DisabledExceptionPropagatesWithoutSpan) {
  auto traced = lens::trace_fn("step", "fails", [] { throw std::runtime_error("x"); });
  EXPECT_THROW(traced(), std::runtime_error);
  EXPECT_TRUE(spans().empty());
}

TEST_F(TraceFnSpanTest, SpanIsAChildOfTheCurrentSpan) {
  enable({"job", "step"});
  auto traced = lens::trace_fn(lens::span_group_handle("step"), "inner", [] {});
  {
    lens::ManagedSpan job("job", "outer");
    traced();
  }
  auto out = spans();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->GetName(), "inner");
  EXPECT_EQ(out[0]->GetParentSpanId(), out[1]->GetSpanId());
}

// ---- create_linked_span (N.8 item 80) ---------------------------------------------------------

using LinkedSpanTest = SpanFixture;

TEST_F(LinkedSpanTest, RemoteContextGivesExactlyOneLinkWithItsTraceId) {
  auto remote = tracer_->StartSpan("remote");
  otel::context::Context ctx;
  ctx = otel::trace::SetSpan(ctx, remote);
  auto linked = lens::create_linked_span("megatron.pp.recv_forward.linked", &ctx,
                                         {{"dl.pipeline_parallel.rank", 1}, {"stage", "recv"}});
  linked.end();
  remote->End();
  auto out = spans();
  ASSERT_EQ(out.size(), 2u);
  const auto& span = *out[0];
  EXPECT_EQ(span.GetName(), "megatron.pp.recv_forward.linked");
  ASSERT_EQ(span.GetLinks().size(), 1u);
  EXPECT_EQ(span.GetLinks()[0].GetSpanContext().trace_id(), out[1]->GetTraceId());
  EXPECT_EQ(span.GetLinks()[0].GetSpanContext().span_id(), out[1]->GetSpanId());
  EXPECT_TRUE(span.GetLinks()[0].GetAttributes().empty());
  // Parent is the current context (none here), not the remote span.
  EXPECT_FALSE(span.GetParentSpanId().IsValid());
  EXPECT_NE(span.GetTraceId(), out[1]->GetTraceId());
  EXPECT_EQ(otel::nostd::get<int64_t>(span.GetAttributes().at("dl.pipeline_parallel.rank")), 1);
  EXPECT_EQ(str_attr(span, "stage"), "recv");
}

TEST_F(LinkedSpanTest, CarrierGivesOneLinkWithTheRemoteTraceId) {
  auto remote = tracer_->StartSpan("remote");
  const auto rc = remote->GetContext();
  const std::map<std::string, std::string> carrier = {
      {"traceparent", "00-" + hex(rc.trace_id()) + "-" + hex(rc.span_id()) + "-01"}};
  auto linked = lens::create_linked_span("linked", &carrier, {{"rank", 3}, {"token", "t"}});
  linked.end();
  remote->End();
  auto out = spans();
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0]->GetLinks().size(), 1u);
  EXPECT_EQ(out[0]->GetLinks()[0].GetSpanContext().trace_id(), rc.trace_id());
  EXPECT_EQ(otel::nostd::get<int64_t>(out[0]->GetAttributes().at("rank")), 3);
  EXPECT_EQ(str_attr(*out[0], "token"), "[REDACTED]");
}

TEST_F(LinkedSpanTest, WithoutAValidRemoteThereAreNoLinks) {
  const std::map<std::string, std::string> empty;
  const std::map<std::string, std::string> invalid = {{"traceparent", "garbage"}};
  const otel::context::Context no_span;
  const std::map<std::string, std::string>* null_carrier = nullptr;
  const otel::context::Context* null_context = nullptr;
  lens::create_linked_span("a", nullptr).end();
  lens::create_linked_span("b", null_carrier).end();
  lens::create_linked_span("c", null_context).end();
  lens::create_linked_span("d", &empty).end();
  lens::create_linked_span("e", &invalid).end();
  lens::create_linked_span("f", &no_span).end();
  auto out = spans();
  ASSERT_EQ(out.size(), 6u);
  for (const auto& span : out) {
    EXPECT_TRUE(span->GetLinks().empty()) << span->GetName();
  }
}

TEST_F(LinkedSpanTest, ParentIsTheCurrentSpanAndTheLinkedSpanIsNotMadeCurrent) {
  enable({"job"});
  const std::map<std::string, std::string> invalid = {{"traceparent", "00-bad"}};
  {
    lens::ManagedSpan job("job", "outer");
    auto linked = lens::create_linked_span("linked", &invalid);
    EXPECT_EQ(
        otel::trace::GetSpan(otel::context::RuntimeContext::GetCurrent())->GetContext().span_id(),
        job.context().span_id());
    linked.end();
  }
  auto out = spans();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->GetName(), "linked");
  EXPECT_EQ(out[0]->GetParentSpanId(), out[1]->GetSpanId());
  // An invalid carrier never links to the caller's own current span.
  EXPECT_TRUE(out[0]->GetLinks().empty());
}

// ---- Context hand-off
// ----------------------------------------------------------------------------

using SpanContextHandoffTest = SpanFixture;

TEST_F(SpanContextHandoffTest, WorkerSpanInsideContextScopeHasTheCapturedParent) {
  enable({"job", "step"});
  {
    lens::ManagedSpan job("job", "outer");
    const auto captured = lens::capture_context();
    std::thread worker([&captured] {
      lens::ContextScope scope(captured);
      lens::ManagedSpan step("step", "worker");
    });
    worker.join();
    std::thread orphan([] { lens::ManagedSpan step("step", "orphan"); });
    orphan.join();
  }
  auto out = spans();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0]->GetName(), "worker");
  EXPECT_EQ(out[1]->GetName(), "orphan");
  EXPECT_EQ(out[2]->GetName(), "outer");
  EXPECT_EQ(out[0]->GetParentSpanId(), out[2]->GetSpanId());
  EXPECT_EQ(out[0]->GetTraceId(), out[2]->GetTraceId());
  EXPECT_FALSE(out[1]->GetParentSpanId().IsValid());
}

TEST_F(SpanContextHandoffTest, WrapWithContextAttachesWhenRunAndDetachesAfter) {
  enable({"job", "step"});
  bool detached_after = false;
  {
    lens::ManagedSpan job("job", "outer");
    auto task = lens::wrap_with_context([](int x) {
      lens::ManagedSpan step("step", "task");
      return x * 2;
    });
    std::thread worker([&task, &detached_after] {
      EXPECT_EQ(task(21), 42);
      detached_after = !otel::trace::GetSpan(otel::context::RuntimeContext::GetCurrent())
                            ->GetContext()
                            .IsValid();
    });
    worker.join();
  }
  EXPECT_TRUE(detached_after);
  auto out = spans();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->GetName(), "task");
  EXPECT_EQ(out[0]->GetParentSpanId(), out[1]->GetSpanId());
}

}  // namespace
