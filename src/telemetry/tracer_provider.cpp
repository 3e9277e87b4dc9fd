// Assembly of an exporting rank's tracer provider (see tracer_provider.hpp): the native span
// pipeline, and the opentelemetry-cpp provider through which spans made with the opentelemetry
// API reach it: its one processor hands them to the pipeline's export thread, which applies the
// limits and sends batches to the exporter (which counts its outcomes in the traces' report).
#include "telemetry/tracer_provider.hpp"

#include <algorithm>

#include "core/span_depth.hpp"
#include "lens/sampling.hpp"
#include "native/span_pipeline.hpp"
#include "sdk/id_generator.hpp"
#include "sdk/sampler_adapter.hpp"
#include "telemetry/otel_resource.hpp"

namespace lens::telemetry {

namespace sdktrace = opentelemetry::sdk::trace;

BuiltTracerProvider build_tracer_provider(native::SpanPipelineOptions options,
                                          const Attributes& resource,
                                          std::unique_ptr<sdktrace::SpanExporter> exporter) {
  BuiltTracerProvider built;
  // The export thread converts the next batch while this one is sent.
  options.concurrent_exports = std::max<std::size_t>(options.concurrent_exports, 1);
  if (options.sampler == nullptr) {
    options.sampler = make_standard_sampler(SamplerKind::always_on, 1.0);
  }
  // Asked of one recordable: the exporter's are all of one type.
  options.track_depths = exporter != nullptr && dynamic_cast<core::SpanDepthSink*>(
                                                    exporter->MakeRecordable().get()) != nullptr;
  built.pipeline = std::make_shared<native::SpanPipeline>(options, std::move(exporter),
                                                          to_otel_resource(resource));
  // One processor only: every extra processor costs the SDK a recordable per span.
  std::vector<std::unique_ptr<sdktrace::SpanProcessor>> processors;
  processors.push_back(built.pipeline->make_processor());
  built.provider = std::make_shared<sdktrace::TracerProvider>(
      std::move(processors), to_otel_resource(resource),
      std::make_unique<sdk::SamplerAdapter>(options.sampler),
      std::make_unique<sdk::SeedIndependentIdGenerator>());
  return built;
}

}  // namespace lens::telemetry
