// Trace context across the ranks of a job (SPEC Part 2 §I.2, §I.4, §I.5): broadcast rank 0's
// current context over the job's Collective once per iteration, so that spans on other ranks can
// link to it; the pipeline-parallel carrier slot that hands the broadcast carrier to a schedule
// deep in the call stack; and the context carried as bytes over NCCL or MPI.
// Thread-safety: every function may be called from any thread; the carrier slot is guarded.
#pragma once

#include <opentelemetry/context/context.h>
#include <opentelemetry/context/runtime_context.h>

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

// The pipeline-parallel carrier slot: the training loop publishes the carrier it broadcast before
// each step (nullopt to clear it); the pipeline schedule reads it around its receives to create
// `megatron.pp.recv_forward.linked` spans. Process-wide.
void set_pp_trace_carrier(std::optional<Carrier> carrier) noexcept;
std::optional<Carrier> get_pp_trace_carrier() noexcept;

}  // namespace lens
