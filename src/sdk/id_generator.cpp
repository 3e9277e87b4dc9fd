// Per-thread core::RandomSource (wyrand seeded from getrandom(2)), reseeded when the fork
// generation changes. Thread-safety: see id_generator.hpp.
#include "sdk/id_generator.hpp"

#include <array>
#include <cstdint>

#include "core/fork_generation.hpp"
#include "core/random_source.hpp"

namespace lens::sdk {

namespace {

constexpr std::uint64_t kUnseeded = ~std::uint64_t{0};

struct ThreadRng {
  core::RandomSource source{core::RandomSource::Unseeded{}};
  std::uint64_t generation = kUnseeded;

  core::RandomSource& get() noexcept {
    const std::uint64_t current = core::fork_generation();
    if (generation != current) {  // first use on this thread, or a forked child
      source.seed();
      generation = current;
    }
    return source;
  }
};

thread_local ThreadRng t_rng;

}  // namespace

SeedIndependentIdGenerator::SeedIndependentIdGenerator() noexcept : IdGenerator(true) {
  core::ensure_fork_handler();
}

opentelemetry::trace::SpanId SeedIndependentIdGenerator::GenerateSpanId() noexcept {
  std::uint64_t value = t_rng.get().next_nonzero();
  std::uint8_t bytes[8];
  for (int i = 7; i >= 0; --i, value >>= 8) bytes[i] = static_cast<std::uint8_t>(value);
  return opentelemetry::trace::SpanId(bytes);
}

opentelemetry::trace::TraceId SeedIndependentIdGenerator::GenerateTraceId() noexcept {
  const std::array<std::uint8_t, 16> bytes = t_rng.get().next_trace_id();
  return opentelemetry::trace::TraceId(
      opentelemetry::nostd::span<const std::uint8_t, 16>(bytes.data(), 16));
}

}  // namespace lens::sdk
