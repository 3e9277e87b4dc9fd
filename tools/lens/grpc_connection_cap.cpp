// The gRPC connection cap (see grpc_connection_cap.hpp).
#include "grpc_connection_cap.hpp"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>
#include <vector>

#include "connection_sweep.hpp"

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
    int fd;
    ino_t inode;
    std::uint64_t first_seen;
  };
  std::vector<Connection> open;  // not shut down yet
  std::set<ino_t> present;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return;
  const int own = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long number = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || number == own) continue;
    const int fd = static_cast<int>(number);
    struct stat st {};
    if (connected_local_port(fd) != local_port_ || ::fstat(fd, &st) != 0) continue;
    present.insert(st.st_ino);
    const auto seen = first_seen_.try_emplace(st.st_ino, sweep_number_).first;
    if (shut_down_.count(st.st_ino) == 0) open.push_back({fd, st.st_ino, seen->second});
  }
  ::closedir(dir);
  // Forget sockets gRPC has closed (their inodes may come back for new ones).
  std::erase_if(first_seen_, [&](const auto& item) { return present.count(item.first) == 0; });
  std::erase_if(shut_down_, [&](ino_t inode) { return present.count(inode) == 0; });
  if (open.size() <= max_connections_) return;
  // The oldest keep their place: a newcomer cannot push out an exporter already connected.
  std::sort(open.begin(), open.end(), [](const Connection& a, const Connection& b) {
    return std::tie(a.first_seen, a.inode) < std::tie(b.first_seen, b.inode);
  });
  for (std::size_t i = max_connections_; i < open.size(); ++i) {
    struct stat st {};
    // Still the same socket (not closed by gRPC and the number reused since it was listed).
    if (::fstat(open[i].fd, &st) != 0 || st.st_ino != open[i].inode) continue;
    if (::shutdown(open[i].fd, SHUT_RDWR) == 0) {
      shut_down_.insert(open[i].inode);
      refused_.fetch_add(1);
    }
  }
}

}  // namespace lens::cli
