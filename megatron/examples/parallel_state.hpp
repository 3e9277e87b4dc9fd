// The example trainer's process groups over c10d/Gloo: the world group (also lens's Collective),
// the data-parallel group of this pipeline stage and the pipeline group of this data-parallel
// replica. Ranks are laid out pipeline-outermost, as Megatron does with tensor parallelism 1:
// pipeline stage = rank / data-parallel size, data-parallel rank = rank % data-parallel size.
// A single process gets no groups at all (nothing to communicate).
#pragma once

#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "lens/c10d_collective.hpp"
#include "lens/env.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"

namespace lens::megatron::example {

struct ParallelState {
  int rank = 0;
  int world_size = 1;
  int data_parallel_size = 1;
  int data_parallel_rank = 0;
  int pipeline_size = 1;
  int pipeline_rank = 0;
  c10::intrusive_ptr<c10d::ProcessGroup> world;          // null for one process
  c10::intrusive_ptr<c10d::ProcessGroup> data_parallel;  // null when data_parallel_size == 1
  c10::intrusive_ptr<c10d::ProcessGroup> pipeline;       // null when pipeline_size == 1
  std::unique_ptr<C10dCollective> collective;            // over `world`; null for one process

  bool first_stage() const { return pipeline_rank == 0; }
  bool last_stage() const { return pipeline_rank == pipeline_size - 1; }
  // Ranks in the pipeline group: stage s of this replica.
  int pipeline_peer(int stage) const { return stage; }
};

// Rendezvous through a TCPStore at MASTER_ADDR:MASTER_PORT, as torchrun sets them (its agent
// serves the store); otherwise rank 0 serves it — for mpirun or SLURM set the two variables
// yourself. Errors name the variable and its value.
Result<ParallelState> init_parallel_state(const RankInfo& rank, int data_parallel_size,
                                          int pipeline_size, const Env& env = Env::process());

}  // namespace lens::megatron::example
