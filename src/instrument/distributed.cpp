// broadcast_trace_context, extract_nccl_context and the pipeline-parallel carrier slot
// (lens/distributed.hpp).
#include "lens/distributed.hpp"

#include <sys/random.h>

#include <exception>
#include <mutex>
#include <string>
#include <utility>

namespace lens {

std::optional<Carrier> broadcast_trace_context(
    Collective* collective, int src_rank, const opentelemetry::context::Context& context) noexcept {
  if (collective == nullptr) return std::nullopt;
  try {
    // Receivers send nothing; the collective's broadcast carries the length with the bytes.
    const std::string payload =
        collective->rank() == src_rank ? serialize_context(context) : std::string();
    Result<std::string> received = collective->broadcast(payload, src_rank);
    if (!received.ok()) return std::nullopt;
    return deserialize_context(received.value());
  } catch (const std::exception&) {
    // A Collective implementation that throws must not take the training step with it.
    return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
}

opentelemetry::context::Context extract_nccl_context(
    std::string_view bytes, const opentelemetry::context::Context& base) noexcept {
  std::optional<Carrier> carrier = deserialize_context(bytes);
  if (!carrier) return base;
  return extract_context(*carrier, base);
}

namespace {

std::uint64_t mix64(std::uint64_t z) noexcept {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t load_be(const std::uint8_t* bytes) noexcept {
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | bytes[i];
  return value;
}

void store_be(std::uint64_t value, std::uint8_t* bytes) noexcept {
  for (int i = 7; i >= 0; --i, value >>= 8) bytes[i] = static_cast<std::uint8_t>(value);
}

TraceSeed local_seed() noexcept {
  std::array<std::uint8_t, 16> bytes{};
  std::size_t filled = 0;
  for (int attempt = 0; attempt < 16 && filled < bytes.size(); ++attempt) {
    const ssize_t got = getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got > 0) filled += static_cast<std::size_t>(got);
  }
  if (filled < bytes.size() || TraceSeed(bytes).empty()) bytes[15] |= 1;  // never empty
  return TraceSeed(bytes);
}

}  // namespace

bool TraceSeed::empty() const noexcept {
  for (std::uint8_t byte : bytes_) {
    if (byte != 0) return false;
  }
  return true;
}

std::array<std::uint8_t, 16> TraceSeed::trace_id_for(std::uint64_t n) const noexcept {
  std::array<std::uint8_t, 16> id{};
  if (empty()) return id;
  const std::uint64_t high = mix64(load_be(bytes_.data()) ^ (n * 0x9e3779b97f4a7c15ULL));
  std::uint64_t low = mix64(load_be(bytes_.data() + 8) + n + high);
  if ((high | low) == 0) low = 1;
  store_be(high, id.data());
  store_be(low, id.data() + 8);
  return id;
}

TraceSeed share_trace_seed(Collective* collective, int src_rank) noexcept {
  const TraceSeed own = local_seed();
  if (collective == nullptr) return own;
  try {
    const std::string payload = collective->rank() == src_rank
                                    ? std::string(own.bytes().begin(), own.bytes().end())
                                    : std::string();
    Result<std::string> received = collective->broadcast(payload, src_rank);
    if (!received.ok() || received.value().size() != 16) return own;
    std::array<std::uint8_t, 16> bytes{};
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      bytes[i] = static_cast<std::uint8_t>(received.value()[i]);
    }
    const TraceSeed shared(bytes);
    return shared.empty() ? own : shared;
  } catch (...) {
    // A Collective implementation that throws must not take the training run with it.
    return own;
  }
}

namespace {

// Written once per iteration and read a few times per step: a mutex costs nothing here and keeps
// the map's copy safe when the schedule runs on another thread.
std::mutex& pp_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::optional<Carrier>& pp_slot() {
  static std::optional<Carrier> slot;
  return slot;
}

}  // namespace

void set_pp_trace_carrier(std::optional<Carrier> carrier) noexcept {
  try {
    std::lock_guard<std::mutex> lock(pp_mutex());
    pp_slot() = std::move(carrier);
  } catch (...) {
    // Locking failed (EDEADLK): the slot keeps its previous carrier.
  }
}

std::optional<Carrier> get_pp_trace_carrier() noexcept {
  try {
    std::lock_guard<std::mutex> lock(pp_mutex());
    return pp_slot();
  } catch (...) {
    return std::nullopt;  // copying the map ran out of memory
  }
}

}  // namespace lens
