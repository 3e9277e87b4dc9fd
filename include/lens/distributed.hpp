// Trace context across the ranks of a job (docs/distributed.md): broadcast rank 0's
// current context over the job's Collective once per iteration, so that spans on other ranks can
// link to it; the pipeline-parallel carrier slot that hands the broadcast carrier to a schedule
// deep in the call stack; and the context carried as bytes over NCCL or MPI.
// Thread-safety: every function may be called from any thread; the carrier slot is guarded.
#pragma once

#include <opentelemetry/context/context.h>
#include <opentelemetry/context/runtime_context.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "lens/propagation.hpp"
#include "lens/resource.hpp"

namespace lens {

// A collective call: every rank of `collective` must call it with the same `src_rank`, or the job
// deadlocks — gate it only on conditions that are the same on every rank (never on
// is_exporting()). On `src_rank` the current context is serialised (serialize_context); the
// bytes go out in one broadcast and every rank, the source included, returns the decoded carrier.
// A rank whose source has no active span gets an empty carrier, not nullopt.
// nullopt when `collective` is null (no distributed runtime), when the broadcast fails, or when
// what arrives is not a carrier; the failure is never thrown. Costs one small broadcast (about 100
// bytes): call it once per iteration, never per microbatch.
std::optional<Carrier> broadcast_trace_context(
    Collective* collective, int src_rank = 0,
    const opentelemetry::context::Context& context =
        opentelemetry::context::RuntimeContext::GetCurrent()) noexcept;

// The context in `bytes` made by serialize_context on another rank, on top of `base`; `base`
// itself when the bytes are not a serialised carrier.
opentelemetry::context::Context extract_nccl_context(
    std::string_view bytes, const opentelemetry::context::Context& base =
                                opentelemetry::context::RuntimeContext::GetCurrent()) noexcept;

// The seed from which every rank derives the same trace id for the same item (a training
// iteration), so that "iteration N" is one trace across all ranks and a ratio sampler keeps or
// drops it on every rank alike (start the span with lens::NewTrace{seed.trace_id_for(n), ...}).
// A default-constructed seed is empty and trace_id_for gives all zero (a random id).
class TraceSeed {
 public:
  TraceSeed() noexcept = default;
  explicit TraceSeed(const std::array<std::uint8_t, 16>& bytes) noexcept : bytes_(bytes) {}

  bool empty() const noexcept;
  const std::array<std::uint8_t, 16>& bytes() const noexcept { return bytes_; }
  // A well-mixed 128-bit id (both halves through a 64-bit finaliser), never all zero; the same
  // for the same seed and `n` on every rank; all zero when the seed is empty.
  std::array<std::uint8_t, 16> trace_id_for(std::uint64_t n) const noexcept;

 private:
  std::array<std::uint8_t, 16> bytes_{};
};

// A collective call (same rule as broadcast_trace_context): `src_rank` draws 16 random bytes from
// the OS and broadcasts them; every rank returns that seed. Without a collective, or when the
// broadcast fails, each rank returns its own random seed (its traces are then its own: never
// wrong, only not shared). Call it once per run, e.g. when training starts.
TraceSeed share_trace_seed(Collective* collective, int src_rank = 0) noexcept;

// The pipeline-parallel carrier slot: the training loop publishes the carrier it broadcast before
// each step (nullopt to clear it); the pipeline schedule reads it around its receives to create
// `megatron.pp.recv_forward.linked` spans. Process-wide.
void set_pp_trace_carrier(std::optional<Carrier> carrier) noexcept;
std::optional<Carrier> get_pp_trace_carrier() noexcept;

}  // namespace lens
