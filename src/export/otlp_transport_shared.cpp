// What the OTLP transports share (see otlp_transport_shared.hpp).
#include "export/otlp_transport_shared.hpp"

#include <opentelemetry/proto/collector/logs/v1/logs_service.pb.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

#include <utility>

#include "lens/version.hpp"

namespace lens::exporters::transport {
namespace {

namespace logs_v1 = opentelemetry::proto::collector::logs::v1;
namespace metrics_v1 = opentelemetry::proto::collector::metrics::v1;
namespace trace_v1 = opentelemetry::proto::collector::trace::v1;

}  // namespace

using google::protobuf::Message;

std::string user_agent() { return std::string("lens-cpp/") + kVersion; }

Attempt failure(Attempt::Kind kind, std::string cause, std::string message) {
  Attempt attempt;
  attempt.kind = kind;
  attempt.cause = std::move(cause);
  attempt.message = std::move(message);
  return attempt;
}

Attempt cancelled() {
  return failure(Attempt::Kind::kPermanent, "shutdown", "the exporter was shut down");
}

std::unique_ptr<Message> new_response(Signal signal) {
  switch (signal) {
    case Signal::traces:
      return std::make_unique<trace_v1::ExportTraceServiceResponse>();
    case Signal::metrics:
      return std::make_unique<metrics_v1::ExportMetricsServiceResponse>();
    case Signal::logs:
      break;
  }
  return std::make_unique<logs_v1::ExportLogsServiceResponse>();
}

void read_partial_success(Signal signal, const Message& response, Attempt& attempt) {
  switch (signal) {
    case Signal::traces: {
      const auto& p = static_cast<const trace_v1::ExportTraceServiceResponse&>(response);
      attempt.rejected = p.partial_success().rejected_spans();
      attempt.rejected_message = p.partial_success().error_message();
      return;
    }
    case Signal::metrics: {
      const auto& p = static_cast<const metrics_v1::ExportMetricsServiceResponse&>(response);
      attempt.rejected = p.partial_success().rejected_data_points();
      attempt.rejected_message = p.partial_success().error_message();
      return;
    }
    case Signal::logs: {
      const auto& p = static_cast<const logs_v1::ExportLogsServiceResponse&>(response);
      attempt.rejected = p.partial_success().rejected_log_records();
      attempt.rejected_message = p.partial_success().error_message();
      return;
    }
  }
}

}  // namespace lens::exporters::transport
