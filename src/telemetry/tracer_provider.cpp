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

Result<BuiltTracerProvider> build_tracer_provider(
    const Config& config, const RankInfo& rank, const Attributes& resource,
    std::unique_ptr<sdktrace::SpanExporter> exporter,
    std::shared_ptr<native::SharedTickCalibration> clock, std::size_t concurrent_exports) {
  auto sampler = make_sampler(config, rank);
  if (!sampler.ok()) {
    return Error(sampler.message());
  }

  BuiltTracerProvider built;
  native::SpanPipelineOptions options;
  options.max_export_batch_size =
      static_cast<std::size_t>(config.otel.bsp.max_export_batch_size.value);
  options.schedule_delay = std::chrono::milliseconds(config.otel.bsp.schedule_delay_ms.value);
  options.max_queue_size = static_cast<std::size_t>(config.otel.bsp.max_queue_size.value);
  options.buffer_bytes = static_cast<std::size_t>(config.span_buffer_mb) << 20;
  // The export thread converts the next batch while this one is sent.
  options.concurrent_exports = std::max<std::size_t>(concurrent_exports, 1);
  options.clock = std::move(clock);
  options.sampler = *sampler;
  options.limits = native::SpanLimits::from(config.otel.limits);
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
      std::make_unique<sdk::SamplerAdapter>(*sampler),
      std::make_unique<sdk::SeedIndependentIdGenerator>());
  return built;
}

}  // namespace lens::telemetry
