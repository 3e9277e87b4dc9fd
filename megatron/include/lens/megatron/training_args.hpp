// The training arguments of the Megatron-style trainer: the flags a Megatron user knows
// (`--tensor-model-parallel-size`, `--micro-batch-size`, ...) plus the three `--otel-*` flags
// (docs/megatron.md, "Training arguments"), parsed with one-line errors that name the flag, the bad
// value and what is accepted. Pure: no environment, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lens/attributes.hpp"
#include "lens/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"

namespace lens::megatron {

struct TrainingArgs {
  // Parallelism. data_parallel_size is derived: world size / (tensor × pipeline).
  int tensor_model_parallel_size = 1;
  int pipeline_model_parallel_size = 1;
  int data_parallel_size = 1;
  // Batches: global = micro × data-parallel × accumulation steps (Megatron's rule); when not
  // given, one accumulation step.
  int micro_batch_size = 1;
  std::optional<int> global_batch_size;
  // Model (defaults are a tiny GPT that trains in seconds on a CPU).
  int seq_length = 32;
  int num_layers = 2;
  int hidden_size = 64;
  int num_attention_heads = 4;
  // Schedule.
  int train_iters = 50;
  int eval_interval = 10;
  int eval_iters = 2;
  int log_interval = 10;
  // Checkpoints: empty = none; save_interval 0 = only at the end when --save is given.
  std::string save;
  std::string load;
  int save_interval = 0;
  std::string ckpt_format = "torch";
  // Precision and optimiser.
  bool fp16 = false;
  bool bf16 = false;
  double lr = 1e-3;
  // Telemetry: the --otel-* flags, which override the MEGATRON_OTEL_* / NEMO_LENS_* environment.
  CliOverrides otel;
  // --help was given: print help_text() and exit 0.
  bool help = false;

  // "fp16", "bf16" or "fp32".
  std::string_view precision() const noexcept;
  // global_batch_size, or micro × data-parallel when it was not given.
  int global_batch() const noexcept;
  // Micro-batches per step and data-parallel rank.
  int num_microbatches() const noexcept;
};

// Accepted checkpoint formats.
inline constexpr std::string_view kAcceptedCkptFormats =
    "torch, torch_dist, torch_dcp, zarr, fsdp_dtensor";

// Parses argv-style arguments (without the program name): `--flag value` and `--flag=value`.
// Unknown flags, missing values, non-numbers, values out of range, --fp16 with --bf16 and a
// repeated flag are errors.
Result<TrainingArgs> parse_training_args(const std::vector<std::string>& args);

// Checks the arguments against the job's size and fills data_parallel_size: the world size must
// be a multiple of tensor × pipeline, and the global batch a multiple of micro × data-parallel;
// the pipeline cannot have more stages than layers.
Status resolve_parallelism(TrainingArgs& args, const RankInfo& rank);

// The usage text for --help: every flag with its default.
std::string help_text(std::string_view program);

// The training resource attributes (docs/megatron.md, "Training arguments"): dl.local_rank,
// dl.tensor_parallel.size, dl.pipeline_parallel.size, dl.data_parallel.size, dl.batch_size,
// dl.sequence_length, megatron.num_layers, megatron.hidden_size, megatron.num_attention_heads,
// megatron.train_iters, megatron.micro_batch_size (integers), megatron.ckpt_format and
// megatron.precision (strings); and the rank's place, in Megatron's order (tensor-parallel
// fastest, then data-parallel, then pipeline): dl.tensor_parallel.rank, dl.data_parallel.rank,
// dl.pipeline_parallel.rank (integers). Call after resolve_parallelism.
Attributes training_resource_attributes(const TrainingArgs& args, const RankInfo& rank);

}  // namespace lens::megatron
