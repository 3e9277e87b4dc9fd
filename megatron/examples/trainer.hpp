// One pipeline stage's training of the example GPT: the forward and backward passes of a step
// over its microbatches (all forwards, then all backwards), the data-parallel gradient
// all-reduce, the optimizer step, the shared loss and evaluation, each in its Megatron span.
// Used by the training thread only.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "counted_communication.hpp"
#include "gpt_model.hpp"
#include "injected_faults.hpp"
#include "lens/megatron/training_args.hpp"
#include "parallel_state.hpp"

namespace lens::megatron::example {

struct Trainer {
  const TrainingArgs& args;
  ParallelState& state;
  Stage model;
  torch::optim::Adam optimizer;
  std::vector<std::int64_t> activation_shape;
  InjectedFaults faults;
  CountedGroups groups;
  int current_iteration = 0;  // the step being trained, for the optimizer's faults

  Trainer(const TrainingArgs& a, ParallelState& s, Stage m, InjectedFaults f);

  // One step's forward and backward passes over all microbatches; the mean loss of the step on
  // the last stage (0 on stages that see no loss until it is shared by shared_loss).
  double forward_backward(int iteration);

  // Averages gradients over the data-parallel replicas.
  void sync_gradients();

  // Global gradient norm over all stages, clipped to 1.0; then the optimizer step. A norm that
  // is not finite (an overflow; --inf-grad-every injects one on every rank) skips the update, as
  // Megatron's optimizer does: the gradients are dropped and the norm is returned as it is.
  double optimizer_step();

  // The loss of the step as the last stage saw it, averaged over replicas, on every rank.
  double shared_loss(double local);

  // The mean evaluation loss over --eval-iters batches, on every rank.
  double evaluate(int iteration);

 private:
  // The stage's input for microbatch `m`: tokens on the first stage, else activations received
  // from the previous stage.
  torch::Tensor stage_input(const torch::Tensor& batch, int microbatch, bool training);
  // This replica's generated batch (training_data.hpp) of `iteration`, as a tensor
  // [micro_batch_size, seq_length + 1].
  torch::Tensor generated_batch(int iteration, int microbatch, bool evaluation) const;
  torch::Tensor loss_of(const torch::Tensor& logits, const torch::Tensor& batch);

  // Microbatch `m`'s forward pass: sets its `input` and `output` (on the last stage the loss
  // share, else the activations, then sent on); its loss share on the last stage, else 0.
  double forward_microbatch(int iteration, int m, torch::Tensor& input, torch::Tensor& output);
  // Microbatch `m`'s backward pass, from the next stage's gradient unless on the last stage; the
  // input's gradient then goes to the previous stage.
  void backward_microbatch(int iteration, const torch::Tensor& input, torch::Tensor& output);

  // The gradients of all parameters in one flat tensor, and back.
  torch::Tensor flat_gradients();
  void set_gradients(const torch::Tensor& flat);
};

}  // namespace lens::megatron::example
