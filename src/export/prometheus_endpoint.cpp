// The Prometheus snapshot, its exporter and the scrape endpoint (see prometheus_endpoint.hpp).
#include "export/prometheus_endpoint.hpp"

#include <prometheus/exposer.h>

#include <exception>
#include <utility>

#include "export/prometheus_mapping.hpp"

namespace lens::exporters {
namespace {

namespace sdkmetrics = opentelemetry::sdk::metrics;
using opentelemetry::sdk::common::ExportResult;

class PrometheusSnapshotExporter final : public sdkmetrics::PushMetricExporter {
 public:
  explicit PrometheusSnapshotExporter(std::shared_ptr<PrometheusSnapshot> snapshot)
      : snapshot_(std::move(snapshot)) {}

  ExportResult Export(const sdkmetrics::ResourceMetrics& data) noexcept override {
    try {
      snapshot_->replace(to_metric_families(data));
      return ExportResult::kSuccess;
    } catch (...) {
      return ExportResult::kFailure;  // out of memory: the previous snapshot stays
    }
  }
  // Prometheus counters and histograms are cumulative, whatever OTLP is asked for.
  sdkmetrics::AggregationTemporality GetAggregationTemporality(
      sdkmetrics::InstrumentType) const noexcept override {
    return sdkmetrics::AggregationTemporality::kCumulative;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return true; }

 private:
  std::shared_ptr<PrometheusSnapshot> snapshot_;
};

// "host:port" as civetweb's listening_ports takes it: an IPv6 address in brackets.
std::string bind_address(const std::string& host, int port) {
  const bool bare_ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return (bare_ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace

void PrometheusSnapshot::replace(std::vector<prometheus::MetricFamily> families) {
  auto next = std::make_shared<const std::vector<prometheus::MetricFamily>>(std::move(families));
  std::lock_guard<std::mutex> lock(mutex_);
  families_.swap(next);
  // The previous snapshot is freed outside the lock, when `next` goes.
}

std::vector<prometheus::MetricFamily> PrometheusSnapshot::Collect() const {
  std::shared_ptr<const std::vector<prometheus::MetricFamily>> current;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    current = families_;
  }
  if (current == nullptr) return {};
  return *current;
}

std::unique_ptr<sdkmetrics::PushMetricExporter> make_prometheus_snapshot_exporter(
    std::shared_ptr<PrometheusSnapshot> snapshot) {
  return std::make_unique<PrometheusSnapshotExporter>(std::move(snapshot));
}

Result<std::unique_ptr<PrometheusEndpoint>> PrometheusEndpoint::start(
    const std::string& host, int port, std::shared_ptr<PrometheusSnapshot> snapshot,
    const std::string& origin) {
  const std::string address = bind_address(host, port);
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    // Two threads: a scraper that holds its connection open does not stall a second one.
    exposer = std::make_unique<prometheus::Exposer>(address, 2);
  } catch (const std::exception& e) {
    return Error("Cannot serve Prometheus metrics on " + address + " (" + origin +
                 "): the address cannot be bound (" + e.what() +
                 "); accepted: a free port on an address of this host; set "
                 "OTEL_EXPORTER_PROMETHEUS_PORT to another port, or 0 for any free port");
  }
  exposer->RegisterCollectable(snapshot);
  const std::vector<int> ports = exposer->GetListeningPorts();
  const int bound = ports.empty() ? port : ports.front();
  return std::unique_ptr<PrometheusEndpoint>(
      new PrometheusEndpoint(host, bound, std::move(snapshot), std::move(exposer)));
}

PrometheusEndpoint::PrometheusEndpoint(std::string host, int port,
                                       std::shared_ptr<PrometheusSnapshot> snapshot,
                                       std::unique_ptr<prometheus::Exposer> exposer)
    : host_(std::move(host)),
      port_(port),
      snapshot_(std::move(snapshot)),
      exposer_(std::move(exposer)) {}

PrometheusEndpoint::~PrometheusEndpoint() = default;

std::string PrometheusEndpoint::url() const {
  return "http://" + bind_address(host_, port_) + "/metrics";
}

}  // namespace lens::exporters
