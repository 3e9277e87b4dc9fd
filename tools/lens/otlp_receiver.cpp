// The OTLP/gRPC and OTLP/HTTP servers of `lens collect` (see otlp_receiver.hpp).
#include "otlp_receiver.hpp"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <grpc/byte_buffer.h>
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>

#include "bounded_inflate.hpp"
#include "connection_sweep.hpp"
#include "grpc_connection_cap.hpp"
#include "http_connection_threads.hpp"
#include "lens/otlp_json.hpp"
#include "opentelemetry/proto/collector/logs/v1/logs_service.grpc.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"

// gRPC's hook for reading a ByteBuffer's C buffer (a friend of ByteBuffer that gRPC declares for
// its tests and no library defines): with per-message decompression off, the C buffer says which
// algorithm a received message is still compressed with (per message: the frame's flag).
namespace grpc::internal {
class GrpcByteBufferPeer {
 public:
  explicit GrpcByteBufferPeer(const ByteBuffer& buffer)
      : buffer_(const_cast<ByteBuffer&>(buffer)) {}
  grpc_compression_algorithm compression() {
    const grpc_byte_buffer* c_buffer = buffer_.c_buffer();
    return c_buffer != nullptr && c_buffer->type == GRPC_BB_RAW ? c_buffer->data.raw.compression
                                                                : GRPC_COMPRESS_NONE;
  }

 private:
  ByteBuffer& buffer_;
};
}  // namespace grpc::internal

namespace lens::cli {
namespace {

namespace logs_v1 = opentelemetry::proto::collector::logs::v1;
namespace metrics_v1 = opentelemetry::proto::collector::metrics::v1;
namespace trace_v1 = opentelemetry::proto::collector::trace::v1;
using google::protobuf::Message;

// Largest request body accepted, after decompression (gRPC and HTTP alike).
constexpr std::size_t kMaxRequestBytes = 64u << 20;
// HTTP connections served at once, each on its own thread; more wait for a free thread.
constexpr std::size_t kMaxHttpConnections = 1024;
// Connections the kernel queues for the accept loop (capped by net.core.somaxconn).
constexpr int kHttpListenBacklog = 1024;
// How long requests in flight may take to finish once a stop is asked for.
constexpr auto kShutdownGrace = std::chrono::seconds(5);

// google.rpc.Code values used in error bodies.
constexpr int kCodeInvalidArgument = 3;
constexpr int kCodeNotFound = 5;
constexpr int kCodeResourceExhausted = 8;
constexpr int kCodeUnavailable = 14;
constexpr int kCodeUnauthenticated = 16;

enum class BodyFormat { kProtobuf, kJson };

// Requests are parsed onto an arena: a request of 512 spans is thousands of small objects (spans,
// attributes, strings), which an arena makes a few blocks, freed at once with the request.
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

// Why a body was not decoded: malformed (INVALID_ARGUMENT / 400) or over a --max-request-*
// limit (RESOURCE_EXHAUSTED / 413); no problem when `message` is empty.
struct DecodeProblem {
  std::string message;
  bool over_limit = false;
  bool over_budget = false;  // --max-memory-in-flight: to be retried later
};

std::string budget_message(const MemoryBudget& budget) {
  return "lens collect is at its memory budget for requests in flight (--max-memory-in-flight " +
         std::to_string(budget.bytes()) + " bytes); retry later";
}

// Checks a request body against the limits on its encoded bytes (nothing is allocated for a
// body over them) and takes its estimated size from the budget shared by the requests in flight
// (`also_held`: what else the request holds, a message still compressed), then decodes and
// checks it. `release` learns how large the request was.
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

// Compares without an early exit so that timing does not reveal how much of a token matched.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// "Bearer <token>"; the scheme is case-insensitive (RFC 7235).
bool bearer_matches(std::string_view header, const std::string& token) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() < kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return false;
  }
  header.remove_prefix(kScheme.size());
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  while (!header.empty() && (header.back() == ' ' || header.back() == '\t'))
    header.remove_suffix(1);
  return same_secret(header, token);
}

// google.rpc.Status {code = 1, message = 2} in the binary protobuf encoding.
std::string status_protobuf(int code, const std::string& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteTag(1 << 3);
    coded.WriteVarint32(static_cast<std::uint32_t>(code));
    coded.WriteTag((2 << 3) | 2);
    coded.WriteVarint32(static_cast<std::uint32_t>(message.size()));
    coded.WriteString(message);
  }
  return out;
}

