// simple_train_loop: the C++ counterpart of Megatron's run_simple_mcore_train_loop.py. Trains the
// small GPT of gpt_model.hpp on generated token sequences (each sequence counts up from a random
// start by a random stride, so the loss falls as the model learns it), with microbatches, data
// parallelism (gradient all-reduce over Gloo), pipeline parallelism (activations and gradients
// sent between stages, all forwards then all backwards), evaluation, and checkpoints. Every span
// of the documented Megatron hierarchy is emitted at its site (lens/megatron/spans.hpp), so
// MEGATRON_OTEL_SPAN_GROUPS=all shows the whole tree.
//
// Runs as one process, or as N processes under torchrun (--no_python), mpirun or srun; rank info
// comes from RankInfo::detect and the process groups meet at MASTER_ADDR:MASTER_PORT.

#include <opentelemetry/trace/default_span.h>
#include <opentelemetry/trace/scope.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint.hpp"
#include "gpt_model.hpp"
#include "lens/collectives.hpp"
#include "lens/distributed.hpp"
#include "lens/log.hpp"
#include "lens/megatron/spans.hpp"
#include "lens/megatron/telemetry.hpp"
#include "lens/megatron/training_args.hpp"
#include "lens/megatron/training_metrics.hpp"
#include "lens/span.hpp"
#include "lens/step_progress.hpp"
#include "parallel_state.hpp"

namespace lens::megatron::example {
namespace {

namespace spans = ::lens::megatron::spans;
namespace attrs = ::lens::megatron::spans::attributes;

constexpr int kVocabSize = 64;
constexpr int kCrashStatus = 3;  // --crash-at's exit status

// ---- data --------------------------------------------------------------------------------------

// Microbatch `microbatch` of iteration `iteration` for data-parallel rank `dp_rank`: tokens
// [micro_batch, seq + 1]; the same on every pipeline stage of that replica, so the last stage has
// the labels without a transfer. Evaluation draws from a disjoint stream.
torch::Tensor make_batch(int dp_rank, int iteration, int microbatch, bool evaluation, int rows,
                         int seq_length) {
  std::seed_seq seed{dp_rank, iteration, microbatch, evaluation ? 1 : 0, 20261203};
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> start(0, kVocabSize - 1);
  std::uniform_int_distribution<int> stride(1, 3);
  std::vector<std::int64_t> tokens;
  tokens.reserve(static_cast<std::size_t>(rows) * (seq_length + 1));
  for (int r = 0; r < rows; ++r) {
    const int first = start(generator);
    const int step = stride(generator);
    for (int t = 0; t <= seq_length; ++t) tokens.push_back((first + t * step) % kVocabSize);
  }
  return torch::tensor(tokens, torch::kLong).reshape({rows, seq_length + 1});
}

// ---- counted collectives (lens/collectives.hpp) ------------------------------------------------

namespace collective = ::lens::collective_attributes;

// The counters of this rank's process groups, named as Megatron names them: "dp" (this stage's
// data-parallel replicas), "pp" (this replica's pipeline stages), "world". A group this rank
// does not have (size 1) has none.
struct CountedGroups {
  CollectiveGroup* world = nullptr;
  CollectiveGroup* data_parallel = nullptr;
  CollectiveGroup* pipeline = nullptr;
};

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

std::uint64_t bytes_of(const torch::Tensor& tensor) {
  return static_cast<std::uint64_t>(tensor.numel()) *
         static_cast<std::uint64_t>(tensor.element_size());
}

// ---- pipeline point-to-point -------------------------------------------------------------------

void send(ParallelState& state, CollectiveGroup& group, torch::Tensor tensor, int to_stage) {
  std::vector<torch::Tensor> tensors = {tensor.contiguous()};
  CountedCollective counted(group, "send", bytes_of(tensors[0]));
  state.pipeline->send(tensors, state.pipeline_peer(to_stage), /*tag=*/0)->wait();
}

torch::Tensor receive(ParallelState& state, CollectiveGroup& group, at::IntArrayRef shape,
                      int from_stage) {
  std::vector<torch::Tensor> tensors = {torch::empty(shape)};
  CountedCollective counted(group, "recv", bytes_of(tensors[0]));
  state.pipeline->recv(tensors, state.pipeline_peer(from_stage), /*tag=*/0)->wait();
  return tensors[0];
}

// Sums `value` over a group (a no-op without one).
double all_reduce_sum(const c10::intrusive_ptr<c10d::ProcessGroup>& group, CollectiveGroup* counter,
                      double value) {
  if (!group) return value;
  std::vector<torch::Tensor> tensors = {torch::tensor({value}, torch::kDouble)};
  CountedCollective counted(*counter, "all_reduce", sizeof(double));
  group->allreduce(tensors)->wait();
  return tensors[0].item<double>();
}

// The example's injected straggler (--slow-rank/--slow-ms/--slow-stage/--slow-from): extra time
// slept inside one stage's span on one rank from one iteration on, for the run report's stall
// attribution to find.
enum class SlowStage { data, forward, backward, optimizer, checkpoint, grad_sync };

struct Slowdown {
  SlowStage stage = SlowStage::forward;
  std::chrono::milliseconds per_iteration{0};  // zero on every rank but --slow-rank
  int from = 1;                                // first slowed iteration

