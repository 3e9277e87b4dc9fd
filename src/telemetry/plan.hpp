// The typed plan of a setup: setup_telemetry turns the Config into it once (validation, the run
// id, the rank's decision, the span groups and strategies resolved, the resource), and each
// component is built from its own part — exporter options per signal, pipeline options, the
// metrics routing — never from the Config. Thread-safety: make_plan reads the registries under
// their locks and may call the job's collective; a plan is a value.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "export/exporters.hpp"
#include "lens/attributes.hpp"
#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/rank_info.hpp"
#include "lens/resource.hpp"
#include "lens/result.hpp"
#include "lens/telemetry.hpp"
#include "native/log_pipeline.hpp"
#include "native/span_pipeline.hpp"
#include "telemetry/prometheus_pull.hpp"

namespace lens::telemetry {

struct TracesPlan {
  exporters::ExporterOptions exporter;
  // OTEL_BSP_*, SPAN_BUFFER_MB, the span limits and the sampler (the strategy's, resolved);
  // setup adds the shared clock.
  native::SpanPipelineOptions pipeline;
};

struct MetricsPlan {
  // Where OTEL_METRICS_EXPORTER (or EXPORTER) pushes; nullopt: no push exporter.
  std::optional<exporters::ExporterOptions> push;
  // The rank's scrape endpoint (OTEL_METRICS_EXPORTER=prometheus).
  std::optional<PrometheusOptions> prometheus;
  std::chrono::milliseconds export_interval{10000};  // OTEL_METRIC_EXPORT_INTERVAL
};

struct LogsPlan {
  exporters::ExporterOptions exporter;
  native::LogPipelineOptions pipeline;  // OTEL_BLRP_* and the log record limits
};

struct TelemetryPlan {
  RankInfo rank;
  RunId run_id;
  bool exporting = false;  // the rank strategy's decision
  // The rest only matters on an exporting rank.
  bool print_totals = false;  // the completeness line at shutdown: not for exporter=none
  std::set<std::string> span_groups;
  Attributes resource;               // built only on an exporting rank
  std::optional<TracesPlan> traces;  // nullopt: the signal is off
  std::optional<MetricsPlan> metrics;
  std::optional<LogsPlan> logs;
  std::vector<std::string> propagators;  // OTEL_PROPAGATORS
  HangTimeout hang_timeout;
  HangTimeout hang_startup_timeout;  // before the first step (lens::expect_training_steps)
};

// Validates `config` and resolves it for this rank. Errors are setup's: one line naming the
// variable. `overrides` decides the rank (its rank_strategy) and whether lens's OTLP span
// exporter may have several batches on the wire (not with an exporter of the overrides).
Result<TelemetryPlan> make_plan(const Config& config, const RankInfo& rank,
                                const Attributes& resource_attributes,
                                const SetupOverrides& overrides, const Env& env);

// The exporter options of `signal` as `config` sets them (kind: config.exporter).
exporters::ExporterOptions exporter_options(const Config& config, Signal signal);
native::SpanPipelineOptions span_pipeline_options(const Config& config);
native::LogPipelineOptions log_pipeline_options(const Config& config);
PrometheusOptions prometheus_options(const Config& config);

}  // namespace lens::telemetry
