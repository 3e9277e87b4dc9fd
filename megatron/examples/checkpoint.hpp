// Checkpoints of the example trainer, in Megatron's directory layout:
//   <dir>/latest_checkpointed_iteration.txt
//   <dir>/iter_0000050/mp_rank_00[_<stage:03>]/model_optim_rng.pt
// One file per pipeline stage, written by its data-parallel rank 0 (the replicas are identical):
// the stage's parameters, the optimizer state and the iteration. Saving emits
// megatron.save_checkpoint -> .state_dict, .io_write; loading megatron.load_checkpoint -> .io_read.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>

#include "lens/result.hpp"

namespace lens::megatron::example {

// Writes this stage's file (when `writer`); the caller then synchronises the ranks and calls
// mark_latest on rank 0. `inside_span` runs first within the megatron.save_checkpoint span (the
// example's --slow-stage checkpoint).
Status save_checkpoint(const std::string& dir, int iteration, int pipeline_rank, int pipeline_size,
                       bool writer, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                       const std::function<void()>& inside_span = {});

// Records `iteration` as the latest complete checkpoint in `dir`.
Status mark_latest(const std::string& dir, int iteration);

// Loads this stage's file of the latest checkpoint in `dir` into the model and optimizer and
// returns its iteration; nullopt when `dir` holds no checkpoint.
Result<std::optional<int>> load_checkpoint(const std::string& dir, int pipeline_rank,
                                           int pipeline_size, torch::nn::Module& model,
                                           torch::optim::Optimizer& optimizer);

}  // namespace lens::megatron::example