  // Sleeps `parts`-th of the delay when `stage` of `iteration` is slowed (a stage that runs once
  // per microbatch passes the microbatch count).
  void apply(SlowStage at, int iteration, int parts = 1) const {
    if (at != stage || per_iteration.count() <= 0 || iteration < from) return;
    std::this_thread::sleep_for(
        std::chrono::duration_cast<std::chrono::microseconds>(per_iteration) / parts);
  }
};

// The example's injected hang (--hang-rank/--hang-at/--hang-stage): one rank stops for good inside
// one stage's span at one iteration, for the hang watchdog (HANG_TIMEOUT) to report; the other
// ranks then wait in their next collective. Stage grad_sync stops after the rank has entered the
// gradient all-reduce (counted, span open) and before its part goes out: the others wait in it
// for a rank that is itself inside it. --hang-at-startup stops in megatron.model_init instead,
// before the first step. The process ends only by a signal.
struct Hang {
  SlowStage stage = SlowStage::data;
  int at = -1;  // the iteration that hangs; -1 on every rank but --hang-rank

  void apply(SlowStage where, int iteration) const {
    if (where != stage || iteration != at) return;
    std::fprintf(stderr, "simple_train_loop: hanging at iteration %d (--hang-at)\n", iteration);
    forever();
  }
  [[noreturn]] static void forever() {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
};

struct Trainer {
  const TrainingArgs& args;
  ParallelState& state;
  Stage model;
  torch::optim::Adam optimizer;
  std::vector<std::int64_t> activation_shape;
  Slowdown slowdown;
  Hang hang;
  CountedGroups groups;
  int inf_grad_every = 0;     // --inf-grad-every N: every Nth step's gradients overflow
  int current_iteration = 0;  // the step being trained, for the optimizer's slowdown

  Trainer(const TrainingArgs& a, ParallelState& s, Stage m, Slowdown slow, Hang h, int inf_every)
      : args(a),
        state(s),
        model(std::move(m)),
        optimizer(model->parameters(), torch::optim::AdamOptions(a.lr)),
        activation_shape{a.seq_length, a.micro_batch_size, a.hidden_size},
        slowdown(slow),
        hang(h),
        groups(counted_groups(s)),
        inf_grad_every(inf_every) {}

  // The stage's input for microbatch `m`: tokens on the first stage, else activations received
  // from the previous stage (with the linked span of docs/megatron.md, "Distributed tracing across
  // ranks", when rank 0 shared its context).
  torch::Tensor stage_input(const torch::Tensor& batch, int microbatch, bool training) {
    if (state.first_stage()) return batch.slice(1, 0, args.seq_length);
    Span linked;
    static const SpanGroupHandle communication =
        span_group_handle(spans::kPpRecvForwardLinked.group);
    std::optional<Carrier> carrier = training ? get_pp_trace_carrier() : std::nullopt;
    if (communication.enabled() && carrier) {
      // All forwards run before any backward here, so every receive is a warm-up receive.
      linked = create_linked_span(
          spans::kPpRecvForwardLinked.name, &*carrier,
          {{attrs::kPipelineRank, state.pipeline_rank}, {attrs::kDlMicrobatchId, microbatch}});
    }
    torch::Tensor input;
    {
      LENS_SPAN(spans::kP2pRecvForward);
      input = receive(state, *groups.pipeline, activation_shape, state.pipeline_rank - 1);
    }
    linked.end();
    return training ? input.requires_grad_() : input;
  }

  torch::Tensor loss_of(const torch::Tensor& logits, const torch::Tensor& batch) {
    const torch::Tensor labels = batch.slice(1, 1, args.seq_length + 1);
    return torch::nn::functional::cross_entropy(logits.reshape({-1, kVocabSize}),
                                                labels.reshape({-1}));
  }

