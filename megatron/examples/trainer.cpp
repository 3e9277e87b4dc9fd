// One pipeline stage's training steps and evaluation, with their Megatron spans (see
// trainer.hpp).
#include "trainer.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "lens/collectives.hpp"
#include "lens/distributed.hpp"
#include "lens/megatron/spans.hpp"
#include "lens/megatron/telemetry.hpp"
#include "lens/span.hpp"
#include "training_data.hpp"

namespace lens::megatron::example {

namespace spans = ::lens::megatron::spans;
namespace attrs = ::lens::megatron::spans::attributes;
namespace collective = ::lens::collective_attributes;

Trainer::Trainer(const TrainingArgs& a, ParallelState& s, Stage m, InjectedFaults f)
    : args(a),
      state(s),
      model(std::move(m)),
      optimizer(model->parameters(), torch::optim::AdamOptions(a.lr)),
      activation_shape{a.seq_length, a.micro_batch_size, a.hidden_size},
      faults(f),
      groups(counted_groups(s)) {}

// With the linked span of docs/megatron.md, "Distributed tracing across ranks", around a
// training receive when rank 0 shared its context.
torch::Tensor Trainer::stage_input(const torch::Tensor& batch, int microbatch, bool training) {
  if (state.first_stage()) return batch.slice(1, 0, args.seq_length);
  Span linked;
  static const SpanGroupHandle communication = span_group_handle(spans::kPpRecvForwardLinked.group);
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

torch::Tensor Trainer::generated_batch(int iteration, int microbatch, bool evaluation) const {
  return torch::tensor(generated_tokens(state.data_parallel_rank, iteration, microbatch, evaluation,
                                        args.micro_batch_size, args.seq_length),
                       torch::kLong)
      .reshape({args.micro_batch_size, args.seq_length + 1});
}

torch::Tensor Trainer::loss_of(const torch::Tensor& logits, const torch::Tensor& batch) {
  const torch::Tensor labels = batch.slice(1, 1, args.seq_length + 1);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, kVocabSize}),
                                              labels.reshape({-1}));
}

double Trainer::forward_backward(int iteration) {
  current_iteration = iteration;
  const int microbatches = args.num_microbatches();
  LENS_SPAN(spans::kForwardBackward, {attrs::kNumMicrobatches, microbatches});
  std::vector<torch::Tensor> inputs(microbatches);
  std::vector<torch::Tensor> outputs(microbatches);
  double loss_sum = 0.0;
  for (int m = 0; m < microbatches; ++m) {
    loss_sum += forward_microbatch(iteration, m, inputs[m], outputs[m]);
  }
  for (int m = microbatches - 1; m >= 0; --m) backward_microbatch(iteration, inputs[m], outputs[m]);
  return loss_sum;
}

double Trainer::forward_microbatch(int iteration, int m, torch::Tensor& input,
                                   torch::Tensor& output) {
  const int microbatches = args.num_microbatches();
  double loss = 0.0;
  // The receive is a sibling of the microbatch span (docs/megatron.md, "The span hierarchy").
  if (!state.first_stage()) input = stage_input(torch::Tensor(), m, true);
  {
    LENS_SPAN(spans::kMicrobatchForward, {attrs::kMicrobatchId, m});
    torch::Tensor batch;
    if (state.first_stage() || state.last_stage()) {
      LENS_SPAN(spans::kDataNextBatch);
      batch = generated_batch(iteration, m, false);
      faults.apply(SlowStage::data, iteration, microbatches);
    }
    if (state.first_stage()) input = stage_input(batch, m, true);
    torch::Tensor out = model->forward(input);
    faults.apply(SlowStage::forward, iteration, microbatches);
    if (state.last_stage()) {
      output = loss_of(out, batch) / microbatches;
      loss = output.item<double>();
    } else {
      output = out;
    }
  }
  if (!state.last_stage()) {
    LENS_SPAN(spans::kP2pSendForward);
    send(state, *groups.pipeline, output.detach(), state.pipeline_rank + 1);
  }
  return loss;
}

