// Builds an exporting rank's span pipeline from its options (telemetry/plan.hpp): the native
// SpanPipeline (span limits, batching, senders, the exporter) and the opentelemetry-cpp tracer
// provider (resource, seed-independent ids, the options' sampler) whose spans reach the same
// pipeline. Nothing is
// installed globally here. Thread-safety: stateless.
#pragma once

#include <opentelemetry/sdk/trace/exporter.h>
#include <opentelemetry/sdk/trace/tracer_provider.h>

#include <functional>
#include <memory>

#include "lens/attributes.hpp"
#include "native/span_pipeline.hpp"

namespace lens::telemetry {

struct BuiltTracerProvider {
  std::shared_ptr<opentelemetry::sdk::trace::TracerProvider> provider;
  // The native span pipeline; spans made through the provider's tracers (the opentelemetry
  // API) reach its export thread through a handoff processor.
  std::shared_ptr<native::SpanPipeline> pipeline;
};

// `options.sampler` decides for both paths (null: always on); `options.clock` is the tick
// conversion shared with the log pipeline (null: its own); `options.concurrent_exports` how
// many batches may be in the exporter's Export at once (more than one only for an exporter
// whose Export is thread-safe: lens's OTLP exporter). track_depths is decided here.
BuiltTracerProvider build_tracer_provider(
    native::SpanPipelineOptions options, const Attributes& resource,
    std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> exporter);

}  // namespace lens::telemetry
