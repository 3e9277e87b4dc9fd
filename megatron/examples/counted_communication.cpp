// The example trainer's counted sends, receives, all-reduces and barrier (see
// counted_communication.hpp).
#include "counted_communication.hpp"

#include <torch/types.h>

#include <utility>
#include <vector>

namespace lens::megatron::example {

CountedGroups counted_groups(const ParallelState& state) {
  CountedGroups groups;
  if (state.world) {
    std::vector<std::int64_t> ranks;
    for (int r = 0; r < state.world_size; ++r) ranks.push_back(r);
    groups.world = &collective_group("world", std::move(ranks));
  }
  if (state.data_parallel) {
    std::vector<std::int64_t> ranks;
    for (int d = 0; d < state.data_parallel_size; ++d) {
      ranks.push_back(state.pipeline_rank * state.data_parallel_size + d);
    }
    groups.data_parallel = &collective_group("dp", std::move(ranks));
  }
  if (state.pipeline) {
    std::vector<std::int64_t> ranks;
    for (int p = 0; p < state.pipeline_size; ++p) {
      ranks.push_back(p * state.data_parallel_size + state.data_parallel_rank);
    }
    groups.pipeline = &collective_group("pp", std::move(ranks));
  }
  return groups;
}

std::uint64_t bytes_of(const at::Tensor& tensor) {
  return static_cast<std::uint64_t>(tensor.numel()) *
         static_cast<std::uint64_t>(tensor.element_size());
}

void send(ParallelState& state, CollectiveGroup& group, at::Tensor tensor, int to_stage) {
  std::vector<at::Tensor> tensors = {tensor.contiguous()};
  CountedCollective counted(group, "send", bytes_of(tensors[0]));
  state.pipeline->send(tensors, state.pipeline_peer(to_stage), /*tag=*/0)->wait();
}

at::Tensor receive(ParallelState& state, CollectiveGroup& group, at::IntArrayRef shape,
                   int from_stage) {
  std::vector<at::Tensor> tensors = {torch::empty(shape)};
  CountedCollective counted(group, "recv", bytes_of(tensors[0]));
  state.pipeline->recv(tensors, state.pipeline_peer(from_stage), /*tag=*/0)->wait();
  return tensors[0];
}

double all_reduce_sum(const c10::intrusive_ptr<c10d::ProcessGroup>& group, CollectiveGroup* counter,
                      double value) {
  if (!group) return value;
  std::vector<at::Tensor> tensors = {torch::tensor({value}, torch::kDouble)};
  CountedCollective counted(*counter, "all_reduce", sizeof(double));
  group->allreduce(tensors)->wait();
  return tensors[0].item<double>();
}

void barrier(ParallelState& state) {
  if (!state.world) return;
  CountedCollective counted(*counted_groups(state).world, "barrier", 0);
  state.world->barrier()->wait();
}

}  // namespace lens::megatron::example
