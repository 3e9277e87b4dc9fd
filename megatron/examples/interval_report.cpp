// The example trainer's per-interval report: iteration line, log record, training metrics,
// FLOPs and peak memory (see interval_report.hpp).
#include "interval_report.hpp"

#include <opentelemetry/trace/default_span.h>
#include <opentelemetry/trace/scope.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "lens/log.hpp"
#include "lens/megatron/spans.hpp"
#include "lens/megatron/training_metrics.hpp"
#include "training_data.hpp"

namespace lens::megatron::example {

namespace attrs = ::lens::megatron::spans::attributes;

double flops_per_iteration(const TrainingArgs& args) {
  const double h = args.hidden_size;
  const double s = args.seq_length;
  const double tokens = static_cast<double>(args.global_batch()) * s;
  const double forward_per_token =
      args.num_layers * (24.0 * h * h + 4.0 * s * h) + 2.0 * h * kVocabSize;
  return 3.0 * forward_per_token * tokens;
}

double peak_memory_gib() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0.0;
  return static_cast<double>(usage.ru_maxrss) * 1024.0 / (1024.0 * 1024.0 * 1024.0);
}

IntervalReport::IntervalReport(const TrainingArgs& args, int rank, int world_size,
                               const TelemetryHandle& telemetry)
    : args_(args), rank_(rank), world_size_(world_size), telemetry_(telemetry) {}

void IntervalReport::add(double loss, double grad_norm) {
  loss_sum_ += loss;
  ++iterations_;
  if (std::isfinite(grad_norm)) {
    grad_norm_ = grad_norm;
  } else {
    ++skipped_;
  }
}

void IntervalReport::report(int iteration, double loss, double grad_norm,
                            const opentelemetry::trace::SpanContext& step_context) {
  const auto now = std::chrono::steady_clock::now();
  const double ms_per_iteration =
      std::chrono::duration<double, std::milli>(now - start_).count() / iterations_;
  const double tokens_per_sec =
      args_.global_batch() * args_.seq_length * 1000.0 / std::max(ms_per_iteration, 1e-9);
  const double mean_loss = loss_sum_ / iterations_;
  // Megatron's throughput: model FLOPs of the iteration per second, per rank, in TFLOP/s.
  const double tflops =
      flops_per_iteration(args_) / (std::max(ms_per_iteration, 1e-9) / 1000.0) / world_size_ / 1e12;
  // The megatron.training.* instruments (docs/megatron.md, "Training metrics"), on every rank (a
  // non-exporting rank's meter records nothing).
  record_training_metrics(*telemetry_.meter(), {.step_duration_ms = ms_per_iteration,
                                                .loss = mean_loss,
                                                .throughput_tflops = tflops,
                                                .tokens_per_sec = tokens_per_sec,
                                                .grad_norm = grad_norm_,
                                                .skipped_iters = skipped_,
                                                .learning_rate = args_.lr,
                                                .memory_allocated_gb = peak_memory_gib()});
  start_ = now;
  loss_sum_ = 0.0;
  iterations_ = 0;
  skipped_ = 0;
  grad_norm_.reset();
  if (rank_ == 0) {
    print_line(iteration, loss, grad_norm, ms_per_iteration, tokens_per_sec, step_context);
  }
}

void IntervalReport::print_line(int iteration, double loss, double grad_norm,
                                double ms_per_iteration, double tokens_per_sec,
                                const opentelemetry::trace::SpanContext& step_context) {
  char line[256];
  std::snprintf(line, sizeof(line),
                " iteration %8d/%8d | lm loss: %.6E | grad norm: %.3f | elapsed time per iteration "
                "(ms): %.1f | tokens/s: %.0f",
                iteration, args_.train_iters, loss, grad_norm, ms_per_iteration, tokens_per_sec);
  std::printf("%s\n", line);
  std::fflush(stdout);
  // The step has ended: its context, made current again, correlates the record with it.
  const opentelemetry::trace::Scope in_step(
      opentelemetry::nostd::shared_ptr<opentelemetry::trace::Span>(
          new opentelemetry::trace::DefaultSpan(step_context)));
  lens::log::emit(lens::log::Level::info, line, {{attrs::kIteration, iteration}});
}

}  // namespace lens::megatron::example
