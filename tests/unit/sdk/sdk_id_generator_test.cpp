// SeedIndependentIdGenerator (docs/telemetry.md, "What setup does"): ids independent of global
// seeding, never zero, the random-trace-id flag on root spans, fresh ids in forked children.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lens/testing/in_memory_exporter.hpp"
#include "opentelemetry/sdk/resource/resource.h"
#include "opentelemetry/sdk/trace/samplers/always_on.h"
#include "opentelemetry/sdk/trace/simple_processor.h"
#include "opentelemetry/sdk/trace/tracer_provider.h"
#include "sdk/id_generator.hpp"
#include "unit/support/test_support.hpp"

namespace {

namespace otel_sdk = opentelemetry::sdk::trace;
using lens::sdk::SeedIndependentIdGenerator;

using lens::test_support::hex;

TEST(SdkIdGenerator, IdsDifferAcrossIdenticalGlobalReseeding) {
  SeedIndependentIdGenerator generator;
  std::srand(42);
  std::mt19937_64 first_global(1234);
  (void)first_global();
  const auto trace_a = hex(generator.GenerateTraceId());
  const auto span_a = hex(generator.GenerateSpanId());
  std::srand(42);
  std::mt19937_64 second_global(1234);
  (void)second_global();
  const auto trace_b = hex(generator.GenerateTraceId());
  const auto span_b = hex(generator.GenerateSpanId());
  EXPECT_NE(trace_a, trace_b);
  EXPECT_NE(span_a, span_b);
}

TEST(SdkIdGenerator, HundredIdsAreNonZeroAndInRange) {
  SeedIndependentIdGenerator generator;
  std::set<std::string> traces;
  std::set<std::string> spans;
  for (int i = 0; i < 100; ++i) {
    const auto trace_id = generator.GenerateTraceId();
    const auto span_id = generator.GenerateSpanId();
    // 16 / 8 bytes by type, so < 2^128 / 2^64; valid means not all zero, so > 0.
    EXPECT_TRUE(trace_id.IsValid());
    EXPECT_TRUE(span_id.IsValid());
    EXPECT_EQ(hex(trace_id).size(), 32U);
    EXPECT_EQ(hex(span_id).size(), 16U);
    traces.insert(hex(trace_id));
    spans.insert(hex(span_id));
  }
  EXPECT_EQ(traces.size(), 100U);
  EXPECT_EQ(spans.size(), 100U);
}

// Root and child carry the sampled flag only, exported as propagated: the W3C level-2 random
// flag is masked out by opentelemetry-cpp and not restored (native spans do the same).
TEST(SdkIdGenerator, ReportsRandomAndSpansCarryTheSampledFlagOnly) {
  auto generator = std::make_unique<SeedIndependentIdGenerator>();
  EXPECT_TRUE(generator->IsRandom());

  auto memory = lens::testing::make_in_memory_span_exporter();
  auto provider = std::make_shared<otel_sdk::TracerProvider>(
      std::make_unique<otel_sdk::SimpleSpanProcessor>(std::move(memory.exporter)),
      opentelemetry::sdk::resource::Resource::Create({}),
      std::make_unique<otel_sdk::AlwaysOnSampler>(), std::move(generator));
  auto tracer = provider->GetTracer("sdk-test");

  auto root = tracer->StartSpan("root");
  EXPECT_EQ(root->GetContext().trace_flags().flags(), 0x01);
  opentelemetry::trace::StartSpanOptions child_options;
  child_options.parent = root->GetContext();
  auto child = tracer->StartSpan("child", child_options);
  child->End();
  root->End();

  auto spans = memory.take_spans();
  ASSERT_EQ(spans.size(), 2U);
  EXPECT_EQ(spans[1]->GetName(), "root");
  EXPECT_EQ(spans[1]->GetFlags().flags(), 0x01);
  EXPECT_EQ(spans[0]->GetFlags().flags(), 0x01);
  provider->Shutdown();
}

TEST(SdkIdGenerator, ForkedChildrenGeneratePairwiseDifferentTraceIds) {
  SeedIndependentIdGenerator generator;
  const std::string parent_first = hex(generator.GenerateTraceId());  // seeds this thread

  std::set<std::string> ids{parent_first};
  for (int child = 0; child < 3; ++child) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      char buffer[32];
      generator.GenerateTraceId().ToLowerBase16(buffer);
      const bool ok = write(fds[1], buffer, sizeof(buffer)) == sizeof(buffer);
      _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    char buffer[32];
    std::size_t got = 0;
    while (got < sizeof(buffer)) {
      const ssize_t n = read(fds[0], buffer + got, sizeof(buffer) - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    close(fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ASSERT_EQ(got, sizeof(buffer));
    ids.insert(std::string(buffer, sizeof(buffer)));
  }
  // The parent's next id too: without reseeding, every child would have produced exactly it.
  ids.insert(hex(generator.GenerateTraceId()));
  EXPECT_EQ(ids.size(), 5U);
}

}  // namespace
