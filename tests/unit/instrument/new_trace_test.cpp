// Spans started as the root of a new trace (lens::NewTrace): the exported root has the requested
// trace id, no parent and one link; its children follow it; the previous context comes back; a
// ratio sampler decides alike for the same id (lens::TraceSeed, tested in distributed_test.cpp).
#include <gtest/gtest.h>
#include <opentelemetry/exporters/memory/in_memory_span_exporter.h>
#include <opentelemetry/trace/context.h>

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lens/distributed.hpp"
#include "lens/span.hpp"
#include "lens/telemetry.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

namespace otel = opentelemetry;
using otel::exporter::memory::InMemorySpanData;
using otel::exporter::memory::InMemorySpanExporter;

using lens::test_support::hex;

struct Telemetry {
  std::shared_ptr<InMemorySpanData> data;
  std::optional<TelemetryHandle> handle;
};

Telemetry set_up(const Env::Map& otel_env) {
  Config config = test_support::exporting_config("new-trace-run", ExporterKind::none);
  config.span_groups = "all";
  config.metrics_enabled = false;
  Env::Map variables = otel_env;
  variables.emplace("OTEL_BSP_SCHEDULE_DELAY", "100");
  config.otel = OtelSettings::from_env(Env::from(variables));
  auto exporter = std::make_unique<InMemorySpanExporter>(100000);
  Telemetry telemetry{exporter->GetData(), std::nullopt};
  SetupOverrides overrides;
  overrides.span_exporter = std::move(exporter);
  overrides.env = Env::from({});
  auto handle = setup_telemetry(config, test_support::rank_of(0, 1), {}, std::move(overrides));
  EXPECT_TRUE(handle.ok()) << handle.message();
  if (handle.ok()) telemetry.handle.emplace(std::move(*handle));
  return telemetry;
}

constexpr std::array<std::uint8_t, 16> kStepTrace = {
    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01};

TEST(NewTrace, RootTakesTheRequestedIdLinksBackAndRestoresTheContext) {
  Telemetry telemetry = set_up({});
  ASSERT_TRUE(telemetry.handle.has_value());
  const SpanGroupHandle step = span_group_handle("step");
  otel::trace::SpanContext outer_context = otel::trace::SpanContext::GetInvalid();
  {
    ManagedSpan outer(step, "outer");
    ASSERT_TRUE(outer);
    outer_context = outer.context();
    {
      ManagedSpan root(step, "root", {{"megatron.iteration", 7}},
                       NewTrace{kStepTrace, outer_context});
      ASSERT_TRUE(root);
      ManagedSpan child(step, "child");
    }
    // The outer span is current again: a plain span nests under it.
    ManagedSpan after(step, "after");
    EXPECT_EQ(after.context().trace_id(), outer_context.trace_id());
  }
  ASSERT_TRUE(telemetry.handle->shutdown(std::chrono::milliseconds(5000)).ok());
  std::map<std::string, std::unique_ptr<otel::sdk::trace::SpanData>> by_name;
  for (auto& span : telemetry.data->GetSpans()) {
    const std::string name(span->GetName());
    by_name[name] = std::move(span);
  }
  ASSERT_EQ(by_name.size(), 4u);
  const auto& root = *by_name.at("root");
  EXPECT_EQ(hex(root.GetTraceId()), "112233445566778899aabbccddeeff01");
  EXPECT_FALSE(root.GetParentSpanId().IsValid());
  ASSERT_EQ(root.GetLinks().size(), 1u);
  EXPECT_EQ(root.GetLinks()[0].GetSpanContext().span_id(), outer_context.span_id());
  EXPECT_EQ(root.GetLinks()[0].GetSpanContext().trace_id(), outer_context.trace_id());
  EXPECT_EQ(otel::nostd::get<std::int64_t>(root.GetAttributes().at("megatron.iteration")), 7);
  const auto& child = *by_name.at("child");
  EXPECT_EQ(hex(child.GetTraceId()), "112233445566778899aabbccddeeff01");
  EXPECT_EQ(child.GetParentSpanId(), root.GetSpanId());
  EXPECT_EQ(by_name.at("after")->GetParentSpanId(), outer_context.span_id());
  // The next plain root draws a random id again (the request was used once).
  EXPECT_NE(by_name.at("outer")->GetTraceId(), root.GetTraceId());
}