  // One step's forward and backward passes over all microbatches; the mean loss of the step on
  // every rank (0 on stages that see no loss until it is shared below).
  double forward_backward(int iteration) {
    current_iteration = iteration;
    const int microbatches = args.num_microbatches();
    LENS_SPAN(spans::kForwardBackward, {attrs::kNumMicrobatches, microbatches});
    std::vector<torch::Tensor> inputs(microbatches);
    std::vector<torch::Tensor> outputs(microbatches);
    double loss_sum = 0.0;
    for (int m = 0; m < microbatches; ++m) {
      // The receive is a sibling of the microbatch span (docs/megatron.md, "The span hierarchy").
      if (!state.first_stage()) inputs[m] = stage_input(torch::Tensor(), m, true);
      {
        LENS_SPAN(spans::kMicrobatchForward, {attrs::kMicrobatchId, m});
        torch::Tensor batch;
        if (state.first_stage() || state.last_stage()) {
          LENS_SPAN(spans::kDataNextBatch);
          batch = make_batch(state.data_parallel_rank, iteration, m, false, args.micro_batch_size,
                             args.seq_length);
          slowdown.apply(SlowStage::data, iteration, microbatches);
          hang.apply(SlowStage::data, iteration);
        }
        if (state.first_stage()) inputs[m] = stage_input(batch, m, true);
        torch::Tensor out = model->forward(inputs[m]);
        slowdown.apply(SlowStage::forward, iteration, microbatches);
        hang.apply(SlowStage::forward, iteration);
        if (state.last_stage()) {
          outputs[m] = loss_of(out, batch) / microbatches;
          loss_sum += outputs[m].item<double>();
        } else {
          outputs[m] = out;
        }
      }
      if (!state.last_stage()) {
        LENS_SPAN(spans::kP2pSendForward);
        send(state, *groups.pipeline, outputs[m].detach(), state.pipeline_rank + 1);
      }
    }
    for (int m = microbatches - 1; m >= 0; --m) {
      torch::Tensor grad;
      if (!state.last_stage()) {
        LENS_SPAN(spans::kP2pRecvBackward);
        grad = receive(state, *groups.pipeline, activation_shape, state.pipeline_rank + 1);
      }
      {
        LENS_SPAN(spans::kMicrobatchBackward);
        slowdown.apply(SlowStage::backward, iteration, microbatches);
        hang.apply(SlowStage::backward, iteration);
        if (state.last_stage()) {
          outputs[m].backward();
        } else {
          outputs[m].backward(grad);
        }
      }
      if (!state.first_stage()) {
        LENS_SPAN(spans::kP2pSendBackward);
        send(state, *groups.pipeline, inputs[m].grad(), state.pipeline_rank - 1);
      }
    }
    return loss_sum;
  }

  // Averages gradients over the data-parallel replicas.
  void sync_gradients() {
    if (!state.data_parallel) return;
    std::vector<torch::Tensor> grads;
    for (auto& parameter : model->parameters()) {
      if (parameter.grad().defined()) grads.push_back(parameter.grad().reshape({-1}));
    }
    std::vector<torch::Tensor> flat = {torch::cat(grads)};
    slowdown.apply(SlowStage::grad_sync, current_iteration);  // enters late
    // Entered here, finished when the wait returns: the hang watchdog sees it open meanwhile.
    CountedCollective counted(*groups.data_parallel, "all_reduce", bytes_of(flat[0]));
    const auto seq = static_cast<std::int64_t>(counted.seq());
    c10::intrusive_ptr<c10d::Work> work;
    {
      LENS_SPAN(spans::kGradSyncStart, {collective::kGroup, groups.data_parallel->name()},
                {collective::kGroupRanks, groups.data_parallel->ranks()},
                {collective::kOperation, "all_reduce"}, {collective::kBytes, bytes_of(flat[0])},
                {collective::kSeq, seq});
      hang.apply(SlowStage::grad_sync, current_iteration);  // inside it, its part never sent
      work = state.data_parallel->allreduce(flat);
    }
    LENS_SPAN(spans::kGradSyncFinish, {collective::kGroup, groups.data_parallel->name()},
              {collective::kOperation, "all_reduce"}, {collective::kSeq, seq});
    work->wait();
    counted.finish();
    flat[0].div_(state.data_parallel_size);
    std::int64_t offset = 0;
    for (auto& parameter : model->parameters()) {
      if (!parameter.grad().defined()) continue;
      const std::int64_t n = parameter.grad().numel();
      parameter.grad().copy_(flat[0].slice(0, offset, offset + n).view_as(parameter.grad()));
      offset += n;
    }
  }

  // Global gradient norm over all stages, clipped to 1.0; then the optimizer step. A norm that is
  // not finite (an overflow; --inf-grad-every injects one on every rank) skips the update, as
  // Megatron's optimizer does: the gradients are dropped and the norm is returned as it is.
  double optimizer_step() {
    torch::NoGradGuard no_grad;
    if (inf_grad_every > 0 && current_iteration % inf_grad_every == 0) {
      for (auto& parameter : model->parameters()) {
        if (!parameter.grad().defined()) continue;
        parameter.grad().view(-1)[0] = std::numeric_limits<float>::infinity();
        break;
      }
    }
    double squares = 0.0;
    for (auto& parameter : model->parameters()) {
      if (parameter.grad().defined()) squares += parameter.grad().pow(2).sum().item<double>();
    }
    const double grad_norm = std::sqrt(all_reduce_sum(state.pipeline, groups.pipeline, squares));
    if (!std::isfinite(grad_norm)) {
      LENS_SPAN(spans::kOptimizerStep, {attrs::kUpdateSuccessful, false});
      optimizer.zero_grad();
      slowdown.apply(SlowStage::optimizer, current_iteration);
      hang.apply(SlowStage::optimizer, current_iteration);
      return grad_norm;
    }
    LENS_SPAN(spans::kOptimizerStep, {attrs::kUpdateSuccessful, true},
              {attrs::kGradNorm, grad_norm});
    if (grad_norm > 1.0) {
      for (auto& parameter : model->parameters()) {
        if (parameter.grad().defined()) parameter.grad().mul_(1.0 / grad_norm);
      }
    }
    optimizer.step();
    optimizer.zero_grad();
    slowdown.apply(SlowStage::optimizer, current_iteration);
    hang.apply(SlowStage::optimizer, current_iteration);
    return grad_norm;
  }

