// `lens collect`'s OTLP/gRPC server: TraceService, MetricsService and LogsService Export, each
// request read still compressed and inflated with a cap, checked, decoded and handed to the sink;
// connections capped (GrpcConnectionCap). Thread-safety: export_call() runs on gRPC's threads at
// once; start, stop and the destructor from one thread.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collect_server/grpc_connection_cap.hpp"
#include "collect_server/listen_options.hpp"
#include "collect_server/request_accounting.hpp"
#include "lens/result.hpp"

namespace lens::cli {

class GrpcExportServer {
 public:
  // Binds `endpoint` (TLS when `tls` is given) and starts serving; the error names the address.
  static Result<std::unique_ptr<GrpcExportServer>> start(RequestAccounting& accounting,
                                                         const Endpoint& endpoint,
                                                         const std::optional<TlsServerFiles>& tls,
                                                         const GrpcStreamLimits& streams);
  ~GrpcExportServer();  // stops

  GrpcExportServer(const GrpcExportServer&) = delete;
  GrpcExportServer& operator=(const GrpcExportServer&) = delete;

  // The bound address (with the chosen port when 0 was asked for).
  const Endpoint& endpoint() const { return bound_; }

  // Refuses new calls (UNAVAILABLE), lets the calls in flight finish (kShutdownGrace), then
  // shuts down at once and stops the connection cap. Idempotent.
  void stop();

  // Connections shut down past --grpc-max-connections so far.
  std::uint64_t connections_refused() const;

  // One Export call of `signal`: `in` is the request message as sent (still compressed),
  // `out` the response.
  grpc::Status export_call(Signal signal, grpc::CallbackServerContext& context,
                           const grpc::ByteBuffer& in, grpc::ByteBuffer& out);

 private:
  explicit GrpcExportServer(RequestAccounting& accounting) : accounting_(accounting) {}

  Status listen(const Endpoint& endpoint, const std::optional<TlsServerFiles>& tls,
                const GrpcStreamLimits& streams);

  // The request message, inflated within the cap and the memory budget; `budget_refused` when
  // the budget refused it.
  grpc::Status read_message(const grpc::ByteBuffer& in, std::string& body,
                            ReleaseMemoryAfterLargeRequest& release, MemoryBudget::Share& share,
                            std::uint64_t& compressed, bool& budget_refused);

  // Refused for a retry at the memory budget: OTLP/gRPC clients retry after the pushback.
  grpc::Status over_budget(grpc::CallbackServerContext& context);

  RequestAccounting& accounting_;
  // Declared before the server, which must go first.
  std::vector<std::unique_ptr<grpc::Service>> services_;
  std::unique_ptr<grpc::Server> server_;
  Endpoint bound_;
  std::unique_ptr<GrpcConnectionCap> connection_cap_;
  // Calls being handled, and whether a stop began (new calls are then refused with
  // UNAVAILABLE, which exporters retry elsewhere or later).
  std::atomic<int> in_flight_{0};
  std::atomic<bool> stopping_{false};
  bool stopped_ = false;
};

}  // namespace lens::cli
