// Fuzz target: the Megatron-style trainer's command line (parse_training_args: Megatron's flags and
// the three --otel-* flags), then what the trainer does with it: the parallel layout for a job
// size, the training resource attributes, and the --otel-* overrides applied and validated.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "lens/config.hpp"
#include "lens/megatron/training_args.hpp"
#include "lens/rank_info.hpp"
#include "lens/validate.hpp"

// Input: byte 0 is the world size - 1 (rank 0 of 1..256 ranks); the rest is argv, NUL-separated.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const int world_size = data[0] + 1;
  const std::vector<std::string> argv =
      lens::fuzz::split(lens::fuzz::as_text(data + 1, size - 1), '\0');

  auto parsed = lens::megatron::parse_training_args(argv);
  if (!parsed.ok()) {
    if (parsed.message().empty()) {
      lens::fuzz::fail("parse_training_args failed without a message");
    }
    return 0;
  }
  lens::megatron::TrainingArgs& args = *parsed;

  lens::Config config;
  config.apply(args.otel);
  (void)lens::validate(config);

  auto rank = lens::RankInfo::make(0, world_size);
  if (!rank.ok()) {
    lens::fuzz::fail("RankInfo::make(0, " + std::to_string(world_size) + ") failed");
  }
  if (lens::Status status = lens::megatron::resolve_parallelism(args, *rank); !status.ok()) {
    return 0;
  }
  const std::int64_t product = std::int64_t{args.tensor_model_parallel_size} *
                               args.pipeline_model_parallel_size * args.data_parallel_size;
  if (product != world_size) {
    lens::fuzz::fail("tensor x pipeline x data parallel sizes are not the world size " +
                     std::to_string(world_size));
  }
  if (args.global_batch() % (std::int64_t{args.micro_batch_size} * args.data_parallel_size) != 0 ||
      args.num_microbatches() < 1) {
    lens::fuzz::fail("the global batch is not a whole number of micro-batches per rank");
  }
  (void)args.precision();
  (void)lens::megatron::training_resource_attributes(args, *rank);
  return 0;
}