// google.rpc.Status {code, message, details: [Any google.rpc.RetryInfo {retry_delay: seconds}]}
// in the binary encoding: the grpc-status-details-bin of a RESOURCE_EXHAUSTED that asks for a
// retry (OTLP exporters retry RESOURCE_EXHAUSTED only when it carries RetryInfo).
std::string status_with_retry_info(int code, const std::string& message, int seconds) {
  auto message_field = [](int number, const std::string& bytes) {
    std::string out;
    {
      google::protobuf::io::StringOutputStream stream(&out);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.WriteTag((static_cast<std::uint32_t>(number) << 3) | 2);
      coded.WriteVarint32(static_cast<std::uint32_t>(bytes.size()));
      coded.WriteString(bytes);
    }
    return out;
  };
  std::string duration;  // google.protobuf.Duration {seconds = 1}
  {
    google::protobuf::io::StringOutputStream stream(&duration);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteTag(1 << 3);
    coded.WriteVarint64(static_cast<std::uint64_t>(seconds));
  }
  const std::string retry_info = message_field(1, duration);
  const std::string any =
      message_field(1, "type.googleapis.com/google.rpc.RetryInfo") + message_field(2, retry_info);
  return status_protobuf(code, message) + message_field(3, any);
}

std::string status_json(int code, const std::string& message) {
  const nlohmann::json body = {{"code", code}, {"message", message}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

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

const char* const kAcceptedEncodings = "gzip, deflate, identity, or none";

std::string tls_unusable() {
  return "cannot use the TLS certificate and key (--tls-cert, --tls-key): OpenSSL could not load "
         "them, or the key is not the certificate's";
}

// gRPC logs to stderr on its own; keep the tool's stderr to its own lines unless asked.
void quiet_grpc_log(gpr_log_func_args* /*args*/) {}

}  // namespace

std::string Endpoint::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<Endpoint> parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (host.find(':') == std::string::npos) return std::nullopt;
  } else if (host.find_first_of(":[]") != std::string::npos) {
    return std::nullopt;  // an IPv6 address needs brackets
  }
  if (host.empty() || host.find_first_of(" \t/") != std::string::npos) return std::nullopt;
  int port = -1;
  const char* end = port_text.data() + port_text.size();
  auto [ptr, ec] = std::from_chars(port_text.data(), end, port);
  if (port_text.empty() || ec != std::errc() || ptr != end || port < 0 || port > 65535) {
    return std::nullopt;
  }
  return Endpoint{host, port};
}

struct OtlpReceiver::Impl {
  OtlpSink& sink;
  std::string token;
  RequestLimits limits;
  MemoryBudget budget;
  std::atomic<std::uint64_t> malformed{0};
  std::atomic<std::uint64_t> over_budget{0};  // refused for a retry: --max-memory-in-flight
  std::atomic<std::uint64_t> unauthenticated{0};

  std::vector<std::unique_ptr<grpc::Service>> grpc_services;
  std::unique_ptr<grpc::Server> grpc_server;
  std::optional<Endpoint> grpc_bound;
  std::unique_ptr<GrpcConnectionCap> grpc_connection_cap;

  std::unique_ptr<httplib::Server> http_server;
  std::thread http_thread;
  std::atomic<bool> http_done{false};  // the HTTP server's accept loop and workers have ended
  std::optional<Endpoint> http_bound;
  HttpConnectionLimits http_limits;
  std::unique_ptr<HttpConnectionGuard> http_guard;

  std::mutex stop_mutex;
  bool stopped = false;
  // gRPC calls being handled, and whether a stop began (new calls are then refused with
  // UNAVAILABLE, which exporters retry elsewhere or later).
  std::atomic<int> grpc_in_flight{0};
  std::atomic<bool> grpc_stopping{false};

  Impl(OtlpSink& s, std::string t, const RequestLimits& l, std::uint64_t budget_bytes)
      : sink(s), token(std::move(t)), limits(l), budget(budget_bytes) {}

