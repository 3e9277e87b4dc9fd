// One OTLP/HTTP request to `lens collect` (see http_export_handler.hpp).
#include "collect_server/http_export_handler.hpp"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "collect_server/rpc_status.hpp"
#include "lens/otlp_json.hpp"

namespace lens::cli {
namespace {

const char* const kAcceptedEncodings = "gzip, deflate, identity, or none";

void set_status_body(httplib::Response& res, int http_status, BodyFormat format, int code,
                     const std::string& message) {
  res.status = http_status;
  if (format == BodyFormat::kProtobuf) {
    res.set_content(status_protobuf(code, message), "application/x-protobuf");
  } else {
    res.set_content(status_json(code, message), "application/json");
  }
}

// The media type of a Content-Type header, lower-cased, without parameters.
std::string media_type(const std::string& header) {
  std::string type = header.substr(0, header.find(';'));
  type.erase(std::remove_if(type.begin(), type.end(),
                            [](unsigned char c) { return std::isspace(c) != 0; }),
             type.end());
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return type;
}

// The Content-Encoding values cpp-httplib decodes (it treats any other value as no encoding,
// which would hand compressed bytes to the decoder as if they were the body).
bool known_content_encoding(const std::string& encoding) {
  return encoding.empty() || encoding == "identity" || encoding == "gzip" || encoding == "deflate";
}

// The Content-Length a request declares; 0 when it declares none, or no number.
std::uint64_t declared_length(const httplib::Request& req) {
  const std::string declared = req.get_header_value("Content-Length");
  if (!declared.empty() && declared.size() < 20 &&
      declared.find_first_not_of("0123456789") == std::string::npos) {
    return std::stoull(declared);
  }
  return 0;
}

}  // namespace

void HttpExportHandler::handle(Signal signal, const httplib::Request& req, httplib::Response& res,
                               const httplib::ContentReader& reader) {
  // The next request of this connection has its own deadline from the answer on.
  struct Answered {
    HttpConnectionGuard* guard;
    const httplib::Request& req;
    ~Answered() {
      if (guard != nullptr) guard->answered(req.remote_addr, req.remote_port);
    }
  } answered{guard_, req};
  const BodyFormat format =
      media_type(req.get_header_value("Content-Type")) == "application/x-protobuf"
          ? BodyFormat::kProtobuf
          : BodyFormat::kJson;
  if (!accounting_.authorized(req.get_header_value("Authorization"))) {
    refuse_unauthenticated(req, res, reader, format);
    return;
  }
  ReleaseMemoryAfterLargeRequest release;  // first: runs once the buffers below are freed
  MemoryBudget::Share share(accounting_.budget);
  std::string body;
  switch (read_body(req, reader, share, body)) {
    case BodyRead::kWhole:
      break;
    case BodyRead::kOverBudgetUnread:
      refuse_over_budget(req, res, reader, format, BodyState::kUnread);
      return;
    case BodyRead::kOverBudgetPartlyRead:
      refuse_over_budget(req, res, reader, format, BodyState::kPartlyRead);
      return;
    case BodyRead::kTooLarge:
      ++accounting_.malformed;
      set_status_body(
          res, 413, format, kCodeResourceExhausted,
          "request body over " + std::to_string(kMaxRequestBytes) + " bytes (after decompression)");
      return;
    case BodyRead::kBroken:
      ++accounting_.malformed;
      set_status_body(res, 400, format, kCodeInvalidArgument,
                      "cannot read the request body (truncated, or not valid for its "
                      "Content-Encoding)");
      return;
  }
  if (!accepted_encoding_and_type(req, res, format)) return;
  google::protobuf::Arena arena(request_arena_options());
  google::protobuf::Message* request = new_request(signal, arena);
  if (DecodeProblem problem =
          decode_request(signal, format, body, accounting_.limits, release, share, 0, *request);
      problem.over_budget) {
    refuse_over_budget(req, res, reader, format, BodyState::kRead);
    return;
  } else if (!problem.message.empty()) {
    ++accounting_.malformed;
    if (problem.over_limit) {
      set_status_body(res, 413, format, kCodeResourceExhausted, problem.message);
    } else {
      set_status_body(res, 400, format, kCodeInvalidArgument, problem.message);
    }
    return;
  }
  answer_outcome(signal, res, format, accounting_.sink.append(signal, *request));
}

// cpp-httplib stops reading at its payload limit without handing us the excess: a declared
// length over the limit is the same "too large". The body is read whole first so that a
// keep-alive connection stays in step.
HttpExportHandler::BodyRead HttpExportHandler::read_body(const httplib::Request& req,
                                                         const httplib::ContentReader& reader,
                                                         MemoryBudget::Share& share,
                                                         std::string& body) {
  const std::uint64_t declared_bytes = declared_length(req);
  const bool plain = req.get_header_value("Content-Encoding").empty();
  if (declared_bytes != 0 && declared_bytes <= kMaxRequestBytes) {
    if (!share.grow_to(declared_bytes)) return BodyRead::kOverBudgetUnread;
    if (plain) body.reserve(declared_bytes);  // one allocation, no doubling copies
  }
  bool too_large = false;
  bool budget_refused = false;
  const bool read = reader([&](const char* data, std::size_t length) {
    const std::size_t needed = body.size() + length;
    if (needed > kMaxRequestBytes) {
      too_large = true;
      return false;
    }
    // What the string will hold once grown (it doubles its capacity).
    const std::size_t capacity =
        needed > body.capacity() ? std::max(needed, 2 * body.capacity()) : body.capacity();
    if (!share.grow_to(capacity)) {
      budget_refused = true;
      return false;
    }
    body.append(data, length);
    return true;
  });
  // Read: what follows is this process's work, not the client's (no deadline).
  if (guard_ != nullptr) guard_->body_read(req.remote_addr, req.remote_port);
  if (declared_bytes > kMaxRequestBytes) too_large = true;
  if (budget_refused) return BodyRead::kOverBudgetPartlyRead;
  if (too_large) return BodyRead::kTooLarge;
  if (!read) return BodyRead::kBroken;
  return BodyRead::kWhole;
}

bool HttpExportHandler::accepted_encoding_and_type(const httplib::Request& req,
                                                   httplib::Response& res, BodyFormat format) {
  if (const std::string encoding = req.get_header_value("Content-Encoding");
      !known_content_encoding(encoding)) {
    ++accounting_.malformed;
    set_status_body(
        res, 415, format, kCodeInvalidArgument,
        "unsupported Content-Encoding '" + encoding + "'; accepted: " + kAcceptedEncodings);
    return false;
  }
  const std::string type = media_type(req.get_header_value("Content-Type"));
  if (type != "application/x-protobuf" && type != "application/json") {
    ++accounting_.malformed;
    set_status_body(res, 415, BodyFormat::kJson, kCodeInvalidArgument,
                    "unsupported Content-Type '" + req.get_header_value("Content-Type") +
                        "'; accepted: application/x-protobuf, application/json");
    return false;
  }
  return true;
}

// From the headers alone: the body is never read nor inflated, and the connection is closed
// after the answer (its unread body cannot be taken for the next request).
void HttpExportHandler::refuse_unauthenticated(const httplib::Request& req, httplib::Response& res,
                                               const httplib::ContentReader& reader,
                                               BodyFormat format) {
  ++accounting_.unauthenticated;
  res.set_header("WWW-Authenticate", "Bearer");
  res.set_header("Connection", "close");
  leave_body_unread(req, reader);
  set_status_body(res, 401, format, kCodeUnauthenticated,
                  "missing or wrong token; send the header 'Authorization: Bearer <token>'");
}

// Refused for a retry at the memory budget, without reading (more of) the body: the connection
// is closed after the answer.
void HttpExportHandler::refuse_over_budget(const httplib::Request& req, httplib::Response& res,
                                           const httplib::ContentReader& reader, BodyFormat format,
                                           BodyState body_state) {
  ++accounting_.over_budget;
  res.set_header("Retry-After", std::to_string(OtlpSink::kRetryAfterSeconds));
  res.set_header("Connection", "close");
  if (body_state == BodyState::kUnread) {
    leave_body_unread(req, reader);
  } else if (body_state == BodyState::kPartlyRead && guard_ != nullptr) {
    guard_->stop_reading(req.remote_addr, req.remote_port);
  }
  set_status_body(res, 503, format, kCodeUnavailable, budget_message(accounting_.budget));
}

// A request refused before its body was read: a small body (the usual exporter's) is read and
// dropped, so that the answer reaches the client before the connection closes; a larger one, or
// one of unknown length, is not read at all: the reading side of the connection is shut down,
// and the client sees the connection reset (closing with unread data resets it).
void HttpExportHandler::leave_body_unread(const httplib::Request& req,
                                          const httplib::ContentReader& reader) {
  constexpr std::size_t kDroppedBodyBytes = 64 * 1024;
  const std::string declared = req.get_header_value("Content-Length");
  if (!declared.empty() && declared.size() < 7 &&
      declared.find_first_not_of("0123456789") == std::string::npos &&
      std::stoul(declared) <= kDroppedBodyBytes) {
    std::size_t seen = 0;  // inflated, when compressed: stops at 16 times the limit
    reader([&](const char*, std::size_t length) {
      seen += length;
      return seen <= 16 * kDroppedBodyBytes;
    });
    return;
  }
  if (guard_ != nullptr) guard_->stop_reading(req.remote_addr, req.remote_port);
}

void HttpExportHandler::answer_outcome(Signal signal, httplib::Response& res, BodyFormat format,
                                       const OtlpSink::Outcome& outcome) {
  if (outcome.retryable) {
    // OTLP/HTTP clients retry 503 after Retry-After; nothing of the request was kept.
    res.set_header("Retry-After", std::to_string(OtlpSink::kRetryAfterSeconds));
    set_status_body(res, 503, format, kCodeUnavailable, outcome.error_message);
    return;
  }
  const auto response = new_response(signal, outcome);
  res.status = 200;
  if (format == BodyFormat::kProtobuf) {
    res.set_content(response->SerializeAsString(), "application/x-protobuf");
  } else {
    res.set_content(otlp_json::encode(*response), "application/json");
  }
}

bool HttpExportHandler::answer_server_error(const httplib::Request& req, httplib::Response& res) {
  if (!res.body.empty()) return false;
  ++accounting_.malformed;
  std::string message;
  int code = kCodeInvalidArgument;
  if (res.status == 404) {
    code = kCodeNotFound;
    message = "no OTLP endpoint at " + req.method + " " + req.path +
              "; accepted: POST /v1/traces, /v1/metrics, /v1/logs";
  } else if (res.status == 413) {
    code = kCodeResourceExhausted;
    message = "request body over " + std::to_string(kMaxRequestBytes) + " bytes";
  } else if (res.status == 415) {
    message = "unsupported Content-Encoding '" + req.get_header_value("Content-Encoding") +
              "'; accepted: " + kAcceptedEncodings;
  } else {
    message = "bad HTTP request (status " + std::to_string(res.status) + ")";
  }
  res.set_content(status_json(code, message), "application/json");
  return true;
}

}  // namespace lens::cli
