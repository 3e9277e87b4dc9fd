// The example trainer's communication, each transfer counted on lens's collective counters
// (lens/collectives.hpp) under Megatron's group names: the pipeline's point-to-point sends and
// receives, small all-reduces and the barrier. Called on the training thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "lens/collectives.hpp"
#include "parallel_state.hpp"

namespace lens::megatron::example {

// The counters of this rank's process groups, named as Megatron names them: "dp" (this stage's
// data-parallel replicas), "pp" (this replica's pipeline stages), "world". A group this rank
// does not have (size 1) has none.
struct CountedGroups {
  CollectiveGroup* world = nullptr;
  CollectiveGroup* data_parallel = nullptr;
  CollectiveGroup* pipeline = nullptr;
};

CountedGroups counted_groups(const ParallelState& state);

// The bytes a tensor's elements take.
std::uint64_t bytes_of(const at::Tensor& tensor);

// Sends `tensor` to pipeline stage `to_stage`, counted on `group`.
void send(ParallelState& state, CollectiveGroup& group, at::Tensor tensor, int to_stage);

// Receives a float tensor of `shape` from pipeline stage `from_stage`, counted on `group`.
at::Tensor receive(ParallelState& state, CollectiveGroup& group, at::IntArrayRef shape,
                   int from_stage);

// Sums `value` over a group, counted on `counter` (a no-op without a group).
double all_reduce_sum(const c10::intrusive_ptr<c10d::ProcessGroup>& group, CollectiveGroup* counter,
                      double value);

// Waits for every rank, counted on "world" (a no-op for one process).
void barrier(ParallelState& state);

}  // namespace lens::megatron::example
