// The gRPC connection cap (see grpc_connection_cap.hpp).
#include "collect_server/grpc_connection_cap.hpp"

#include <algorithm>
#include <tuple>
#include <vector>

namespace lens::cli {

GrpcConnectionCap::GrpcConnectionCap(int local_port, std::size_t max_connections)
    : local_port_(local_port),
      max_connections_(max_connections),
      sweeper_(kSweepInterval, [this] { sweep(); }) {}

GrpcConnectionCap::~GrpcConnectionCap() { stop(); }

void GrpcConnectionCap::stop() { sweeper_.stop(); }

void GrpcConnectionCap::sweep() {
  ++sweep_number_;
  using Connection = SweptSockets<std::uint64_t>::Open;
  std::vector<Connection> open = sockets_.open_on_port(local_port_, sweep_number_);
  if (open.size() <= max_connections_) return;
  // The oldest keep their place: a newcomer cannot push out an exporter already connected.
  std::sort(open.begin(), open.end(), [](const Connection& a, const Connection& b) {
    return std::tie(a.first_seen, a.socket.inode) < std::tie(b.first_seen, b.socket.inode);
  });
  for (std::size_t i = max_connections_; i < open.size(); ++i) {
    if (sockets_.shut_down(open[i].socket)) refused_.fetch_add(1);
  }
}

}  // namespace lens::cli
