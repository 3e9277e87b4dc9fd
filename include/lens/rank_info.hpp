// Where this process sits in a distributed job: rank, world size, local rank, node rank.
// RankInfo::detect reads the variables that launchers set (torchrun, Open MPI, MPICH/PMI,
// SLURM). Value type; detect() is thread-safe as long as the environment is not mutated.
#pragma once

#include <string>

#include "lens/env.hpp"
#include "lens/result.hpp"

namespace lens {

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  // Which launcher's variables were used: "torchrun", "openmpi", "pmi", "slurm" or "default"
  // (no launcher found: a single process), or "explicit" when built by hand.
  std::string source = "default";

  // Detection order (the first launcher whose rank variable is set wins):
  //   1. torchrun:  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK
  //   2. Open MPI:  OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE,NODE_RANK}
  //   3. MPICH/PMI: PMI_RANK, PMI_SIZE (MPI_LOCALRANKID, MPI_LOCALNRANKS when present)
  //   4. SLURM:     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID
  // Errors name the variable, its value and what is accepted (non-negative integers,
  // rank < world size, local rank < local world size).
  static Result<RankInfo> detect(const Env& env = Env::process());

  // A rank info given explicitly (for tests and callers that know their topology).
  static Result<RankInfo> make(int rank, int world_size, int local_rank = 0,
                               int local_world_size = 1, int node_rank = 0);
};

}  // namespace lens