  // Refused for a retry at the memory budget: OTLP/gRPC clients retry after the pushback.
  grpc::Status grpc_over_budget(grpc::CallbackServerContext& context) {
    ++over_budget;
    context.AddTrailingMetadata("grpc-retry-pushback-ms",
                                std::to_string(OtlpSink::kRetryAfterSeconds * 1000));
    const std::string message = budget_message(budget);
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, message,
            status_with_retry_info(kCodeResourceExhausted, message, OtlpSink::kRetryAfterSeconds)};
  }

  grpc::Status grpc_export(Signal signal, grpc::CallbackServerContext& context,
                           const grpc::ByteBuffer& in, grpc::ByteBuffer& out) {
    // Counted before the stop flag is read, so that stop() waits for every call it let in.
    grpc_in_flight.fetch_add(1, std::memory_order_seq_cst);
    struct Done {
      std::atomic<int>& count;
      ~Done() { count.fetch_sub(1, std::memory_order_seq_cst); }
    } done{grpc_in_flight};
    if (grpc_stopping.load(std::memory_order_seq_cst)) {
      return {grpc::StatusCode::UNAVAILABLE, "lens collect is stopping"};
    }
    if (!token.empty()) {
      const auto& metadata = context.client_metadata();
      const auto it = metadata.find("authorization");
      if (it == metadata.end() ||
          !bearer_matches(std::string_view(it->second.data(), it->second.size()), token)) {
        ++unauthenticated;
        return {grpc::StatusCode::UNAUTHENTICATED,
                "missing or wrong token; send the metadata 'authorization: Bearer <token>'"};
      }
    }
    ReleaseMemoryAfterLargeRequest release;  // first: runs once the buffers below are freed
    MemoryBudget::Share share(budget);
    std::string body;
    std::uint64_t compressed = 0;
    bool budget_refused = false;
    if (grpc::Status read = read_grpc_message(in, body, release, share, compressed, budget_refused);
        !read.ok()) {
      if (budget_refused) return grpc_over_budget(context);
      ++malformed;
      return read;
    }
    google::protobuf::Arena arena(request_arena_options());
    Message* request = new_request(signal, arena);
    if (DecodeProblem problem = decode_request(signal, BodyFormat::kProtobuf, body, limits, release,
                                               share, compressed, *request);
        problem.over_budget) {
      return grpc_over_budget(context);
    } else if (!problem.message.empty()) {
      ++malformed;
      return {problem.over_limit ? grpc::StatusCode::RESOURCE_EXHAUSTED
                                 : grpc::StatusCode::INVALID_ARGUMENT,
              problem.message};
    }
    const OtlpSink::Outcome outcome = sink.append(signal, *request);
    if (outcome.retryable) {
      // OTLP/gRPC clients retry UNAVAILABLE; the pushback says after how long.
      context.AddTrailingMetadata("grpc-retry-pushback-ms",
                                  std::to_string(OtlpSink::kRetryAfterSeconds * 1000));
      return {grpc::StatusCode::UNAVAILABLE, outcome.error_message};
    }
    const std::string bytes = new_response(signal, outcome)->SerializeAsString();
    grpc::Slice slice(bytes);
    out = grpc::ByteBuffer(&slice, 1);
    return grpc::Status::OK;
  }

  // The request message as sent: gRPC hands it over still compressed (per-message decompression
  // is off, see start_grpc), so that it is inflated here with a cap instead of whole.
  grpc::Status read_grpc_message(const grpc::ByteBuffer& in, std::string& body,
                                 ReleaseMemoryAfterLargeRequest& release,
                                 MemoryBudget::Share& share, std::uint64_t& compressed,
                                 bool& budget_refused) {
    std::vector<grpc::Slice> slices;
    // No buffer: the stream ended before a whole message arrived (a length prefix longer than
    // the data that followed).
    if (!in.Valid() || !in.Dump(&slices).ok()) {
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "no complete request message: the stream ended before the message did"};
    }
    std::vector<std::string_view> chunks;
    std::size_t compressed_size = 0;
    for (const grpc::Slice& slice : slices) {
      chunks.emplace_back(reinterpret_cast<const char*>(slice.begin()), slice.size());
      compressed_size += slice.size();
    }
    release.note(compressed_size);
    const grpc_compression_algorithm algorithm =
        grpc::internal::GrpcByteBufferPeer(in).compression();
    // The message as received, and then its copy or inflated form, from the budget.
    if (!share.grow_to(2 * compressed_size)) {
      budget_refused = true;
      return {grpc::StatusCode::RESOURCE_EXHAUSTED, budget_message(budget)};
    }
    if (algorithm == GRPC_COMPRESS_NONE) {
      compressed = compressed_size;
      body.reserve(compressed_size);
      for (std::string_view chunk : chunks) body.append(chunk);
      return grpc::Status::OK;
    }
    if (algorithm != GRPC_COMPRESS_GZIP && algorithm != GRPC_COMPRESS_DEFLATE) {
      return {grpc::StatusCode::UNIMPLEMENTED,
              "unsupported grpc-encoding; accepted: gzip, deflate, identity"};
    }
    compressed = compressed_size;
    const InflateOutcome outcome = inflate_bounded(
        chunks, algorithm == GRPC_COMPRESS_GZIP ? Compression::kGzip : Compression::kDeflate,
        kMaxRequestBytes, body,
        [&](std::size_t size) { return share.grow_to(compressed_size + size); });
    release.note(body.size());
    if (outcome == InflateOutcome::kNotAllowed) {
      budget_refused = true;
      return {grpc::StatusCode::RESOURCE_EXHAUSTED, budget_message(budget)};
    }
    if (outcome == InflateOutcome::kTooLarge) {
      return {grpc::StatusCode::RESOURCE_EXHAUSTED,
              "request message over " + std::to_string(kMaxRequestBytes) +
                  " bytes after decompression (the largest accepted); not inflated further"};
    }
    if (outcome == InflateOutcome::kCorrupt) {
      return {grpc::StatusCode::INVALID_ARGUMENT,
              std::string("cannot decompress the request message as ") +
                  (algorithm == GRPC_COMPRESS_GZIP ? "gzip" : "deflate")};
    }
    return grpc::Status::OK;
  }

  // A request refused before its body was read: a small body (the usual exporter's) is read
  // and dropped, so that the answer reaches the client before the connection closes; a larger
  // one, or one of unknown length, is not read at all: the reading side of the connection is
  // shut down, and the client sees the connection reset (closing with unread data resets it).
  void leave_body_unread(const httplib::Request& req, const httplib::ContentReader& reader) {
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
    if (http_guard) http_guard->stop_reading(req.remote_addr, req.remote_port);
  }

  void http_export(Signal signal, const httplib::Request& req, httplib::Response& res,
                   const httplib::ContentReader& content_reader) {
    // The next request of this connection has its own deadline from the answer on.
    struct Answered {
      HttpConnectionGuard* guard;
      const httplib::Request& req;
      ~Answered() {
        if (guard != nullptr) guard->answered(req.remote_addr, req.remote_port);
      }
    } answered{http_guard.get(), req};
    const BodyFormat format =
        media_type(req.get_header_value("Content-Type")) == "application/x-protobuf"
            ? BodyFormat::kProtobuf
            : BodyFormat::kJson;
    if (!token.empty() && !bearer_matches(req.get_header_value("Authorization"), token)) {
      // From the headers alone: the body is never read nor inflated, and the connection is
      // closed after the answer (its unread body cannot be taken for the next request).
      ++unauthenticated;
      res.set_header("WWW-Authenticate", "Bearer");
      res.set_header("Connection", "close");
      leave_body_unread(req, content_reader);
      set_status_body(res, 401, format, kCodeUnauthenticated,
                      "missing or wrong token; send the header 'Authorization: Bearer <token>'");
      return;
    }
    ReleaseMemoryAfterLargeRequest release;  // first: runs once the buffers below are freed
    MemoryBudget::Share share(budget);
    // Refused for a retry at the memory budget, without reading (more of) the body: the
    // connection is closed after the answer.
    enum class BodyState { kUnread, kPartlyRead, kRead };
    auto refuse_over_budget = [&](BodyState body_state) {
      ++over_budget;
      res.set_header("Retry-After", std::to_string(OtlpSink::kRetryAfterSeconds));
      res.set_header("Connection", "close");
      if (body_state == BodyState::kUnread) {
        leave_body_unread(req, content_reader);
      } else if (body_state == BodyState::kPartlyRead && http_guard) {
        http_guard->stop_reading(req.remote_addr, req.remote_port);
      }
      set_status_body(res, 503, format, kCodeUnavailable, budget_message(budget));
    };
    // cpp-httplib stops reading at its payload limit without handing us the excess: a declared
    // length over the limit is the same "too large".
    const std::string declared = req.get_header_value("Content-Length");
    std::uint64_t declared_bytes = 0;
    if (!declared.empty() && declared.size() < 20 &&
        declared.find_first_not_of("0123456789") == std::string::npos) {
      declared_bytes = std::stoull(declared);
    }
    const bool plain = req.get_header_value("Content-Encoding").empty();
    // The body is read whole first so that a keep-alive connection stays in step.
    std::string body;
    if (declared_bytes != 0 && declared_bytes <= kMaxRequestBytes) {
      if (!share.grow_to(declared_bytes)) {
        refuse_over_budget(BodyState::kUnread);
        return;
      }
      if (plain) body.reserve(declared_bytes);  // one allocation, no doubling copies
    }
    bool too_large = false;
    bool budget_refused = false;
    const bool read = content_reader([&](const char* data, std::size_t length) {
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
    if (http_guard) http_guard->body_read(req.remote_addr, req.remote_port);
    if (declared_bytes > kMaxRequestBytes) too_large = true;
    if (budget_refused) {
      refuse_over_budget(BodyState::kPartlyRead);
      return;
    }
    const std::string type = media_type(req.get_header_value("Content-Type"));
    if (too_large) {
      ++malformed;
      set_status_body(
          res, 413, format, kCodeResourceExhausted,
          "request body over " + std::to_string(kMaxRequestBytes) + " bytes (after decompression)");
      return;
    }
    if (!read) {
      ++malformed;
      set_status_body(res, 400, format, kCodeInvalidArgument,
                      "cannot read the request body (truncated, or not valid for its "
                      "Content-Encoding)");
      return;
    }
    if (const std::string encoding = req.get_header_value("Content-Encoding");
        !known_content_encoding(encoding)) {
      ++malformed;
      set_status_body(
          res, 415, format, kCodeInvalidArgument,
          "unsupported Content-Encoding '" + encoding + "'; accepted: " + kAcceptedEncodings);
      return;
    }
    if (type != "application/x-protobuf" && type != "application/json") {
      ++malformed;
      set_status_body(res, 415, BodyFormat::kJson, kCodeInvalidArgument,
                      "unsupported Content-Type '" + req.get_header_value("Content-Type") +
                          "'; accepted: application/x-protobuf, application/json");
      return;
    }
    google::protobuf::Arena arena(request_arena_options());
    Message* request = new_request(signal, arena);
    if (DecodeProblem problem =
            decode_request(signal, format, body, limits, release, share, 0, *request);
        problem.over_budget) {
      refuse_over_budget(BodyState::kRead);
      return;
    } else if (!problem.message.empty()) {
      ++malformed;
      if (problem.over_limit) {
        set_status_body(res, 413, format, kCodeResourceExhausted, problem.message);
      } else {
        set_status_body(res, 400, format, kCodeInvalidArgument, problem.message);
      }
      return;
    }
    const OtlpSink::Outcome outcome = sink.append(signal, *request);
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
};

namespace {

// One OTLP gRPC service; the raw (ByteBuffer) method lets a body that is not protobuf get
// INVALID_ARGUMENT instead of gRPC's generic INTERNAL.
template <class Outer, Signal kSignal>
class GrpcExportService final
    : public Outer::template WithRawCallbackMethod_Export<typename Outer::Service> {
  using Base = typename Outer::template WithRawCallbackMethod_Export<typename Outer::Service>;

 public:
  explicit GrpcExportService(OtlpReceiver::Impl& impl) : impl_(impl) {}

  using Base::Export;
  grpc::ServerUnaryReactor* Export(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(impl_.grpc_export(kSignal, *context, *request, *response));
    return reactor;
  }

 private:
  OtlpReceiver::Impl& impl_;
};

Status start_grpc(OtlpReceiver::Impl& impl, const Endpoint& endpoint,
                  const std::optional<TlsServerFiles>& tls, const GrpcStreamLimits& streams) {
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {
    gpr_set_log_function(quiet_grpc_log);
  }
  impl.grpc_services.push_back(
      std::make_unique<GrpcExportService<trace_v1::TraceService, Signal::kTraces>>(impl));
  impl.grpc_services.push_back(
      std::make_unique<GrpcExportService<metrics_v1::MetricsService, Signal::kMetrics>>(impl));
  impl.grpc_services.push_back(
      std::make_unique<GrpcExportService<logs_v1::LogsService, Signal::kLogs>>(impl));
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (tls) {
    grpc::SslServerCredentialsOptions ssl(
        tls->client_ca_pem.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                   : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = tls->client_ca_pem;
    ssl.pem_key_cert_pairs.push_back({tls->key_pem, tls->certificate_pem});
    credentials = grpc::SslServerCredentials(ssl);
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(endpoint.to_string(), credentials, &port);
  // A second collector on the same port must fail, not silently share the traffic.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // gRPC inflates a whole message before it compares it with the size limit (a 4 GiB bomb
  // costs 4 GiB): messages are handed over still compressed and inflated with a cap here. The
  // limit below then bounds a message as sent.
  builder.AddChannelArgument(GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxRequestBytes));
  // Streams opened and left silent hold about 12 KiB each in gRPC, out of the service's sight
  // (their message never comes): at most `per_connection` at once per connection (HTTP/2
  // SETTINGS_MAX_CONCURRENT_STREAMS; clients queue the others). gRPC 1.51 has no limit on
  // connections, and its resource quota does not count streams: the total is capped by
  // GrpcConnectionCap, started below once the port is known.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, streams.per_connection);
  for (auto& service : impl.grpc_services) {
    builder.RegisterService(service.get());
  }
  impl.grpc_server = builder.BuildAndStart();
  if (!impl.grpc_server || port == 0) {
    impl.grpc_server.reset();
    return Error("cannot listen for OTLP/gRPC on " + endpoint.to_string() +
                 " (--grpc): the address is in use or not on this machine");
  }
  impl.grpc_bound = Endpoint{endpoint.host, port};
  impl.grpc_connection_cap = std::make_unique<GrpcConnectionCap>(port, streams.connections);
  return {};
}

// An HTTPS server with the certificate and key of `tls` (and its client CA, which makes client
// certificates required); null when OpenSSL cannot use them (not PEM, or a key that is not the
// certificate's).
std::unique_ptr<httplib::Server> make_https_server(const TlsServerFiles& tls) {
  auto server = std::make_unique<httplib::SSLServer>(
      tls.certificate_path.c_str(), tls.key_path.c_str(),
      tls.client_ca_path.empty() ? nullptr : tls.client_ca_path.c_str());
  if (!server->is_valid()) return nullptr;
  return server;
}

Status start_http(OtlpReceiver::Impl& impl, const Endpoint& endpoint,
                  const std::optional<TlsServerFiles>& tls) {
  impl.http_server = tls ? make_https_server(*tls) : std::make_unique<httplib::Server>();
  if (!impl.http_server) return Error(tls_unusable());
  httplib::Server& server = *impl.http_server;
  // Only SO_REUSEADDR: cpp-httplib's default adds SO_REUSEPORT, which would let a second
  // collector bind the same port and take half of the requests.
  auto listening = std::make_shared<socket_t>(INVALID_SOCKET);
  server.set_socket_options([listening](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    *listening = sock;
  });
  server.set_payload_max_length(kMaxRequestBytes);
  // A thread per connection instead of cpp-httplib's 8 workers: slow, idle or keep-alive
  // clients then hold only their own thread (see http_connection_threads.hpp).
  server.new_task_queue = [] { return new HttpConnectionThreads(kMaxHttpConnections); };
  // cpp-httplib waits out a connection's keep-alive timeout before a stop completes (the wait
  // does not look at the stop): an exporter that stays connected between exports would hold
  // every stop for the default 5 s. Idle connections close after 1 s instead; exporters simply
  // reconnect for their next export.
  server.set_keep_alive_timeout(1);
  for (Signal signal : {Signal::kTraces, Signal::kMetrics, Signal::kLogs}) {
    server.Post(std::string("/v1/") + signal_name(signal),
                [&impl, signal](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) {
                  impl.http_export(signal, req, res, reader);
                });
  }
  // Errors cpp-httplib answers itself (unknown path, bad request line, unsupported
  // Content-Encoding) get the same Status body as ours; ours already have a body.
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [&impl](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        ++impl.malformed;
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
        return httplib::Server::HandlerResponse::Handled;
      }));
  int port = endpoint.port;
  if (port == 0) {
    port = server.bind_to_any_port(endpoint.host);
  } else if (!server.bind_to_port(endpoint.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return Error("cannot listen for OTLP/HTTP on " + endpoint.to_string() +
                 " (--http): the address is in use or not on this machine");
  }
  // cpp-httplib listens with a backlog of 5: a burst of connections (200 clients at once, or
  // many ranks starting together) overflowed it, and the kernel dropped the SYNs past it, each a
  // retry one, three, seven seconds later, healthy clients included. listen() again raises it.
  if (*listening != INVALID_SOCKET) ::listen(*listening, kHttpListenBacklog);
  impl.http_bound = Endpoint{endpoint.host, port};
  impl.http_guard = std::make_unique<HttpConnectionGuard>(port, impl.http_limits);
  impl.http_thread = std::thread([&server, &done = impl.http_done] {
    server.listen_after_bind();
    done.store(true);
  });
  // stop() only takes effect once the accept loop runs; wait for it so that an early stop
  // cannot leave the thread serving forever.
  const auto deadline = std::chrono::steady_clock::now() + kShutdownGrace;
  while (!server.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

}  // namespace

OtlpReceiver::OtlpReceiver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

OtlpReceiver::~OtlpReceiver() { stop(); }

Result<std::unique_ptr<OtlpReceiver>> OtlpReceiver::start(const ReceiverOptions& options,
                                                          OtlpSink& sink) {
  std::unique_ptr<OtlpReceiver> receiver(new OtlpReceiver(
      std::make_unique<Impl>(sink, options.token, options.limits, options.max_memory_in_flight)));
  receiver->impl_->http_limits = options.http_connections;
  // gRPC would only find out at the first handshake: check the pair with OpenSSL first.
  if (options.tls && !make_https_server(*options.tls)) {
    return Error(tls_unusable());
  }
  if (options.grpc) {
    if (Status status =
            start_grpc(*receiver->impl_, *options.grpc, options.tls, options.grpc_streams);
        !status.ok()) {
      return Error(status.message());
    }
  }
  if (options.http) {
    if (Status status = start_http(*receiver->impl_, *options.http, options.tls); !status.ok()) {
      return Error(status.message());
    }
  }
  return receiver;
}

std::optional<Endpoint> OtlpReceiver::grpc_endpoint() const { return impl_->grpc_bound; }
std::optional<Endpoint> OtlpReceiver::http_endpoint() const { return impl_->http_bound; }

void OtlpReceiver::stop() {
  std::lock_guard<std::mutex> lock(impl_->stop_mutex);
  if (impl_->stopped) return;
  impl_->stopped = true;
  if (impl_->http_server) {
    impl_->http_server->stop();
    // Requests in flight get the grace period; a connection still open after it (a client that
    // trickles its request, which cpp-httplib would wait for without end) is shut down, which
    // ends the read its worker is blocked in.
    const auto deadline = std::chrono::steady_clock::now() + kShutdownGrace;
    while (!impl_->http_done.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    while (!impl_->http_done.load() && impl_->http_bound) {
      shut_down_connections_on_port(impl_->http_bound->port);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (impl_->http_thread.joinable()) impl_->http_thread.join();
    if (impl_->http_guard) impl_->http_guard->stop();
  }
  if (impl_->grpc_server) {
    // grpc::Server::Shutdown(deadline) waits for idle client connections to go away too, and a
    // client that is connected but not sending (a training job between exports) does not read
    // the GOAWAY: it would hold every stop for the whole deadline. So: refuse new calls, let the
    // calls in flight finish (bounded), then shut down at once.
    impl_->grpc_stopping.store(true, std::memory_order_seq_cst);
    const auto deadline = std::chrono::steady_clock::now() + kShutdownGrace;
    while (impl_->grpc_in_flight.load(std::memory_order_seq_cst) > 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    impl_->grpc_server->Shutdown(std::chrono::system_clock::now());
    impl_->grpc_server->Wait();
  }
  // The cap's thread looks at every descriptor of the process: it must be gone before the
  // caller closes its own (the sink's files).
  if (impl_->grpc_connection_cap) impl_->grpc_connection_cap->stop();
}

ReceiverStats OtlpReceiver::stats() const {
  // The cap is set once at start and lives as long as the receiver.
  return {impl_->malformed.load(),
          impl_->unauthenticated.load(),
          impl_->grpc_connection_cap ? impl_->grpc_connection_cap->refused() : 0,
          impl_->http_guard ? impl_->http_guard->timed_out() : 0,
          impl_->http_guard ? impl_->http_guard->over_peer_cap() : 0,
          impl_->over_budget.load()};
}

}  // namespace lens::cli
