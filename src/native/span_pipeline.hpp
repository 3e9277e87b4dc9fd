// SpanPipeline: the export pipeline (export_pipeline.hpp) of native spans. Spans made through
// opentelemetry-cpp's Tracer (third-party instrumentation, create_linked_span) reach the same
// export thread through the pipeline's processor, so one exporter sees one serial stream. Span
// limits (OTEL_SPAN_*, OTEL_ATTRIBUTE_*) apply as a native record is converted and as an API span
// is recorded. Shutdown exports the spans still open as truncated (docs/telemetry.md, "Shutdown"), each
// exactly once.
#pragma once

#include <opentelemetry/sdk/trace/exporter.h>
#include <opentelemetry/sdk/trace/processor.h>

#include <cstddef>
#include <memory>
#include <optional>

#include "lens/otel_settings.hpp"
#include "lens/sampling.hpp"
#include "native/attribute_limits.hpp"
#include "native/export_pipeline.hpp"
#include "native/span_depths.hpp"
#include "native/thread_spans.hpp"

namespace lens::native {

struct SpanPipelineOptions : PipelineOptions {
  // The bound on memory for finished native spans not yet exported, all threads together.
  std::size_t buffer_bytes = std::size_t{64} << 20;
  std::shared_ptr<const Sampler> sampler;  // which native spans record; null: all
  SpanLimits limits;
  // The exporter shows span depths (its recordables are core::SpanDepthSink): spans that other
  // threads may parent have their depths remembered (span_depths.hpp).
  bool track_depths = false;
};

struct SpanSignal {
  using Exporter = opentelemetry::sdk::trace::SpanExporter;
  using Recordable = opentelemetry::sdk::trace::Recordable;
  // Put into the opentelemetry-cpp tracer provider; the pipeline is shut down by its owner, after
  // the tracer provider.
  using Processor = opentelemetry::sdk::trace::SpanProcessor;
  using Registry = SpanRegistry;
  using Thread = ThreadSpans;
  // The thread state of the thread that asks for the shutdown (native::calling_thread_spans()
  // there): its open spans keep their events.
  using Caller = ThreadSpans;
  // Each pass (4 batches at most) sorted by end time.
  static constexpr bool kSortByEnd = true;
  using Options = SpanPipelineOptions;
  class State;
};

extern template class ExportPipeline<SpanSignal>;

class SpanPipeline : public ExportPipeline<SpanSignal> {
 public:
  SpanPipeline(const SpanPipelineOptions& options,
               std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> exporter,
               const opentelemetry::sdk::resource::Resource& resource)
      : ExportPipeline(options, std::move(exporter), resource),
        track_depths_(options.track_depths) {}
  // Makes native spans on every thread go to this pipeline (until shutdown).
  void activate() noexcept {
    set_depth_tracking(track_depths_);
    native::activate(registry());
  }

 private:
  const bool track_depths_;
};

}  // namespace lens::native
