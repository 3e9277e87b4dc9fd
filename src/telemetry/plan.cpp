// Config → TelemetryPlan (see plan.hpp): the one place that reads the Config for setup.
#include "telemetry/plan.hpp"

#include <utility>

#include "lens/sampling.hpp"
#include "lens/strategies.hpp"
#include "resource/resource_settings.hpp"
#include "validate/resolved.hpp"

namespace lens::telemetry {
namespace {

// lens's OTLP span exporter takes batches on several threads at once: with several on the wire
// the receiver decodes one while the next is encoded (one alone leaves both sides waiting on
// each other about a third of the time).
constexpr std::size_t kConcurrentOtlpSpanExports = 3;

// The OTLP settings of `signal`; OTEL_METRIC_EXPORT_TIMEOUT bounds each metrics export too
// (the reader cannot cancel one).
OtlpSignalSettings otlp_settings(const OtelSettings& otel, Signal signal) {
  switch (signal) {
    case Signal::traces:
      return otel.traces;
    case Signal::logs:
      return otel.logs;
    case Signal::metrics:
      break;
  }
  OtlpSignalSettings settings = otel.metrics;
  if (otel.metric_export_timeout_ms.value < settings.timeout_ms.value) {
    settings.timeout_ms = otel.metric_export_timeout_ms;
  }
  return settings;
}

Result<TracesPlan> plan_traces(const Config& config, const SamplingStrategyFactory& strategy,
                               const RankInfo& rank, const SetupOverrides& overrides) {
  TracesPlan traces;
  traces.exporter = exporter_options(config, Signal::traces);
  traces.pipeline = span_pipeline_options(config);
  if (overrides.span_exporter == nullptr && config.exporter == ExporterKind::otlp) {
    traces.pipeline.concurrent_exports = kConcurrentOtlpSpanExports;
  }
  // The resolved sampling strategy's sampler, around OTEL_TRACES_SAMPLER's.
  auto sampler = make_sampler(strategy, config.sampling_strategy, StrategySettings::of(config),
                              config.otel, rank);
  if (!sampler.ok()) return Error(sampler.message());
  traces.pipeline.sampler = std::move(sampler).value();
  return traces;
}

MetricsPlan plan_metrics(const Config& config) {
  MetricsPlan metrics;
  // OTEL_METRICS_EXPORTER may send metrics elsewhere than EXPORTER, or to a scrape endpoint.
  const MetricsRouting routing =
      metrics_routing(config.otel.metrics_exporters.value, config.exporter);
  if (routing.push) {
    metrics.push = exporter_options(config, Signal::metrics);
    metrics.push->kind = *routing.push;
  }
  if (routing.prometheus) metrics.prometheus = prometheus_options(config);
  metrics.export_interval = std::chrono::milliseconds(config.otel.metric_export_interval_ms.value);
  return metrics;
}

}  // namespace

exporters::ExporterOptions exporter_options(const Config& config, Signal signal) {
  exporters::ExporterOptions options;
  options.kind = config.exporter;
  options.console_format = config.console_format;
  options.temporality = config.otel.metrics_temporality.value;
  options.file_path = config.file_path;
  options.file_path_label = config.label_of("file_path");
  options.otlp = otlp_settings(config.otel, signal);
  return options;
}

native::SpanPipelineOptions span_pipeline_options(const Config& config) {
  native::SpanPipelineOptions options;
  options.max_export_batch_size =
      static_cast<std::size_t>(config.otel.bsp.max_export_batch_size.value);
  options.schedule_delay = std::chrono::milliseconds(config.otel.bsp.schedule_delay_ms.value);
  options.max_queue_size = static_cast<std::size_t>(config.otel.bsp.max_queue_size.value);
  options.buffer_bytes = static_cast<std::size_t>(config.span_buffer_mb) << 20;
  options.limits = native::SpanLimits::from(config.otel.limits);
  return options;
}

native::LogPipelineOptions log_pipeline_options(const Config& config) {
  native::LogPipelineOptions options;
  options.max_queue_size = static_cast<std::size_t>(config.otel.blrp.max_queue_size.value);
  options.max_export_batch_size =
      static_cast<std::size_t>(config.otel.blrp.max_export_batch_size.value);
  options.schedule_delay = std::chrono::milliseconds(config.otel.blrp.schedule_delay_ms.value);
  options.limits = native::AttributeLimits::of_log_records(config.otel.limits);
  return options;
}

PrometheusOptions prometheus_options(const Config& config) {
  return {config.otel.prometheus_host, config.otel.prometheus_port};
}

Result<TelemetryPlan> make_plan(const Config& config, const RankInfo& rank,
                                const Attributes& resource_attributes,
                                const SetupOverrides& overrides, const Env& env) {
  auto resolved = validate_and_resolve(config, &rank);
  if (!resolved.ok()) return Error(resolved.message());
  TelemetryPlan plan;
  plan.rank = rank;
  ResourceSettings resource = ResourceSettings::of(config);
  auto run_id = resolve_run_id(resource, rank, env, overrides.collective);
  if (!run_id.ok()) return Error(run_id.message());
  plan.run_id = std::move(run_id).value();
  auto exporting =
      overrides.rank_strategy
          ? decide_export(*overrides.rank_strategy, "Rank strategy override",
                          StrategySettings::of(config), rank)
          : decide_export(resolved->rank_strategy, "Rank strategy '" + config.rank_strategy + "'",
                          StrategySettings::of(config), rank);
  if (!exporting.ok()) return Error(exporting.message());
  plan.exporting = *exporting;
  plan.span_groups = std::move(resolved->span_groups);
  if (!plan.exporting) return plan;

  resource.run_id = plan.run_id.value;
  plan.print_totals = config.exporter != ExporterKind::none;
  plan.resource = build_resource(resource, rank, resource_attributes, env);
  if (config.traces_enabled) {
    auto traces = plan_traces(config, resolved->sampling_strategy, rank, overrides);
    if (!traces.ok()) return Error(traces.message());
    plan.traces = std::move(traces).value();
  }
  if (config.metrics_enabled) plan.metrics = plan_metrics(config);
  if (config.logs_enabled) {
    plan.logs = LogsPlan{exporter_options(config, Signal::logs), log_pipeline_options(config)};
  }
  plan.propagators = config.otel.propagators.value;
  plan.hang_timeout = config.hang_timeout;
  plan.hang_startup_timeout = config.hang_startup_timeout;
  return plan;
}

}  // namespace lens::telemetry
