// setup_telemetry() and TelemetryHandle: the lifecycle of docs/telemetry.md.
//
// Setup validates everything first and changes nothing when it fails; on an exporting rank it
// builds what the config turns on — the span pipeline (sampler, limits, batching, the exporter)
// with an opentelemetry-cpp tracer provider in front of it for third-party spans, the meter
// provider (views, a periodic reader around the exporter) and the log pipeline with its logger
// provider — installs them globally and enables the configured span groups. Non-exporting ranks
// build nothing. shutdown() exports lens's still-open spans as truncated, then flushes and shuts
// traces, metrics and logs down within one timeout. After fork() the child has telemetry off and
// may call setup again.
//
// Thread-safety: setup and shutdown may be called from any thread; they serialise on a
// process-wide lock. A handle may be shared between threads.
#pragma once

#include <opentelemetry/logs/logger.h>
#include <opentelemetry/metrics/meter.h>
// The meter's instruments (Counter::Add, Histogram::Record) usable with this header alone.
#include <opentelemetry/metrics/sync_instruments.h>
#include <opentelemetry/nostd/shared_ptr.h>
#include <opentelemetry/sdk/logs/exporter.h>
#include <opentelemetry/sdk/metrics/metric_reader.h>
#include <opentelemetry/sdk/metrics/push_metric_exporter.h>
#include <opentelemetry/sdk/trace/exporter.h>
#include <opentelemetry/trace/tracer.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lens/attributes.hpp"
#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/metric_setup.hpp"
#include "lens/metrics.hpp"
#include "lens/rank_info.hpp"
#include "lens/resource.hpp"
#include "lens/result.hpp"
#include "lens/strategies.hpp"

namespace lens {

// Everything setup can take besides the config; every field is optional.
struct SetupOverrides {
  // Replaces the exporter built from the config (still behind the span pipeline: sampler,
  // limits and batching still apply). See lens/testing/in_memory_exporter.hpp.
  std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> span_exporter;
  // Replace the periodic reader (OTEL_METRIC_EXPORT_INTERVAL is then unused), e.g.
  // lens/testing/manual_metric_reader.hpp. Keep a copy to collect from.
  std::vector<std::shared_ptr<opentelemetry::sdk::metrics::MetricReader>> metric_readers;
  // Replaces the metric exporter built from the config (still in the periodic reader, behind
  // the counting and overflow-renaming wrapper). Unused when metric_readers are given.
  std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> metric_exporter;
  // Views of the meter provider (bucket boundaries, renames, aggregations).
  std::vector<metrics::MetricView> metric_views;
  // Replaces the log record exporter built from the config (still behind the batch processor).
  std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> log_record_exporter;
  // Decides whether this rank exports, instead of the registry and config.rank_strategy.
  std::optional<RankStrategy> rank_strategy;
  // The job's collective, so that rank 0 can share a generated run id (docs/resources.md, "Run
  // identification").
  Collective* collective = nullptr;
  // The environment to read (default: the process environment).
  std::optional<Env> env;
  // Testing escape hatch: allow an enabled setup while another handle is live (the previous
  // handle's providers are shut down first).
  bool allow_reinit = false;
};

struct TelemetryStats {
  std::uint64_t spans_started = 0;
  std::uint64_t spans_ended = 0;
  std::uint64_t spans_exported = 0;
  std::uint64_t spans_dropped = 0;           // dropped by a full queue or a failed export
  std::uint64_t spans_failed = 0;            // in failed exports (part of spans_dropped)
  std::uint64_t metric_points_exported = 0;  // data points in successful metric exports
  std::uint64_t metric_points_failed = 0;    // data points in failed metric exports
  std::uint64_t log_records_emitted = 0;     // accepted into the batch processor
  std::uint64_t log_records_exported = 0;
  std::uint64_t log_records_failed = 0;   // in failed exports (part of log_records_dropped)
  std::uint64_t log_records_dropped = 0;  // refused by a full queue, failed, or lost at shutdown
  // Over the exporters this setup built (all signals; not custom exporters from overrides):
  std::uint64_t exports_failed = 0;  // export calls that failed after their retries
  std::uint64_t export_retries = 0;  // attempts after the first (OTLP retryable answers)
  std::uint64_t items_rejected = 0;  // spans/points/records a receiver refused (partial_success)
  // What the limits (OTEL_SPAN_*_LIMIT, OTEL_*ATTRIBUTE*_LIMIT) cut from records that were kept:
  std::uint64_t attributes_dropped = 0;  // span, event and link attributes beyond a count limit
  std::uint64_t events_dropped = 0;      // span events beyond OTEL_SPAN_EVENT_COUNT_LIMIT
  std::uint64_t links_dropped = 0;       // span links beyond OTEL_SPAN_LINK_COUNT_LIMIT
  std::uint64_t values_truncated = 0;    // span and log attribute values cut to a length limit
  std::uint64_t spans_truncated = 0;     // open at shutdown: exported with nemo.span.truncated
};

class TelemetryHandle {
 public:
  // A handle for disabled telemetry: no-op tracer, meter and logger.
  TelemetryHandle();
  ~TelemetryHandle();
  TelemetryHandle(const TelemetryHandle&) = default;
  TelemetryHandle& operator=(const TelemetryHandle&) = default;
  TelemetryHandle(TelemetryHandle&&) noexcept = default;
  TelemetryHandle& operator=(TelemetryHandle&&) noexcept = default;

  // Instrumentation scope "nemo.lens"; no-op implementations when not exporting, when the
  // signal is off (P_TRACES/METRICS/LOGS_ENABLED), after shutdown and in a forked child.
  opentelemetry::nostd::shared_ptr<opentelemetry::trace::Tracer> tracer() const;
  opentelemetry::nostd::shared_ptr<opentelemetry::metrics::Meter> meter() const;
  opentelemetry::nostd::shared_ptr<opentelemetry::logs::Logger> logger() const;

  // True only when this rank built real providers.
  bool is_exporting() const noexcept;
  const std::string& run_id() const noexcept;
  // The resource attributes the telemetry carries (empty when not exporting).
  const Attributes& resource() const noexcept;
  TelemetryStats stats() const noexcept;

  // Hands everything finished so far (spans, metric points, log records) to the exporters and
  // waits for them, all within `timeout`. Returns an error naming the signals that did not
  // finish in time; never throws. Nothing to do when not exporting or after shutdown.
  Status force_flush(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) noexcept;

  // Ends still-open spans (marked nemo.span.truncated), then flushes and shuts down traces,
  // metrics and logs, all within `timeout`, whatever the backend does. Idempotent: later calls
  // (from any copy of the handle) do nothing and return success. Returns an error naming what
  // did not finish in time; it never throws.
  Status shutdown(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) noexcept;

  struct State;  // internal

 private:
  explicit TelemetryHandle(std::shared_ptr<State> state);
  friend Result<TelemetryHandle> setup_telemetry(Config, const RankInfo&, const Attributes&,
                                                 SetupOverrides);
  std::shared_ptr<State> state_;
};

// Sets telemetry up for this process (docs/telemetry.md, "What setup does"). `resource_attributes`
// are the caller's (they win over every other resource attribute). Errors are one line naming the
// variable or flag; a failed setup leaves the process exactly as it was.
Result<TelemetryHandle> setup_telemetry(Config config, const RankInfo& rank,
                                        const Attributes& resource_attributes = {},
                                        SetupOverrides overrides = {});

}  // namespace lens
