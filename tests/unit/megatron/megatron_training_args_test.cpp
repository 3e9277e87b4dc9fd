// The trainer's flags (lens/megatron/training_args.hpp): values land in the right fields, every bad
// input gets its exact one-line error, parallel sizes are checked against the job size, and the 13
// training resource attributes (docs/megatron.md, "Training arguments") have their documented
// types.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lens/megatron/training_args.hpp"

namespace lens::megatron {
namespace {

TrainingArgs parse_ok(const std::vector<std::string>& args) {
  Result<TrainingArgs> parsed = parse_training_args(args);
  EXPECT_TRUE(parsed.ok()) << parsed.message();
  return parsed.ok() ? *parsed : TrainingArgs{};
}

std::string parse_error(const std::vector<std::string>& args) {
  Result<TrainingArgs> parsed = parse_training_args(args);
  EXPECT_FALSE(parsed.ok());
  return parsed.ok() ? std::string() : parsed.message();
}

RankInfo rank_on_node(int rank, int world_size, int local_rank = 0) {
  Result<RankInfo> info = RankInfo::make(rank, world_size, local_rank, world_size);
  EXPECT_TRUE(info.ok()) << info.message();
  return *info;
}

TEST(TrainingArgs, DefaultsDescribeATinySingleProcessRun) {
  const TrainingArgs args = parse_ok({});
  EXPECT_EQ(args.tensor_model_parallel_size, 1);
  EXPECT_EQ(args.pipeline_model_parallel_size, 1);
  EXPECT_EQ(args.micro_batch_size, 1);
  EXPECT_EQ(args.global_batch_size, std::nullopt);
  EXPECT_EQ(args.train_iters, 50);
  EXPECT_EQ(args.log_interval, 10);
  EXPECT_EQ(args.ckpt_format, "torch");
  EXPECT_EQ(args.precision(), "fp32");
  EXPECT_FALSE(args.otel.otel_enabled);
  EXPECT_EQ(args.otel.service_name, std::nullopt);
  EXPECT_EQ(args.otel.span_groups, std::nullopt);
  EXPECT_FALSE(args.help);
}

TEST(TrainingArgs, EveryFlagLandsInItsField) {
  const TrainingArgs args = parse_ok({"--tensor-model-parallel-size",
                                      "2",
                                      "--pipeline-model-parallel-size=2",
                                      "--micro-batch-size",
                                      "4",
                                      "--global-batch-size",
                                      "32",
                                      "--seq-length",
                                      "128",
                                      "--num-layers",
                                      "4",
                                      "--hidden-size",
                                      "256",
                                      "--num-attention-heads",
                                      "8",
                                      "--train-iters",
                                      "200",
                                      "--eval-interval",
                                      "20",
                                      "--eval-iters",
                                      "5",
                                      "--log-interval",
                                      "5",
                                      "--save",
                                      "/tmp/ckpt",
                                      "--load",
                                      "/tmp/ckpt-in",
                                      "--save-interval",
                                      "50",
                                      "--ckpt-format",
                                      "torch_dist",
                                      "--bf16",
                                      "--lr",
                                      "3e-4",
                                      "--otel-enabled",
                                      "--otel-service-name",
                                      "gpt-run",
                                      "--otel-span-groups",
                                      "per_step,checkpoint"});
  EXPECT_EQ(args.tensor_model_parallel_size, 2);
  EXPECT_EQ(args.pipeline_model_parallel_size, 2);
  EXPECT_EQ(args.micro_batch_size, 4);
  EXPECT_EQ(args.global_batch_size, 32);
  EXPECT_EQ(args.seq_length, 128);
  EXPECT_EQ(args.num_layers, 4);
  EXPECT_EQ(args.hidden_size, 256);
  EXPECT_EQ(args.num_attention_heads, 8);
  EXPECT_EQ(args.train_iters, 200);
  EXPECT_EQ(args.eval_interval, 20);
  EXPECT_EQ(args.eval_iters, 5);
  EXPECT_EQ(args.log_interval, 5);
  EXPECT_EQ(args.save, "/tmp/ckpt");
  EXPECT_EQ(args.load, "/tmp/ckpt-in");
  EXPECT_EQ(args.save_interval, 50);
  EXPECT_EQ(args.ckpt_format, "torch_dist");
  EXPECT_EQ(args.precision(), "bf16");
  EXPECT_DOUBLE_EQ(args.lr, 3e-4);
  EXPECT_TRUE(args.otel.otel_enabled);
  EXPECT_EQ(args.otel.service_name, "gpt-run");
  EXPECT_EQ(args.otel.span_groups, "per_step,checkpoint");
  EXPECT_EQ(parse_ok({"--fp16"}).precision(), "fp16");
  EXPECT_TRUE(parse_ok({"--help"}).help);
}

TEST(TrainingArgs, BadInputNamesTheFlagTheValueAndWhatIsAccepted) {
  EXPECT_EQ(parse_error({"--micro-batch-size", "0"}),
            "Invalid value '0' for --micro-batch-size; accepted: an integer from 1 to 2147483647");
  EXPECT_EQ(parse_error({"--train-iters=ten"}),
            "Invalid value 'ten' for --train-iters; accepted: an integer from 1 to 2147483647");
  EXPECT_EQ(parse_error({"--seq-length", "99999999999"}),
            "Invalid value '99999999999' for --seq-length; accepted: an integer from 1 to "
            "2147483647");
  EXPECT_EQ(parse_error({"--eval-iters", "-1"}),
            "Invalid value '-1' for --eval-iters; accepted: an integer from 0 to 2147483647");
  EXPECT_EQ(parse_error({"--lr", "0"}),
            "Invalid value '0' for --lr; accepted: a finite number > 0");
  EXPECT_EQ(parse_error({"--lr", "nan"}),
            "Invalid value 'nan' for --lr; accepted: a finite number > 0");
  EXPECT_EQ(parse_error({"--ckpt-format", "pickle"}),
            "Invalid value 'pickle' for --ckpt-format; accepted: torch, torch_dist, torch_dcp, "
            "zarr, fsdp_dtensor");
  EXPECT_EQ(parse_error({"--save", ""}), "Invalid value '' for --save; accepted: a non-empty path");
  EXPECT_EQ(parse_error({"--otel-service-name", "  "}),
            "Invalid value '  ' for --otel-service-name; accepted: a non-blank service name");
  EXPECT_EQ(parse_error({"--fp16", "--bf16"}),
            "Flags --fp16 and --bf16 exclude each other; accepted: at most one of them");
  EXPECT_EQ(parse_error({"--hidden-size", "100", "--num-attention-heads", "3"}),
            "--hidden-size 100 is not a multiple of --num-attention-heads 3; accepted: a hidden "
            "size divisible by the number of heads");
  EXPECT_EQ(parse_error({"--tensor-parallel", "2"}),
            "Unknown flag '--tensor-parallel'; run with --help for the accepted flags");
  EXPECT_EQ(parse_error({"train"}), "Unexpected argument 'train'; accepted: the flags of --help");
  EXPECT_EQ(parse_error({"--seq-length"}), "Flag --seq-length needs a value: --seq-length N");
  EXPECT_EQ(parse_error({"--fp16=yes"}), "Flag --fp16 takes no value (got 'yes')");
  EXPECT_EQ(parse_error({"--lr", "1", "--lr=2"}), "Flag --lr is given twice; accepted: once");
}

// The message of resolve_parallelism for rank 0 of `world_size` processes on one node.
std::string resolve_error(TrainingArgs& args, int world_size) {
  return resolve_parallelism(args, rank_on_node(0, world_size)).message();
}

TEST(TrainingArgs, ParallelismIsCheckedAgainstTheJobSize) {
  TrainingArgs args = parse_ok({"--tensor-model-parallel-size", "2",
                                "--pipeline-model-parallel-size", "2", "--micro-batch-size", "2"});
  ASSERT_TRUE(resolve_parallelism(args, rank_on_node(0, 8)).ok());
  EXPECT_EQ(args.data_parallel_size, 2);
  EXPECT_EQ(args.global_batch(), 4);  // micro x data-parallel when not given
  EXPECT_EQ(args.num_microbatches(), 1);

  EXPECT_EQ(resolve_error(args, 6),
            "World size 6 is not a multiple of --tensor-model-parallel-size 2 x "
            "--pipeline-model-parallel-size 2; accepted: parallel sizes whose product divides the "
            "number of processes");

  TrainingArgs batch = parse_ok({"--micro-batch-size", "2", "--global-batch-size", "6"});
  EXPECT_EQ(resolve_error(batch, 2),
            "--global-batch-size 6 is not a multiple of --micro-batch-size 2 x data-parallel size "
            "2; accepted: a multiple of 4");
  TrainingArgs accumulate = parse_ok({"--micro-batch-size", "2", "--global-batch-size", "8"});
  ASSERT_TRUE(resolve_parallelism(accumulate, rank_on_node(1, 2)).ok());
  EXPECT_EQ(accumulate.num_microbatches(), 2);

  TrainingArgs stages = parse_ok({"--pipeline-model-parallel-size", "4", "--num-layers", "2"});
  EXPECT_EQ(resolve_error(stages, 4),
            "--pipeline-model-parallel-size 4 exceeds --num-layers 2; accepted: at most one stage "
            "per layer");

  // Found by fuzzing: the product used to wrap to 0 and the modulo killed the trainer (SIGFPE).
  TrainingArgs huge = parse_ok({"--micro-batch-size", "1073741824", "--global-batch-size", "8"});
  EXPECT_EQ(resolve_error(huge, 4),
            "--micro-batch-size 1073741824 x data-parallel size 4 overflows a batch size; "
            "accepted: a product up to 2147483647");
  EXPECT_EQ(huge.num_microbatches(), 0);  // saturated, never a division by zero
}

TEST(TrainingArgs, ResourceAttributesAreTheSeedPagesThirteenAndTheParallelRanks) {
  TrainingArgs args = parse_ok({"--pipeline-model-parallel-size", "2", "--micro-batch-size", "2",
                                "--global-batch-size", "8", "--seq-length", "64", "--fp16"});
  const RankInfo rank = rank_on_node(3, 4, 1);
  ASSERT_TRUE(resolve_parallelism(args, rank).ok());
  const Attributes expected = {
      {"dl.local_rank", std::int64_t{1}},
      {"dl.tensor_parallel.rank", std::int64_t{0}},
      {"dl.data_parallel.rank", std::int64_t{1}},  // rank 3 of DP 2 x PP 2
      {"dl.pipeline_parallel.rank", std::int64_t{1}},
      {"dl.tensor_parallel.size", std::int64_t{1}},
      {"dl.pipeline_parallel.size", std::int64_t{2}},
      {"dl.data_parallel.size", std::int64_t{2}},
      {"dl.batch_size", std::int64_t{8}},
      {"dl.sequence_length", std::int64_t{64}},
      {"megatron.num_layers", std::int64_t{2}},
      {"megatron.hidden_size", std::int64_t{64}},
      {"megatron.num_attention_heads", std::int64_t{4}},
      {"megatron.train_iters", std::int64_t{50}},
      {"megatron.micro_batch_size", std::int64_t{2}},
      {"megatron.ckpt_format", std::string("torch")},
      {"megatron.precision", std::string("fp16")},
  };
  EXPECT_EQ(training_resource_attributes(args, rank), expected);
}

TEST(TrainingArgs, HelpListsEveryFlagWithItsDefault) {
  const std::string help = help_text("simple_train_loop");
  EXPECT_EQ(help.rfind("usage: simple_train_loop [flags]\n", 0), 0U);
  for (const char* flag : {"--tensor-model-parallel-size N",
                           "--pipeline-model-parallel-size N",
                           "--micro-batch-size N",
                           "--global-batch-size N",
                           "--seq-length N",
                           "--num-layers N",
                           "--hidden-size N",
                           "--num-attention-heads N",
                           "--train-iters N",
                           "--eval-interval N",
                           "--eval-iters N",
                           "--log-interval N",
                           "--save DIR",
                           "--load DIR",
                           "--save-interval N",
                           "--ckpt-format FORMAT",
                           "--fp16",
                           "--bf16",
                           "--lr RATE",
                           "--otel-enabled",
                           "--otel-service-name NAME",
                           "--otel-span-groups SPEC",
                           "--help"}) {
    EXPECT_NE(help.find(std::string("  ") + flag + " "), std::string::npos) << flag;
  }
  EXPECT_NE(help.find("(default 50)"), std::string::npos);
}

}  // namespace
}  // namespace lens::megatron
