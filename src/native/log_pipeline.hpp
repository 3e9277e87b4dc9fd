// LogPipeline: the export side of the native log path. One thread drains every logging thread's
// ring (thread_logs.hpp), turns records into the exporter's own recordables (so every log
// exporter lens has — OTLP gRPC/HTTP, console, file, in-memory — works unchanged), and exports
// them in batches of OTEL_BLRP_MAX_EXPORT_BATCH_SIZE, at the latest every
// OTEL_BLRP_SCHEDULE_DELAY. Records made through opentelemetry-cpp's Logger (third-party code
// using the global logger provider) reach the same thread through the processor of
// make_processor(), so one exporter sees one serial stream.
// Thread-safety: force_flush, shutdown and counts may be called from any thread; flush and
// shutdown are bounded by their timeout whatever the exporter does.
#pragma once

#include <opentelemetry/sdk/logs/exporter.h>
#include <opentelemetry/sdk/logs/processor.h>
#include <opentelemetry/sdk/resource/resource.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "native/thread_logs.hpp"
#include "native/tick_clock.hpp"

namespace lens::native {

struct LogPipelineOptions {
  std::size_t max_export_batch_size = 512;
  std::chrono::milliseconds schedule_delay{1000};
  // Records not yet taken by the export thread, per logging thread; also the bound of the
  // queue of records made through opentelemetry-cpp's Logger (OTEL_BLRP_MAX_QUEUE_SIZE).
  std::size_t max_queue_size = 2048;
  std::int64_t attribute_count_limit = 128;                  // per record
  std::optional<std::int64_t> attribute_value_length_limit;  // bytes, strings cut on UTF-8 bounds
  // How often the export thread looks at the rings (logging threads never wake it).
  std::chrono::milliseconds drain_interval{10};
  // The tick conversion, shared with the other signal's pipeline of the same setup so that
  // log lines and spans agree on time; the pipeline makes its own when null.
  std::shared_ptr<SharedTickCalibration> clock;
};

struct LogPipelineCounts {
  std::uint64_t emitted = 0;  // records accepted (written to a ring or queued)
  std::uint64_t dropped = 0;  // records refused: a full queue or buffer
  // Records lost before the exporter saw them (out of memory converting or batching); the
  // exports' own outcomes are counted in the logs' ExportReport.
  std::uint64_t lost = 0;
};

// Made with std::make_shared (make_processor shares the ownership).
class LogPipeline : public std::enable_shared_from_this<LogPipeline> {
 public:
  // `exporter` must not be null; it is only ever called from the export thread.
  LogPipeline(const LogPipelineOptions& options,
              std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> exporter,
              const opentelemetry::sdk::resource::Resource& resource);
  // Shuts down (5 s at most) if nobody did.
  ~LogPipeline();
  LogPipeline(const LogPipeline&) = delete;
  LogPipeline& operator=(const LogPipeline&) = delete;

  // What lens::log writes into (native::write_log).
  const std::shared_ptr<LogRegistry>& registry() const noexcept { return registry_; }

  // The processor for opentelemetry-cpp's LoggerProvider: records emitted through its loggers
  // join the export stream; its ForceFlush and Shutdown are this pipeline's; it keeps the
  // pipeline alive as long as the provider lives.
  std::unique_ptr<opentelemetry::sdk::logs::LogRecordProcessor> make_processor();

  // Exports everything emitted before the call; false when the timeout passed first.
  bool force_flush(std::chrono::microseconds timeout) noexcept;
  // Stops taking records, exports what is waiting, then shuts the exporter down. Once; false
  // when the timeout passed first (the export thread is then left to finish on its own).
  bool shutdown(std::chrono::microseconds timeout) noexcept;

  LogPipelineCounts counts() const noexcept;

  struct Core;  // internal, shared with the export thread

 private:
  std::shared_ptr<Core> core_;
  std::shared_ptr<LogRegistry> registry_;
  std::mutex join_mutex_;
  std::thread thread_;
};

}  // namespace lens::native
