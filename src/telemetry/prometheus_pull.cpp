// Metrics routing and the rank's Prometheus endpoint (see prometheus_pull.hpp).
#include "telemetry/prometheus_pull.hpp"

#include <string>

namespace lens::telemetry {
namespace {

// "OTEL_EXPORTER_PROMETHEUS_PORT=9464" or "default port 9464".
template <typename T>
std::string described(const Sourced<T>& setting, const std::string& what, const std::string& text) {
  if (setting.source.rfind("env:", 0) == 0) return setting.source.substr(4) + "=" + text;
  return "default " + what + " " + text;
}

}  // namespace

MetricsRouting metrics_routing(const std::vector<MetricsExporter>& listed,
                               ExporterKind lens_exporter) {
  MetricsRouting routing;
  if (listed.empty()) {
    routing.push = lens_exporter;
    return routing;
  }
  for (const MetricsExporter exporter : listed) {
    switch (exporter) {
      case MetricsExporter::otlp:
        routing.push = ExporterKind::otlp;
        break;
      case MetricsExporter::console:
        routing.push = ExporterKind::console;
        break;
      case MetricsExporter::prometheus:
        routing.prometheus = true;
        break;
      case MetricsExporter::none:
        break;
    }
  }
  return routing;
}

Result<PrometheusPull> start_prometheus_pull(const PrometheusOptions& options,
                                             const RankInfo& rank) {
  const std::int64_t base = options.port.value;
  const std::int64_t port = base == 0 ? 0 : base + rank.local_rank;
  const std::string port_text = described(options.port, "port", std::to_string(base));
  if (port > 65535) {
    return Error("Invalid port for OTEL_EXPORTER_PROMETHEUS_PORT: '" + std::to_string(base) +
                 "'; local rank " + std::to_string(rank.local_rank) + " would listen on " +
                 std::to_string(port) +
                 "; accepted: a port such that port + local rank <= 65535, "
                 "or 0 for any free port");
  }
  PrometheusPull pull;
  pull.snapshot = std::make_shared<exporters::PrometheusSnapshot>();
  const std::string origin = described(options.host, "host", options.host.value) + ", " +
                             port_text + " + local rank " + std::to_string(rank.local_rank);
  auto endpoint = exporters::PrometheusEndpoint::start(options.host.value, static_cast<int>(port),
                                                       pull.snapshot, origin);
  if (!endpoint.ok()) return Error(endpoint.message());
  pull.endpoint = std::move(endpoint).value();
  return pull;
}

}  // namespace lens::telemetry
