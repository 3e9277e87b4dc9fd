// `lens collect`'s OTLP/gRPC server (see grpc_export_server.hpp).
#include "collect_server/grpc_export_server.hpp"

#include <google/protobuf/arena.h>
#include <grpc/byte_buffer.h>
#include <grpc/support/log.h>

#include <chrono>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "collect_server/bounded_inflate.hpp"
#include "collect_server/export_request.hpp"
#include "collect_server/rpc_status.hpp"
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

using opentelemetry::proto::collector::logs::v1::LogsService;
using opentelemetry::proto::collector::metrics::v1::MetricsService;
using opentelemetry::proto::collector::trace::v1::TraceService;

// gRPC logs to stderr on its own; keep the tool's stderr to its own lines unless asked.
void quiet_grpc_log(gpr_log_func_args* /*args*/) {}

// One OTLP gRPC service; the raw (ByteBuffer) method lets a body that is not protobuf get
// INVALID_ARGUMENT instead of gRPC's generic INTERNAL.
template <class Outer, Signal kSignal>
class GrpcExportService final
    : public Outer::template WithRawCallbackMethod_Export<typename Outer::Service> {
  using Base = typename Outer::template WithRawCallbackMethod_Export<typename Outer::Service>;

 public:
  explicit GrpcExportService(GrpcExportServer& server) : server_(server) {}

  using Base::Export;
  grpc::ServerUnaryReactor* Export(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(server_.export_call(kSignal, *context, *request, *response));
    return reactor;
  }

 private:
  GrpcExportServer& server_;
};

}  // namespace

Result<std::unique_ptr<GrpcExportServer>> GrpcExportServer::start(
    RequestAccounting& accounting, const Endpoint& endpoint,
    const std::optional<TlsServerFiles>& tls, const GrpcStreamLimits& streams) {
  std::unique_ptr<GrpcExportServer> server(new GrpcExportServer(accounting));
  if (Status status = server->listen(endpoint, tls, streams); !status.ok()) {
    return Error(status.message());
  }
  return server;
}

GrpcExportServer::~GrpcExportServer() { stop(); }

Status GrpcExportServer::listen(const Endpoint& endpoint, const std::optional<TlsServerFiles>& tls,
                                const GrpcStreamLimits& streams) {
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {
    gpr_set_log_function(quiet_grpc_log);
  }
  services_.push_back(std::make_unique<GrpcExportService<TraceService, Signal::kTraces>>(*this));
  services_.push_back(std::make_unique<GrpcExportService<MetricsService, Signal::kMetrics>>(*this));
  services_.push_back(std::make_unique<GrpcExportService<LogsService, Signal::kLogs>>(*this));
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
  for (auto& service : services_) {
    builder.RegisterService(service.get());
  }
  server_ = builder.BuildAndStart();
  if (!server_ || port == 0) {
    server_.reset();
    return Error("cannot listen for OTLP/gRPC on " + endpoint.to_string() +
                 " (--grpc): the address is in use or not on this machine");
  }
  bound_ = Endpoint{endpoint.host, port};
  connection_cap_ = std::make_unique<GrpcConnectionCap>(port, streams.connections);
  return {};
}

void GrpcExportServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (server_) {
    // grpc::Server::Shutdown(deadline) waits for idle client connections to go away too, and a
    // client that is connected but not sending (a training job between exports) does not read
    // the GOAWAY: it would hold every stop for the whole deadline. So: refuse new calls, let the
    // calls in flight finish (bounded), then shut down at once.
    stopping_.store(true, std::memory_order_seq_cst);
    const auto deadline = std::chrono::steady_clock::now() + kShutdownGrace;
    while (in_flight_.load(std::memory_order_seq_cst) > 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
  // The cap's thread looks at every descriptor of the process: it must be gone before the
  // caller closes its own (the sink's files).
  if (connection_cap_) connection_cap_->stop();
}

std::uint64_t GrpcExportServer::connections_refused() const {
  return connection_cap_ ? connection_cap_->refused() : 0;
}

grpc::Status GrpcExportServer::over_budget(grpc::CallbackServerContext& context) {
  ++accounting_.over_budget;
  context.AddTrailingMetadata("grpc-retry-pushback-ms",
                              std::to_string(OtlpSink::kRetryAfterSeconds * 1000));
  const std::string message = budget_message(accounting_.budget);
  return {grpc::StatusCode::RESOURCE_EXHAUSTED, message,
          status_with_retry_info(kCodeResourceExhausted, message, OtlpSink::kRetryAfterSeconds)};
}

grpc::Status GrpcExportServer::export_call(Signal signal, grpc::CallbackServerContext& context,
                                           const grpc::ByteBuffer& in, grpc::ByteBuffer& out) {
  // Counted before the stop flag is read, so that stop() waits for every call it let in.
  in_flight_.fetch_add(1, std::memory_order_seq_cst);
  struct Done {
    std::atomic<int>& count;
    ~Done() { count.fetch_sub(1, std::memory_order_seq_cst); }
  } done{in_flight_};
  if (stopping_.load(std::memory_order_seq_cst)) {
    return {grpc::StatusCode::UNAVAILABLE, "lens collect is stopping"};
  }
  const auto& metadata = context.client_metadata();
  const auto authorization = metadata.find("authorization");
  if (!accounting_.authorized(
          authorization == metadata.end()
              ? std::string_view()
              : std::string_view(authorization->second.data(), authorization->second.size()))) {
    ++accounting_.unauthenticated;
    return {grpc::StatusCode::UNAUTHENTICATED,
            "missing or wrong token; send the metadata 'authorization: Bearer <token>'"};
  }
  ReleaseMemoryAfterLargeRequest release;  // first: runs once the buffers below are freed
  MemoryBudget::Share share(accounting_.budget);
  std::string body;
  std::uint64_t compressed = 0;
  bool budget_refused = false;
  if (grpc::Status read = read_message(in, body, release, share, compressed, budget_refused);
      !read.ok()) {
    if (budget_refused) return over_budget(context);
    ++accounting_.malformed;
    return read;
  }
  google::protobuf::Arena arena(request_arena_options());
  google::protobuf::Message* request = new_request(signal, arena);
  if (DecodeProblem problem =
          decode_request(signal, BodyFormat::kProtobuf, body, accounting_.limits, release, share,
                         compressed, *request);
      problem.over_budget) {
    return over_budget(context);
  } else if (!problem.message.empty()) {
    ++accounting_.malformed;
    return {problem.over_limit ? grpc::StatusCode::RESOURCE_EXHAUSTED
                               : grpc::StatusCode::INVALID_ARGUMENT,
            problem.message};
  }
  const OtlpSink::Outcome outcome = accounting_.sink.append(signal, *request);
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
// is off, see listen()), so that it is inflated here with a cap instead of whole.
grpc::Status GrpcExportServer::read_message(const grpc::ByteBuffer& in, std::string& body,
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
  const grpc_compression_algorithm algorithm = grpc::internal::GrpcByteBufferPeer(in).compression();
  // The message as received, and then its copy or inflated form, from the budget.
  if (!share.grow_to(2 * compressed_size)) {
    budget_refused = true;
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, budget_message(accounting_.budget)};
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
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, budget_message(accounting_.budget)};
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

}  // namespace lens::cli
