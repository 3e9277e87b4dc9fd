// ExportPipeline: the export side of a native signal (spans, logs). One thread drains every
// recording thread's ring and the queue of records made through opentelemetry-cpp's API (its
// processor, make_processor()), turns ring records into the exporter's own recordables (so every
// exporter lens has works unchanged), and exports them in batches of max_export_batch_size, at
// the latest every schedule_delay, in the order they ended within each pass. With
// concurrent_exports > 0 the exporter's Export runs on that many sender threads of the pipeline,
// so that the export thread converts the next batch while one is on the wire; at most one batch
// then waits for a sender, which bounds memory and keeps back-pressure on the export thread
// (never on a recording thread). One set of counters serves the self-metrics and the end-of-run
// figures. What differs per signal (types, ring format, conversion, limits, the open spans at
// shutdown) is the Signal's (span_pipeline.hpp, log_pipeline.hpp).
// Thread-safety: force_flush, shutdown and counts from any thread; flush and shutdown are bounded
// by their timeout whatever the exporter does.
#pragma once

#include <opentelemetry/sdk/resource/resource.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "core/signal_counts.hpp"
#include "native/tick_clock.hpp"

namespace lens::native {

struct PipelineOptions {
  std::size_t max_export_batch_size = 512;
  std::chrono::milliseconds schedule_delay{5000};
  // Records made through opentelemetry-cpp's API waiting for the export thread (for logs also
  // the bound of each logging thread's ring).
  std::size_t max_queue_size = 2048;
  // How often the export thread looks at the rings (recording threads never wake it).
  std::chrono::milliseconds drain_interval{10};
  // Batches in the exporter's Export at once, on sender threads; 0: Export on the export thread.
  // More than one only for an exporter whose Export is thread-safe (lens's OTLP exporters).
  std::size_t concurrent_exports = 0;
  // The tick conversion, shared with the other signal's pipeline of the same setup so that log
  // lines and spans agree on time; the pipeline makes its own when null.
  std::shared_ptr<SharedTickCalibration> clock;
};

// One signal's outcome counters (core/signal_counts.hpp): the pipeline fills its own part.
using PipelineCounts = core::SignalCounts;

// Made with std::make_shared (make_processor shares the ownership). Defined for SpanSignal and
// LogSignal only (export_pipeline_impl.hpp, instantiated in their .cpp).
template <class Signal>
class ExportPipeline : public std::enable_shared_from_this<ExportPipeline<Signal>> {
 public:
  using Options = typename Signal::Options;
  // `exporter` must not be null; it is only ever called from the export thread and the senders.
  ExportPipeline(const Options& options, std::unique_ptr<typename Signal::Exporter> exporter,
                 const opentelemetry::sdk::resource::Resource& resource);
  // Shuts down (5 s at most) if nobody did.
  ~ExportPipeline();
  ExportPipeline(const ExportPipeline&) = delete;
  ExportPipeline& operator=(const ExportPipeline&) = delete;

  // What native records are written into.
  const std::shared_ptr<typename Signal::Registry>& registry() const noexcept;
  // The processor for opentelemetry-cpp's provider: what its API makes joins the export stream.
  std::unique_ptr<typename Signal::Processor> make_processor();

  // Exports everything finished before the call; false when the timeout passed first.
  bool force_flush(std::chrono::microseconds timeout) noexcept;
  // Stops taking records, exports what is waiting (and what the signal adds at shutdown), then
  // shuts the exporter down. Once; false when the timeout passed first (the export thread is
  // then left to finish on its own). `caller`: see the signal.
  bool shutdown(std::chrono::microseconds timeout,
                const typename Signal::Caller* caller = nullptr) noexcept;

  PipelineCounts counts() const noexcept;

  struct Core;  // internal, shared with the export thread

 private:
  std::shared_ptr<Core> core_;
  std::thread thread_;
  std::once_flag shutdown_once_;
  bool shutdown_result_ = false;
};

}  // namespace lens::native
