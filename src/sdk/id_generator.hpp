// SeedIndependentIdGenerator: trace and span ids from a private per-thread wyrand PRNG seeded from
// OS entropy (getrandom), immune to std::srand / framework seeding and reseeded lazily in a forked
// child (docs/telemetry.md, "What setup does"). Thread-safe without locks: all state is
// thread_local; the only shared datum is the relaxed fork-generation counter.
#pragma once

#include "opentelemetry/sdk/trace/id_generator.h"

namespace lens::sdk {

// Declares is_random = true. opentelemetry-cpp 1.19 masks trace flags to W3C Trace Context
// level 1, so spans (exported and propagated) carry only the sampled flag, as native spans do.
class SeedIndependentIdGenerator final : public opentelemetry::sdk::trace::IdGenerator {
 public:
  SeedIndependentIdGenerator() noexcept;

  // 64 random bits; never all zero (a zero draw becomes 1).
  opentelemetry::trace::SpanId GenerateSpanId() noexcept override;
  // 128 random bits; never all zero (a zero draw becomes 1).
  opentelemetry::trace::TraceId GenerateTraceId() noexcept override;
};

}  // namespace lens::sdk
