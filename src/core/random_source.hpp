// RandomSource: the generator behind lens's trace and span ids, seeded from OS entropy
// (getrandom), never from anything a program seeds (std::srand, torch.manual_seed). It is
// wyrand (a Weyl sequence mixed by one 64x64->128-bit multiply: passes BigCrush and PractRand):
// one word of state and about five instructions per 64 bits, which matters on the span hot
// path where a root span takes three draws.
// Thread-safety: one owner; SeedIndependentIdGenerator keeps one per thread, the native span
// path one per recording thread.
#pragma once

#include <array>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace lens::core {

class RandomSource {
 public:
  struct Unseeded {};
  RandomSource() noexcept { seed(); }
  // Left unseeded: the owner calls seed() before the first next().
  explicit RandomSource(Unseeded) noexcept {}

  // Fresh state from getrandom(2); without it, from clocks, pid, thread id and
  // std::random_device mixed through splitmix64.
  void seed() noexcept;

  std::uint64_t next() noexcept {
    state_ += 0xa0761d6478bd642fULL;
    const unsigned __int128 product =
        static_cast<unsigned __int128>(state_) * (state_ ^ 0xe7037ed1a0b428dbULL);
    return static_cast<std::uint64_t>(product >> 64) ^ static_cast<std::uint64_t>(product);
  }

  // 64 random bits, never zero (a span id).
  std::uint64_t next_nonzero() noexcept {
    const std::uint64_t value = next();
    return value == 0 ? 1 : value;
  }
  // 128 random bits as 16 big-endian bytes, never all zero (a trace id), written to `out` with
  // one 16-byte store where the target has one: the caller reads the id back as a whole, and
  // narrower stores would stall that load (no store-to-load forwarding).
  void next_trace_id(std::uint8_t* out) noexcept {
    const std::uint64_t high = next();
    std::uint64_t low = next();
    if ((high | low) == 0) low = 1;
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                     _mm_set_epi64x(static_cast<long long>(__builtin_bswap64(low)),
                                    static_cast<long long>(__builtin_bswap64(high))));
#else
    for (int i = 7; i >= 0; --i) out[7 - i] = static_cast<std::uint8_t>(high >> (8 * i));
    for (int i = 7; i >= 0; --i) out[15 - i] = static_cast<std::uint8_t>(low >> (8 * i));
#endif
  }
  std::array<std::uint8_t, 16> next_trace_id() noexcept {
    std::array<std::uint8_t, 16> bytes;
    next_trace_id(bytes.data());
    return bytes;
  }

 private:
  std::uint64_t state_ = 0;
};

}  // namespace lens::core
