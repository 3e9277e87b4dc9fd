// Decoding and checking one OTLP export request of `lens collect` (see export_request.hpp).
#include "collect_server/export_request.hpp"

#include <utility>

#include "lens/otlp_json.hpp"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

namespace lens::cli {
namespace {

namespace logs_v1 = opentelemetry::proto::collector::logs::v1;
namespace metrics_v1 = opentelemetry::proto::collector::metrics::v1;
namespace trace_v1 = opentelemetry::proto::collector::trace::v1;
using google::protobuf::Message;

// A response that reports the rejected items (set by `set_rejected`, the field's name differs by
// signal) and the sink's message, when there is either; an empty response otherwise.
template <typename Response, typename SetRejected>
std::unique_ptr<Message> response_to(const OtlpSink::Outcome& outcome, SetRejected set_rejected) {
  auto response = std::make_unique<Response>();
  if (outcome.rejected != 0 || !outcome.error_message.empty()) {
    set_rejected(*response->mutable_partial_success(), outcome.rejected);
    response->mutable_partial_success()->set_error_message(outcome.error_message);
  }
  return response;
}

// OTLP ids are 16-byte trace ids and 8-byte span ids, or empty; anything else cannot be
// written as OTLP JSON hex that readers accept, so the request is malformed.
std::string check_ids(Signal signal, const Message& request) {
  auto bad = [](const std::string& id, std::size_t size) {
    return !id.empty() && id.size() != size;
  };
  if (signal == Signal::kTraces) {
    const auto& r = static_cast<const trace_v1::ExportTraceServiceRequest&>(request);
    for (const auto& rs : r.resource_spans()) {
      for (const auto& ss : rs.scope_spans()) {
        for (const auto& span : ss.spans()) {
          if (bad(span.trace_id(), 16) || span.trace_id().empty()) {
            return "span '" + span.name() + "' has a trace_id of " +
                   std::to_string(span.trace_id().size()) + " bytes; expected 16";
          }
          if (bad(span.span_id(), 8) || span.span_id().empty()) {
            return "span '" + span.name() + "' has a span_id of " +
                   std::to_string(span.span_id().size()) + " bytes; expected 8";
          }
          if (bad(span.parent_span_id(), 8)) {
            return "span '" + span.name() + "' has a parent_span_id of " +
                   std::to_string(span.parent_span_id().size()) + " bytes; expected 8 or none";
          }
          for (const auto& link : span.links()) {
            if (bad(link.trace_id(), 16) || bad(link.span_id(), 8)) {
              return "a link of span '" + span.name() +
                     "' has a trace_id or span_id of the wrong size; expected 16 and 8 bytes";
            }
          }
        }
      }
    }
  } else if (signal == Signal::kLogs) {
    const auto& r = static_cast<const logs_v1::ExportLogsServiceRequest&>(request);
    for (const auto& rl : r.resource_logs()) {
      for (const auto& sl : rl.scope_logs()) {
        for (const auto& record : sl.log_records()) {
          if (bad(record.trace_id(), 16) || bad(record.span_id(), 8)) {
            return "a log record has a trace_id or span_id of the wrong size; expected 16 and 8 "
                   "bytes or none";
          }
        }
      }
    }
  }
  return {};
}

}  // namespace

google::protobuf::ArenaOptions request_arena_options() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 * 1024;
  options.max_block_size = 1024 * 1024;
  return options;
}

Message* new_request(Signal signal, google::protobuf::Arena& arena) {
  using google::protobuf::Arena;
  switch (signal) {
    case Signal::kTraces:
      return Arena::CreateMessage<trace_v1::ExportTraceServiceRequest>(&arena);
    case Signal::kMetrics:
      return Arena::CreateMessage<metrics_v1::ExportMetricsServiceRequest>(&arena);
    case Signal::kLogs:
      break;
  }
  return Arena::CreateMessage<logs_v1::ExportLogsServiceRequest>(&arena);
}

std::unique_ptr<Message> new_response(Signal signal, const OtlpSink::Outcome& outcome) {
  switch (signal) {
    case Signal::kTraces:
      return response_to<trace_v1::ExportTraceServiceResponse>(
          outcome, [](auto& partial, std::int64_t n) { partial.set_rejected_spans(n); });
    case Signal::kMetrics:
      return response_to<metrics_v1::ExportMetricsServiceResponse>(
          outcome, [](auto& partial, std::int64_t n) { partial.set_rejected_data_points(n); });
    case Signal::kLogs:
      break;
  }
  return response_to<logs_v1::ExportLogsServiceResponse>(
      outcome, [](auto& partial, std::int64_t n) { partial.set_rejected_log_records(n); });
}

DecodeProblem decode_request(Signal signal, BodyFormat format, std::string_view body,
                             const RequestLimits& limits, ReleaseMemoryAfterLargeRequest& release,
                             MemoryBudget::Share& share, std::uint64_t also_held,
                             Message& request) {
  RequestSize size;
  std::string over = format == BodyFormat::kProtobuf
                         ? protobuf_over_limits(*request.GetDescriptor(), body, limits, size)
                         : json_over_limits(body, limits, size);
  release.note(size.memory);
  if (!over.empty()) return {std::move(over), true};
  if (!share.grow_to(also_held + size.memory)) return {std::string(), false, true};
  if (format == BodyFormat::kProtobuf) {
    if (!request.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      return {"cannot decode the body as a protobuf " +
              std::string(request.GetDescriptor()->name())};
    }
  } else if (Status status = otlp_json::decode(body, request); !status.ok()) {
    return {"cannot decode the body as an OTLP JSON " +
            std::string(request.GetDescriptor()->name()) + ": " + status.message()};
  }
  return {check_ids(signal, request)};
}

}  // namespace lens::cli