  // The loss of the step as the last stage saw it, averaged over replicas, on every rank.
  double shared_loss(double local) {
    const double stage_sum =
        all_reduce_sum(state.pipeline, groups.pipeline, state.last_stage() ? local : 0.0);
    return all_reduce_sum(state.data_parallel, groups.data_parallel, stage_sum) /
           state.data_parallel_size;
  }

  double evaluate(int iteration) {
    LENS_SPAN(spans::kEvaluate, {attrs::kEvalIters, args.eval_iters});
    torch::NoGradGuard no_grad;
    double loss_sum = 0.0;
    for (int e = 0; e < args.eval_iters; ++e) {
      LENS_SPAN(spans::kEvaluateStep, {attrs::kEvalIteration, e});
      const torch::Tensor batch = make_batch(state.data_parallel_rank, iteration, e, true,
                                             args.micro_batch_size, args.seq_length);
      const torch::Tensor out = model->forward(stage_input(batch, e, false));
      if (state.last_stage()) {
        loss_sum += loss_of(out, batch).item<double>();
      } else {
        LENS_SPAN(spans::kP2pSendForward);
        send(state, *groups.pipeline, out, state.pipeline_rank + 1);
      }
    }
    return args.eval_iters > 0 ? shared_loss(loss_sum) / args.eval_iters : 0.0;
  }
};

// The model FLOPs of one training iteration of the whole job (forward and backward, all
// replicas), counted as Megatron counts them: the matrix multiplications only, 2 FLOPs per
// multiply-add, the backward pass twice the forward. Per token and layer the forward pass costs
// 24 h^2 (QKV 6 h^2, attention output 2 h^2, the 4h MLP 16 h^2) plus 4 s h (scores and weighted
// values); the LM head 2 h V per token.
double flops_per_iteration(const TrainingArgs& args) {
  const double h = args.hidden_size;
  const double s = args.seq_length;
  const double tokens = static_cast<double>(args.global_batch()) * s;
  const double forward_per_token =
      args.num_layers * (24.0 * h * h + 4.0 * s * h) + 2.0 * h * kVocabSize;
  return 3.0 * forward_per_token * tokens;
}

// Megatron reports torch.cuda.max_memory_allocated() / 1024^3; this CPU example's device is the
// CPU, so it reports the process's peak resident set, in the same units (GiB).
double peak_memory_gib() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0.0;
  return static_cast<double>(usage.ru_maxrss) * 1024.0 / (1024.0 * 1024.0 * 1024.0);
}

void barrier(ParallelState& state) {
  if (!state.world) return;
  CountedCollective counted(*counted_groups(state).world, "barrier", 0);
  state.world->barrier()->wait();
}

}  // namespace

// The example's own switches (not Megatron's), taken out of the command line before the
// Megatron flags are parsed.
struct ExampleOptions {
  int slow_rank = -1;           // --slow-rank R: this rank is slowed ...
  std::vector<int> slow_ranks;  // --slow-ranks LIST: ... or these (the ranks of a fake host) ...
  int slow_stage_pp = -1;       // --slow-stage-pp K: ... or every rank of pipeline stage K ...
  int slow_ms = 0;  // --slow-ms X: ... by X ms per iteration (a straggler for the run report)
  SlowStage slow_stage = SlowStage::forward;  // --slow-stage S: ... in this stage ...
  int slow_from = 1;                          // --slow-from ITER: ... from this iteration on
  int hang_rank = -1;                         // --hang-rank R: this rank hangs for good ...
  int hang_at = 2;                            // --hang-at ITER: ... at this iteration ...
  SlowStage hang_stage = SlowStage::data;     // --hang-stage S: ... in this stage
  bool hang_at_startup = false;               // --hang-at-startup: ... or in start-up
  int inf_grad_every = 0;  // --inf-grad-every N: every Nth step overflows and is skipped (0: none)
  int crash_at = 0;        // --crash-at ITER: every rank dies inside this iteration (0: never)
};

// --slow-stage's value; the error names the flag, the value and what is accepted.
Result<SlowStage> slow_stage_named(const std::string& flag, const std::string& value) {
  static const std::pair<const char*, SlowStage> kStages[] = {{"data", SlowStage::data},
                                                              {"forward", SlowStage::forward},
                                                              {"backward", SlowStage::backward},
                                                              {"optimizer", SlowStage::optimizer},
                                                              {"checkpoint", SlowStage::checkpoint},
                                                              {"grad_sync", SlowStage::grad_sync}};
  for (const auto& [name, stage] : kStages) {
    if (value == name) return stage;
  }
  return Error(flag + ": '" + value +
               "' is not a stage; accepted: data, forward, backward, optimizer, checkpoint, "
               "grad_sync");
}

// Parses a non-negative int flag value; the error names the flag, the value and what is accepted.
Result<int> non_negative(std::string_view flag, const std::string& value) {
  std::size_t used = 0;
  int parsed = -1;
  try {
    parsed = std::stoi(value, &used);
  } catch (...) {
    used = 0;
  }
  if (used != value.size() || value.empty() || parsed < 0) {
    return Error(std::string(flag) + ": '" + value +
                 "' is not a valid value; accepted: an integer >= 0");
  }
  return parsed;
}

// --slow-ranks' value: ranks and ranges, "4-7" or "1,3,8-11"; the error names the flag, the
// value and what is accepted.
Result<std::vector<int>> rank_list(const std::string& value) {
  std::vector<int> ranks;
  const Error bad("--slow-ranks: '" + value +
                  "' is not a list of ranks; accepted: ranks and ranges such as 4-7 or 1,3,8-11");
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    const std::string item = value.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    Result<int> first = non_negative("--slow-ranks", item.substr(0, dash));
    Result<int> last =
        dash == std::string::npos ? first : non_negative("--slow-ranks", item.substr(dash + 1));
    if (!first.ok() || !last.ok() || *last < *first || *last - *first > 1 << 16) return bad;
    for (int r = *first; r <= *last; ++r) ranks.push_back(r);
    start = comma + 1;
  }
  return ranks;
}