void Trainer::backward_microbatch(int iteration, const torch::Tensor& input,
                                  torch::Tensor& output) {
  torch::Tensor grad;
  if (!state.last_stage()) {
    LENS_SPAN(spans::kP2pRecvBackward);
    grad = receive(state, *groups.pipeline, activation_shape, state.pipeline_rank + 1);
  }
  {
    LENS_SPAN(spans::kMicrobatchBackward);
    faults.apply(SlowStage::backward, iteration, args.num_microbatches());
    if (state.last_stage()) {
      output.backward();
    } else {
      output.backward(grad);
    }
  }
  if (!state.first_stage()) {
    LENS_SPAN(spans::kP2pSendBackward);
    send(state, *groups.pipeline, input.grad(), state.pipeline_rank - 1);
  }
}

torch::Tensor Trainer::flat_gradients() {
  std::vector<torch::Tensor> grads;
  for (auto& parameter : model->parameters()) {
    if (parameter.grad().defined()) grads.push_back(parameter.grad().reshape({-1}));
  }
  return torch::cat(grads);
}

void Trainer::set_gradients(const torch::Tensor& flat) {
  std::int64_t offset = 0;
  for (auto& parameter : model->parameters()) {
    if (!parameter.grad().defined()) continue;
    const std::int64_t n = parameter.grad().numel();
    parameter.grad().copy_(flat.slice(0, offset, offset + n).view_as(parameter.grad()));
    offset += n;
  }
}

void Trainer::sync_gradients() {
  if (!state.data_parallel) return;
  std::vector<torch::Tensor> flat = {flat_gradients()};
  faults.slowdown.apply(SlowStage::grad_sync, current_iteration);  // enters late
  // Entered here, finished when the wait returns: the hang watchdog sees it open meanwhile.
  CountedCollective counted(*groups.data_parallel, "all_reduce", bytes_of(flat[0]));
  const auto seq = static_cast<std::int64_t>(counted.seq());
  c10::intrusive_ptr<c10d::Work> work;
  {
    LENS_SPAN(spans::kGradSyncStart, {collective::kGroup, groups.data_parallel->name()},
              {collective::kGroupRanks, groups.data_parallel->ranks()},
              {collective::kOperation, "all_reduce"}, {collective::kBytes, bytes_of(flat[0])},
              {collective::kSeq, seq});
    faults.hang.apply(SlowStage::grad_sync, current_iteration);  // inside it, its part never sent
    work = state.data_parallel->allreduce(flat);
  }
  LENS_SPAN(spans::kGradSyncFinish, {collective::kGroup, groups.data_parallel->name()},
            {collective::kOperation, "all_reduce"}, {collective::kSeq, seq});
  work->wait();
  counted.finish();
  flat[0].div_(state.data_parallel_size);
  set_gradients(flat[0]);
}

double Trainer::optimizer_step() {
  torch::NoGradGuard no_grad;
  if (faults.overflow.due(current_iteration)) {
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
    faults.apply(SlowStage::optimizer, current_iteration);
    return grad_norm;
  }
  LENS_SPAN(spans::kOptimizerStep, {attrs::kUpdateSuccessful, true}, {attrs::kGradNorm, grad_norm});
  if (grad_norm > 1.0) {
    for (auto& parameter : model->parameters()) {
      if (parameter.grad().defined()) parameter.grad().mul_(1.0 / grad_norm);
    }
  }
  optimizer.step();
  optimizer.zero_grad();
  faults.apply(SlowStage::optimizer, current_iteration);
  return grad_norm;
}

double Trainer::shared_loss(double local) {
  const double stage_sum =
      all_reduce_sum(state.pipeline, groups.pipeline, state.last_stage() ? local : 0.0);
  return all_reduce_sum(state.data_parallel, groups.data_parallel, stage_sum) /
         state.data_parallel_size;
}

double Trainer::evaluate(int iteration) {
  LENS_SPAN(spans::kEvaluate, {attrs::kEvalIters, args.eval_iters});
  torch::NoGradGuard no_grad;
  double loss_sum = 0.0;
  for (int e = 0; e < args.eval_iters; ++e) {
    LENS_SPAN(spans::kEvaluateStep, {attrs::kEvalIteration, e});
    const torch::Tensor batch = generated_batch(iteration, e, true);
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

}  // namespace lens::megatron::example
