// simple_train_loop: the C++ counterpart of Megatron's run_simple_mcore_train_loop.py. Trains the
// small GPT of gpt_model.hpp on generated token sequences (training_data.hpp), with microbatches,
// data parallelism (gradient all-reduce over Gloo), pipeline parallelism (activations and
// gradients sent between stages, all forwards then all backwards), evaluation, and checkpoints.
// Every span of the documented Megatron hierarchy is emitted at its site
// (lens/megatron/spans.hpp), so MEGATRON_OTEL_SPAN_GROUPS=all shows the whole tree. This file:
// the command line, start-up, the iteration loop and the job spans; a step's work is trainer.hpp's.
//
// Runs as one process, or as N processes under torchrun (--no_python), mpirun or srun; rank info
// comes from RankInfo::detect and the process groups meet at MASTER_ADDR:MASTER_PORT.

#include <opentelemetry/trace/span_context.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint.hpp"
#include "counted_communication.hpp"
#include "example_options.hpp"
#include "gpt_model.hpp"
#include "interval_report.hpp"
#include "lens/collectives.hpp"
#include "lens/distributed.hpp"
#include "lens/log.hpp"
#include "lens/megatron/spans.hpp"
#include "lens/megatron/telemetry.hpp"
#include "lens/megatron/training_args.hpp"
#include "lens/span.hpp"
#include "lens/step_progress.hpp"
#include "parallel_state.hpp"
#include "trainer.hpp"
#include "training_data.hpp"

