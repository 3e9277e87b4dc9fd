// A cap on the connections the OTLP/gRPC server holds at once. gRPC 1.51 has no connection limit
// (and its resource quota does not count streams), so silent streams could hold memory without
// bound: --grpc-max-streams per connection times any number of connections. A sweep thread sees
// the server's connections in /proc/self/fd and shuts down (SHUT_RDWR; gRPC then closes them and
// frees their streams) the newest ones past the cap; the client sees UNAVAILABLE and retries.
// Capping the open-file limit instead does not work: at EMFILE gRPC 1.51 stops accepting for good.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "collect_server/connection_sweep.hpp"

namespace lens::cli {

class GrpcConnectionCap {
 public:
  // How often the connections are counted: a connection past the cap lives at most about this
  // long (it may complete a quick call in that time).
  static constexpr auto kSweepInterval = std::chrono::milliseconds(20);

  // Starts sweeping the connected TCP sockets of this process whose local port is `local_port`.
  GrpcConnectionCap(int local_port, std::size_t max_connections);
  ~GrpcConnectionCap();  // stops the sweep thread

  // Stops the sweep thread (idempotent; one caller: the receiver's stop); refused() stays valid.
  void stop();

  GrpcConnectionCap(const GrpcConnectionCap&) = delete;
  GrpcConnectionCap& operator=(const GrpcConnectionCap&) = delete;

  // Connections shut down for being past the cap, so far.
  std::uint64_t refused() const { return refused_.load(); }

 private:
  void sweep();

  const int local_port_;
  const std::size_t max_connections_;
  std::uint64_t sweep_number_ = 0;
  SweptSockets<std::uint64_t> sockets_;  // first seen: the sweep's number
  std::atomic<std::uint64_t> refused_{0};
  SweepThread sweeper_;  // last: it sweeps as soon as it is made
};

}  // namespace lens::cli
