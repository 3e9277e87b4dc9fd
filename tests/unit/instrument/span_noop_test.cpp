// Tests of the no-op span surface (lens/span_noop.hpp, docs/tracing.md, "Building without the
// library"): this translation unit sees lens/span.hpp with LENS_DISABLE, so lens::ManagedSpan here
// is lens::noop_v1::ManagedSpan, a distinct entity from the real one used by span_test.cpp.
#define LENS_DISABLE 1
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "lens/span.hpp"

#if defined(OPENTELEMETRY_VERSION) || defined(LENS_SPAN_REAL_SURFACE)
#error "the no-op surface must not pull in opentelemetry-cpp or the real span header"
#endif

namespace {

static_assert(std::is_same_v<lens::ManagedSpan, lens::noop_v1::ManagedSpan>);
static_assert(std::is_same_v<lens::ScopedSpan, lens::noop_v1::ScopedSpan>);
static_assert(!std::is_copy_constructible_v<lens::ManagedSpan>);

int twice(int x) { return 2 * x; }

TEST(SpanNoopTest, ManagedSpanRunsTheBodyAndYieldsNull) {
  int ran = 0;
  {
    lens::ManagedSpan guard("step", "train_step", {{"iteration", 1}, {"prompt", "p"}});
    EXPECT_FALSE(guard);
    EXPECT_FALSE(guard.context().IsValid());
    guard.set_attribute("a", 1);
    guard.add_event("e", {{"k", "v"}});
    guard.record_exception(std::runtime_error("x"));
    ++ran;
  }
  {
    lens::ManagedSpan guard(lens::span_group_handle("job"), "pretrain");
    EXPECT_FALSE(guard);
    ++ran;
  }
  EXPECT_EQ(ran, 2);
}

TEST(SpanNoopTest, ScopedSpanRunsTheBodyAndYieldsNull) {
  int ran = 0;
  {
    lens::ScopedSpan span("cm", {{"a", 1}}, false);
    EXPECT_FALSE(span.context().IsValid());
    ++ran;
  }
  EXPECT_EQ(ran, 1);
}

TEST(SpanNoopTest, ExceptionsPropagate) {
  EXPECT_THROW(
      {
        lens::ManagedSpan guard("step", "s");
        throw std::runtime_error("x");
      },
      std::runtime_error);
  EXPECT_THROW(
      {
        lens::ScopedSpan span("s");
        throw 3;
      },
      int);
  EXPECT_THROW(
      {
        LENS_SPAN(lens::SpanSite("s", "step"));
        throw std::logic_error("y");
      },
      std::logic_error);
}

TEST(SpanNoopTest, TraceFnIsTheIdentity) {
  auto lambda = [](int x) { return x + 1; };
  auto& same = lens::trace_fn("step", "f", lambda);
  EXPECT_EQ(&same, &lambda);
  EXPECT_EQ(same(1), 2);
  auto fn = lens::trace_fn("step", "twice", twice);
  EXPECT_EQ(fn, &twice);
  EXPECT_EQ(fn(4), 8);
  auto moved = lens::trace_fn("step", "g", [p = std::make_unique<int>(5)] { return *p; });
  EXPECT_EQ(moved(), 5);
  auto throws = lens::trace_fn("step", "t", [] { throw std::runtime_error("z"); });
  EXPECT_THROW(throws(), std::runtime_error);
}

TEST(SpanNoopTest, GroupsAreNeverEnabled) {
  EXPECT_FALSE(lens::is_span_group_enabled("job"));
  EXPECT_FALSE(lens::is_span_group_enabled("all"));
  EXPECT_FALSE(lens::span_group_handle("step").enabled());
}

TEST(SpanNoopTest, SafeSetSpanAttributesAcceptsNullAndEmpty) {
  lens::safe_set_span_attributes(nullptr, {});
  lens::safe_set_span_attributes(nullptr, {{"a", 1}, {"password", "x"}});
  lens::safe_set_span_attributes(nullptr, {{"a", 1}}, {"a"});
  SUCCEED();
}

TEST(SpanNoopTest, SpansThatAreNotScopesAreInert) {
  lens::Span span = lens::start_span("megatron.pretrain", {{"megatron.train_iters", 10}});
  lens::SpanScope scope(span);
  EXPECT_FALSE(span);
  EXPECT_FALSE(span.context().IsValid());
  span.set_attribute("a", 1);
  span.set_error("interrupted");
  span.end();
  EXPECT_FALSE(lens::create_linked_span("linked", nullptr, {{"rank", 3}}));
  EXPECT_FALSE(lens::start_span("root", {}, lens::NewTrace{}).context().IsValid());
}

TEST(SpanNoopTest, RedactValueStillRedacts) {
  EXPECT_EQ(lens::redact_value("password", "hunter2").as_string(), "[REDACTED]");
  EXPECT_EQ(lens::redact_value("model", "gpt").as_string(), "gpt");
  EXPECT_FALSE(lens::redact_value("token", 5).is_string());
  EXPECT_EQ(lens::default_redact_keys().size(), 8u);
}

int noop_traced_function([[maybe_unused]] int& evaluations) {
  LENS_TRACE_FUNCTION((++evaluations, "step"));
  return 7;
}

TEST(SpanNoopTest, MacrosEvaluateNoArguments) {
  int evaluations = 0;
  {
    LENS_SPAN((++evaluations, "step"), (++evaluations, "name"), {"a", ++evaluations});
    LENS_SPAN_CM((++evaluations, "cm"), {"b", ++evaluations});
    LENS_SPAN_NAMED(guard, (++evaluations, "step"), "n", {"c", ++evaluations});
    EXPECT_FALSE(guard);
    guard.set_attribute("d", 1);
    LENS_SPAN_CM_NAMED(cm, "cm", {"e", ++evaluations});
    EXPECT_FALSE(cm.context().IsValid());
  }
  EXPECT_EQ(noop_traced_function(evaluations), 7);
  EXPECT_EQ(evaluations, 0);
}

TEST(SpanNoopTest, ContextHandOffIsInert) {
  const auto context = lens::capture_context();
  lens::ContextScope scope(context);
  auto wrapped = lens::wrap_with_context([] { return 3; });
  EXPECT_EQ(wrapped(), 3);
}

}  // namespace
