// Where an exporting rank's metrics go, and its Prometheus scrape endpoint.
// OTEL_METRICS_EXPORTER, when set, decides for metrics alone: otlp or console push (whatever the
// lens EXPORTER says for the other signals), prometheus serves a scrape endpoint, none drops them;
// unset, metrics are pushed wherever EXPORTER sends every signal. The endpoint of a rank listens on
// OTEL_EXPORTER_PROMETHEUS_HOST at OTEL_EXPORTER_PROMETHEUS_PORT plus the rank's local rank, so
// the ranks of one node never compete for a port. Thread-safety: stateless functions.
#pragma once

#include <memory>
#include <optional>

#include "export/prometheus_endpoint.hpp"
#include "lens/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"

namespace lens::telemetry {

struct MetricsRouting {
  std::optional<ExporterKind> push;  // nullopt: no push exporter
  bool prometheus = false;
};
MetricsRouting metrics_routing(const Config& config);

struct PrometheusPull {
  std::shared_ptr<exporters::PrometheusSnapshot> snapshot;
  std::unique_ptr<exporters::PrometheusEndpoint> endpoint;
};

// Binds the rank's endpoint (serving an empty snapshot until the first collection). Errors name
// the variables, their values and the local rank.
Result<PrometheusPull> start_prometheus_pull(const Config& config, const RankInfo& rank);

}  // namespace lens::telemetry
