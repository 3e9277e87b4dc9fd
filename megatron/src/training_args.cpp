// Parsing and checking of the trainer's flags (lens/megatron/training_args.hpp).
#include "lens/megatron/training_args.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace lens::megatron {
namespace {

// One flag: how to store its value, and the help line. Flags without a value are booleans.
struct Flag {
  std::string_view name;
  std::string_view value_name;  // empty for boolean flags
  std::string_view help;
  std::function<Status(TrainingArgs&, const std::string& flag, const std::string& value)> store;
};

Result<long long> parse_integer(const std::string& flag, const std::string& value,
                                long long minimum) {
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || errno != 0 || end != value.c_str() + value.size() || parsed < minimum ||
      parsed > std::numeric_limits<int>::max()) {
    return Error("Invalid value '" + value + "' for " + flag + "; accepted: an integer from " +
                 std::to_string(minimum) + " to " +
                 std::to_string(std::numeric_limits<int>::max()));
  }
  return parsed;
}

// An integer field, or an optional one (set once given).
template <typename Field>
std::function<Status(TrainingArgs&, const std::string&, const std::string&)> int_into(
    Field TrainingArgs::*field, long long minimum) {
  return [field, minimum](TrainingArgs& args, const std::string& flag,
                          const std::string& value) -> Status {
    Result<long long> parsed = parse_integer(flag, value, minimum);
    if (!parsed.ok()) return parsed.error();
    args.*field = static_cast<int>(*parsed);
    return {};
  };
}

std::function<Status(TrainingArgs&, const std::string&, const std::string&)> string_into(
    std::string TrainingArgs::*field) {
  return [field](TrainingArgs& args, const std::string& flag, const std::string& value) -> Status {
    if (value.empty()) {
      return Error("Invalid value '' for " + flag + "; accepted: a non-empty path");
    }
    args.*field = value;
    return {};
  };
}

// A flag without a value that turns a field on.
std::function<Status(TrainingArgs&, const std::string&, const std::string&)> set_true(
    bool TrainingArgs::*field) {
  return [field](TrainingArgs& args, const std::string&, const std::string&) -> Status {
    args.*field = true;
    return {};
  };
}

const std::vector<Flag>& flags() {
  static const std::vector<Flag> table = {
      {"--tensor-model-parallel-size", "N", "tensor-parallel group size (default 1)",
       int_into(&TrainingArgs::tensor_model_parallel_size, 1)},
      {"--pipeline-model-parallel-size", "N", "pipeline stages (default 1)",
       int_into(&TrainingArgs::pipeline_model_parallel_size, 1)},
      {"--micro-batch-size", "N", "sequences per micro-batch (default 1)",
       int_into(&TrainingArgs::micro_batch_size, 1)},
      {"--global-batch-size", "N",
       "sequences per step over all data-parallel ranks (default micro-batch size x data-parallel "
       "size)",
       int_into(&TrainingArgs::global_batch_size, 1)},
      {"--seq-length", "N", "tokens per sequence (default 32)",
       int_into(&TrainingArgs::seq_length, 1)},
      {"--num-layers", "N", "transformer layers (default 2)",
       int_into(&TrainingArgs::num_layers, 1)},
      {"--hidden-size", "N", "hidden size (default 64)", int_into(&TrainingArgs::hidden_size, 1)},
      {"--num-attention-heads", "N", "attention heads; must divide the hidden size (default 4)",
       int_into(&TrainingArgs::num_attention_heads, 1)},
      {"--train-iters", "N", "training iterations (default 50)",
       int_into(&TrainingArgs::train_iters, 1)},
      {"--eval-interval", "N", "evaluate every N iterations (default 10)",
       int_into(&TrainingArgs::eval_interval, 1)},
      {"--eval-iters", "N", "iterations per evaluation (default 2)",
       int_into(&TrainingArgs::eval_iters, 0)},
      {"--log-interval", "N", "log and record training metrics every N iterations (default 10)",
       int_into(&TrainingArgs::log_interval, 1)},
      {"--save", "DIR", "save checkpoints into DIR (default: none)",
       string_into(&TrainingArgs::save)},
      {"--load", "DIR", "load the latest checkpoint from DIR at start (default: none)",
       string_into(&TrainingArgs::load)},
      {"--save-interval", "N", "save every N iterations; 0 = only at the end (default 0)",
       int_into(&TrainingArgs::save_interval, 0)},
      {"--ckpt-format", "FORMAT", "checkpoint format (default torch)",
       [](TrainingArgs& args, const std::string& flag, const std::string& value) -> Status {
         for (std::string_view format :
              {"torch", "torch_dist", "torch_dcp", "zarr", "fsdp_dtensor"}) {
           if (value == format) {
             args.ckpt_format = value;
             return {};
           }
         }
         return Error("Invalid value '" + value + "' for " + flag +
                      "; accepted: " + std::string(kAcceptedCkptFormats));
       }},
      {"--fp16", "", "train in fp16", set_true(&TrainingArgs::fp16)},
      {"--bf16", "", "train in bf16", set_true(&TrainingArgs::bf16)},
      {"--lr", "RATE", "learning rate, > 0 (default 0.001)",
       [](TrainingArgs& args, const std::string& flag, const std::string& value) -> Status {
         errno = 0;
         char* end = nullptr;
         const double parsed = std::strtod(value.c_str(), &end);
         if (value.empty() || errno != 0 || end != value.c_str() + value.size() ||
             !std::isfinite(parsed) || parsed <= 0.0) {
           return Error("Invalid value '" + value + "' for " + flag +
                        "; accepted: a finite number > 0");
         }
         args.lr = parsed;
         return {};
       }},
      {"--otel-enabled", "", "enable OpenTelemetry telemetry (overrides MEGATRON_OTEL_ENABLED)",
       [](TrainingArgs& args, const std::string&, const std::string&) -> Status {
         args.otel.otel_enabled = true;
         return {};
       }},
      {"--otel-service-name", "NAME", "override OTEL_SERVICE_NAME (default megatron-lm)",
       [](TrainingArgs& args, const std::string& flag, const std::string& value) -> Status {
         if (value.find_first_not_of(" \t") == std::string::npos) {
           return Error("Invalid value '" + value + "' for " + flag +
                        "; accepted: a non-blank service name");
         }
         args.otel.service_name = value;
         return {};
       }},
      {"--otel-span-groups", "SPEC",
       "comma-separated span-group spec, e.g. default,checkpoint (overrides "
       "MEGATRON_OTEL_SPAN_GROUPS)",
       [](TrainingArgs& args, const std::string&, const std::string& value) -> Status {
         // Resolved against the vocabulary at setup, which names the bad group.
         args.otel.span_groups = value;
         return {};
       }},
      {"--help", "", "print this help and exit", set_true(&TrainingArgs::help)},
  };
  return table;
}

