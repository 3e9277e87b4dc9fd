// RandomSource (see random_source.hpp).
#include "core/random_source.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <random>
#include <thread>

namespace lens::core {
namespace {

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

}  // namespace

void RandomSource::seed() noexcept {
  if (!os_entropy(&state_, sizeof(state_))) {
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
    state_ ^= splitmix64(mix);
  }
}

}  // namespace lens::core
