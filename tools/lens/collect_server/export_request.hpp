// One OTLP Export*ServiceRequest as `lens collect` takes it, whatever the protocol: the request
// message of a signal (on an arena), its checks against the limits and the memory budget, its
// decoding (protobuf or OTLP JSON) and id checks, and the response that reports what the sink
// rejected. Thread-safety: pure functions; the budget's share is the caller's.
#pragma once

#include <google/protobuf/arena.h>
#include <google/protobuf/message.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "collect_server/otlp_sink.hpp"
#include "collect_server/request_limits.hpp"

namespace lens::cli {

enum class BodyFormat { kProtobuf, kJson };

// Requests are parsed onto an arena: a request of 512 spans is thousands of small objects (spans,
// attributes, strings), which an arena makes a few blocks, freed at once with the request.
google::protobuf::ArenaOptions request_arena_options();

// An empty Export*ServiceRequest of `signal` on `arena`.
google::protobuf::Message* new_request(Signal signal, google::protobuf::Arena& arena);

// The Export*ServiceResponse of `signal`: it reports the rejected items and the sink's message
// when there is either (partial_success); empty otherwise.
std::unique_ptr<google::protobuf::Message> new_response(Signal signal,
                                                        const OtlpSink::Outcome& outcome);

// Why a body was not decoded: malformed (INVALID_ARGUMENT / 400) or over a --max-request-*
// limit (RESOURCE_EXHAUSTED / 413); no problem when `message` is empty.
struct DecodeProblem {
  std::string message;
  bool over_limit = false;
  bool over_budget = false;  // --max-memory-in-flight: to be retried later
};

// Checks a request body against the limits on its encoded bytes (nothing is allocated for a
// body over them) and takes its estimated size from the budget shared by the requests in flight
// (`also_held`: what else the request holds, a message still compressed), then decodes and
// checks it. `release` learns how large the request was.
DecodeProblem decode_request(Signal signal, BodyFormat format, std::string_view body,
                             const RequestLimits& limits, ReleaseMemoryAfterLargeRequest& release,
                             MemoryBudget::Share& share, std::uint64_t also_held,
                             google::protobuf::Message& request);

}  // namespace lens::cli
