// The Prometheus scrape endpoint (OTEL_METRICS_EXPORTER=prometheus): prometheus-cpp's Exposer
// serves GET /metrics in the Prometheus text format from a snapshot of the latest collection.
//
// Why a snapshot: a periodic reader (its own thread, every OTEL_METRIC_EXPORT_INTERVAL) collects
// and hands the result to PrometheusSnapshotExporter, which converts it to metric families
// (prometheus_mapping.hpp) and swaps them into the PrometheusSnapshot. A scrape, on one of the
// Exposer's threads, only copies the snapshot under the snapshot's own mutex, which no training
// thread ever takes: however often or slowly a scraper calls, it never runs a collection and
// never shares a lock with the hot path. The price is freshness: a scrape sees the values of the
// last collection, at most one export interval old.
// Thread-safety: PrometheusSnapshot may be replaced and collected from any threads at once; a
// PrometheusEndpoint stops serving (and joins its threads) when destroyed.
#pragma once

#include <opentelemetry/sdk/metrics/push_metric_exporter.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lens/result.hpp"

namespace prometheus {
class Exposer;
}

namespace lens::exporters {

class PrometheusSnapshot final : public prometheus::Collectable {
 public:
  void replace(std::vector<prometheus::MetricFamily> families);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  mutable std::mutex mutex_;  // guards the pointer only: copies are made outside it
  std::shared_ptr<const std::vector<prometheus::MetricFamily>> families_;
};

// A push exporter that converts each collection (always cumulative) into `snapshot`.
std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> make_prometheus_snapshot_exporter(
    std::shared_ptr<PrometheusSnapshot> snapshot);

class PrometheusEndpoint {
 public:
  // Listens on host:port (port 0: a free port) and serves `snapshot` at /metrics. The error says
  // which address could not be bound; `origin` names the settings it came from.
  static Result<std::unique_ptr<PrometheusEndpoint>> start(
      const std::string& host, int port, std::shared_ptr<PrometheusSnapshot> snapshot,
      const std::string& origin);
  ~PrometheusEndpoint();
  PrometheusEndpoint(const PrometheusEndpoint&) = delete;
  PrometheusEndpoint& operator=(const PrometheusEndpoint&) = delete;

  int port() const noexcept { return port_; }
  // http://HOST:PORT/metrics with the port actually bound.
  std::string url() const;

 private:
  PrometheusEndpoint(std::string host, int port, std::shared_ptr<PrometheusSnapshot> snapshot,
                     std::unique_ptr<prometheus::Exposer> exposer);

  std::string host_;
  int port_;
  std::shared_ptr<PrometheusSnapshot> snapshot_;  // the Exposer holds it weakly
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace lens::exporters