const Flag* find_flag(std::string_view name) {
  for (const Flag& flag : flags()) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

}  // namespace

std::string_view TrainingArgs::precision() const noexcept {
  if (fp16) return "fp16";
  if (bf16) return "bf16";
  return "fp32";
}

// resolve_parallelism() rejects sizes whose product overflows; saturate for unresolved ones.
namespace {
int batch_per_step(int micro_batch_size, int data_parallel_size) noexcept {
  int product = 0;
  return __builtin_mul_overflow(micro_batch_size, data_parallel_size, &product)
             ? std::numeric_limits<int>::max()
             : product;
}
}  // namespace

int TrainingArgs::global_batch() const noexcept {
  return global_batch_size.value_or(batch_per_step(micro_batch_size, data_parallel_size));
}

int TrainingArgs::num_microbatches() const noexcept {
  const int per_step = batch_per_step(micro_batch_size, data_parallel_size);
  return per_step > 0 ? global_batch() / per_step : 1;
}

Result<TrainingArgs> parse_training_args(const std::vector<std::string>& args) {
  TrainingArgs out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      return Error("Unexpected argument '" + arg + "'; accepted: the flags of --help");
    }
    const std::size_t equals = arg.find('=');
    const std::string name = arg.substr(0, equals);
    const Flag* flag = find_flag(name);
    if (flag == nullptr) {
      return Error("Unknown flag '" + name + "'; run with --help for the accepted flags");
    }
    if (!seen.insert(name).second) {
      return Error("Flag " + name + " is given twice; accepted: once");
    }
    std::string value;
    if (flag->value_name.empty()) {
      if (equals != std::string::npos) {
        return Error("Flag " + name + " takes no value (got '" + arg.substr(equals + 1) + "')");
      }
    } else if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return Error("Flag " + name + " needs a value: " + name + " " +
                   std::string(flag->value_name));
    }
    if (Status stored = flag->store(out, name, value); !stored.ok()) {
      return Error(stored.message());
    }
  }
  if (out.fp16 && out.bf16) {
    return Error("Flags --fp16 and --bf16 exclude each other; accepted: at most one of them");
  }
  if (out.hidden_size % out.num_attention_heads != 0) {
    return Error("--hidden-size " + std::to_string(out.hidden_size) +
                 " is not a multiple of --num-attention-heads " +
                 std::to_string(out.num_attention_heads) +
                 "; accepted: a hidden size divisible by the number of heads");
  }
  return out;
}

