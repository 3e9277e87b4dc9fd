// broadcast_trace_context, extract_nccl_context and the pipeline-parallel carrier slot
// (lens/distributed.hpp).
#include "lens/distributed.hpp"

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
