// What the example trainer reports once per log interval (--log-interval): the iteration line on
// rank 0's stdout (also a log record, correlated with its step), and the megatron.training.*
// metrics on every rank, with Megatron's model FLOPs and peak memory. Used by the training thread.
#pragma once

#include <opentelemetry/trace/span_context.h>

#include <chrono>
#include <optional>

#include "lens/megatron/training_args.hpp"
#include "lens/telemetry.hpp"

namespace lens::megatron::example {

// The model FLOPs of one training iteration of the whole job (forward and backward, all
// replicas), counted as Megatron counts them: the matrix multiplications only, 2 FLOPs per
// multiply-add, the backward pass twice the forward. Per token and layer the forward pass costs
// 24 h^2 (QKV 6 h^2, attention output 2 h^2, the 4h MLP 16 h^2) plus 4 s h (scores and weighted
// values); the LM head 2 h V per token.
double flops_per_iteration(const TrainingArgs& args);

// Megatron reports torch.cuda.max_memory_allocated() / 1024^3; this CPU example's device is the
// CPU, so it reports the process's peak resident set, in the same units (GiB).
double peak_memory_gib();

// The iterations since the last report; its clock starts at construction.
class IntervalReport {
 public:
  IntervalReport(const TrainingArgs& args, int rank, int world_size,
                 const TelemetryHandle& telemetry);

  // One finished iteration: its loss and gradient norm (not finite: the update was skipped).
  void add(double loss, double grad_norm);

  // Reports the interval, whose last iteration is `iteration` (`loss`, `grad_norm`, its ended
  // step span's `step_context`), and starts the next one.
  void report(int iteration, double loss, double grad_norm,
              const opentelemetry::trace::SpanContext& step_context);

 private:
  // Rank 0's iteration line, printed and emitted as a log record of the step.
  void print_line(int iteration, double loss, double grad_norm, double ms_per_iteration,
                  double tokens_per_sec, const opentelemetry::trace::SpanContext& step_context);

  const TrainingArgs& args_;
  int rank_;
  int world_size_;
  const TelemetryHandle& telemetry_;
  double loss_sum_ = 0.0;  // summed over the interval
  int iterations_ = 0;
  int skipped_ = 0;                  // iterations whose update was skipped
  std::optional<double> grad_norm_;  // the interval's last finite gradient norm
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace lens::megatron::example