// Removes --slow-rank/--slow-ranks/--slow-stage-pp/--slow-ms/--slow-stage/--slow-from,
// --hang-rank/--hang-at/--hang-stage, --inf-grad-every and --crash-at (and their values) from
// `args`.
Result<ExampleOptions> take_example_options(std::vector<std::string>& args) {
  ExampleOptions options;
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    int* target = arg == "--slow-rank"        ? &options.slow_rank
                  : arg == "--slow-ms"        ? &options.slow_ms
                  : arg == "--slow-stage-pp"  ? &options.slow_stage_pp
                  : arg == "--slow-from"      ? &options.slow_from
                  : arg == "--hang-rank"      ? &options.hang_rank
                  : arg == "--hang-at"        ? &options.hang_at
                  : arg == "--inf-grad-every" ? &options.inf_grad_every
                  : arg == "--crash-at"       ? &options.crash_at
                                              : nullptr;
    if (arg == "--hang-at-startup") {
      options.hang_at_startup = true;
      continue;
    }
    if (arg == "--slow-ranks") {
      if (i + 1 >= args.size()) {
        return Error("--slow-ranks: missing value; accepted: ranks and ranges such as 4-7");
      }
      Result<std::vector<int>> ranks = rank_list(args[++i]);
      if (!ranks.ok()) return ranks.error();
      options.slow_ranks = std::move(*ranks);
      continue;
    }
    if (arg == "--slow-stage" || arg == "--hang-stage") {
      if (i + 1 >= args.size()) {
        return Error(arg +
                     ": missing value; accepted: data, forward, backward, optimizer, checkpoint, "
                     "grad_sync");
      }
      Result<SlowStage> stage = slow_stage_named(arg, args[++i]);
      if (!stage.ok()) return stage.error();
      (arg == "--slow-stage" ? options.slow_stage : options.hang_stage) = *stage;
      continue;
    }
    if (target == nullptr) {
      rest.push_back(arg);
      continue;
    }
    if (i + 1 >= args.size()) {
      return Error(arg + ": missing value; accepted: an integer >= 0");
    }
    Result<int> value = non_negative(arg, args[++i]);
    if (!value.ok()) return value.error();
    *target = *value;
  }
  args = std::move(rest);
  return options;
}

