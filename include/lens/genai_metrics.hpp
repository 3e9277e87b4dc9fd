// The GenAI inference metrics (docs/metrics.md, "Training and GenAI instruments") for C++ inference
// servers: gen_ai.server.request.duration (histogram, s) and gen_ai.client.token.usage (histogram,
// {token}; one record per token type). Attributes: gen_ai.operation.name, gen_ai.provider.name,
// gen_ai.request.model (only when a model is given) and, for token usage, gen_ai.token.type =
// input | output. Only the values given are recorded; instruments are created once per meter.
// Thread-safety: may be called from any thread.
#pragma once

#include <opentelemetry/metrics/meter.h>

#include <cstdint>
#include <optional>
#include <string>

namespace lens::metrics {

struct InferenceMetricValues {
  std::optional<double> request_duration_s = std::nullopt;
  std::string model = {};  // "" = not recorded as an attribute
  std::optional<std::int64_t> input_tokens = std::nullopt;
  std::optional<std::int64_t> output_tokens = std::nullopt;
  std::string provider_name = "nemo";
  std::string operation_name = "text_completion";
};

void record_inference_metrics(opentelemetry::metrics::Meter& meter,
                              const InferenceMetricValues& values) noexcept;

}  // namespace lens::metrics
