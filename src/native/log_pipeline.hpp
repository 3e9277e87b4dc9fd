// LogPipeline: the export pipeline (export_pipeline.hpp) of native log records: it drains every
// logging thread's ring (thread_logs.hpp) and exports in batches of
// OTEL_BLRP_MAX_EXPORT_BATCH_SIZE, at the latest every OTEL_BLRP_SCHEDULE_DELAY. Records made
// through opentelemetry-cpp's Logger (third-party code using the global logger provider) reach
// the same thread through the pipeline's processor, so one exporter sees one serial stream; that
// processor's ForceFlush and Shutdown are the pipeline's, and it keeps the pipeline alive as
// long as the provider lives.
#pragma once

#include <opentelemetry/sdk/logs/exporter.h>
#include <opentelemetry/sdk/logs/processor.h>

#include <memory>

#include "native/attribute_limits.hpp"
#include "native/export_pipeline.hpp"
#include "native/thread_logs.hpp"

namespace lens::native {

struct LogPipelineOptions : PipelineOptions {
  LogPipelineOptions() { schedule_delay = std::chrono::milliseconds(1000); }
  AttributeLimits limits;  // per record; value lengths in code points
};

struct LogSignal {
  using Exporter = opentelemetry::sdk::logs::LogRecordExporter;
  using Recordable = opentelemetry::sdk::logs::Recordable;
  using Processor = opentelemetry::sdk::logs::LogRecordProcessor;
  using Registry = LogRegistry;
  using Thread = ThreadLogs;
  using Caller = void;
  // Ring order; each ring drained whole in a pass.
  static constexpr bool kSortByEnd = false;
  using Options = LogPipelineOptions;
  class State;
};

extern template class ExportPipeline<LogSignal>;

using LogPipeline = ExportPipeline<LogSignal>;

}  // namespace lens::native