namespace lens::megatron::example {
namespace {

namespace spans = ::lens::megatron::spans;
namespace attrs = ::lens::megatron::spans::attributes;
using opentelemetry::trace::SpanContext;

// The group of the job spans (megatron.pretrain and megatron.train).
const SpanGroupHandle& job_group() {
  static const SpanGroupHandle job = span_group_handle(spans::kPretrain.group);
  return job;
}

// Starts megatron.pretrain (when its group is on) as the current span and the job's start-up
// span; `scope` keeps it current.
void open_pretrain_span(const TrainingArgs& args, std::optional<SpanScope>& scope) {
  if (!job_group().enabled()) return;
  Span pretrain =
      start_span(spans::kPretrain.name, {{attrs::kModelType, "gpt"},
                                         {attrs::kTrainIters, args.train_iters},
                                         {attrs::kGlobalBatchSize, args.global_batch()}});
  scope.emplace(pretrain);
  set_job_span(JobSpan::startup, std::move(pretrain));
}

// Starts megatron.train (when its group is on) as the current span and the job's interval span;
// `scope` keeps it current. Its context, the parent of every step's trace; invalid when off.
SpanContext open_train_span(const TrainingArgs& args, std::optional<SpanScope>& scope) {
  if (!job_group().enabled()) return SpanContext::GetInvalid();
  Span train = start_span(spans::kTrain.name, {{attrs::kTrainIters, args.train_iters}});
  const SpanContext context = train.context();
  scope.emplace(train);
  set_job_span(JobSpan::interval, std::move(train));
  return context;
}

// Builds this rank's model and trainer inside megatron.model_init (where --hang-at-startup
// hangs).
void build_trainer(const TrainingArgs& args, const RankInfo& rank, ParallelState& state,
                   const ExampleOptions& example, std::optional<Trainer>& trainer) {
  const GptConfig config{.vocab_size = kVocabSize,
                         .seq_length = args.seq_length,
                         .hidden_size = args.hidden_size,
                         .num_attention_heads = args.num_attention_heads,
                         .num_layers = args.num_layers};
  LENS_SPAN(spans::kModelInit);
  const InjectedFaults faults = faults_for_rank(example, rank.rank, state.pipeline_rank);
  faults.hang.apply_at_startup();
  // The same seed on every replica of a stage: identical initial weights.
  torch::manual_seed(1234 + state.pipeline_rank);
  const auto [first_layer, layer_count] =
      stage_layers(args.num_layers, state.pipeline_rank, state.pipeline_size);
  trainer.emplace(args, state,
                  Stage(config, first_layer, layer_count, state.first_stage(), state.last_stage()),
                  faults);
}

// The iteration to continue after: --load's latest checkpoint (loaded into the trainer), else 0.
Result<int> resume_from_checkpoint(const TrainingArgs& args, const RankInfo& rank,
                                   const ParallelState& state, Trainer& trainer) {
  int start_iteration = 0;
  if (args.load.empty()) return start_iteration;
  Result<std::optional<int>> loaded = load_checkpoint(
      args.load, state.pipeline_rank, state.pipeline_size, *trainer.model, trainer.optimizer);
  if (!loaded.ok()) return loaded.error();
  if (*loaded) start_iteration = **loaded;
  if (rank.rank == 0) {
    std::printf(*loaded ? "loaded checkpoint at iteration %d from %s\n"
                        : "no checkpoint in %2$s; starting at iteration %1$d\n",
                start_iteration, args.load.c_str());
  }
  return start_iteration;
}

// A trained step: the loss shared by every rank, the gradient norm (not finite: the update was
// skipped) and the context of its ended megatron.train_step span.
struct StepOutcome {
  double loss = 0.0;
  double grad_norm = 0.0;
  SpanContext context = SpanContext::GetInvalid();
};

// Trains `iteration` inside its megatron.train_step span, the root of a trace of its own (the
// same trace on every rank, from `step_traces`) linked to `train_context`; the first
// iteration of the run also inside megatron.first_iteration.
StepOutcome train_step(Trainer& trainer, int iteration, bool first, const TraceSeed& step_traces,
                       const SpanContext& train_context) {
  static const SpanGroupHandle step_group = span_group_handle(spans::kTrainStep.group);
  std::optional<ManagedSpan> first_iteration;
  if (first) {
    first_iteration.emplace(span_group_handle(spans::kFirstIteration.group),
                            spans::kFirstIteration.name,
                            AttributeList{{attrs::kIteration, iteration}});
  }
  ManagedSpan step(
      step_group, spans::kTrainStep.name, {{attrs::kIteration, iteration}},
      NewTrace{step_traces.trace_id_for(static_cast<std::uint64_t>(iteration)), train_context});
  // A collective on every rank, gated only on the pipeline size (the same everywhere).
  if (trainer.state.pipeline_size > 1) {
    set_pp_trace_carrier(broadcast_trace_context(trainer.state.collective.get(), 0));
  }
  const double local_loss = trainer.forward_backward(iteration);
  trainer.faults.crash.apply(iteration);
  trainer.sync_gradients();
  StepOutcome outcome;
  outcome.grad_norm = trainer.optimizer_step();
  outcome.loss = trainer.shared_loss(local_loss);
  step.set_attribute(attrs::kLoss, outcome.loss);
  if (std::isfinite(outcome.grad_norm)) step.set_attribute(attrs::kGradNorm, outcome.grad_norm);
  step.set_attribute(attrs::kLearningRate, trainer.args.lr);
  outcome.context = step.context();
  return outcome;
}

// Saves a checkpoint after `iteration` when --save asks for one (every --save-interval
// iterations and after the last).
Status save_if_due(const TrainingArgs& args, const RankInfo& rank, Trainer& trainer,
                   int iteration) {
  const bool save_now =
      !args.save.empty() && ((args.save_interval > 0 && iteration % args.save_interval == 0) ||
                             iteration == args.train_iters);
  if (!save_now) return Status::success();
  ParallelState& state = trainer.state;
  Status saved = save_checkpoint(args.save, iteration, state.pipeline_rank, state.pipeline_size,
                                 state.data_parallel_rank == 0, *trainer.model, trainer.optimizer,
                                 [&] { trainer.faults.apply(SlowStage::checkpoint, iteration); });
  barrier(state);
  if (saved.ok() && rank.rank == 0) saved = mark_latest(args.save, iteration);
  if (saved.ok() && rank.rank == 0) {
    std::printf("saved checkpoint at iteration %d to %s\n", iteration, args.save.c_str());
  }
  return saved;
}

// Trains the iterations after `start_iteration`, with the log interval's report, evaluation and
// checkpoints; the last iteration's loss.
Result<double> train_iterations(const TrainingArgs& args, const RankInfo& rank, Trainer& trainer,
                                const TelemetryHandle& telemetry, int start_iteration,
                                const SpanContext& train_context) {
  // Each iteration is its own trace, the same trace on every rank (a collective: every rank
  // calls it, whatever its telemetry settings), so a ratio sampler keeps or drops an iteration
  // on all ranks alike and a run of 100,000 steps is not one endless trace.
  const TraceSeed step_traces = share_trace_seed(trainer.state.collective.get(), 0);
  double last_loss = 0.0;
  IntervalReport interval(args, rank.rank, rank.world_size, telemetry);
  // Iteration lines become log records too (P_LOGS_ENABLED=1), stamped with their step's ids.
  setup_logging_bridge(lens::log::Level::info);
  for (int iteration = start_iteration + 1; iteration <= args.train_iters; ++iteration) {
    note_iteration_started(iteration);  // hang reports name it (lens/collectives.hpp)
    const bool first = iteration == start_iteration + 1;
    const StepOutcome step = train_step(trainer, iteration, first, step_traces, train_context);
    note_step_completed();  // the hang watchdog's step (lens/step_progress.hpp)
    last_loss = step.loss;
    interval.add(step.loss, step.grad_norm);
    if (iteration % args.log_interval == 0 || first) {
      interval.report(iteration, step.loss, step.grad_norm, step.context);
    }
    if (args.eval_iters > 0 && iteration % args.eval_interval == 0) {
      const double eval_loss = trainer.evaluate(iteration);
      if (rank.rank == 0) {
        std::printf(" validation loss at iteration %d | lm loss: %.6E\n", iteration, eval_loss);
        std::fflush(stdout);
      }
    }
    if (Status saved = save_if_due(args, rank, trainer, iteration); !saved.ok()) {
      return Error(saved.message());
    }
  }
  return last_loss;
}

// A start-up error (a bad flag, environment or job shape): the message on stderr; exit status 2.
int fail_start(const std::string& message) {
  std::fprintf(stderr, "simple_train_loop: %s\n", message.c_str());
  return 2;
}

// Prints a run's error and ends the job's telemetry; the exit status 1.
int fail_run(const std::string& message) {
  std::fprintf(stderr, "simple_train_loop: %s\n", message.c_str());
  (void)end_job_telemetry();
  return 1;
}

// The whole run on this rank; the process's exit status.
int run(const TrainingArgs& args, const RankInfo& rank, const ExampleOptions& example) {
  Result<ParallelState> parallel =
      init_parallel_state(rank, args.data_parallel_size, args.pipeline_model_parallel_size);
  if (!parallel.ok()) return fail_start(parallel.message());
  ParallelState& state = *parallel;

  SetTelemetryOptions telemetry_options;
  telemetry_options.collective = state.collective.get();
  if (Status status = set_telemetry(args, rank, std::move(telemetry_options)); !status.ok()) {
    return fail_start(status.message());
  }
  std::shared_ptr<TelemetryHandle> telemetry = get_telemetry();

  // The job spans stay current for the whole run; end_job_telemetry ends them (also on SIGTERM).
  std::optional<SpanScope> pretrain_scope;
  open_pretrain_span(args, pretrain_scope);
  std::optional<Trainer> trainer;
  build_trainer(args, rank, state, example, trainer);
  Result<int> start_iteration = resume_from_checkpoint(args, rank, state, *trainer);
  if (!start_iteration.ok()) return fail_run(start_iteration.message());
  std::optional<SpanScope> train_scope;
  const SpanContext train_context = open_train_span(args, train_scope);

  Result<double> last_loss =
      train_iterations(args, rank, *trainer, *telemetry, *start_iteration, train_context);
  if (!last_loss.ok()) return fail_run(last_loss.message());
  if (rank.rank == 0) {
    std::printf("training done: %d iterations, final lm loss %.6E\n", args.train_iters, *last_loss);
    std::fflush(stdout);
  }
  barrier(state);
  if (Status status = end_job_telemetry(); !status.ok()) {
    std::fprintf(stderr, "simple_train_loop: telemetry: %s\n", status.message().c_str());
  }
  return 0;
}

}  // namespace
}  // namespace lens::megatron::example

