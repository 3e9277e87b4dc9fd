// SpanPipeline: the export side of the native span path. One thread drains every recording
// thread's ring, turns records into the exporter's own recordables (so every exporter lens has —
// OTLP gRPC/HTTP, console, file, in-memory — works unchanged), and exports them in batches of
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE, at the latest every OTEL_BSP_SCHEDULE_DELAY. Spans made
// through opentelemetry-cpp's Tracer (third-party instrumentation, create_linked_span) reach the
// same thread through the handoff processor, so one exporter sees one serial stream.
// Shutdown exports the spans still open as truncated (SPEC Part 2 §E.5), each exactly once.
// Thread-safety: force_flush and shutdown may be called from any thread; both are bounded by
// their timeout whatever the exporter does.
#pragma once

#include <opentelemetry/sdk/resource/resource.h>
#include <opentelemetry/sdk/trace/exporter.h>
#include <opentelemetry/sdk/trace/processor.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "lens/sampling.hpp"
#include "native/thread_spans.hpp"
#include "native/tick_clock.hpp"

namespace lens::native {

struct SpanPipelineOptions {
  std::size_t max_export_batch_size = 512;
  std::chrono::milliseconds schedule_delay{5000};
  // Finished opentelemetry-cpp spans waiting for the export thread (OTEL_BSP_MAX_QUEUE_SIZE).
  std::size_t max_queue_size = 2048;
  // The bound on memory for finished native spans not yet exported, all threads together.
  std::size_t buffer_bytes = std::size_t{64} << 20;
  // How often the export thread looks at the rings (recording threads never wake it).
  std::chrono::milliseconds drain_interval{10};
  // The tick conversion, shared with the other signal's pipeline of the same setup so that
  // log lines and spans agree on time; the pipeline makes its own when null.
  std::shared_ptr<SharedTickCalibration> clock;
};

struct SpanPipelineCounts {
  std::uint64_t started = 0;          // native spans recorded
  std::uint64_t ended = 0;            // native spans ended into a buffer, or ended by shutdown
  std::uint64_t lost_unended = 0;     // native spans lost instead of ending: buffer full
  std::uint64_t lost_queue_full = 0;  // ended opentelemetry-cpp spans the handoff queue refused
  std::uint64_t truncated = 0;        // exported as still open at shutdown
};

class SpanPipeline {
 public:
  // `exporter` must not be null; it is only ever called from the export thread.
  SpanPipeline(const SpanPipelineOptions& options,
               std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> exporter,
               std::shared_ptr<const Sampler> sampler,
               const opentelemetry::sdk::resource::Resource& resource);
  ~SpanPipeline();
  SpanPipeline(const SpanPipeline&) = delete;
  SpanPipeline& operator=(const SpanPipeline&) = delete;

  // Makes native spans on every thread go to this pipeline (until shutdown).
  void activate() noexcept;
  // The processor to put (behind the open-span closer) into the opentelemetry-cpp tracer
  // provider, for spans made through its Tracer.
  std::unique_ptr<opentelemetry::sdk::trace::SpanProcessor> make_handoff_processor();

  // Exports everything finished before the call; false when the timeout passed first.
  bool force_flush(std::chrono::microseconds timeout) noexcept;
  // Stops taking spans, exports what is finished and, truncated, what is still open, then shuts
  // the exporter down. Once; false when the timeout passed first (the export thread is then left
  // to finish on its own). `caller` is the thread state of the thread that asked for the
  // shutdown (native::calling_thread_spans() there): its open spans keep their events.
  bool shutdown(std::chrono::microseconds timeout, const ThreadSpans* caller = nullptr) noexcept;

  SpanPipelineCounts counts() const noexcept;

  struct Core;  // internal, shared with the export thread

 private:
  std::shared_ptr<Core> core_;
  std::shared_ptr<SpanRegistry> registry_;
  std::thread thread_;
  std::once_flag shutdown_once_;
  bool shutdown_result_ = false;
};

}  // namespace lens::native
