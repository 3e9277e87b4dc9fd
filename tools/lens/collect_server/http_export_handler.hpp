// One OTLP/HTTP request to `lens collect` (POST /v1/traces, /v1/metrics, /v1/logs): the token,
// the body read within the caps and the memory budget, its encoding and media type, decoding,
// the sink, and the answer (an OTLP response, or a google.rpc.Status body with the status code
// OTLP/HTTP exporters act on); and the Status body of the errors cpp-httplib answers itself.
// Thread-safety: handle() runs on many connection threads at once.
#pragma once

#include <httplib.h>

#include <string>

#include "collect_server/export_request.hpp"
#include "collect_server/http_connection_guard.hpp"
#include "collect_server/request_accounting.hpp"

namespace lens::cli {

class HttpExportHandler {
 public:
  // `guard`: told when each request's body has been read and when it was answered, and asked to
  // stop reading a refused request's connection; null for none (as in the fuzz target).
  HttpExportHandler(RequestAccounting& accounting, HttpConnectionGuard* guard)
      : accounting_(accounting), guard_(guard) {}

  // Handles one POST of `signal`'s path; `res` gets the answer.
  void handle(Signal signal, const httplib::Request& req, httplib::Response& res,
              const httplib::ContentReader& reader);

  // For cpp-httplib's error handler: gives an error cpp-httplib answered itself (unknown path,
  // bad request line, unsupported Content-Encoding) the same Status body as ours, counted as
  // malformed; false when `res` already has a body (one of ours).
  bool answer_server_error(const httplib::Request& req, httplib::Response& res);

 private:
  // How far a refused request's body was read.
  enum class BodyState { kUnread, kPartlyRead, kRead };
  // What reading the body gave.
  enum class BodyRead { kWhole, kOverBudgetUnread, kOverBudgetPartlyRead, kTooLarge, kBroken };

  BodyRead read_body(const httplib::Request& req, const httplib::ContentReader& reader,
                     MemoryBudget::Share& share, std::string& body);
  // False, with the answer in `res`, when the body's Content-Encoding or Content-Type is not
  // accepted.
  bool accepted_encoding_and_type(const httplib::Request& req, httplib::Response& res,
                                  BodyFormat format);
  void refuse_unauthenticated(const httplib::Request& req, httplib::Response& res,
                              const httplib::ContentReader& reader, BodyFormat format);
  void refuse_over_budget(const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader, BodyFormat format,
                          BodyState body_state);
  void leave_body_unread(const httplib::Request& req, const httplib::ContentReader& reader);
  // The answer once the sink has the request: 503 to retry, or 200 with the OTLP response.
  void answer_outcome(Signal signal, httplib::Response& res, BodyFormat format,
                      const OtlpSink::Outcome& outcome);

  RequestAccounting& accounting_;
  HttpConnectionGuard* const guard_;
};

}  // namespace lens::cli
