// SamplerAdapter (docs/strategies.md, "Samplers"): lens samplers driving a real opentelemetry-cpp
// TracerProvider, and the composition table with its documented results.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "lens/sampling.hpp"
#include "lens/testing/in_memory_exporter.hpp"
#include "opentelemetry/common/key_value_iterable_view.h"
#include "opentelemetry/sdk/resource/resource.h"
#include "opentelemetry/sdk/trace/simple_processor.h"
#include "opentelemetry/sdk/trace/tracer_provider.h"
#include "opentelemetry/trace/span_context_kv_iterable.h"
#include "opentelemetry/trace/trace_state.h"
#include "sdk/id_generator.hpp"
#include "sdk/sampler_adapter.hpp"
#include "unit/support/test_support.hpp"

namespace {

namespace otel_sdk = opentelemetry::sdk::trace;
namespace nostd = opentelemetry::nostd;
using lens::RankAwareSampler;
using lens::SamplerKind;
using lens::sdk::SamplerAdapter;
using lens::test_support::rank_of;

struct Traced {
  std::shared_ptr<otel_sdk::TracerProvider> provider;
  lens::testing::InMemorySpans memory;
  nostd::shared_ptr<opentelemetry::trace::Tracer> tracer;
};

Traced make_traced(std::shared_ptr<const lens::Sampler> sampler) {
  Traced traced;
  traced.memory = lens::testing::make_in_memory_span_exporter();
  traced.provider = std::make_shared<otel_sdk::TracerProvider>(
      std::make_unique<otel_sdk::SimpleSpanProcessor>(std::move(traced.memory.exporter)),
      opentelemetry::sdk::resource::Resource::Create({}),
      std::make_unique<SamplerAdapter>(std::move(sampler)),
      std::make_unique<lens::sdk::SeedIndependentIdGenerator>());
  traced.tracer = traced.provider->GetTracer("sdk-sampler-test");
  return traced;
}

// Deterministic, well-mixed trace ids (splitmix64).
opentelemetry::trace::TraceId trace_id_number(std::uint64_t n) {
  auto mix = [](std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::uint64_t high = mix(2 * n + 1);
  std::uint64_t low = mix(2 * n + 2);
  std::uint8_t bytes[16];
  for (int i = 7; i >= 0; --i, high >>= 8) bytes[i] = static_cast<std::uint8_t>(high);
  for (int i = 15; i >= 8; --i, low >>= 8) bytes[i] = static_cast<std::uint8_t>(low);
  return opentelemetry::trace::TraceId(bytes);
}

otel_sdk::Decision decide(SamplerAdapter& adapter, std::uint64_t n,
                          const opentelemetry::trace::SpanContext& parent =
                              opentelemetry::trace::SpanContext::GetInvalid()) {
  const opentelemetry::common::NoopKeyValueIterable attributes;
  const opentelemetry::trace::NullSpanContext links;
  return adapter
      .ShouldSample(parent, trace_id_number(n), "step", opentelemetry::trace::SpanKind::kInternal,
                    attributes, links)
      .decision;
}

TEST(SdkSamplerAdapter, RateOneIsSampledAndRateZeroIsDropped) {
  auto kept = make_traced(std::make_shared<RankAwareSampler>(rank_of(0, 1), 1.0, nullptr));
  auto span = kept.tracer->StartSpan("kept");
  EXPECT_TRUE(span->IsRecording());
  EXPECT_TRUE(span->GetContext().IsSampled());
  span->End();
  EXPECT_EQ(kept.memory.take_spans().size(), 1U);

  auto dropped = make_traced(std::make_shared<RankAwareSampler>(rank_of(0, 1), 0.0, nullptr));
  span = dropped.tracer->StartSpan("dropped");
  EXPECT_FALSE(span->IsRecording());
  EXPECT_FALSE(span->GetContext().IsSampled());
  EXPECT_TRUE(span->GetContext().IsValid());
  span->End();
  EXPECT_TRUE(dropped.memory.take_spans().empty());
}

TEST(SdkSamplerAdapter, DescriptionIsTheLensSamplersDescription) {
  SamplerAdapter adapter(std::make_shared<RankAwareSampler>(rank_of(3, 8), 0.5, nullptr));
  EXPECT_EQ(std::string(adapter.GetDescription()), "RankAwareSampler(rank=3, rate=0.5)");
  auto traced = make_traced(std::make_shared<RankAwareSampler>(rank_of(0, 1), 1.0, nullptr));
  auto* sdk_tracer = static_cast<otel_sdk::Tracer*>(traced.tracer.get());
  EXPECT_EQ(std::string(sdk_tracer->GetSampler().GetDescription()),
            "RankAwareSampler(rank=0, rate=1.0)");
}

// The sampler adds no attributes of its own: handing the start attributes back would make the
// SDK set each of them twice (duplicate keys on the wire). The span still has them, once.
TEST(SdkSamplerAdapter, SampledResultCarriesNoAttributesAndTheSpanHasItsOwnOnce) {
  const std::map<std::string, opentelemetry::common::AttributeValue> input{
      {"nemo.step", 7}, {"nemo.phase", "forward"}};
  const opentelemetry::common::KeyValueIterableView<decltype(input)> attributes(input);
  const opentelemetry::trace::NullSpanContext links;

  SamplerAdapter keep(std::make_shared<RankAwareSampler>(rank_of(0, 1), 1.0, nullptr));
  auto result =
      keep.ShouldSample(opentelemetry::trace::SpanContext::GetInvalid(), trace_id_number(1), "s",
                        opentelemetry::trace::SpanKind::kInternal, attributes, links);
  EXPECT_EQ(result.decision, otel_sdk::Decision::RECORD_AND_SAMPLE);
  EXPECT_EQ(result.attributes, nullptr);

  SamplerAdapter drop(std::make_shared<RankAwareSampler>(rank_of(0, 1), 0.0, nullptr));
  result = drop.ShouldSample(opentelemetry::trace::SpanContext::GetInvalid(), trace_id_number(1),
                             "s", opentelemetry::trace::SpanKind::kInternal, attributes, links);
  EXPECT_EQ(result.decision, otel_sdk::Decision::DROP);
  EXPECT_EQ(result.attributes, nullptr);

  // Through a provider: the exported span has them.
  auto traced = make_traced(std::make_shared<RankAwareSampler>(rank_of(0, 1), 1.0, nullptr));
  traced.tracer->StartSpan("with-attributes", input)->End();
  auto spans = traced.memory.take_spans();
  ASSERT_EQ(spans.size(), 1U);
  EXPECT_EQ(nostd::get<int32_t>(spans[0]->GetAttributes().at("nemo.step")), 7);
  EXPECT_EQ(nostd::get<std::string>(spans[0]->GetAttributes().at("nemo.phase")), "forward");
}

TEST(SdkSamplerAdapter, RecordOnlyAndParentTraceStateAreKept) {
  class RecordOnly final : public lens::Sampler {
   public:
    lens::SamplingDecision should_sample(
        const lens::SamplingParams& params) const noexcept override {
      seen_remote = params.parent_remote;
      seen_sampled = params.parent_sampled;
      return lens::SamplingDecision::record_only;
    }
    std::string description() const override { return "RecordOnly"; }
    mutable bool seen_remote = false;
    mutable bool seen_sampled = false;
  };
  auto sampler = std::make_shared<RecordOnly>();
  auto traced = make_traced(sampler);
  auto state = opentelemetry::trace::TraceState::FromHeader("vendor=abc");
  std::uint8_t span_bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  // An unsampled remote parent: opentelemetry-cpp 1.19 starts a child from the parent's flags
  // and only ORs the sampled bit in, so RECORD_ONLY under a sampled parent would stay sampled.
  const opentelemetry::trace::SpanContext remote(trace_id_number(5),
                                                 opentelemetry::trace::SpanId(span_bytes),
                                                 opentelemetry::trace::TraceFlags(0), true, state);
  opentelemetry::trace::StartSpanOptions options;
  options.parent = remote;
  auto span = traced.tracer->StartSpan("record-only", options);
  EXPECT_TRUE(span->IsRecording());
  EXPECT_FALSE(span->GetContext().IsSampled());
  EXPECT_TRUE(sampler->seen_remote);
  EXPECT_FALSE(sampler->seen_sampled);
  std::string value;
  EXPECT_TRUE(span->GetContext().trace_state()->Get("vendor", value));
  EXPECT_EQ(value, "abc");
  span->End();
}

// The composition table, with the results docs/strategies.md ("Samplers") documents: the layers
// multiply.
TEST(SdkSamplerAdapter, CompositionTableGivesTheDocumentedResults) {
  constexpr int kRanks = 100;
  constexpr int kTraces = 2000;

  // single_rank (strategy decides the rank), default sampler: every trace of that rank.
  {
    lens::Config config;
    config.rank_strategy = "single_rank";
    auto sampler = lens::make_sampler(config, rank_of(0, kRanks));
    ASSERT_TRUE(sampler.ok()) << sampler.message();
    SamplerAdapter adapter(*sampler);
    int kept = 0;
    for (int n = 0; n < kTraces; ++n) {
      kept += decide(adapter, n) == otel_sdk::Decision::RECORD_AND_SAMPLE ? 1 : 0;
    }
    EXPECT_EQ(kept, kTraces);
  }
  // single_rank, traceidratio 0.1: ~10% of traces; not parent-based (a sampled remote parent
  // does not force sampling).
  {
    lens::Config config;
    config.rank_strategy = "single_rank";
    config.otel.traces_sampler.value = SamplerKind::traceidratio;
    config.otel.traces_sampler_arg.value = 0.1;
    auto sampler = lens::make_sampler(config, rank_of(0, kRanks));
    ASSERT_TRUE(sampler.ok()) << sampler.message();
    SamplerAdapter adapter(*sampler);
    int kept = 0;
    int kept_under_sampled_parent = 0;
    std::uint8_t span_bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int n = 0; n < kTraces; ++n) {
      kept += decide(adapter, n) == otel_sdk::Decision::RECORD_AND_SAMPLE ? 1 : 0;
      const opentelemetry::trace::SpanContext parent(
          trace_id_number(n), opentelemetry::trace::SpanId(span_bytes),
          opentelemetry::trace::TraceFlags(opentelemetry::trace::TraceFlags::kIsSampled), true);
      kept_under_sampled_parent +=
          decide(adapter, n, parent) == otel_sdk::Decision::RECORD_AND_SAMPLE ? 1 : 0;
    }
    EXPECT_GT(kept, kTraces * 8 / 100);
    EXPECT_LT(kept, kTraces * 12 / 100);
    EXPECT_EQ(kept_under_sampled_parent, kept);
  }
  // all_ranks + rank_aware 0.1, default sampler: all traces from ~10% of ranks;
  // all_ranks + rank_aware 0.1 + traceidratio 0.1: 10% of traces from 10% of ranks (~1%).
  for (const bool ratio : {false, true}) {
    lens::Config config;
    config.rank_strategy = "all_ranks";
    config.sampling_strategy = "rank_aware";
    config.export_sample_rate = 0.1;
    if (ratio) {
      config.otel.traces_sampler.value = SamplerKind::traceidratio;
      config.otel.traces_sampler_arg.value = 0.1;
    }
    int kept_ranks = 0;
    long kept = 0;
    for (int rank = 0; rank < kRanks; ++rank) {
      auto sampler = lens::make_sampler(config, rank_of(rank, kRanks));
      ASSERT_TRUE(sampler.ok()) << sampler.message();
      SamplerAdapter adapter(*sampler);
      int kept_here = 0;
      for (int n = 0; n < kTraces; ++n) {
        kept_here += decide(adapter, n) == otel_sdk::Decision::RECORD_AND_SAMPLE ? 1 : 0;
      }
      kept_ranks += kept_here > 0 ? 1 : 0;
      kept += kept_here;
      if (!ratio) {
        EXPECT_TRUE(kept_here == 0 || kept_here == kTraces) << "rank " << rank;
      }
    }
    EXPECT_EQ(kept_ranks, 9) << "ranks 3, 5, 6, 31, 55, 64, 74, 77, 99";
    const double fraction = static_cast<double>(kept) / (kRanks * kTraces);
    if (ratio) {
      EXPECT_GT(fraction, 0.007);
      EXPECT_LT(fraction, 0.011);
    } else {
      EXPECT_DOUBLE_EQ(fraction, 0.09);
    }
  }
}

}  // namespace
