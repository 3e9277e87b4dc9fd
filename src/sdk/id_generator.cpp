// Per-thread xoshiro256** state seeded from getrandom(2), reseeded when the fork generation
// changes. Thread-safety: see id_generator.hpp.
#include "sdk/id_generator.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>

#include "core/next_trace_id.hpp"
#include "sdk/fork_generation.hpp"

namespace lens::sdk {

namespace {

constexpr std::uint64_t kUnseeded = ~std::uint64_t{0};

std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

std::uint64_t splitmix64(std::uint64_t& x) noexcept {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Fills `out` with OS entropy; false when getrandom is unavailable or interrupted for good.
bool os_entropy(void* out, std::size_t size) noexcept {
  auto* bytes = static_cast<unsigned char*>(out);
  std::size_t filled = 0;
  int attempts = 0;
  while (filled < size && attempts++ < 16) {
    const ssize_t got = getrandom(bytes + filled, size - filled, 0);
    if (got > 0) filled += static_cast<std::size_t>(got);
  }
  return filled == size;
}

struct ThreadRng {
  std::array<std::uint64_t, 4> s{};
  std::uint64_t generation = kUnseeded;

  void seed(std::uint64_t current_generation) noexcept {
    if (!os_entropy(s.data(), sizeof(s))) {
      // Fallback, still independent of any user-seedable global: random_device (may throw on
      // exotic platforms), the clocks, pid and thread id, mixed through splitmix64.
      std::uint64_t mix = static_cast<std::uint64_t>(
          std::chrono::high_resolution_clock::now().time_since_epoch().count());
      mix ^= static_cast<std::uint64_t>(getpid()) << 32;
      mix ^= std::hash<std::thread::id>{}(std::this_thread::get_id());
      try {
        std::random_device device;
        mix ^= (static_cast<std::uint64_t>(device()) << 32) | device();
      } catch (...) {
      }
      for (auto& word : s) word ^= splitmix64(mix);
    }
    if ((s[0] | s[1] | s[2] | s[3]) == 0) s[0] = 1;  // xoshiro's one forbidden state
    generation = current_generation;
  }

  std::uint64_t next() noexcept {
    const std::uint64_t current = fork_generation();
    if (generation != current) seed(current);  // first use on this thread, or a forked child
    const std::uint64_t result = rotl(s[1] * 5, 7) * 9;
    const std::uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

thread_local ThreadRng t_rng;

}  // namespace

SeedIndependentIdGenerator::SeedIndependentIdGenerator() noexcept : IdGenerator(true) {
  ensure_fork_handler();
}

opentelemetry::trace::SpanId SeedIndependentIdGenerator::GenerateSpanId() noexcept {
  std::uint64_t value = t_rng.next();
  if (value == 0) value = 1;
  std::uint8_t bytes[8];
  for (int i = 7; i >= 0; --i, value >>= 8) bytes[i] = static_cast<std::uint8_t>(value);
  return opentelemetry::trace::SpanId(bytes);
}

opentelemetry::trace::TraceId SeedIndependentIdGenerator::GenerateTraceId() noexcept {
  if (std::array<std::uint8_t, 16> requested; core::take_next_trace_id(requested)) {
    // A root in a trace id chosen by the caller.
    return opentelemetry::trace::TraceId(
        opentelemetry::nostd::span<const std::uint8_t, 16>(requested.data(), 16));
  }
  std::uint64_t high = t_rng.next();
  std::uint64_t low = t_rng.next();
  if ((high | low) == 0) low = 1;
  std::uint8_t bytes[16];
  for (int i = 7; i >= 0; --i, high >>= 8) bytes[i] = static_cast<std::uint8_t>(high);
  for (int i = 15; i >= 8; --i, low >>= 8) bytes[i] = static_cast<std::uint8_t>(low);
  return opentelemetry::trace::TraceId(bytes);
}

}  // namespace lens::sdk