int main(int argc, char** argv) {
  using lens::megatron::TrainingArgs;
  using lens::megatron::example::fail_start;
  std::vector<std::string> command_line(argv + 1, argv + argc);
  lens::Result<lens::megatron::example::ExampleOptions> example =
      lens::megatron::example::take_example_options(command_line);
  if (!example.ok()) return fail_start(example.message());
  lens::Result<TrainingArgs> args = lens::megatron::parse_training_args(command_line);
  if (!args.ok()) return fail_start(args.message());
  if (args->help) {
    std::fputs(lens::megatron::help_text("simple_train_loop").c_str(), stdout);
    std::fputs(lens::megatron::example::example_options_help(), stdout);
    return 0;
  }
  lens::Result<lens::RankInfo> rank = lens::RankInfo::detect();
  if (!rank.ok()) return fail_start(rank.message());
  if (lens::Status status = lens::megatron::resolve_parallelism(*args, *rank); !status.ok()) {
    return fail_start(status.message());
  }
  if (args->tensor_model_parallel_size != 1) {
    return fail_start("--tensor-model-parallel-size " +
                      std::to_string(args->tensor_model_parallel_size) +
                      " is not implemented by this example; accepted: 1 (data and pipeline "
                      "parallelism are)");
  }
  torch::set_num_threads(1);  // ranks share the machine's cores
  if (lens::Status status = lens::megatron::example::check_example_options(
          *example, rank->world_size, args->pipeline_model_parallel_size);
      !status.ok()) {
    return fail_start(status.message());
  }
  return lens::megatron::example::run(*args, *rank, *example);
}
