// Builds an exporting rank's span pipeline from the lens config: the native SpanPipeline (span
// limits, batching, senders, the exporter) and the opentelemetry-cpp tracer provider (resource,
// seed-independent ids, the configured sampler) whose spans reach the same pipeline. Nothing is
// installed globally here. Thread-safety: stateless.
#pragma once

#include <opentelemetry/sdk/trace/exporter.h>
#include <opentelemetry/sdk/trace/tracer_provider.h>

#include <functional>
#include <memory>

#include "lens/attributes.hpp"
#include "lens/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"

namespace lens::native {
class SharedTickCalibration;
class SpanPipeline;
}  // namespace lens::native

namespace lens::telemetry {

struct BuiltTracerProvider {
  std::shared_ptr<opentelemetry::sdk::trace::TracerProvider> provider;
  // The native span pipeline; spans made through the provider's tracers (the opentelemetry
  // API) reach its export thread through a handoff processor.
  std::shared_ptr<native::SpanPipeline> pipeline;
};

// `clock`: the native span path's tick conversion, shared with the log pipeline (null: its own).
// `concurrent_exports`: how many batches the native path may have in the exporter's Export at
// once (more than one only for an exporter whose Export is thread-safe: lens's OTLP exporter).
Result<BuiltTracerProvider> build_tracer_provider(
    const Config& config, const RankInfo& rank, const Attributes& resource,
    std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> exporter,
    std::shared_ptr<native::SharedTickCalibration> clock = nullptr,
    std::size_t concurrent_exports = 1);

}  // namespace lens::telemetry
