// Where an exporting rank's metrics go, and its Prometheus scrape endpoint.
// OTEL_METRICS_EXPORTER, when set, decides for metrics alone: otlp or console push (whatever the
// lens EXPORTER says for the other signals), prometheus serves a scrape endpoint, none drops them;
// unset, metrics are pushed wherever EXPORTER sends every signal. The endpoint of a rank listens on
// OTEL_EXPORTER_PROMETHEUS_HOST at OTEL_EXPORTER_PROMETHEUS_PORT plus the rank's local rank, so
// the ranks of one node never compete for a port. Thread-safety: stateless functions.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "export/prometheus_endpoint.hpp"
#include "lens/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"

namespace lens::telemetry {

struct MetricsRouting {
  std::optional<ExporterKind> push;  // nullopt: no push exporter
  bool prometheus = false;
};
// `listed`: OTEL_METRICS_EXPORTER's list (empty when unset); `lens_exporter`: the lens EXPORTER.
MetricsRouting metrics_routing(const std::vector<MetricsExporter>& listed,
                               ExporterKind lens_exporter);

// Where the rank's endpoint listens, with the sources that errors and the start-up line name.
struct PrometheusOptions {
  Sourced<std::string> host{"localhost", "default"};  // OTEL_EXPORTER_PROMETHEUS_HOST
  Sourced<std::int64_t> port{9464, "default"};        // OTEL_EXPORTER_PROMETHEUS_PORT
};

struct PrometheusPull {
  std::shared_ptr<exporters::PrometheusSnapshot> snapshot;
  std::unique_ptr<exporters::PrometheusEndpoint> endpoint;
};

// Binds the rank's endpoint (serving an empty snapshot until the first collection). Errors name
// the variables, their values and the local rank.
Result<PrometheusPull> start_prometheus_pull(const PrometheusOptions& options,
                                             const RankInfo& rank);

}  // namespace lens::telemetry