// The whole run on this rank; the process's exit status.
int run(const TrainingArgs& args, const RankInfo& rank, const ExampleOptions& example) {
  Result<ParallelState> parallel =
      init_parallel_state(rank, args.data_parallel_size, args.pipeline_model_parallel_size);
  if (!parallel.ok()) {
    std::fprintf(stderr, "simple_train_loop: %s\n", parallel.message().c_str());
    return 2;
  }
  ParallelState& state = *parallel;

  SetTelemetryOptions telemetry_options;
  telemetry_options.collective = state.collective.get();
  if (Status status = set_telemetry(args, rank, std::move(telemetry_options)); !status.ok()) {
    std::fprintf(stderr, "simple_train_loop: %s\n", status.message().c_str());
    return 2;
  }
  std::shared_ptr<TelemetryHandle> telemetry = get_telemetry();
  static const SpanGroupHandle job = span_group_handle(spans::kPretrain.group);

  // The job spans stay current for the whole run; end_job_telemetry ends them (also on SIGTERM).
  std::optional<SpanScope> pretrain_scope;
  if (job.enabled()) {
    Span pretrain =
        start_span(spans::kPretrain.name, {{attrs::kModelType, "gpt"},
                                           {attrs::kTrainIters, args.train_iters},
                                           {attrs::kGlobalBatchSize, args.global_batch()}});
    pretrain_scope.emplace(pretrain);
    set_job_span(JobSpan::startup, std::move(pretrain));
  }

  const GptConfig config{.vocab_size = kVocabSize,
                         .seq_length = args.seq_length,
                         .hidden_size = args.hidden_size,
                         .num_attention_heads = args.num_attention_heads,
                         .num_layers = args.num_layers};
  std::optional<Trainer> trainer;
  {
    LENS_SPAN(spans::kModelInit);
    if (example.hang_at_startup && rank.rank == example.hang_rank) {
      std::fprintf(stderr, "simple_train_loop: hanging in start-up (--hang-at-startup)\n");
      Hang::forever();
    }
    // The same seed on every replica of a stage: identical initial weights.
    torch::manual_seed(1234 + state.pipeline_rank);
    const auto [first_layer, layer_count] =
        stage_layers(args.num_layers, state.pipeline_rank, state.pipeline_size);
    const bool slowed = rank.rank == example.slow_rank ||
                        std::find(example.slow_ranks.begin(), example.slow_ranks.end(),
                                  rank.rank) != example.slow_ranks.end() ||
                        state.pipeline_rank == example.slow_stage_pp;
    const Slowdown slowdown{example.slow_stage,
                            std::chrono::milliseconds(slowed ? example.slow_ms : 0),
                            example.slow_from};
    const Hang hang{example.hang_stage, rank.rank == example.hang_rank ? example.hang_at : -1};
    trainer.emplace(
        args, state,
        Stage(config, first_layer, layer_count, state.first_stage(), state.last_stage()), slowdown,
        hang, example.inf_grad_every);
  }

  int start_iteration = 0;
  if (!args.load.empty()) {
    Result<std::optional<int>> loaded = load_checkpoint(
        args.load, state.pipeline_rank, state.pipeline_size, *trainer->model, trainer->optimizer);
    if (!loaded.ok()) {
      std::fprintf(stderr, "simple_train_loop: %s\n", loaded.message().c_str());
      (void)end_job_telemetry();
      return 1;
    }
    if (*loaded) start_iteration = **loaded;
    if (rank.rank == 0) {
      std::printf(*loaded ? "loaded checkpoint at iteration %d from %s\n"
                          : "no checkpoint in %2$s; starting at iteration %1$d\n",
                  start_iteration, args.load.c_str());
    }
  }

  std::optional<SpanScope> train_scope;
  opentelemetry::trace::SpanContext train_context = opentelemetry::trace::SpanContext::GetInvalid();
  if (job.enabled()) {
    Span train = start_span(spans::kTrain.name, {{attrs::kTrainIters, args.train_iters}});
    train_context = train.context();
    train_scope.emplace(train);
    set_job_span(JobSpan::interval, std::move(train));
  }
  // Each iteration is its own trace, the same trace on every rank (a collective: every rank
  // calls it, whatever its telemetry settings), so a ratio sampler keeps or drops an iteration
  // on all ranks alike and a run of 100,000 steps is not one endless trace.
  const TraceSeed step_traces = share_trace_seed(state.collective.get(), 0);
  static const SpanGroupHandle step_group = span_group_handle(spans::kTrainStep.group);

  double last_loss = 0.0;
  double interval_loss = 0.0;  // summed over the log interval, for the training metrics
  int interval_iterations = 0;
  int interval_skipped = 0;                  // iterations whose update was skipped
  std::optional<double> interval_grad_norm;  // the interval's last finite gradient norm
  auto interval_start = std::chrono::steady_clock::now();
  // Iteration lines become log records too (P_LOGS_ENABLED=1), stamped with their step's ids.
  setup_logging_bridge(lens::log::Level::info);
  for (int iteration = start_iteration + 1; iteration <= args.train_iters; ++iteration) {
    note_iteration_started(iteration);  // hang reports name it (lens/collectives.hpp)
    double loss = 0.0;
    double grad_norm = 0.0;
    opentelemetry::trace::SpanContext step_context =
        opentelemetry::trace::SpanContext::GetInvalid();
    {
      std::optional<ManagedSpan> first_iteration;
      if (iteration == start_iteration + 1) {
        first_iteration.emplace(span_group_handle(spans::kFirstIteration.group),
                                spans::kFirstIteration.name,
                                AttributeList{{attrs::kIteration, iteration}});
      }
      ManagedSpan step(
          step_group, spans::kTrainStep.name, {{attrs::kIteration, iteration}},
          NewTrace{step_traces.trace_id_for(static_cast<std::uint64_t>(iteration)), train_context});
      // A collective on every rank, gated only on the pipeline size (the same everywhere).
      if (state.pipeline_size > 1) {
        set_pp_trace_carrier(broadcast_trace_context(state.collective.get(), 0));
      }
      const double local_loss = trainer->forward_backward(iteration);
      if (iteration == example.crash_at) {
        // --crash-at: die as a killed process does, mid-step and without flushing telemetry
        // (_exit skips the atexit hook that ends the job spans).
        std::fprintf(stderr, "simple_train_loop: crashing in iteration %d (--crash-at)\n",
                     iteration);
        ::_exit(kCrashStatus);
      }
      trainer->sync_gradients();
      grad_norm = trainer->optimizer_step();
      loss = trainer->shared_loss(local_loss);
      step.set_attribute(attrs::kLoss, loss);
      if (std::isfinite(grad_norm)) step.set_attribute(attrs::kGradNorm, grad_norm);
      step.set_attribute(attrs::kLearningRate, args.lr);
      step_context = step.context();
    }
    note_step_completed();  // the hang watchdog's step (lens/step_progress.hpp)
    last_loss = loss;
    interval_loss += loss;
    ++interval_iterations;
    if (std::isfinite(grad_norm)) {
      interval_grad_norm = grad_norm;
    } else {
      ++interval_skipped;
    }

    if (iteration % args.log_interval == 0 || iteration == start_iteration + 1) {
      const auto now = std::chrono::steady_clock::now();
      const double ms_per_iteration =
          std::chrono::duration<double, std::milli>(now - interval_start).count() /
          interval_iterations;
      const double tokens_per_sec =
          args.global_batch() * args.seq_length * 1000.0 / std::max(ms_per_iteration, 1e-9);
      const double mean_loss = interval_loss / interval_iterations;
      // Megatron's throughput: model FLOPs of the iteration per second, per rank, in TFLOP/s.
      const double tflops = flops_per_iteration(args) /
                            (std::max(ms_per_iteration, 1e-9) / 1000.0) / rank.world_size / 1e12;
      // The megatron.training.* instruments (docs/megatron.md, "Training metrics"), on every
      // rank (a non-exporting rank's meter records nothing).
      record_training_metrics(*telemetry->meter(), {.step_duration_ms = ms_per_iteration,
                                                    .loss = mean_loss,
                                                    .throughput_tflops = tflops,
                                                    .tokens_per_sec = tokens_per_sec,
                                                    .grad_norm = interval_grad_norm,
                                                    .skipped_iters = interval_skipped,
                                                    .learning_rate = args.lr,
                                                    .memory_allocated_gb = peak_memory_gib()});
      interval_start = now;
      interval_loss = 0.0;
      interval_iterations = 0;
      interval_skipped = 0;
      interval_grad_norm.reset();
      if (rank.rank == 0) {
        char line[256];
        std::snprintf(
            line, sizeof(line),
            " iteration %8d/%8d | lm loss: %.6E | grad norm: %.3f | elapsed time per iteration "
            "(ms): %.1f | tokens/s: %.0f",
            iteration, args.train_iters, loss, grad_norm, ms_per_iteration, tokens_per_sec);
        std::printf("%s\n", line);
        std::fflush(stdout);
        // The step has ended: its context, made current again, correlates the record with it.
        const opentelemetry::trace::Scope in_step(
            opentelemetry::nostd::shared_ptr<opentelemetry::trace::Span>(
                new opentelemetry::trace::DefaultSpan(step_context)));
        lens::log::emit(lens::log::Level::info, line, {{attrs::kIteration, iteration}});
      }
    }
    if (args.eval_iters > 0 && iteration % args.eval_interval == 0) {
      const double eval_loss = trainer->evaluate(iteration);
      if (rank.rank == 0) {
        std::printf(" validation loss at iteration %d | lm loss: %.6E\n", iteration, eval_loss);
        std::fflush(stdout);
      }
    }
    const bool save_now =
        !args.save.empty() && ((args.save_interval > 0 && iteration % args.save_interval == 0) ||
                               iteration == args.train_iters);
    if (save_now) {
      Status saved =
          save_checkpoint(args.save, iteration, state.pipeline_rank, state.pipeline_size,
                          state.data_parallel_rank == 0, *trainer->model, trainer->optimizer, [&] {
                            trainer->slowdown.apply(SlowStage::checkpoint, iteration);
                            trainer->hang.apply(SlowStage::checkpoint, iteration);
                          });
      barrier(state);
      if (saved.ok() && rank.rank == 0) saved = mark_latest(args.save, iteration);
      if (!saved.ok()) {
        std::fprintf(stderr, "simple_train_loop: %s\n", saved.message().c_str());
        (void)end_job_telemetry();
        return 1;
      }
      if (rank.rank == 0) {
        std::printf("saved checkpoint at iteration %d to %s\n", iteration, args.save.c_str());
      }
    }
  }
  if (rank.rank == 0) {
    std::printf("training done: %d iterations, final lm loss %.6E\n", args.train_iters, last_loss);
    std::fflush(stdout);
  }
  barrier(state);
  if (Status status = end_job_telemetry(); !status.ok()) {
    std::fprintf(stderr, "simple_train_loop: telemetry: %s\n", status.message().c_str());
  }
  return 0;
}

}  // namespace lens::megatron::example

