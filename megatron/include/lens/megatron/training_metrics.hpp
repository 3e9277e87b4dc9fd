// The megatron.training.* metrics (docs/metrics.md, "Training and GenAI instruments"), recorded
// by one call per log interval:
//
//   lens::megatron::record_training_metrics(*handle.meter(),
//       {.step_duration_ms = 412.0, .loss = 2.31, .grad_norm = 1.7, .learning_rate = 3e-4});
//
// Names, kinds and units are Megatron-LM's (megatron/core/telemetry/training_metrics.py): only
// step_duration_ms has a unit ("ms"); through Prometheus the names are megatron_training_loss,
// ..._step_duration_ms_milliseconds_{bucket,sum,count}, ..._skipped_iters_total and so on.
// Only the values given are recorded. The instruments are created once per meter (and per
// process after fork()); the cache does not keep the meter alive. On a no-op meter (disabled
// or non-exporting rank) nothing is recorded. Thread-safety: may be called from any thread.
#pragma once

#include <opentelemetry/metrics/meter.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace lens::megatron {

struct TrainingMetricValues {
  std::optional<double> step_duration_ms = std::nullopt;   // histogram, ms: wall time per iteration
  std::optional<double> loss = std::nullopt;               // gauge
  std::optional<double> throughput_tflops = std::nullopt;  // gauge: TFLOP/s per GPU
  std::optional<double> tokens_per_sec = std::nullopt;     // gauge: tokens per second
  std::optional<double> grad_norm = std::nullopt;          // gauge
  std::optional<std::int64_t> skipped_iters = std::nullopt;  // counter: added only when > 0
  std::optional<double> learning_rate = std::nullopt;        // gauge
  std::optional<double> memory_allocated_gb = std::nullopt;  // gauge: peak allocated / 1024^3
};

// The instrument names, in the order of TrainingMetricValues.
inline constexpr std::string_view kStepDurationMs = "megatron.training.step_duration_ms";
inline constexpr std::string_view kLoss = "megatron.training.loss";
inline constexpr std::string_view kThroughputTflops = "megatron.training.throughput_tflops";
inline constexpr std::string_view kTokensPerSec = "megatron.training.tokens_per_sec";
inline constexpr std::string_view kGradNorm = "megatron.training.grad_norm";
inline constexpr std::string_view kSkippedIters = "megatron.training.skipped_iters";
inline constexpr std::string_view kLearningRate = "megatron.training.learning_rate";
inline constexpr std::string_view kMemoryAllocatedGb = "megatron.training.memory_allocated_gb";

void record_training_metrics(opentelemetry::metrics::Meter& meter,
                             const TrainingMetricValues& values) noexcept;

}  // namespace lens::megatron
