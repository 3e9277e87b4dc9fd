// The gRPC connection cap (see grpc_connection_cap.hpp).
#include "collect_server/grpc_connection_cap.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "collect_server/connection_sweep.hpp"

namespace lens::cli {

GrpcConnectionCap::GrpcConnectionCap(int local_port, std::size_t max_connections)
    : local_port_(local_port), max_connections_(max_connections), thread_([this] { run(); }) {}

GrpcConnectionCap::~GrpcConnectionCap() { stop(); }

void GrpcConnectionCap::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GrpcConnectionCap::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, kSweepInterval, [this] { return stopping_; })) {
    sweep();
  }
}

void GrpcConnectionCap::sweep() {
  ++sweep_number_;
  struct Connection {
    ConnectedSocket socket;
    std::uint64_t first_seen;
  };
  std::vector<Connection> open;  // not shut down yet
  std::set<ino_t> present;
  for (const ConnectedSocket& socket : connected_sockets_on_port(local_port_)) {
    present.insert(socket.inode);
    const auto seen = first_seen_.try_emplace(socket.inode, sweep_number_).first;
    if (shut_down_.count(socket.inode) == 0) open.push_back({socket, seen->second});
  }
  // Forget sockets gRPC has closed (their inodes may come back for new ones).
  std::erase_if(first_seen_, [&](const auto& item) { return present.count(item.first) == 0; });
  std::erase_if(shut_down_, [&](ino_t inode) { return present.count(inode) == 0; });
  if (open.size() <= max_connections_) return;
  // The oldest keep their place: a newcomer cannot push out an exporter already connected.
  std::sort(open.begin(), open.end(), [](const Connection& a, const Connection& b) {
    return std::tie(a.first_seen, a.socket.inode) < std::tie(b.first_seen, b.socket.inode);
  });
  for (std::size_t i = max_connections_; i < open.size(); ++i) {
    if (shut_down_if_unchanged(open[i].socket, SHUT_RDWR)) {
      shut_down_.insert(open[i].socket.inode);
      refused_.fetch_add(1);
    }
  }
}

}  // namespace lens::cli