int main(int argc, char** argv) {
  using lens::megatron::TrainingArgs;
  std::vector<std::string> command_line(argv + 1, argv + argc);
  lens::Result<lens::megatron::example::ExampleOptions> example =
      lens::megatron::example::take_example_options(command_line);
  if (!example.ok()) {
    std::fprintf(stderr, "simple_train_loop: %s\n", example.message().c_str());
    return 2;
  }
  lens::Result<TrainingArgs> args = lens::megatron::parse_training_args(command_line);
  if (!args.ok()) {
    std::fprintf(stderr, "simple_train_loop: %s\n", args.message().c_str());
    return 2;
  }
  if (args->help) {
    std::fputs(lens::megatron::help_text("simple_train_loop").c_str(), stdout);
    std::fputs(
        "\nexample options:\n"
        "  --slow-rank R         slow down rank R (default: none)\n"
        "  --slow-ranks LIST     or these ranks, e.g. 4-7 or 1,3,8-11 (the ranks of a fake host)\n"
        "  --slow-stage-pp K     or every rank of pipeline stage K (default: none)\n"
        "  --slow-ms X           by X ms per iteration (default 0), to show a straggler\n"
        "  --slow-stage S        in stage S: data, forward, backward, optimizer, checkpoint or\n"
        "                        grad_sync (enters the gradient all-reduce late)\n"
        "                        (default forward; checkpoint: the iterations that --save)\n"
        "  --slow-from ITER      from iteration ITER on (default 1)\n"
        "  --hang-rank R         make rank R hang for good (default: none), to show the hang\n"
        "                        report (NEMO_LENS_HANG_TIMEOUT); only a signal ends it\n"
        "  --hang-at ITER        at iteration ITER (default 2: the watchdog watches from the\n"
        "                        first finished step on)\n"
        "  --hang-stage S        in stage S: data, forward, backward, optimizer, checkpoint or\n"
        "                        grad_sync (inside the gradient all-reduce: entered, its part\n"
        "                        never sent) (default data)\n"
        "  --hang-at-startup     make --hang-rank hang in start-up (megatron.model_init) instead,\n"
        "                        before the first step (NEMO_LENS_HANG_STARTUP_TIMEOUT)\n"
        "  --inf-grad-every N    every Nth iteration's gradients hold an inf on every rank, so\n"
        "                        the update is skipped (megatron.training.skipped_iters);\n"
        "                        default 0: never\n"
        "  --crash-at ITER       every rank exits with status 3 inside iteration ITER (after\n"
        "                        its forward and backward passes) without flushing telemetry,\n"
        "                        as a killed process does; default 0: never\n",
        stdout);
    return 0;
  }
  lens::Result<lens::RankInfo> rank = lens::RankInfo::detect();
  if (!rank.ok()) {
    std::fprintf(stderr, "simple_train_loop: %s\n", rank.message().c_str());
    return 2;
  }
  if (lens::Status status = lens::megatron::resolve_parallelism(*args, *rank); !status.ok()) {
    std::fprintf(stderr, "simple_train_loop: %s\n", status.message().c_str());
    return 2;
  }
  if (args->tensor_model_parallel_size != 1) {
    std::fprintf(stderr,
                 "simple_train_loop: --tensor-model-parallel-size %d is not implemented by this "
                 "example; accepted: 1 (data and pipeline parallelism are)\n",
                 args->tensor_model_parallel_size);
    return 2;
  }
  torch::set_num_threads(1);  // ranks share the machine's cores
  if (example->slow_rank >= rank->world_size) {
    std::fprintf(stderr,
                 "simple_train_loop: --slow-rank: '%d' is not a rank of this job; accepted: 0 to "
                 "%d\n",
                 example->slow_rank, rank->world_size - 1);
    return 2;
  }
  for (const int slow : example->slow_ranks) {
    if (slow >= rank->world_size) {
      std::fprintf(stderr,
                   "simple_train_loop: --slow-ranks: '%d' is not a rank of this job; accepted: 0 "
                   "to %d\n",
                   slow, rank->world_size - 1);
      return 2;
    }
  }
  if (example->slow_stage_pp >= args->pipeline_model_parallel_size) {
    std::fprintf(stderr,
                 "simple_train_loop: --slow-stage-pp: '%d' is not a pipeline stage of this job; "
                 "accepted: 0 to %d\n",
                 example->slow_stage_pp, args->pipeline_model_parallel_size - 1);
    return 2;
  }
  if (example->hang_at_startup && example->hang_rank < 0) {
    std::fprintf(stderr,
                 "simple_train_loop: --hang-at-startup: no rank to hang; accepted: with "
                 "--hang-rank R\n");
    return 2;
  }
  if (example->hang_rank >= rank->world_size) {
    std::fprintf(stderr,
                 "simple_train_loop: --hang-rank: '%d' is not a rank of this job; accepted: 0 to "
                 "%d\n",
                 example->hang_rank, rank->world_size - 1);
    return 2;
  }
  return lens::megatron::example::run(*args, *rank, *example);
}