Status resolve_parallelism(TrainingArgs& args, const RankInfo& rank) {
  const long long model_parallel =
      static_cast<long long>(args.tensor_model_parallel_size) * args.pipeline_model_parallel_size;
  if (rank.world_size % model_parallel != 0) {
    return Error("World size " + std::to_string(rank.world_size) +
                 " is not a multiple of --tensor-model-parallel-size " +
                 std::to_string(args.tensor_model_parallel_size) +
                 " x --pipeline-model-parallel-size " +
                 std::to_string(args.pipeline_model_parallel_size) +
                 "; accepted: parallel sizes whose product divides the number of processes");
  }
  if (args.pipeline_model_parallel_size > args.num_layers) {
    return Error("--pipeline-model-parallel-size " +
                 std::to_string(args.pipeline_model_parallel_size) + " exceeds --num-layers " +
                 std::to_string(args.num_layers) + "; accepted: at most one stage per layer");
  }
  args.data_parallel_size = static_cast<int>(rank.world_size / model_parallel);
  int per_step = 0;
  if (__builtin_mul_overflow(args.micro_batch_size, args.data_parallel_size, &per_step)) {
    return Error("--micro-batch-size " + std::to_string(args.micro_batch_size) +
                 " x data-parallel size " + std::to_string(args.data_parallel_size) +
                 " overflows a batch size; accepted: a product up to " +
                 std::to_string(std::numeric_limits<int>::max()));
  }
  if (args.global_batch_size && *args.global_batch_size % per_step != 0) {
    return Error("--global-batch-size " + std::to_string(*args.global_batch_size) +
                 " is not a multiple of --micro-batch-size " +
                 std::to_string(args.micro_batch_size) + " x data-parallel size " +
                 std::to_string(args.data_parallel_size) + "; accepted: a multiple of " +
                 std::to_string(per_step));
  }
  return {};
}

std::string help_text(std::string_view program) {
  std::ostringstream out;
  out << "usage: " << program << " [flags]\n\n"
      << "Trains a small GPT-style model on generated tokens, traced with lens.\n"
      << "Telemetry is configured by MEGATRON_OTEL_* (NEMO_LENS_* as fallback) and OTEL_*;\n"
      << "the --otel-* flags override them.\n\nflags:\n";
  for (const Flag& flag : flags()) {
    std::string left = "  " + std::string(flag.name);
    if (!flag.value_name.empty()) left += " " + std::string(flag.value_name);
    out << left;
    out << std::string(left.size() < 38 ? 38 - left.size() : 1, ' ') << flag.help << "\n";
  }
  return out.str();
}

Attributes training_resource_attributes(const TrainingArgs& args, const RankInfo& rank) {
  // Megatron's rank order: tensor-parallel fastest, then data-parallel, then pipeline stage.
  const std::int64_t tensor = std::max(1, args.tensor_model_parallel_size);
  const std::int64_t data = std::max(1, args.data_parallel_size);
  return Attributes{
      {"dl.local_rank", std::int64_t{rank.local_rank}},
      {"dl.tensor_parallel.rank", std::int64_t{rank.rank % tensor}},
      {"dl.data_parallel.rank", std::int64_t{(rank.rank / tensor) % data}},
      {"dl.pipeline_parallel.rank", std::int64_t{rank.rank / (tensor * data)}},
      {"dl.tensor_parallel.size", std::int64_t{args.tensor_model_parallel_size}},
      {"dl.pipeline_parallel.size", std::int64_t{args.pipeline_model_parallel_size}},
      {"dl.data_parallel.size", std::int64_t{args.data_parallel_size}},
      {"dl.batch_size", std::int64_t{args.global_batch()}},
      {"dl.sequence_length", std::int64_t{args.seq_length}},
      {"megatron.num_layers", std::int64_t{args.num_layers}},
      {"megatron.hidden_size", std::int64_t{args.hidden_size}},
      {"megatron.num_attention_heads", std::int64_t{args.num_attention_heads}},
      {"megatron.train_iters", std::int64_t{args.train_iters}},
      {"megatron.micro_batch_size", std::int64_t{args.micro_batch_size}},
      {"megatron.ckpt_format", args.ckpt_format},
      {"megatron.precision", std::string(args.precision())},
  };
}

}  // namespace lens::megatron