TEST(NewTrace, AnAllZeroIdGivesARandomRootWithoutLink) {
  Telemetry telemetry = set_up({});
  ASSERT_TRUE(telemetry.handle.has_value());
  const SpanGroupHandle step = span_group_handle("step");
  {
    ManagedSpan outer(step, "outer");
    ManagedSpan root(step, "root", {}, NewTrace{});
  }
  ASSERT_TRUE(telemetry.handle->shutdown(std::chrono::milliseconds(5000)).ok());
  auto spans = telemetry.data->GetSpans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0]->GetName(), "root");
  EXPECT_TRUE(spans[0]->GetTraceId().IsValid());
  EXPECT_NE(spans[0]->GetTraceId(), spans[1]->GetTraceId());
  EXPECT_FALSE(spans[0]->GetParentSpanId().IsValid());
  EXPECT_TRUE(spans[0]->GetLinks().empty());
}

TEST(NewTrace, DisabledGroupStartsNothing) {
  Telemetry telemetry = set_up({});
  ASSERT_TRUE(telemetry.handle.has_value());
  set_enabled_span_groups({"job"});
  {
    ManagedSpan root(span_group_handle("step"), "root", {}, NewTrace{kStepTrace});
    EXPECT_FALSE(root);
    EXPECT_FALSE(root.context().IsValid());
  }
  ASSERT_TRUE(telemetry.handle->shutdown(std::chrono::milliseconds(5000)).ok());
  EXPECT_TRUE(telemetry.data->GetSpans().empty());
}

// The property the trainer relies on: the same seed and iteration give the same decision, so a
// ratio sampler keeps an iteration on every rank or on none. Two setups in turn stand for two
// ranks; about half of 400 iterations are kept at ratio 0.5.
TEST(NewTrace, RatioSamplerKeepsTheSameIterationsForTheSameSeed) {
  const TraceSeed seed(kStepTrace);
  std::vector<std::set<std::int64_t>> kept_per_rank;
  for (int rank = 0; rank < 2; ++rank) {
    Telemetry telemetry = set_up(
        {{"OTEL_TRACES_SAMPLER", "parentbased_traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "0.5"}});
    ASSERT_TRUE(telemetry.handle.has_value());
    const SpanGroupHandle step = span_group_handle("step");
    for (std::int64_t iteration = 1; iteration <= 400; ++iteration) {
      ManagedSpan root(step, "megatron.train_step", {{"megatron.iteration", iteration}},
                       NewTrace{seed.trace_id_for(static_cast<std::uint64_t>(iteration))});
      ManagedSpan child(step, "child");  // follows its root's decision
    }
    ASSERT_TRUE(telemetry.handle->shutdown(std::chrono::milliseconds(5000)).ok());
    std::set<std::int64_t> kept;
    std::size_t children = 0;
    for (const auto& span : telemetry.data->GetSpans()) {
      if (span->GetName() == "child") {
        ++children;
        continue;
      }
      const auto iteration =
          otel::nostd::get<std::int64_t>(span->GetAttributes().at("megatron.iteration"));
      EXPECT_EQ(hex(span->GetTraceId()),
                hex(seed.trace_id_for(static_cast<std::uint64_t>(iteration))));
      kept.insert(iteration);
    }
    EXPECT_EQ(children, kept.size());
    kept_per_rank.push_back(std::move(kept));
  }
  EXPECT_EQ(kept_per_rank[0], kept_per_rank[1]);
  // Binomial(400, 0.5): mean 200, standard deviation 10; these bounds are 6 deviations wide.
  EXPECT_GT(kept_per_rank[0].size(), 140u);
  EXPECT_LT(kept_per_rank[0].size(), 260u);
}

}  // namespace
}  // namespace lens
