// megatron.training.* instruments (see lens/megatron/training_metrics.hpp): the names, kinds and
// units Megatron-LM registers (megatron/core/telemetry/training_metrics.py): "ms" on the
// step-duration histogram and no unit on anything else, so that every exporter (and Prometheus,
// which appends a unit to the name) shows the names Megatron's dashboards query.
#include "lens/megatron/training_metrics.hpp"

#include <opentelemetry/context/context.h>
#include <opentelemetry/metrics/sync_instruments.h>

#include <memory>

#include "lens/metrics.hpp"

namespace lens::megatron {
namespace {

namespace api = opentelemetry::metrics;
namespace nostd = opentelemetry::nostd;

nostd::string_view sv(std::string_view s) { return {s.data(), s.size()}; }

struct TrainingInstruments {
  static constexpr const char* kDomain = "training";

  nostd::unique_ptr<api::Histogram<double>> step_duration_ms;
  metrics::Gauge<double> loss;
  metrics::Gauge<double> throughput_tflops;
  metrics::Gauge<double> tokens_per_sec;
  metrics::Gauge<double> grad_norm;
  nostd::unique_ptr<api::Counter<std::uint64_t>> skipped_iters;
  metrics::Gauge<double> learning_rate;
  metrics::Gauge<double> memory_allocated_gb;

  static std::shared_ptr<TrainingInstruments> make(api::Meter& meter) {
    auto made = std::make_shared<TrainingInstruments>();
    made->step_duration_ms = meter.CreateDoubleHistogram(
        sv(kStepDurationMs), "Average wall time per iteration over the log interval", "ms");
    made->loss = metrics::create_double_gauge(meter, kLoss, "Training loss");
    made->throughput_tflops =
        metrics::create_double_gauge(meter, kThroughputTflops, "Throughput in TFLOP/s per GPU");
    made->tokens_per_sec =
        metrics::create_double_gauge(meter, kTokensPerSec, "Tokens trained per second");
    made->grad_norm = metrics::create_double_gauge(meter, kGradNorm, "Gradient norm");
    made->skipped_iters =
        meter.CreateUInt64Counter(sv(kSkippedIters), "Iterations whose update was skipped");
    made->learning_rate = metrics::create_double_gauge(meter, kLearningRate, "Learning rate");
    made->memory_allocated_gb = metrics::create_double_gauge(
        meter, kMemoryAllocatedGb, "Peak allocated device memory, bytes / 1024^3");
    return made;
  }
};

}  // namespace

void record_training_metrics(api::Meter& meter, const TrainingMetricValues& v) noexcept {
  try {
    auto instruments = metrics::instruments_for<TrainingInstruments>(meter);
    if (instruments == nullptr) return;
    if (v.step_duration_ms && instruments->step_duration_ms) {
      instruments->step_duration_ms->Record(*v.step_duration_ms, opentelemetry::context::Context{});
    }
    if (v.loss) instruments->loss.record(*v.loss);
    if (v.throughput_tflops) instruments->throughput_tflops.record(*v.throughput_tflops);
    if (v.tokens_per_sec) instruments->tokens_per_sec.record(*v.tokens_per_sec);
    if (v.grad_norm) instruments->grad_norm.record(*v.grad_norm);
    if (v.skipped_iters && *v.skipped_iters > 0 && instruments->skipped_iters) {
      instruments->skipped_iters->Add(static_cast<std::uint64_t>(*v.skipped_iters));
    }
    if (v.learning_rate) instruments->learning_rate.record(*v.learning_rate);
    if (v.memory_allocated_gb) instruments->memory_allocated_gb.record(*v.memory_allocated_gb);
  } catch (...) {
    // Out of memory: this interval's values are lost, training is not disturbed.
  }
}

}  // namespace lens::megatron
